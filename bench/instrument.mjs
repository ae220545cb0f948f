// The cost of the event source with nobody subscribed (issue 21): the engine's success path,
// `policy.retry(async () => 1)`, in a build without the event source (the commit before it) and
// in this one, interleaved in one process, 21 rounds of about 15 ms each, in a seeded order.
// Usage: node bench/instrument.mjs <dist without> <dist with>   (each a built dist/ folder)
// The target: the median per call with the source present is within 1% of without.
import { pathToFileURL } from 'node:url';

const [without, withSource] = process.argv.slice(2);
if (without === undefined || withSource === undefined) {
  throw new Error('usage: node bench/instrument.mjs <dist without> <dist with>');
}
const load = async (dir) => import(pathToFileURL(`${dir}/index.js`).href);
const a = await load(without);
const b = await load(withSource);
if (b.channels === undefined) throw new Error(`${withSource} has no event source`);
if (b.channels.call.hasSubscribers || b.channels.attempt.hasSubscribers) {
  throw new Error('someone subscribed: this measures the unsubscribed path');
}
const ROUNDS = 21;
const SAMPLE_MS = 15;
const ok = async () => 1;
const contenders = {
  without: a.createRetryPolicy({ budget: false }),
  'with, nobody subscribed': b.createRetryPolicy({ budget: false }),
};

async function timeLoop(policy, n) {
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await policy.retry(ok);
  return Number(process.hrtime.bigint() - start) / n;
}
const median = (xs) => {
  const s = [...xs].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
let seed = 12345;
const rand = () => {
  seed = (seed * 1103515245 + 12345) >>> 0;
  return seed / 2 ** 32;
};
const names = Object.keys(contenders);
const sized = {};
for (const name of names) {
  let n = 1;
  let ns = await timeLoop(contenders[name], n);
  while (n * ns < SAMPLE_MS * 1e6 && n < 1e7) {
    n *= 4;
    ns = await timeLoop(contenders[name], n);
  }
  sized[name] = { n, samples: [] };
}
for (let round = 0; round < ROUNDS; round++) {
  const order = rand() < 0.5 ? names : [...names].reverse();
  for (const name of order) {
    sized[name].samples.push(await timeLoop(contenders[name], sized[name].n));
  }
}
const result = Object.fromEntries(names.map((name) => [name, median(sized[name].samples)]));
const ratio = result['with, nobody subscribed'] / result.without;
process.stdout.write(
  `${JSON.stringify({ nsPerCall: result, ratio: Number(ratio.toFixed(4)), node: process.version })}\n`,
);
