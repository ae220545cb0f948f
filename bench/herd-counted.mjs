// How long `runHerd` takes at scale, client by client (mode 'exact') and as counts (mode
// 'counted'), with the default service (25 calls per 10 ms slot) and full jitter. Wall-clock
// figures of this machine: `node bench/herd-counted.mjs [--smoke]` (after `npm run build`)
// prints a markdown table. The counted mode's time grows with the slots (about clients / 25 of
// them), not the calls.
import { pathToFileURL } from 'node:url';
import { runHerd } from '../dist/sim/herd.js';

const RUNS = [
  { clients: 100_000, mode: 'exact' },
  { clients: 100_000, mode: 'counted' },
  { clients: 1_000_000, mode: 'exact' },
  { clients: 1_000_000, mode: 'counted' },
  { clients: 1_000_000_000, mode: 'counted' },
  { clients: 100_000, mode: 'exact', jitter: 'none' },
  { clients: 1_000_000, mode: 'counted', jitter: 'none' },
  // Without jitter the herd moves as one group: wave by wave, not slot by slot.
  { clients: 1_000_000_000, mode: 'counted', jitter: 'none' },
];

/** The herd's timing table, in markdown. */
export function herdCountedSection({ smoke = false } = {}) {
  const runs = smoke ? RUNS.filter((r) => r.clients <= 100_000) : RUNS;
  const rows = runs.map((options) => {
    const start = performance.now();
    const r = runHerd(options);
    const seconds = (performance.now() - start) / 1000;
    return `| ${options.clients.toLocaleString('en-US')} | ${options.jitter ?? 'full'} | ${options.mode} | ${r.calls.toLocaleString('en-US')} | ${r.busiestSlot.toLocaleString('en-US')} | ${r.doneAfterSeconds} | ${seconds.toFixed(2)} |`;
  });
  return `## The herd at scale

\`runHerd\` with the default service (25 calls per 10 ms slot), seed 7, one run each on this machine.

| clients | jitter | mode | calls | busiest slot | done after (s) | wall time (s) |
|---|---|---|---|---|---|---|
${rows.join('\n')}
`;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.stdout.write(herdCountedSection({ smoke: process.argv.includes('--smoke') }));
}
