// stormproof/fetch's own cost counted in instructions (issue 19), beside the timed rows of
// bench/fetch-runtimes.mjs, which move by several percent from run to run and so cannot show 1%.
//
// Counting real requests does not settle it either: two counts of the same 1,200 requests over
// loopback differ by up to 5% (the event loop's wakeups and the collector's timing follow the
// clock, which valgrind slows fifty-fold). So the count is split in two, each part repeatable:
// - stormproof/fetch's own work: the instructions it adds to a call, counted around a stub
//   transport that answers at once with a made Response and handles the signal as undici's fetch
//   does (an abort listener, removed when done), against bare fetch given a deadline signal around
//   the same stub. The stub's own work cancels; what is left is each wrapper's.
// - a real request's cost: bare fetch with a deadline signal to the loopback server of
//   bench/fetch.mjs (in another process, not counted), one request at a time, body read.
// Own cost = (stormproof/fetch - signal row) around the stub, over the real request's count.
// Each count runs in a process of its own under valgrind's cachegrind, V8 made deterministic
// (`--predictable`: no background compiler), as the difference between a run of `many` calls and
// one of `few` (start-up and warm-up cancel), over `many - few`. An instruction is not a
// nanosecond, and the kernel's side of a socket is not counted at all; what stormproof/fetch adds
// is JavaScript, and that is counted whole.
import { fileURLToPath } from 'node:url';
import { instructionsPerCall } from './cachegrind.mjs';
import { fetchContenders, startServer } from './fetch.mjs';

const here = fileURLToPath(import.meta.url);
const SIGNAL_ROW = 'bare fetch with a deadline signal';
const OURS = 'stormproof/fetch';

/** Instructions per call of mode `what` (a mode of this file): `many` calls less `few`. */
function perCall(bin, what, [few, many], url = '') {
  return instructionsPerCall(bin, (n) => [here, '--count', what, String(n), url], [few, many]);
}

/**
 * For each runtime (`{ name, bin }`): instructions per call of the signal row and of
 * stormproof/fetch around the stub (two counts each), and of a real request with a deadline
 * signal. Undefined when valgrind is not installed. The smoke run: the first runtime, small runs.
 */
export async function countFetch(runtimes, { smoke = false } = {}) {
  // Past warm-up: with --predictable, V8 compiles on the main thread, and the optimizing
  // compiler took up each hot function between calls 8,000 and 20,000 on Node 24 (none after:
  // 232 functions compiled by 20,000 calls, 233 by 40,000). A window inside warm-up charges
  // that one-time work to every call, and more to the row with more functions: 20.7k of the
  // 22.5k instructions Node 22 once showed for stormproof/fetch (calls 2,000 to 8,000), and
  // 7k of 7.7k on Node 24 (calls 8,000 to 20,000).
  const stubSizes = smoke ? [200, 600] : [20_000, 40_000];
  const realSizes = smoke ? [20, 60] : [4_000, 8_000];
  const times = smoke ? 1 : 2;
  const { port, stop } = await startServer();
  const url = `http://127.0.0.1:${port}/forecast`;
  try {
    const out = {};
    for (const { name, bin } of smoke ? runtimes.slice(0, 1) : runtimes) {
      const stub = { [SIGNAL_ROW]: [], [OURS]: [] };
      for (let i = 0; i < times; i++) {
        for (const what of Object.keys(stub)) {
          const n = perCall(bin, `stub:${what}`, stubSizes);
          if (n === undefined) return undefined;
          stub[what].push(n);
        }
      }
      out[name] = { stub, real: perCall(bin, `real:${SIGNAL_ROW}`, realSizes, url) };
    }
    return out;
  } finally {
    await stop();
  }
}

/** A transport that answers at once, handling the signal as undici's fetch does. */
function stubTransport() {
  const body = JSON.stringify({ city: 'Bhopal', forecast: 'monsoon rain' });
  const onAbort = () => {};
  return async (_input, init) => {
    const signal = init?.signal;
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      return new Response(body, { status: 200, headers: { 'content-type': 'application/json' } });
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  };
}

if (process.argv[2] === '--count') {
  const [, , , what, n, url] = process.argv;
  const stubbed = what.startsWith('stub:');
  // A deadline no request reaches under valgrind, fifty times slower and on a busy machine
  // slower still: arming and clearing the timer is counted the same whatever its length.
  const contenders = fetchContenders(stubbed ? stubTransport() : undefined, {
    deadlineMs: 600_000,
  });
  const fetchFn = contenders[what.slice(5)];
  // The stub never connects: any URL will do.
  const target = stubbed ? 'http://127.0.0.1:9/forecast' : url;
  if (fetchFn === undefined) throw new Error(`no contender ${what}`);
  for (let i = 0; i < Number(n); i++) {
    const res = await fetchFn(target);
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`unexpected status ${res.status}`);
  }
}
