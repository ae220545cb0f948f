// stormproof/server against @fastify/under-pressure, overload-protection and no protection, on
// a loopback server in its own process (bench/server-target.mjs), in front of two backends of
// the same capacity (400 requests/s). Open-loop load at 2x and 5x that capacity; clients give
// up after 1 s. Only 127.0.0.1; every run bounded in count and time.
import { spawn } from 'node:child_process';
import http from 'node:http';
import os from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';

/**
 * Five backends, from one connection to a hundred (200 to 640 requests a second, so that 5x
 * stays within what two cores can offer and serve): most Node services sit behind a pool like
 * these, and most operators never set `limit`. node-postgres' and mysql2's default pool is 10.
 */
export const BACKENDS = [
  { name: '1 x 5 ms', pool: 1, holdMs: 5 },
  { name: '4 x 10 ms', pool: 4, holdMs: 10 },
  { name: '10 x 20 ms', pool: 10, holdMs: 20 },
  { name: '32 x 50 ms', pool: 32, holdMs: 50 },
  { name: '100 x 200 ms', pool: 100, holdMs: 200 },
];
/** Requests a second a backend serves: its pool, each connection held `holdMs`. */
const capacityOf = ({ pool, holdMs }) => (pool * 1000) / holdMs;
const CLIENT_TIMEOUT_MS = 1000;
export const PROTECTIONS = [
  'none',
  'stormproof',
  'stormproof-pool',
  'stormproof-knee',
  'under-pressure',
  'overload-protection',
];

function startServer(protection, { pool, holdMs } = BACKENDS[0]) {
  const child = spawn(
    process.execPath,
    [
      '--expose-gc',
      new URL('./server-target.mjs', import.meta.url).pathname,
      protection,
      String(pool),
      String(holdMs),
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.stdout.once('data', (chunk) =>
      resolve({
        url: `http://127.0.0.1:${String(chunk).trim()}`,
        stop: () =>
          new Promise((done) => {
            child.once('exit', done);
            child.stdin.end();
          }),
      }),
    );
  });
}

function get(url, agent) {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const req = http.get(url, { agent }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, ms: performance.now() - t0 }));
      res.on('error', () => resolve({ status: 0, ms: performance.now() - t0 }));
    });
    req.setTimeout(CLIENT_TIMEOUT_MS, () => req.destroy());
    req.on('error', () => resolve({ status: 0, ms: performance.now() - t0 }));
  });
}

/** `rate` requests a second for `ms`, open loop; every answer (or give-up) collected. */
async function openLoop(url, rate, ms) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4096 });
  // How late this process's own event loop runs: a late loop sends and reads late, and the
  // client's view of latency counts it.
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const pending = [];
  const start = performance.now();
  let sent = 0;
  while (performance.now() - start < ms) {
    const due = Math.floor(((performance.now() - start) * rate) / 1000);
    for (; sent < due; sent++) pending.push(get(url, agent));
    await delay(1);
  }
  const results = await Promise.all(pending);
  loop.disable();
  agent.destroy();
  // Answers keep coming after the last send: goodput counts over the whole time, until the last.
  return {
    results,
    seconds: (performance.now() - start) / 1000,
    loopP99: loop.percentile(99) / 1e6,
  };
}

/** Sends `count` requests, 16 in flight. */
async function sendMany(url, count) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  let left = count;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (left-- > 0) await get(url, agent);
    }),
  );
  agent.destroy();
}

/** The server's own record of where each admitted request's time went (server-target.mjs). */
async function timingsOf(url) {
  // The protection in front shields this route too: right after a load it may still shed it.
  for (let tries = 0; tries < 50; tries++) {
    const res = await fetch(`${url}/timings`);
    if (res.ok) return res.json();
    await res.body?.cancel();
    await delay(100);
  }
  throw new Error(`${url}/timings: still shed after 50 tries, 5 s`);
}

/** p50 and p99 of each part: [queue wait, pool wait, arrival to the handler's end]. */
function splitOf(timings) {
  const part = (i, q) =>
    quantile(
      timings.map((t) => t[i]),
      q,
    );
  return {
    queueP50: part(0, 0.5),
    queueP99: part(0, 0.99),
    poolP50: part(1, 0.5),
    poolP99: part(1, 0.99),
    serverP50: part(2, 0.5),
    serverP99: part(2, 0.99),
  };
}

async function heapOf(url) {
  const res = await fetch(`${url}/heap`);
  return Number(await res.text());
}

/** Closed loop with `workers` in flight: requests a second. */
async function closedLoop(url, workers, ms) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: workers });
  let done = 0;
  const end = performance.now() + ms;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (performance.now() < end) {
        const r = await get(url, agent);
        if (r.status !== 200) throw new Error(`unexpected status ${r.status}`);
        done++;
      }
    }),
  );
  agent.destroy();
  return (done * 1000) / (performance.now() - start);
}

/**
 * A fresh server process started into load: `clients` closed-loop clients (each sends its next
 * request when the last one is answered) from the first moment, for `ms`. The most requests in
 * the handler at once in the first second, and the success p99 over the whole run against the
 * p99 of the requests sent after `steadyFromMs` (the steady state).
 */
export async function coldStart(
  protection,
  backend,
  { clients = 200, ms = 4000, steadyFromMs = 2000 },
) {
  const { url, stop } = await startServer(protection, backend);
  try {
    const agent = new http.Agent({ keepAlive: true, maxSockets: clients });
    const results = [];
    const start = performance.now();
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (performance.now() - start < ms) {
          const at = performance.now() - start;
          results.push({ ...(await get(`${url}/work`, agent)), at });
        }
      }),
    );
    agent.destroy();
    const { maxInHandler } = await (await fetch(`${url}/cold`)).json();
    const ok = results.filter((r) => r.status === 200);
    return {
      maxInHandler,
      p99All: quantile(
        ok.map((r) => r.ms),
        0.99,
      ),
      p99Steady: quantile(
        ok.filter((r) => r.at >= steadyFromMs).map((r) => r.ms),
        0.99,
      ),
    };
  } finally {
    await stop();
  }
}
/** The protections the cold start is measured for: the defaults and the knee limit. */
const COLD_PROTECTIONS = ['stormproof', 'stormproof-knee'];

const quantile = (xs, q) => {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};

function summarize({ results, seconds, loopP99 }, capacity) {
  const ok = results.filter((r) => r.status === 200 && r.ms <= CLIENT_TIMEOUT_MS);
  const rejected = results.filter((r) => r.status === 503 || r.status === 429);
  return {
    goodput: ok.length / seconds / capacity,
    admittedP99: quantile(
      ok.map((r) => r.ms),
      0.99,
    ),
    rejectP50: quantile(
      rejected.map((r) => r.ms),
      0.5,
    ),
    rejectP99: quantile(
      rejected.map((r) => r.ms),
      0.99,
    ),
    rejected: rejected.length / results.length,
    gaveUp: results.filter((r) => r.status === 0).length / results.length,
    loopP99,
  };
}

/** One measuring pass over every protection. */
export async function measureServer({
  ms = 3000,
  overheadMs = 1000,
  rounds = 7,
  memoryRequests = 100_000,
  cold = {},
} = {}) {
  const backends = {};
  for (const backend of BACKENDS) {
    const rows = {};
    for (const protection of COLD_PROTECTIONS) {
      rows[`${protection}-cold`] = await coldStart(protection, backend, cold);
    }
    const capacity = capacityOf(backend);
    const at = async (url, times) =>
      summarize(await openLoop(`${url}/work`, capacity * times, ms), capacity);
    for (const protection of PROTECTIONS) {
      const { url, stop } = await startServer(protection, backend);
      try {
        await openLoop(`${url}/work`, capacity / 2, Math.min(ms, 500)); // warm-up
        const unloaded = await at(url, 0.5);
        const x2 = await at(url, 2);
        await delay(1500); // let the server drain before the next load
        await timingsOf(url); // forget the earlier loads' timings
        const x5 = await at(url, 5);
        const split = splitOf(await timingsOf(url));
        rows[protection] = { unloadedP99: unloaded.admittedP99, x2, x5, split };
      } finally {
        await stop();
      }
    }
    backends[backend.name] = rows;
  }
  // Overhead at low load: the bare server and stormproof's, up at once, in interleaved rounds.
  const servers = { none: await startServer('none'), stormproof: await startServer('stormproof') };
  try {
    const rates = { none: [], stormproof: [] };
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 ? ['stormproof', 'none'] : ['none', 'stormproof'];
      for (const name of order) {
        rates[name].push(await closedLoop(`${servers[name].url}/fast`, 16, overheadMs));
      }
    }
    const median = (xs) => quantile(xs, 0.5);
    const fast = { none: median(rates.none), stormproof: median(rates.stormproof) };
    // Memory: the heap after a warm-up tenth, then after all of `memoryRequests` more.
    const { url } = servers.stormproof;
    await sendMany(`${url}/fast`, memoryRequests / 10);
    const before = await heapOf(url);
    await sendMany(`${url}/fast`, memoryRequests);
    const heapGrowth = (await heapOf(url)) - before;
    return { backends, fast, heapGrowth, memoryRequests, seconds: ms / 1000 };
  } finally {
    await Promise.all(Object.values(servers).map((s) => s.stop()));
  }
}

/** The passes (objects of one shape) as one: each number the median of its values over them. */
function medianOf(passes) {
  const [first] = passes;
  // A figure a pass could not measure (no answer in time: NaN) is left out of the median.
  if (typeof first === 'number') return quantile(passes.filter(Number.isFinite), 0.5);
  if (first === null || typeof first !== 'object') return first;
  return Object.fromEntries(
    Object.keys(first).map((key) => [key, medianOf(passes.map((p) => p[key]))]),
  );
}

/**
 * `runs` measuring passes, one after another: each figure is the median over the passes. The
 * one-minute load average is read before each pass (the machine is shared: say how busy it was).
 */
export async function measureServerRuns({ runs = 3, ...options } = {}) {
  const passes = [];
  const loads = [];
  for (let i = 0; i < runs; i++) {
    loads.push(os.loadavg()[0]);
    process.stderr.write(
      `server: pass ${i + 1} of ${runs} (load average ${loads.at(-1).toFixed(2)})\n`,
    );
    passes.push(await measureServer(options));
  }
  return { ...medianOf(passes), passes: runs, loads };
}

const pct = (x) => (Number.isFinite(x) ? `${(x * 100).toFixed(0)}%` : 'n/a');
const msOf = (x) => (Number.isFinite(x) ? `${x.toFixed(1)} ms` : 'n/a');

/** One backend's two tables: the protections at 2x and 5x, and where the time goes at 5x. */
function backendTables(rows) {
  const lines = [
    '| protection | goodput 2x | goodput 5x | admitted p99 2x | admitted p99 5x | rejection p50 / p99 (5x) | gave up 5x |',
    '|---|---|---|---|---|---|---|',
  ];
  const splitLines = [
    '| protection | queue wait p50 / p99 | pool wait p50 / p99 | arrival to end p50 / p99 | admitted p99, client view | load generator loop delay p99 |',
    '|---|---|---|---|---|---|',
  ];
  for (const name of PROTECTIONS) {
    const { x2, x5, split } = rows[name];
    lines.push(
      `| ${name} | ${pct(x2.goodput)} | ${pct(x5.goodput)} | ${msOf(x2.admittedP99)} | ${msOf(x5.admittedP99)} | ${msOf(x5.rejectP50)} / ${msOf(x5.rejectP99)} | ${pct(x5.gaveUp)} |`,
    );
    splitLines.push(
      `| ${name} | ${msOf(split.queueP50)} / ${msOf(split.queueP99)} | ${msOf(split.poolP50)} / ${msOf(split.poolP99)} | ${msOf(split.serverP50)} / ${msOf(split.serverP99)} | ${msOf(x5.admittedP99)} | ${msOf(x5.loopP99)} |`,
    );
  }
  return { overload: lines.join('\n'), split: splitLines.join('\n') };
}

const passesText = (n) =>
  n === 1 ? 'One pass' : `${n} passes, one after another, each figure the median over them`;

const backendName = ({ pool, holdMs }) => `${pool} x ${holdMs} ms`;

/** The "Server under overload" section of docs/benchmarks.md, in markdown. */
export function serverSection(result) {
  const met = (ok) => (ok ? 'yes' : 'no');
  const targets = [
    '| target | backend | measured: defaults (Gradient2) | met? | measured: knee limit | met? |',
    '|---|---|---|---|---|---|',
  ];
  for (const backend of BACKENDS) {
    const rows = result.backends[backend.name];
    const bareP99 = rows.none.unloadedP99;
    const cells = (check) =>
      ['stormproof', 'stormproof-knee'].flatMap((name) => check(rows[name])).join(' | ');
    const worst = (r) => Math.max(r.x2.admittedP99, r.x5.admittedP99);
    targets.push(
      `| goodput at 2x and 5x at least 90% of capacity | ${backendName(backend)} | ${cells((r) => [`${pct(r.x2.goodput)}, ${pct(r.x5.goodput)}`, met(r.x2.goodput >= 0.9 && r.x5.goodput >= 0.9)])} |`,
      `| admitted p99 at 2x and 5x at most 2x the bare server's unloaded p99 (${msOf(bareP99)}) | ${backendName(backend)} | ${cells((r) => [msOf(worst(r)), met(worst(r) <= 2 * bareP99)])} |`,
      `| rejection p99 at 5x at most 5 ms | ${backendName(backend)} | ${cells((r) => [msOf(r.x5.rejectP99), met(r.x5.rejectP99 <= 5)])} |`,
    );
  }
  for (const backend of BACKENDS) {
    const rows = result.backends[backend.name];
    const cells = (check) =>
      COLD_PROTECTIONS.flatMap((name) => check(rows[`${name}-cold`])).join(' | ');
    targets.push(
      `| cold start: at most 2x the pool (${2 * backend.pool}) in the handler at any moment of the first second | ${backendName(backend)} | ${cells((c) => [String(c.maxInHandler), met(c.maxInHandler <= 2 * backend.pool)])} |`,
      `| cold start: success p99 over the whole run at most 1.5x the steady state's | ${backendName(backend)} | ${cells((c) => [`${msOf(c.p99All)} vs ${msOf(c.p99Steady)}`, met(c.p99All <= 1.5 * c.p99Steady)])} |`,
    );
  }
  const share = result.fast.stormproof / result.fast.none;
  targets.push(
    `| throughput at low load at least 97% of the bare server's | any | ${pct(share)} (${result.fast.stormproof.toFixed(0)} vs ${result.fast.none.toFixed(0)} requests/s) | ${met(share >= 0.97)} | | |`,
    `| heap flat over ${result.memoryRequests} requests (growth under 1 MB after a full GC) | any | ${(result.heapGrowth / 1024).toFixed(0)} KB | ${met(result.heapGrowth < 1 << 20)} | | |`,
  );
  const perBackend = BACKENDS.map((backend) => {
    const { overload, split } = backendTables(result.backends[backend.name]);
    return `### ${backend.pool} ${backend.pool === 1 ? 'connection' : 'connections'} of ${backend.holdMs} ms (${capacityOf(backend)} requests/s)

${overload}

Where an admitted request's time goes at 5x:

${split}`;
  });
  return `## Server under overload

\`bench/server.mjs\`: a Fastify server in its own process (\`bench/server-target.mjs\`) with one protection in front of a handler that spends 0.2 ms of CPU and then holds one of *pool* "database connections" for *hold* ms, so its capacity is pool / hold. Five backends: ${BACKENDS.map(backendName).join(', ')} (${BACKENDS.map(capacityOf).join(', ')} requests/s); the adaptive limit's floor (Gradient2's \`min\`, 20) is above the first three pools. Open-loop load from this process at 0.5x (for the unloaded p99), 2x and 5x that capacity for ${result.seconds ?? 3} s each; a client gives up after 1 s. *Goodput* is answers 200 within 1 s per second (from the first request to the last answer), as a share of capacity; *admitted p99* is over those answers; a *rejection* is a 503 or 429; *gave up* is requests with no answer within 1 s. \`stormproof\` is \`nodeMiddleware()\` with every default (Gradient2 limit, CoDel queue); \`stormproof-pool\` sets \`limit\` to the pool size; \`stormproof-knee\` sets \`limit: { kind: 'knee' }\`, the limit that finds the pool's size by itself. \`under-pressure\` checks event-loop delay (100 ms) and utilisation (0.98), \`overload-protection\` its defaults (event-loop delay 42 ms). Cold start: a fresh server process per backend and protection, 200 closed-loop clients (each sends its next request when the last is answered) from its first moment for 4 s; the most requests in the handler at once in the first second after the first arrived, and the success p99 of the whole run against that of the requests sent after 2 s. Low-load throughput: 16 requests in flight on an instant route, the bare server and stormproof's up at once, interleaved rounds. The load generator shares the machine. ${passesText(result.passes ?? 1)}; one-minute load average before each pass: ${(result.loads ?? []).map((l) => l.toFixed(2)).join(', ')} (2 cores). Alone: \`npm run build && node bench/run.mjs --only server\` (\`--runs N\` for N passes, default 3).

${targets.join('\n')}

The server target records, for each admitted \`/work\` request, its wait in the protection's queue (from Fastify's first \`onRequest\` hook, once the headers are parsed, to admission), its wait for a "database connection" inside the handler, and its time from arrival to the handler's end. What the client sees beyond *arrival to end* is the loopback, the server's HTTP parsing and answer, and the load generator's own event loop (both processes share the 2 cores; a loop that runs late reads every answer late). At 5x most rejections are requests that waited the queue's 10 ms (twice CoDel's target) and were dropped: that is the rejection p50.

${perBackend.join('\n\n')}

Reading it: an adaptive limit holds a few requests more than the backend serves at once; that is how it finds out whether more would go faster. Gradient2 also never goes below its \`min\` of 20, so behind a pool smaller than that each admitted request waits for a connection inside the handler (*pool wait*), where the shedder's CoDel timeouts and LIFO do not reach; \`limit\` set to the pool moves the wait into the shedder's queue, which keeps it short. Behind a pool larger than 20 Gradient2 starts at 20 and grows about one request a window, so the first seconds of an overload leave part of the pool idle. The knee limit finds the pool in a few round trips either way; why it is not yet the default is in [docs/server.md](server.md#what-is-not-there-yet).
`;
}
