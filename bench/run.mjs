// `npm run bench`: three measuring processes, one after another, then the medians, the spread and
// the targets, written to docs/benchmarks.md. `--smoke` runs every path once, in seconds, for CI.
// `--only server` (`--runs N` passes, default 3) or `--only map` measures that section alone and
// rewrites just that section of docs/benchmarks.md.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { cliStartupSection } from './cli-startup.mjs';
import { herdSection } from './herd.mjs';
import { herdCountedSection } from './herd-counted.mjs';
import { herdVsPythonSection } from './herd-vs-python.mjs';
import { mapSection } from './map.mjs';
import { measureServerRuns, serverSection } from './server.mjs';

const smoke = process.argv.includes('--smoke');
const argAfter = (flag) => {
  const i = process.argv.indexOf(flag);
  return i < 0 ? undefined : process.argv[i + 1];
};
const only = argAfter('--only');
const SECTIONS = { server: '## Server under overload', map: '## stormproof map' };
if (only !== undefined && !(only in SECTIONS)) {
  throw new Error(
    `--only: unknown section ${only}; expected ${Object.keys(SECTIONS).join(' or ')}`,
  );
}
const serverRuns = Number(argAfter('--runs') ?? (smoke ? 1 : 3));
if (!Number.isInteger(serverRuns) || serverRuns < 1) throw new Error('--runs: a whole number >= 1');
const serverOptions = {
  runs: serverRuns,
  ...(smoke
    ? {
        ms: 300,
        overheadMs: 200,
        rounds: 1,
        memoryRequests: 2000,
        cold: { clients: 20, ms: 300, steadyFromMs: 150 },
      }
    : {}),
};
const docs = fileURLToPath(new URL('../docs/benchmarks.md', import.meta.url));

if (only !== undefined) {
  const section =
    only === 'server'
      ? serverSection(await measureServerRuns(serverOptions))
      : mapSection({ smoke });
  if (smoke) {
    process.stdout.write(section);
  } else {
    // The section runs from its heading to the next one at the same level (or the end).
    const doc = readFileSync(docs, 'utf8');
    const at = doc.indexOf(SECTIONS[only]);
    if (at < 0) throw new Error(`docs/benchmarks.md has no "${SECTIONS[only]}" section`);
    const next = doc.indexOf('\n## ', at + 1);
    const rest = next < 0 ? '' : doc.slice(next + 1);
    const updated = `${doc.slice(0, at)}${section.trimEnd()}\n\n${rest}`;
    writeFileSync(docs, `${updated.trimEnd()}\n`);
    process.stdout.write(`${section}\nwrote the ${only} section of ${docs}\n`);
  }
  process.exit(process.exitCode ?? 0);
}

const here = fileURLToPath(new URL('.', import.meta.url));
const PROCESSES = smoke ? 1 : 3;

const runs = [];
for (let i = 0; i < PROCESSES; i++) {
  process.stderr.write(`measuring: process ${i + 1} of ${PROCESSES}\n`);
  const out = execFileSync(
    process.execPath,
    ['--expose-gc', 'measure.mjs', ...(smoke ? ['--smoke'] : [])],
    {
      cwd: here,
      encoding: 'utf8',
      maxBuffer: 1 << 24,
    },
  );
  runs.push(JSON.parse(out));
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** Per contender: the median over processes, and the lowest and highest process medians. */
function summarize(section) {
  const names = Object.keys(runs[0][section]);
  return Object.fromEntries(
    names.map((name) => {
      const xs = runs.map((r) => r[section][name]);
      return [name, { median: median(xs), min: Math.min(...xs), max: Math.max(...xs) }];
    }),
  );
}

const success = summarize('success');
const retryPath = summarize('retryPath');
const retryPathMade = summarize('retryPathMade');
const heap = summarize('heap');
const fetchRates = summarize('fetch');
const clock = summarize('clock');

const ns = (x) =>
  x >= 1e6
    ? `${(x / 1e6).toFixed(2)} ms`
    : x >= 1e3
      ? `${(x / 1e3).toFixed(2)} us`
      : `${x.toFixed(0)} ns`;
const spread = (s, unit) => `${unit(s.min)} to ${unit(s.max)}`;

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

const bytes = (x) => `${x.toFixed(0)} B`;
const heapLines = [
  '| contender | heap per in-flight call | above bare await | spread over processes |',
  '|---|---|---|---|',
];
for (const [name, s] of Object.entries(heap)) {
  heapLines.push(
    `| ${name} | ${bytes(s.median)} | ${bytes(s.median - heap['bare await'].median)} | ${spread(s, bytes)} |`,
  );
}

const ratio = (name, base, rows) => rows[name].median / rows[base].median;
const FLOORS = [
  'bare await',
  'fn().then(ok, fail)',
  'own promise around fn()',
  'own promise + a timer per call',
];
const libraries = Object.keys(success).filter((n) => !FLOORS.includes(n));
const fastest = libraries.reduce((a, b) => (success[a].median <= success[b].median ? a : b));
const peersBest = Math.min(success.cockatiel.median, success['@smithy/util-retry'].median);
const targets = [
  [
    'success path, policy.retry() ahead of cockatiel and @smithy/util-retry (ratio to the faster of them, below 1)',
    success['stormproof policy.retry()'].median / peersBest,
    0.99,
    'x',
  ],
  [
    'success path, retry(fn, options) with a fresh options literal at most 1.5x policy.retry()',
    ratio('stormproof retry(fn, options)', 'stormproof policy.retry()', success),
    1.5,
    'x',
  ],
  [
    'zero-delay retry path at most 1.5x the hand-written loop',
    ratio('stormproof policy.retry()', 'hand-written loop', retryPath),
    1.5,
    'x',
  ],
  [
    'zero-delay retry path with the error made in advance (the engine alone) at most 1.5x the hand-written loop',
    ratio('stormproof policy.retry()', 'hand-written loop', retryPathMade),
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
const targetLines = ['| target | measured | met? |', '|---|---|---|'];
for (const [what, value, limit, unit] of targets) {
  targetLines.push(
    `| ${what} | ${value.toFixed(unit === 'x' ? 2 : 0)}${unit} | ${value <= limit ? 'yes' : `no, by ${(value - limit).toFixed(unit === 'x' ? 2 : 0)}${unit}`} |`,
  );
}
const fetchShare = fetchRates['stormproof/fetch'].median / fetchRates['bare fetch'].median;
targetLines.push(
  `| stormproof/fetch at least 97% of bare fetch's requests a second | ${(fetchShare * 100).toFixed(1)}% | ${fetchShare >= 0.97 ? 'yes' : `no, by ${((0.97 - fetchShare) * 100).toFixed(1)} points`} |`,
);
const fetchLines = [
  '| contender | requests a second | share of bare fetch | spread over processes |',
  '|---|---|---|---|',
];
for (const [name, s] of Object.entries(fetchRates)) {
  fetchLines.push(
    `| ${name} | ${s.median.toFixed(0)} | ${((s.median / fetchRates['bare fetch'].median) * 100).toFixed(1)}% | ${s.min.toFixed(0)} to ${s.max.toFixed(0)} |`,
  );
}
targetLines.push(
  `| fastest library on the success path | ${fastest} | ${fastest.startsWith('stormproof') ? 'yes' : 'no'} |`,
);

process.stderr.write('herd: outcomes per library, then against the Python model\n');
const herd = herdSection();
const python = herdVsPythonSection({ smoke });
if (!python.ok) process.exitCode = 1;
process.stderr.write('herd at scale: exact and counted, up to 10^9 clients\n');
const herdCounted = herdCountedSection({ smoke });
process.stderr.write('cli: sim herd --jitter none --json against node -e 0, whole processes\n');
const cliStartup = cliStartupSection({ smoke });
targetLines.push(
  `| \`stormproof sim herd --jitter none --json\` at most 50 ms more than \`node -e 0\` | ${cliStartup.extraMs >= 0 ? '+' : ''}${cliStartup.extraMs.toFixed(0)} ms | ${cliStartup.ok ? 'yes' : 'no'} |`,
);

process.stderr.write(
  'server: stormproof/server against under-pressure, overload-protection, none\n',
);
const server = serverSection(await measureServerRuns(serverOptions));

process.stderr.write('map: stormproof map over the target grid, timed\n');
const map = mapSection({ smoke });

const date = new Date().toISOString().slice(0, 10);
const report = `# Benchmarks

Measured by \`npm run bench\` on ${date}: Node ${process.version}, ${os.cpus()[0]?.model ?? 'unknown CPU'} (${os.cpus().length} cores), ${os.platform()} ${os.arch()}.
${PROCESSES} processes, one after another; in each, ${smoke ? 2 : 21} interleaved rounds (the contenders in a new order every round). Each figure is the median over processes of the per-process medians; the spread is the lowest and highest process median. Timing varies from machine to machine: compare ratios, not nanoseconds.
${smoke ? '\n**This is a smoke run (`--smoke`): too short to mean anything; run `npm run bench` for real figures.**\n' : ''}
## Targets

${targetLines.join('\n')}

## What the success-path and fetch targets are up against

- **Success path.** Every call reads the monotonic clock once, at its start, because the deadline counts from there and a failure of the first attempt must know how long it took. On this machine one \`performance.now()\` costs ${ns(clock['performance.now()'].median)}, ${(clock['performance.now()'].median / success['bare await'].median).toFixed(2)}x a bare await by itself. The floor for any wrapper that watches the outcome is the row *fn().then(ok, fail)*. stormproof also keeps its promise that a call settles by its deadline whatever the operation does, so it cannot just chain on fn's promise: it settles a promise of its own, whose floor is the row *own promise around fn()* (in time and in heap), and each call joins a list of calls that share its clock and deadline, behind one timer for the whole list: the row *own promise + a timer per call* is what the other way, a platform timer armed and cleared per call, costs by itself. The other libraries keep no such promise: an operation that ignores its signal holds them for as long as it likes.
- **fetch throughput.** To stop a request at the deadline, each attempt hands fetch an AbortSignal backed by a timer. Node 20's fetch (undici) charges for any signal: the row *bare fetch with a deadline signal* is plain fetch given just that, measured in the same rounds. stormproof/fetch's own cost is the gap between that row and its own.

## Success path (the first attempt succeeds)

Every library as its documentation first shows it, around \`async () => 1\`.

${table(success, 'bare await', ns, 'contender')}

## Retry path, every delay 0 (two failures, then success)

${table(retryPath, 'hand-written loop', ns, 'contender')}

The same two failures with one error made in advance (no stack captured per throw), so that each loop's own cost shows:

${table(retryPathMade, 'hand-written loop', ns, 'contender')}

Most of a failed attempt's cost is V8 capturing the stack of the error the operation throws (\`new Error\`), and that capture costs more when the operation runs inside a retry driver (its frames and the promise jobs it came from) than in a bare loop: the gap between the two tables is that capture, not the engine's own work.

## Heap retained per in-flight call (10,000 calls waiting at once)

${heapLines.join('\n')}

## stormproof/fetch against bare fetch (loopback server in its own process, 32 requests in flight)

Interleaved rounds of 1.5 s each; the server answers a small JSON body with keep-alive.

${fetchLines.join('\n')}

${herd}
${python.markdown}
${herdCounted}
${cliStartup.markdown}
${server}
${map}`;
if (smoke) {
  process.stdout.write(report);
} else {
  writeFileSync(docs, report);
  process.stdout.write(`${report}\nwrote ${docs}\n`);
}
