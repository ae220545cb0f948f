// `npm run bench`: three measuring processes, one after another, then the medians, the spread and
// the targets, written to docs/benchmarks.md. `--smoke` runs every path once, in seconds, for CI.
// `--only server` (`--runs N` passes, default 3) or `--only map` measures that section alone and
// rewrites just that section of docs/benchmarks.md. `--only engine` (`--runs N` processes,
// default 3) measures the engine alone (success path, retry path, heap) and rewrites those
// sections, the engine's rows of the Targets table and its line of what they are up against.
// `--only instrument` and `--only fetch-runtimes` (Node 20, 22 and 24; `npm ci --prefix
// test/runtimes` first) rewrite their section and their row of the Targets table.
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { cliStartupSection } from './cli-startup.mjs';
import { ENGINE_TARGET_PREFIXES, engineSections, measureRuns, summarize } from './engine.mjs';
import { fetchRuntimesSection } from './fetch-runtimes.mjs';
import { herdSection } from './herd.mjs';
import { herdCountedSection } from './herd-counted.mjs';
import { herdVsPythonSection } from './herd-vs-python.mjs';
import { instrumentSection } from './instrument.mjs';
import { mapSection } from './map.mjs';
import { measureServerRuns, serverSection } from './server.mjs';

const smoke = process.argv.includes('--smoke');
const argAfter = (flag) => {
  const i = process.argv.indexOf(flag);
  return i < 0 ? undefined : process.argv[i + 1];
};
const only = argAfter('--only');
const SECTIONS = {
  server: '## Server under overload',
  map: '## stormproof map',
  engine: '## Success path',
  instrument: '## Event source with nobody subscribed',
  'fetch-runtimes': '## stormproof/fetch on each Node',
};
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
const stamp = () =>
  `Node ${process.version}, ${os.cpus()[0]?.model ?? 'unknown CPU'} (${os.cpus().length} cores), ${os.platform()} ${os.arch()}`;

if (only === 'engine') {
  const processes = Number(argAfter('--runs') ?? (smoke ? 1 : 3));
  if (!Number.isInteger(processes) || processes < 1) throw new Error('--runs: a whole number >= 1');
  const runs = measureRuns({ processes, smoke, engineOnly: true });
  const date = new Date().toISOString().slice(0, 10);
  const engine = engineSections(runs, {
    measuredBy: `These engine tables and the engine's rows of the Targets table: \`node bench/run.mjs --only engine\` on ${date}, ${stamp()}, ${processes} process${processes === 1 ? '' : 'es'} one after another, ${smoke ? 2 : 21} interleaved rounds in each.`,
  });
  const targets = engine.targets.join('\n');
  if (smoke) {
    process.stdout.write(`${targets}\n\n${engine.sections}`);
    process.exit(process.exitCode ?? 0);
  }
  let doc = readFileSync(docs, 'utf8');
  // The engine's sections run from the success path's heading to the fetch section's.
  const at = doc.indexOf(SECTIONS.engine);
  const end = doc.indexOf('\n## stormproof/fetch', at);
  if (at < 0 || end < 0) throw new Error('docs/benchmarks.md has no engine sections to replace');
  doc = `${doc.slice(0, at)}${engine.sections.trimEnd()}\n${doc.slice(end)}`;
  // The Targets table: the engine's rows first, then the others as they were.
  const lines = doc.split('\n');
  const header = lines.indexOf('| target | measured | met? |');
  if (header < 0) throw new Error('docs/benchmarks.md has no Targets table');
  let last = header + 2;
  while (last < lines.length && lines[last].startsWith('|')) last++;
  const others = lines
    .slice(header + 2, last)
    .filter((line) => !ENGINE_TARGET_PREFIXES.some((prefix) => line.startsWith(prefix)));
  lines.splice(header + 2, last - header - 2, ...engine.targets, ...others);
  doc = lines
    .map((line) => (line.startsWith('- **Success path.**') ? engine.context : line))
    .join('\n');
  writeFileSync(docs, doc);
  process.stdout.write(`${targets}\n\n${engine.sections}\nwrote the engine sections of ${docs}\n`);
  process.exit(process.exitCode ?? 0);
}

/**
 * Writes a section measured alone into docs/benchmarks.md (replaced, or added before `before`
 * the first time) and its row of the Targets table (replaced by `rowPrefix`, or added last).
 */
function writeSectionAndRow(measured, { heading, before, rowPrefix }) {
  let doc = readFileSync(docs, 'utf8');
  const at = doc.indexOf(heading);
  if (at >= 0) {
    const next = doc.indexOf('\n## ', at + 1);
    doc = `${doc.slice(0, at)}${measured.section.trimEnd()}\n${next < 0 ? '' : doc.slice(next)}`;
  } else {
    const beforeAt = doc.indexOf(`\n${before}`);
    if (beforeAt < 0) throw new Error(`docs/benchmarks.md has no "${before}" section`);
    doc = `${doc.slice(0, beforeAt + 1)}${measured.section.trimEnd()}\n${doc.slice(beforeAt)}`;
  }
  const lines = doc.split('\n');
  const header = lines.indexOf('| target | measured | met? |');
  if (header < 0) throw new Error('docs/benchmarks.md has no Targets table');
  let last = header + 2;
  while (last < lines.length && lines[last].startsWith('|')) last++;
  const old = lines.findIndex((l, i) => i > header && i < last && l.startsWith(rowPrefix));
  if (old >= 0) lines[old] = measured.row;
  else lines.splice(last, 0, measured.row);
  writeFileSync(docs, lines.join('\n'));
}

if (only === 'instrument' || only === 'fetch-runtimes') {
  const measured =
    only === 'instrument' ? instrumentSection({ smoke }) : await fetchRuntimesSection({ smoke });
  if (smoke) {
    process.stdout.write(`${measured.row}\n\n${measured.section}`);
    process.exit(process.exitCode ?? 0);
  }
  writeSectionAndRow(
    measured,
    only === 'instrument'
      ? { heading: SECTIONS.instrument, before: '## Herd outcomes', rowPrefix: '| event source' }
      : {
          heading: SECTIONS['fetch-runtimes'],
          before: '## Event source with nobody subscribed',
          rowPrefix: "| stormproof/fetch's own cost",
        },
  );
  process.stdout.write(
    `${measured.row}\n\n${measured.section}\nwrote the ${only} section of ${docs}\n`,
  );
  process.exit(process.exitCode ?? 0);
}

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

const PROCESSES = smoke ? 1 : 3;
const runs = measureRuns({ processes: PROCESSES, smoke, engineOnly: false });
const fetchRates = summarize(runs, 'fetch');
const engine = engineSections(runs, {
  measuredBy: 'Measured with the rest of this report, by `npm run bench`.',
});
const targetLines = ['| target | measured | met? |', '|---|---|---|', ...engine.targets];
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

process.stderr.write('fetch on Node 20, 22 and 24\n');
const fetchRuntimes = await fetchRuntimesSection({ smoke });
targetLines.push(fetchRuntimes.row);

process.stderr.write('event source: nobody subscribed against compiled out\n');
const instrument = instrumentSection({ smoke });
targetLines.push(instrument.row);

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

Measured by \`npm run bench\` on ${date}: ${stamp()}.
${PROCESSES} processes, one after another; in each, ${smoke ? 2 : 21} interleaved rounds (the contenders in a new order every round). Each figure is the median over processes of the per-process medians; the spread is the lowest and highest process median. Timing varies from machine to machine: compare ratios, not nanoseconds.
${smoke ? '\n**This is a smoke run (`--smoke`): too short to mean anything; run `npm run bench` for real figures.**\n' : ''}
## Targets

${targetLines.join('\n')}

## What the success-path and fetch targets are up against

${engine.context}
- **fetch throughput.** To stop a request at the deadline, each attempt hands fetch an AbortSignal backed by a timer. Node 20's fetch (undici) charges for any signal: the row *bare fetch with a deadline signal* is plain fetch given just that, measured in the same rounds. stormproof/fetch's own cost is the gap between that row and its own.

${engine.sections}
## stormproof/fetch against bare fetch (loopback server in its own process, 32 requests in flight)

Interleaved rounds of 1.5 s each; the server answers a small JSON body with keep-alive.

${fetchLines.join('\n')}

${fetchRuntimes.section}
${instrument.section}
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
