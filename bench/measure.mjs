// One measuring process: prints a JSON object of nanoseconds per call (medians over interleaved
// rounds) and bytes per in-flight call. `run.mjs` starts three of these and reports the spread.
import { successPath, Unavailable, zeroDelay } from './candidates.mjs';
import { measureFetch } from './fetch.mjs';

const smoke = process.argv.includes('--smoke');
// `--engine`: the engine's tables only (success path, retry path, heap, clock read), no fetch.
const engineOnly = process.argv.includes('--engine');
const ROUNDS = smoke ? 2 : 21;
const SAMPLE_MS = smoke ? 2 : 15;

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** A seeded shuffle, so the order of the contenders changes every round but repeats across runs. */
function shuffled(items, round) {
  let seed = round * 2654435761 + 1;
  const rand = () => {
    seed = (seed * 1103515245 + 12345) >>> 0;
    return seed / 2 ** 32;
  };
  const a = [...items];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
}

async function timeLoop(run, makeFn, n) {
  const start = performance.now();
  for (let i = 0; i < n; i++) await run(makeFn());
  return ((performance.now() - start) * 1e6) / n;
}

/** Medians of ns per call over interleaved rounds; each sample runs about SAMPLE_MS. */
async function interleaved(contenders, makeFn) {
  const names = Object.keys(contenders);
  const perCall = {};
  for (const name of names) {
    // Warm up and size each sample to about SAMPLE_MS.
    let n = 1;
    let ns = await timeLoop(contenders[name], makeFn, n);
    while (n * ns < SAMPLE_MS * 1e6 && n < 1e7) {
      n *= 4;
      ns = await timeLoop(contenders[name], makeFn, n);
    }
    perCall[name] = { n, samples: [] };
  }
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of shuffled(names, round)) {
      const entry = perCall[name];
      entry.samples.push(await timeLoop(contenders[name], makeFn, entry.n));
    }
  }
  return Object.fromEntries(names.map((name) => [name, median(perCall[name].samples)]));
}

const ok = async () => 1;
const bare = (fn) => fn();

async function heapPerCall(contenders) {
  const CALLS = smoke ? 1000 : 10_000;
  const out = {};
  // The bare await is what a caller writes without a library: an async function suspended at
  // `await fn()`. The raw promise (fn() with nobody awaiting it) is shown for reference.
  const bareAwait = async (fn) => await fn();
  for (const [name, run] of Object.entries({
    'raw promise (not awaited)': bare,
    'bare await': bareAwait,
    ...contenders,
  })) {
    const samples = [];
    for (let r = 0; r < (smoke ? 1 : 5); r++) {
      let open;
      const gate = new Promise((resolve) => {
        open = resolve;
      });
      const fn = async () => {
        await gate;
        return 1;
      };
      globalThis.gc();
      const before = process.memoryUsage().heapUsed;
      const calls = new Array(CALLS);
      for (let i = 0; i < CALLS; i++) calls[i] = run(fn);
      // Let every wrapper reach the operation's await (some first await a token or a tick).
      await new Promise((resolve) => setImmediate(resolve));
      globalThis.gc();
      const after = process.memoryUsage().heapUsed;
      open();
      await Promise.all(calls);
      samples.push((after - before) / CALLS);
    }
    out[name] = median(samples);
  }
  return out;
}

const success = await interleaved({ 'bare await': bare, ...successPath() }, () => ok);
const failTwice = () => {
  let n = 0;
  return async () => {
    if (n++ < 2) throw new Unavailable('unavailable');
    return 1;
  };
};
const retryPath = await interleaved(zeroDelay(), failTwice);
// The same, with one error made in advance: no stack is captured per throw, so what is left is
// each loop's own cost (the row above also pays V8's stack capture, a frame at a time).
const made = new Unavailable('unavailable');
const failTwiceMade = () => {
  let n = 0;
  return async () => {
    if (n++ < 2) throw made;
    return 1;
  };
};
const { 'hand-written loop': loopOnly, 'stormproof policy.retry()': policyOnly } = zeroDelay();
const retryPathMade = await interleaved(
  { 'hand-written loop': loopOnly, 'stormproof policy.retry()': policyOnly },
  failTwiceMade,
);
const heap = await heapPerCall(successPath());
// One read of the monotonic clock, which every call needs once to keep its deadline.
const CLOCK_READS = smoke ? 1e5 : 5e6;
let clockSink = 0;
const clockStart = performance.now();
for (let i = 0; i < CLOCK_READS; i++) clockSink += performance.now();
const clockRead = ((performance.now() - clockStart) * 1e6) / CLOCK_READS;
if (clockSink === 0) console.error('unreachable');
const fetchRates = engineOnly ? {} : await measureFetch(smoke ? { rounds: 1, ms: 200 } : {});
const fetch = Object.fromEntries(
  Object.entries(fetchRates).map(([name, rates]) => [name, median(rates)]),
);
console.log(
  JSON.stringify({
    success,
    retryPath,
    retryPathMade,
    heap,
    fetch,
    clock: { 'performance.now()': clockRead },
  }),
);
