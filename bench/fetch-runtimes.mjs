// stormproof/fetch's own cost on each Node it supports (issue 19): bench/fetch.mjs run by Node 20
// (this process's) and by the Node 22 and 24 that the runtimes suite pins (`npm ci --prefix
// test/runtimes`), each in its own processes, the runtimes taking turns. stormproof/fetch's own
// cost is measured against bare fetch given the same deadline signal, since each runtime's fetch
// charges for the signal by itself: that charge is the other column.
// `node bench/run.mjs --only fetch-runtimes` writes the section and its Targets row.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

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
export function fetchRuntimesSection({ smoke = false, processes = smoke ? 1 : 3 } = {}) {
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
  const worst = Math.max(...rows.map((r) => r.own));
  const met = worst <= 0.01 && present.length === runtimes.length;
  const row = `| stormproof/fetch's own cost at most 1% of bare fetch given the same deadline signal, on Node 20, 22 and 24 | ${rows.map((r) => `${r.name.replace('Node ', '')}: ${(r.own * 100).toFixed(1)}%`).join(', ')} | ${met ? 'yes' : 'no'} |`;
  const section = `## stormproof/fetch on each Node (loopback server in its own process, 32 requests in flight)

\`node bench/run.mjs --only fetch-runtimes\`: bench/fetch.mjs run by each runtime, ${processes} process${processes === 1 ? '' : 'es'} each, the runtimes in turn, ${smoke ? 1 : 7} interleaved rounds per process; the figure is the median over processes of each process's median. stormproof/fetch's own cost is its shortfall against bare fetch given the same deadline signal (a timer that aborts it), which is what every call with a deadline needs; the runtime's charge for that signal is the shortfall of the signal row against bare fetch.

| runtime | bare fetch | with a deadline signal | stormproof/fetch | the runtime's charge for the signal | stormproof/fetch's own cost |
|---|---|---|---|---|---|
${rows.map((r) => `| ${r.version} | ${r.bare.toFixed(0)}/s | ${r.signal.toFixed(0)}/s | ${r.ours.toFixed(0)}/s | ${((1 - r.signal / r.bare) * 100).toFixed(1)}% | ${(r.own * 100).toFixed(1)}% |`).join('\n')}
${missing.length > 0 ? `\nNot measured (not installed; \`npm ci --prefix test/runtimes\`): ${missing.map((r) => r.name).join(', ')}.\n` : ''}`;
  return { section, row, met };
}
