// The server under test for the server benchmark, in its own process: Fastify with one kind of
// protection in front of a handler whose capacity is known. Prints its port; exits with stdin.
//
// `node server-target.mjs <protection> <pool> <holdMs>`. `/work`: 0.2 ms of CPU, then one of
// `pool` "database connections" for `holdMs` (a FIFO wait when all are busy, as a connection
// pool does): capacity pool / holdMs.
// `/fast`: answers at once (for the overhead at low load). `/timings`: where each admitted
// `/work` request's time went on the server since the last call (then forgotten). `/cold`: the
// most `/work` requests in the handler at once in the first second.
import underPressure from '@fastify/under-pressure';
import Fastify from 'fastify';
import overloadProtection from 'overload-protection';
import { nodeMiddleware } from '../dist/server/index.js';

const protection = process.argv[2] ?? 'none';
const POOL = Number(process.argv[3] ?? 4);
const HOLD_MS = Number(process.argv[4] ?? 10);
const app = Fastify();

// Arrival: the first hook, once the headers are parsed; admission: when the protection lets
// the request through. Stamped on the raw request, the same way for every protection.
app.addHook('onRequest', (request, _reply, done) => {
  request.raw.arrivedAt = performance.now();
  done();
});
const admitted = (request, done) => () => {
  request.raw.admittedAt = performance.now();
  done();
};

if (protection === 'stormproof') {
  const shed = nodeMiddleware();
  app.addHook('onRequest', (request, reply, done) =>
    shed(request.raw, reply.raw, admitted(request, done)),
  );
} else if (protection === 'stormproof-pool') {
  const shed = nodeMiddleware({ limit: POOL });
  app.addHook('onRequest', (request, reply, done) =>
    shed(request.raw, reply.raw, admitted(request, done)),
  );
} else if (protection === 'stormproof-knee') {
  const shed = nodeMiddleware({ limit: { kind: 'knee' } });
  app.addHook('onRequest', (request, reply, done) =>
    shed(request.raw, reply.raw, admitted(request, done)),
  );
} else if (protection === 'under-pressure') {
  // Every check is off by default; event-loop delay and utilisation as its README shows them.
  await app.register(underPressure, { maxEventLoopDelay: 100, maxEventLoopUtilization: 0.98 });
} else if (protection === 'overload-protection') {
  const protect = overloadProtection('http', { production: true });
  app.addHook('onRequest', (request, reply, done) =>
    protect(request.raw, reply.raw, admitted(request, done)),
  );
} else if (protection !== 'none') {
  throw new Error(`unknown protection ${protection}`);
}

let free = POOL;
const waiting = [];
const acquire = () => {
  if (free === 0) return new Promise((resolve) => waiting.push(resolve));
  free--;
  return Promise.resolve();
};
const release = () => {
  const next = waiting.shift();
  if (next) next();
  else free++;
};

// Per admitted /work request: [queue wait, pool wait, arrival to the handler's end], in ms.
let timings = [];
// The cold start: the most requests in the handler at once during the first second after the
// first request arrived (a fresh process started into load, as after a restart or a failover).
let inHandler = 0;
let firstArrival = Number.NaN;
let coldMax = 0;
app.get('/work', async (request) => {
  const { arrivedAt, admittedAt = arrivedAt } = request.raw;
  if (Number.isNaN(firstArrival)) firstArrival = arrivedAt;
  inHandler++;
  if (performance.now() - firstArrival <= 1000) coldMax = Math.max(coldMax, inHandler);
  try {
    return await work(arrivedAt, admittedAt);
  } finally {
    inHandler--;
  }
});
app.get('/cold', async () => ({ maxInHandler: coldMax }));

async function work(arrivedAt, admittedAt) {
  const spinUntil = performance.now() + 0.2;
  while (performance.now() < spinUntil);
  const poolFrom = performance.now();
  await acquire();
  const pooledAt = performance.now();
  await new Promise((resolve) => setTimeout(resolve, HOLD_MS));
  release();
  timings.push([admittedAt - arrivedAt, pooledAt - poolFrom, performance.now() - arrivedAt]);
  return 'ok';
}
app.get('/timings', async () => {
  const out = timings;
  timings = [];
  return out;
});
app.get('/fast', async () => 'ok');
// The heap after a full collection (the process runs with --expose-gc), for the memory check.
app.get('/heap', async () => {
  globalThis.gc?.();
  return String(process.memoryUsage().heapUsed);
});

await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`${app.server.address().port}\n`);
process.stdin.on('end', () => app.close().then(() => process.exit(0)));
process.stdin.resume();
