// The keep-alive race of issue 19: a server that answers with keep-alive and then closes the
// connection 0-3 ms later (as a Node server does at its keepAliveTimeout). A client that reuses
// the connection in that gap has its request reset before the server reads it. Counts the
// failed calls out of 2,000 GETs for plain fetch, createFetch(), createFetch({ budget: false }),
// each with its own fresh createFetch, in interleaved rounds. Only 127.0.0.1; bounded in count;
// not part of `npm run bench`. Run: `npm run build && node bench/keep-alive-race.mjs [--runs N]`.
import { createServer } from 'node:http';
import { createFetch } from '../dist/fetch/index.js';

const REQUESTS = 2000;
/** Calls in flight at once: each worker sends its next GET as soon as the last one ended. */
const CONCURRENCY = 50;
const runsAt = process.argv.indexOf('--runs');
const RUNS = runsAt === -1 ? 3 : Number(process.argv[runsAt + 1]);

const server = createServer((req, res) => {
  res.end('ok', () => {
    const socket = req.socket;
    setTimeout(() => socket.destroy(), Math.floor(Math.random() * 4));
  });
});
// The server closes each connection itself; its own idle timer must not do it first.
server.keepAliveTimeout = 60_000;
await new Promise((done) => server.listen(0, '127.0.0.1', done));
const url = `http://127.0.0.1:${server.address().port}/`;

/** Sends REQUESTS GETs through `fetchFn`; resolves with the failures and their reasons. */
async function race(fetchFn, events) {
  let next = 0;
  let failed = 0;
  const reasons = {};
  const worker = async () => {
    while (next < REQUESTS) {
      next++;
      try {
        const res = await fetchFn(url);
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`status ${res.status}`);
      } catch (error) {
        failed++;
        const reason = events.lastGiveUp.get(error) ?? 'plain';
        reasons[reason] = (reasons[reason] ?? 0) + 1;
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return { failed, reasons, transparent: events.transparent };
}

/** A fresh client of each kind, with a count of its transparent retries and give-up reasons. */
const clients = {
  'plain fetch': () => ({ fetchFn: fetch, events: { lastGiveUp: new Map(), transparent: 0 } }),
  'createFetch()': () => counted({}),
  'createFetch({ budget: false })': () => counted({ budget: false }),
};

function counted(options) {
  const events = { lastGiveUp: new Map(), transparent: 0 };
  const fetchFn = createFetch({
    ...options,
    onSuccess: (e) => {
      events.transparent += e.transparentRetries ?? 0;
    },
    onGiveUp: (e) => {
      events.transparent += e.transparentRetries ?? 0;
      if (e.error !== undefined) events.lastGiveUp.set(e.error, e.reason);
    },
  });
  return { fetchFn, events };
}

const totals = Object.fromEntries(Object.keys(clients).map((name) => [name, []]));
for (let run = 1; run <= RUNS; run++) {
  for (const [name, make] of Object.entries(clients)) {
    const { fetchFn, events } = make();
    const result = await race(fetchFn, events);
    totals[name].push(result.failed);
    console.log(
      `run ${run}  ${name.padEnd(32)} failed ${String(result.failed).padStart(4)} of ${REQUESTS}` +
        `  ${JSON.stringify(result.reasons)}  transparent retries ${result.transparent}`,
    );
  }
}
console.log(`\n${process.version}, ${REQUESTS} GETs, ${CONCURRENCY} in flight, ${RUNS} runs`);
for (const [name, failures] of Object.entries(totals)) {
  const mean = failures.reduce((a, b) => a + b, 0) / failures.length;
  console.log(`${name.padEnd(32)} failed: ${failures.join(', ')} (mean ${mean.toFixed(0)})`);
}
server.close();
server.closeAllConnections();
