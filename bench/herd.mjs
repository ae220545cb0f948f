// The storm story's herd (2000 clients failed together, 25 calls served per 10 ms slot,
// seed 7) run with each retry library's default schedule and with stormproof's default policy
// through its engine. `node bench/herd.mjs` prints the markdown section; `run.mjs` puts it in
// docs/benchmarks.md. Simulated time, so it is exact and repeatable: no timing involved.
import { pathToFileURL } from 'node:url';
import { herdOutcomes } from '../dist/sim/peer-schedules.js';

const HERD = { clients: 2000, perSlot: 25, slotMs: 10, seed: 7 };

/** The "Herd outcomes" section of docs/benchmarks.md, in markdown. */
export function herdSection() {
  const rows = herdOutcomes(HERD);
  const table = [
    '| library | calls | busiest slot | done after (s) | gave up |',
    '|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.library} | ${r.calls} | ${r.busiestSlot} | ${r.doneAfterSeconds.toFixed(2)} | ${r.gaveUp} |`,
    ),
  ];
  const schedules = rows.map((r) => `- ${r.library}: ${r.schedule}.`);
  return `## Herd outcomes

The storm story's herd: ${HERD.clients} clients fail together at time 0, the service answers ${HERD.perSlot} calls per ${HERD.slotMs} ms slot and fails the rest (503, no Retry-After), one seeded generator (seed ${HERD.seed}). Each library retries with its default schedule (\`src/sim/peer-schedules.ts\` cites the source of each); stormproof runs its default policy through its own engine (\`step\`), one policy and one \`RetryBudget\` per client, since each client is its own process. *Calls* counts every call, first calls included; *busiest slot* is the most calls in one slot after the first; *done after* is when the last client was served or gave up; *gave up* counts clients never served. The ideal is every client calling once, in its turn. Simulated time: these figures are exact and repeat for the seed.

${table.join('\n')}

Schedules as modelled:

${schedules.join('\n')}
`;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.stdout.write(herdSection());
}
