// `stormproof map`'s speed target: at least 10 loads x 10 trigger lengths x 6 policies x 5 seeds
// in under 60 s on a 2-core machine. Runs the built CLI (worker threads, as a user runs it) and
// times it; `node bench/map.mjs` prints the markdown section, `run.mjs` puts it in
// docs/benchmarks.md. `--smoke` runs a 2 x 2 grid once, for CI.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const cli = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
const TARGET_S = 60;

/** One timed run of `stormproof map` with `args`; the cells it judged and its wall time. */
function timeMap(args) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'stormproof-map-'));
  const load = os.loadavg()[0];
  const started = performance.now();
  let out;
  try {
    out = execFileSync(
      process.execPath,
      [cli, 'map', ...args, '--json', '--progress', 'never', '--out', path.join(dir, 'map.html')],
      { encoding: 'utf8', maxBuffer: 1 << 28 },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const seconds = (performance.now() - started) / 1000;
  const result = JSON.parse(out);
  const runs = result.cells.reduce((n, c) => n + c.seeds, 0);
  return { seconds, runs, cells: result.cells.length, load };
}

const GRID = [
  {
    label: 'the target grid, without the server',
    args: ['--trigger', 'capacity-loss', '--server', 'off'],
  },
  {
    label: 'the target grid, with stormproof/server',
    args: ['--trigger', 'capacity-loss', '--server', 'on'],
  },
  { label: '`stormproof map` as the README runs it', args: [] },
];
const SMOKE = [
  {
    label: 'smoke grid',
    args: ['--loads', '0.5,0.9', '--triggers', '5,20', '--seeds', '2', '--server', 'off'],
  },
];

/** The "stormproof map" section of docs/benchmarks.md, in markdown. */
export function mapSection({ smoke = false } = {}) {
  const rows = (smoke ? SMOKE : GRID).map((g) => ({ ...g, ...timeMap(g.args) }));
  const lines = [
    '| run | command | runs (cells x seeds) | wall time | load average before | under 60 s? |',
    '|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.label} | \`stormproof map ${r.args.join(' ')}\` | ${r.runs.toLocaleString('en-US')} (${r.cells} x ${r.runs / r.cells}) | ${r.seconds.toFixed(1)} s | ${r.load.toFixed(1)} | ${r.seconds < TARGET_S ? 'yes' : 'no'} |`,
    ),
  ];
  return `## stormproof map

Target: at least 10 loads x 10 trigger lengths x 6 policies x 5 seeds in under ${TARGET_S} s on a 2-core machine. Each row runs the built CLI once, as a user does (its default worker threads: ${Math.max(1, os.availableParallelism?.() ?? os.cpus().length)} here), and times the whole process; the load average is \`os.loadavg()\`'s one-minute figure just before the run, since other work on the machine slows it. The scenarios' times are in [simulator.md](simulator.md#stormproof-map-the-metastability-map).

${lines.join('\n')}
`;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.stdout.write(mapSection({ smoke: process.argv.includes('--smoke') }));
}
