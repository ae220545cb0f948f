// The engine's part of docs/benchmarks.md: the success path, the zero-delay retry path and the
// heap per in-flight call, from `measure.mjs` processes run one after another, with the engine's
// rows of the Targets table (issue 19). `run.mjs` uses it for the whole report, and
// `node bench/run.mjs --only engine` for these sections alone, in about a minute.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));

/** Runs `processes` measuring processes one after another; with `engineOnly`, without fetch. */
export function measureRuns({ processes, smoke, engineOnly }) {
  const runs = [];
  for (let i = 0; i < processes; i++) {
    process.stderr.write(`measuring: process ${i + 1} of ${processes}\n`);
    const out = execFileSync(
      process.execPath,
      [
        '--expose-gc',
        'measure.mjs',
        ...(smoke ? ['--smoke'] : []),
        ...(engineOnly ? ['--engine'] : []),
      ],
      { cwd: here, encoding: 'utf8', maxBuffer: 1 << 24 },
    );
    runs.push(JSON.parse(out));
  }
  return runs;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** Per contender: the median over processes, and the lowest and highest process medians. */
export function summarize(runs, section) {
  const names = Object.keys(runs[0][section]);
  return Object.fromEntries(
    names.map((name) => {
      const xs = runs.map((r) => r[section][name]);
      return [name, { median: median(xs), min: Math.min(...xs), max: Math.max(...xs) }];
    }),
  );
}

export const ns = (x) =>
  x >= 1e6
    ? `${(x / 1e6).toFixed(2)} ms`
    : x >= 1e3
      ? `${(x / 1e3).toFixed(2)} us`
      : `${x.toFixed(0)} ns`;
const spread = (s, unit) => `${unit(s.min)} to ${unit(s.max)}`;
const bytes = (x) => `${x.toFixed(0)} B`;

function table(rows, base, unit, header) {
  const lines = [
    `| ${header} | per call | ratio to ${base} | spread over processes |`,
    '|---|---|---|---|',
  ];
  for (const [name, s] of Object.entries(rows)) {
    lines.push(
      `| ${name} | ${unit(s.median)} | ${(s.median / rows[base].median).toFixed(2)}x | ${spread(s, unit)} |`,
    );
  }
  return lines.join('\n');
}

/** Where the engine's rows of the Targets table start: `--only engine` replaces these rows. */
export const ENGINE_TARGET_PREFIXES = [
  '| success path',
  '| zero-delay retry path',
  '| heap per in-flight call',
  '| fastest library on the success path',
];

const FLOORS = [
  'bare await',
  'fn().then(ok, fail)',
  'own promise around fn()',
  'own promise + a timer per call',
];

/**
 * The engine's sections: `targets` (rows of the Targets table), `context` (the bullet that says
 * what the success path is up against) and `sections` (the success-path, retry-path and heap
 * sections, each from its `## ` heading).
 */
export function engineSections(runs, { measuredBy }) {
  const success = summarize(runs, 'success');
  const retryPath = summarize(runs, 'retryPath');
  const retryPathMade = summarize(runs, 'retryPathMade');
  const heap = summarize(runs, 'heap');
  const clock = summarize(runs, 'clock');
  const ratio = (name, base, rows) => rows[name].median / rows[base].median;
  const libraries = Object.keys(success).filter((n) => !FLOORS.includes(n));
  const fastest = libraries.reduce((a, b) => (success[a].median <= success[b].median ? a : b));
  const peersBest = Math.min(success.cockatiel.median, success['@smithy/util-retry'].median);
  const limits = [
    [
      'success path, policy.retry() at most 1.25x the row "own promise around fn()"',
      ratio('stormproof policy.retry()', 'own promise around fn()', success),
      1.25,
      'x',
    ],
    [
      'success path, policy.retry() at most 0.8x the faster of cockatiel and @smithy/util-retry',
      success['stormproof policy.retry()'].median / peersBest,
      0.8,
      'x',
    ],
    [
      'success path, retry(fn, options) with a fresh options literal at most 1.2x policy.retry()',
      ratio('stormproof retry(fn, options)', 'stormproof policy.retry()', success),
      1.2,
      'x',
    ],
    [
      'zero-delay retry path with the error made in advance (the engine alone) at most 1.2x the hand-written loop',
      ratio('stormproof policy.retry()', 'hand-written loop', retryPathMade),
      1.2,
      'x',
    ],
    [
      'zero-delay retry path with a fresh error each time at most 1.5x the hand-written loop',
      ratio('stormproof policy.retry()', 'hand-written loop', retryPath),
      1.5,
      'x',
    ],
    [
      'heap per in-flight call at most 150 B above the bare await',
      heap['stormproof policy.retry()'].median - heap['bare await'].median,
      150,
      ' B',
    ],
  ];
  const targets = limits.map(([what, value, limit, unit]) => {
    const shown = (x) => `${x.toFixed(unit === 'x' ? 2 : 0)}${unit}`;
    return `| ${what} | ${shown(value)} | ${value <= limit ? 'yes' : `no, by ${shown(value - limit)}`} |`;
  });
  targets.push(
    `| fastest library on the success path | ${fastest} | ${fastest.startsWith('stormproof') ? 'yes' : 'no'} |`,
  );

  const heapLines = [
    '| contender | heap per in-flight call | above bare await | spread over processes |',
    '|---|---|---|---|',
  ];
  for (const [name, s] of Object.entries(heap)) {
    heapLines.push(
      `| ${name} | ${bytes(s.median)} | ${bytes(s.median - heap['bare await'].median)} | ${spread(s, bytes)} |`,
    );
  }

  const clockRead = clock['performance.now()'].median;
  const context = `- **Success path.** A call does not read the clock when it starts: one \`performance.now()\` costs ${ns(clockRead)} here, ${(clockRead / success['bare await'].median).toFixed(2)}x a bare await by itself, so calls that start within the same 1 ms share one reading (docs/retry.md, "When a call's clock starts"). The floor for any wrapper that watches the outcome is the row *fn().then(ok, fail)*. stormproof also keeps its promise that a call settles by its deadline whatever the operation does, so it cannot just chain on fn's promise: it settles a promise of its own, whose floor is the row *own promise around fn()* (in time and in heap), and each call joins a list of calls that share its clock and deadline, behind one timer for the whole list: the row *own promise + a timer per call* is what the other way, a platform timer armed and cleared per call, costs by itself. The other libraries keep no such promise: an operation that ignores its signal holds them for as long as it likes.`;

  const sections = `## Success path (the first attempt succeeds)

${measuredBy}

Every library as its documentation first shows it, around \`async () => 1\`.

${table(success, 'bare await', ns, 'contender')}

## Retry path, every delay 0 (two failures, then success)

${table(retryPath, 'hand-written loop', ns, 'contender')}

The same two failures with one error made in advance (no stack captured per throw), so that each loop's own cost shows:

${table(retryPathMade, 'hand-written loop', ns, 'contender')}

Most of a failed attempt's cost is V8 capturing the stack of the error the operation throws (\`new Error\`): about 0.3 us for each frame under the operation, up to \`Error.stackTraceLimit\` (10). The engine starts every retried attempt at the bottom of the stack (a promise job of its own after a wait of 0, the wait's timer otherwise), so that an error made there captures two of the engine's frames; the first attempt runs inside the caller's call, under the frames of \`retry()\` itself (docs/retry.md, "Stack traces").

## Heap retained per in-flight call (10,000 calls waiting at once)

${heapLines.join('\n')}
`;
  return { targets, context, sections, success };
}
