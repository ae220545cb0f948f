// How long the `stormproof` program takes for a small run, as a whole process, against a bare
// `node -e 0` on the same machine, interleaved so that both see the same load (issue 19: a small
// run must not pay for a worker thread or for modules it does not run). Whole processes, spawn to
// exit; `stormproof --version` shows the program's start-up alone.
//
//   node bench/cli-startup.mjs              # 21 rounds (after npm run build), prints a markdown section
//   node bench/cli-startup.mjs --rounds 51
//   node bench/cli-startup.mjs --smoke      # 3 rounds: checks the paths, times nothing
import { spawnSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';

const main = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
/** The target: the herd command at most this many ms more than a bare node. */
export const TARGET_MS = 50;
const HERD = ['sim', 'herd', '--jitter', 'none', '--json'];
const EXPECTED = '{"calls":81000,"busiestSlot":1975,"doneAfterSeconds":376.21}';

const CONTENDERS = [
  { name: 'node -e 0', args: ['-e', '0'] },
  { name: 'stormproof --version', args: [main, '--version'] },
  { name: `stormproof ${HERD.join(' ')}`, args: [main, ...HERD], expect: EXPECTED },
];

const signed = (ms) => `${ms >= 0 ? '+' : ''}${ms.toFixed(0)}`;

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** One whole process, spawn to exit, in ms. Throws if it fails or prints the wrong figures. */
function timeProcess(c) {
  const start = process.hrtime.bigint();
  const r = spawnSync(process.execPath, c.args, { encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`${c.name} exited with ${r.status}: ${r.stderr}`);
  if (c.expect !== undefined && r.stdout.trim() !== c.expect) {
    throw new Error(`${c.name} printed ${r.stdout.trim()}, expected ${c.expect}`);
  }
  return ms;
}

/**
 * Runs every contender once per round, in a new order each round, and returns the markdown
 * section and `ok`: whether the herd command's median is within TARGET_MS of bare node's.
 */
export function cliStartupSection({ smoke = false, rounds = smoke ? 3 : 21 } = {}) {
  const times = CONTENDERS.map(() => []);
  if (!smoke) for (const c of CONTENDERS) timeProcess(c); // warm the file cache
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < CONTENDERS.length; i++) {
      const at = (i + round) % CONTENDERS.length;
      times[at].push(timeProcess(CONTENDERS[at]));
    }
  }
  const medians = times.map(median);
  const bare = medians[0];
  const extra = medians[2] - bare;
  const ok = extra <= TARGET_MS;
  const rows = CONTENDERS.map(
    (c, i) =>
      `| \`${c.name}\` | ${medians[i].toFixed(0)} | ${i === 0 ? '' : signed(medians[i] - bare)} | ${Math.min(...times[i]).toFixed(0)} to ${Math.max(...times[i]).toFixed(0)} |`,
  );
  const markdown = `## The program's start-up for a small run

Whole processes, spawn to exit, ${rounds} interleaved rounds (every command once per round, the order rotated); medians in ms. Target: \`sim herd --jitter none --json\` at most ${TARGET_MS} ms more than \`node -e 0\`: ${ok ? 'met' : 'missed'} (${signed(extra)} ms).${smoke ? '\n\n**Smoke run: too few rounds to mean anything.**' : ''}

| command | median (ms) | over node -e 0 | range |
|---|---|---|---|
${rows.join('\n')}
`;
  return { markdown, ok, bareMs: bare, herdMs: medians[2], extraMs: extra };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const i = process.argv.indexOf('--rounds');
  const smoke = process.argv.includes('--smoke');
  const rounds = i < 0 ? undefined : Number(process.argv[i + 1]);
  if (rounds !== undefined && !(Number.isInteger(rounds) && rounds >= 1)) {
    throw new Error('--rounds: a whole number >= 1');
  }
  const r = cliStartupSection({ smoke, ...(rounds === undefined ? {} : { rounds }) });
  process.stdout.write(r.markdown);
  process.stdout.write(
    `\nnode -e 0 ${r.bareMs.toFixed(1)} ms, herd ${r.herdMs.toFixed(1)} ms, difference ${r.extraMs.toFixed(1)} ms (target <= ${TARGET_MS} ms)\n`,
  );
  if (!r.ok && !smoke) process.exitCode = 1;
}
