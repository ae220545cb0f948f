// stormproof/fetch's own cost on each Node it supports (issue 19): bench/fetch.mjs run by Node 20
// (this process's) and by the Node 22 and 24 that the runtimes suite pins (`npm ci --prefix
// test/runtimes`), each in its own processes, the runtimes taking turns. stormproof/fetch's own
// cost is measured against bare fetch given the same deadline signal, since each runtime's fetch
// charges for the signal by itself: that charge is the other column. The timed rows move by
// several percent between runs, so the target is judged on instructions counted per request
// (bench/fetch-count.mjs), which repeat to a fraction of a percent.
// `node bench/run.mjs --only fetch-runtimes` writes the section and its Targets row.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { countFetch } from './fetch-count.mjs';

const fetchBench = fileURLToPath(new URL('./fetch.mjs', import.meta.url));
const pinned = (major) =>
  fileURLToPath(new URL(`../test/runtimes/node_modules/node${major}/bin/node`, import.meta.url));

function median(xs) {
  const s = [...xs].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/**
 * Measures each runtime in `processes` processes (runtimes in turn, so a drift of the machine
 * reaches all of them), and returns the section, its Targets row and whether the target held.
 */
export async function fetchRuntimesSection({ smoke = false, processes = smoke ? 1 : 3 } = {}) {
  const runtimes = [
    { name: 'Node 20', bin: process.execPath },
    { name: 'Node 22', bin: pinned(22) },
    { name: 'Node 24', bin: pinned(24) },
  ];
  const missing = runtimes.filter((r) => !existsSync(r.bin));
  if (missing.length > 0 && !smoke) {
    throw new Error(
      `${missing.map((r) => r.name).join(' and ')} not installed: run npm ci --prefix test/runtimes`,
    );
  }
  const present = runtimes.filter((r) => existsSync(r.bin));
  const rounds = Object.fromEntries(present.map((r) => [r.name, []]));
  const versions = {};
  for (let i = 0; i < processes; i++) {
    for (const r of present) {
      versions[r.name] = execFileSync(r.bin, ['--version'], { encoding: 'utf8' }).trim();
      const out = execFileSync(r.bin, [fetchBench, ...(smoke ? ['--smoke'] : [])], {
        encoding: 'utf8',
      });
      rounds[r.name].push(JSON.parse(out));
    }
  }
  const rows = present.map((r) => {
    // Each process's medians, then the median over processes.
    const per = (name) => median(rounds[r.name].map((rates) => median(rates[name])));
    const bare = per('bare fetch');
    const signal = per('bare fetch with a deadline signal');
    const ours = per('stormproof/fetch');
    return { ...r, version: versions[r.name], bare, signal, ours, own: 1 - ours / signal };
  });
  const counted = await countFetch(present, { smoke });
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const countRows =
    counted === undefined
      ? []
      : present
          .filter((r) => counted[r.name] !== undefined)
          .map((r) => {
            const { stub, real } = counted[r.name];
            const added =
              mean(stub['stormproof/fetch']) - mean(stub['bare fetch with a deadline signal']);
            return { ...r, version: versions[r.name], stub, real, added, own: added / real };
          });
  // The target is judged on the counts when valgrind is there, else on the timed rows.
  const judged = countRows.length > 0 ? countRows : rows;
  const worst = Math.max(...judged.map((r) => r.own));
  const met = worst <= 0.01 && present.length === runtimes.length;
  const row = `| stormproof/fetch's own cost at most 1% of bare fetch given the same deadline signal, on Node 20, 22 and 24 (${countRows.length > 0 ? 'instructions counted' : 'timed'}) | ${judged.map((r) => `${r.name.replace('Node ', '')}: ${(r.own * 100).toFixed(2)}%`).join(', ')} | ${met ? 'yes' : 'no'} |`;
  const kilo = (n) => `${(n / 1000).toFixed(1)}k`;
  const pair = (xs) => xs.map(kilo).join(' and ');
  const countSection =
    countRows.length === 0
      ? '\nNot counted: valgrind is not installed (the target is then judged on the timed rows).\n'
      : `
Counted, which repeats where timing does not (bench/fetch-count.mjs): instructions per call, each runtime under valgrind's cachegrind with V8 made deterministic (\`--predictable\`), as the difference between a run of many calls and one of fewer (start-up and warm-up cancel: the fewer is 20,000 calls around the stub and 4,000 real requests, past the point where V8's optimizing compiler still takes up the code of either row; a window inside warm-up charged that one-time compiling to every call, 20.7k instructions a call to stormproof/fetch on Node 22 between calls 2,000 and 8,000, 7k on Node 24 between 8,000 and 20,000). Counting real requests does not settle 1% either (two counts of the same requests over loopback differ by up to 5%: the event loop's wakeups and the collector follow the clock, which valgrind slows), so the count has two parts. *Around a stub*: each wrapper around a transport that answers at once with a made Response and handles the signal as undici does (counted twice, both shown); the stub's work cancels, and the difference is what stormproof/fetch adds to a call. *A real request*: bare fetch with a deadline signal to the loopback server, one at a time, body read. The own cost is the first over the second. Only the client process is counted, and the kernel's side of its sockets is not.

| runtime | signal row around the stub | stormproof/fetch around the stub | added by stormproof/fetch | a real request with a deadline signal | stormproof/fetch's own cost |
|---|---|---|---|---|---|
${countRows.map((r) => `| ${r.version} | ${pair(r.stub['bare fetch with a deadline signal'])} | ${pair(r.stub['stormproof/fetch'])} | ${kilo(r.added)} | ${kilo(r.real)} | ${(r.own * 100).toFixed(2)}% |`).join('\n')}
`;
  const section = `## stormproof/fetch on each Node (loopback server in its own process, 32 requests in flight)

\`node bench/run.mjs --only fetch-runtimes\`: bench/fetch.mjs run by each runtime, ${processes} process${processes === 1 ? '' : 'es'} each, the runtimes in turn, ${smoke ? 1 : 7} interleaved rounds per process; the figure is the median over processes of each process's median. stormproof/fetch's own cost is its shortfall against bare fetch given the same deadline signal (a timer that aborts it), which is what every call with a deadline needs; the runtime's charge for that signal is the shortfall of the signal row against bare fetch.

| runtime | bare fetch | with a deadline signal | stormproof/fetch | the runtime's charge for the signal | stormproof/fetch's own cost |
|---|---|---|---|---|---|
${rows.map((r) => `| ${r.version} | ${r.bare.toFixed(0)}/s | ${r.signal.toFixed(0)}/s | ${r.ours.toFixed(0)}/s | ${((1 - r.signal / r.bare) * 100).toFixed(1)}% | ${(r.own * 100).toFixed(1)}% |`).join('\n')}
${countSection}${missing.length > 0 ? `\nNot measured (not installed; \`npm ci --prefix test/runtimes\`): ${missing.map((r) => r.name).join(', ')}.\n` : ''}`;
  return { section, row, met };
}
