// stormproof/server on real servers on 127.0.0.1, port 0: node:http, Express-style Connect
// middleware, Fastify and Hono. Every load loop is bounded in count and time.
import { once } from 'node:events';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { serve } from '@hono/node-server';
import connect from 'connect';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createShedder,
  nodeMiddleware,
  PUSHBACK_HEADER,
  type ShedderOptions,
  webMiddleware,
} from '../src/server/index.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function listen(server: http.Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  closers.push(async () => {
    server.closeAllConnections();
    server.close();
    await once(server, 'close');
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A node:http server whose handler takes `workMs`, behind the node middleware. */
async function nodeServer(options: ShedderOptions, workMs = 20, status = () => 200) {
  const shed = nodeMiddleware(options);
  let handled = 0;
  const handler = async (_req: IncomingMessage, res: ServerResponse) => {
    handled++;
    await delay(workMs);
    res.statusCode = status();
    res.end('ok');
  };
  // How long the server spends on each request, from arrival to the answer's last byte handed
  // to the socket: the client's own clock would also count its event loop, shared with the load.
  const serverTimes: Array<{ status: number; ms: number }> = [];
  const server = http.createServer((req, res) => {
    const t0 = performance.now();
    res.once('finish', () =>
      serverTimes.push({ status: res.statusCode, ms: performance.now() - t0 }),
    );
    shed(req, res, () => void handler(req, res));
  });
  const url = await listen(server);
  return { url, shed, handled: () => handled, serverTimes };
}

interface Result {
  status: number;
  ms: number;
  retry: boolean;
  headers: Headers;
}

/** A request that got no answer, and why (the error's code, or the timeout), to show in a failure. */
interface NoAnswer {
  noAnswer: string;
}
const isNoAnswer = (r: Result | NoAnswer): r is NoAnswer => 'noAnswer' in r;

/**
 * Open-loop load: `rate` requests per second for `durationMs`, every `retryEvery`-th one
 * marked as a retry. Waits for every answer (bounded by a per-request timeout).
 */
async function load(url: string, rate: number, durationMs: number, retryEvery = 0) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 2000 });
  const results: Array<Promise<Result | NoAnswer>> = [];
  const start = performance.now();
  let sent = 0;
  while (performance.now() - start < durationMs) {
    const due = Math.floor(((performance.now() - start) * rate) / 1000);
    for (; sent < due; sent++) {
      const retry = retryEvery > 0 && sent % retryEvery === 0;
      results.push(request(url, agent, retry ? { 'stormproof-attempt': '2' } : {}, retry));
    }
    await delay(2);
  }
  const all = await Promise.all(results);
  agent.destroy();
  return all;
}

function request(
  url: string,
  agent: http.Agent,
  headers: Record<string, string>,
  retry: boolean,
): Promise<Result | NoAnswer> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const req = http.get(url, { agent, headers, timeout: 10_000 }, (res) => {
      res.resume();
      res.on('end', () =>
        resolve({
          status: res.statusCode!,
          ms: performance.now() - t0,
          retry,
          headers: new Headers(res.headers as Record<string, string>),
        }),
      );
    });
    req.on('timeout', () => req.destroy(new Error('no byte for 10 s')));
    req.on('error', (error: NodeJS.ErrnoException) =>
      resolve({
        noAnswer: `${error.code ?? error.message} after ${Math.round(performance.now() - t0)} ms`,
      }),
    );
  });
}

const quantile = (xs: number[], q: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
};

describe('node middleware under 5x overload (node:http)', () => {
  it('stays up, answers everyone, keeps admitted latency bounded and rejects fast, with spread waits', async () => {
    // Capacity: 4 at a time x 20 ms = 200 requests/s. Offered: 1000/s for 2 s.
    // No queue here: every request is admitted or rejected on arrival, so a rejection costs only
    // its answer (the queue is tested on the injected clock and in the next test).
    const { url, shed, serverTimes } = await nodeServer(
      { limit: 4, queue: false, ramp: false },
      20,
    );
    const results = await load(url, 1000, 2000);
    expect(results.filter(isNoAnswer)).toEqual([]);
    const answered = results as Result[];
    expect(answered.length).toBeGreaterThanOrEqual(1500);
    const ok = answered.filter((r) => r.status === 200);
    const rejected = answered.filter((r) => r.status === 503);
    expect(ok.length + rejected.length).toBe(answered.length);
    // Goodput: a real share of the 200/s capacity over the 2 s (loose: the machine is shared;
    // npm run bench measures it properly).
    expect(ok.length).toBeGreaterThan(100);
    // Admitted latency stays bounded on the server (arrival to last byte): about 20 ms of work,
    // where without shedding the backlog would grow past 8 s (1600 extra requests at 200/s).
    // The client's view would also count its own event loop, busy making the load.
    const admittedOnServer = serverTimes.filter((t) => t.status === 200).map((t) => t.ms);
    expect(quantile(admittedOnServer, 0.99)).toBeLessThan(1000);
    // Rejections are cheap: on the server, a small fraction of an admitted request's time.
    const onServer = (status: number) =>
      quantile(
        serverTimes.filter((t) => t.status === status).map((t) => t.ms),
        0.5,
      );
    expect(onServer(503)).toBeLessThan(onServer(200) / 4);
    // Every rejection says when to come back, and the waits are spread.
    const waits = rejected.map((r) => Number(r.headers.get('retry-after-ms')));
    expect(waits.every((w) => w >= 1000 && w <= 5000)).toBe(true);
    expect(new Set(waits).size).toBeGreaterThan(rejected.length * 0.5);
    for (const r of rejected.slice(0, 20)) {
      expect(r.headers.get('retry-after')).toBe(
        String(Math.ceil(Number(r.headers.get('retry-after-ms')) / 1000)),
      );
      expect(r.headers.get(PUSHBACK_HEADER)).toBe(r.headers.get('retry-after-ms'));
    }
    // Still up afterwards, and nothing left in flight or queued.
    const after = await fetch(url);
    expect(after.status).toBe(200);
    await after.text();
    expect(shed.shedder.stats()).toMatchObject({ inflight: 0, queued: 0 });
  });

  it('sheds retries before first attempts under contention', async () => {
    const { url } = await nodeServer({ limit: 4, ramp: false }, 20);
    const all = await load(url, 1000, 1500, 2);
    expect(all.filter(isNoAnswer)).toEqual([]);
    const results = all as Result[];
    const rate = (xs: Result[]) => xs.filter((r) => r.status !== 200).length / xs.length;
    const retries = results.filter((r) => r.retry);
    const firsts = results.filter((r) => !r.retry);
    expect(retries.length).toBeGreaterThan(300);
    // First attempts are served more often than retries: about 3.5 times as often on a quiet
    // machine (30 % against 8 %), 1.3 to 1.7 times beside two CPU-bound processes (the server
    // and this load share a starved event loop, and arrivals come in bursts), and 0.85 times
    // with prioritizeFirstAttempts: false. A ratio, not a gap in points: under load both are
    // shed more, and a gap of 10 points shrank to 8.
    const served = (xs: Result[]) => 1 - rate(xs);
    expect(served(firsts)).toBeGreaterThan(1.2 * served(retries));
  });

  it('answers before reading the body and closes the connection of a rejected upload', async () => {
    const { url } = await nodeServer({ limit: 1, queue: false, ramp: false }, 300);
    const busy = fetch(url);
    await delay(50);
    const sockets: string[] = [];
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(
        url,
        { method: 'POST', headers: { 'content-length': '100000000' } },
        (res) => {
          sockets.push(String(res.headers.connection));
          res.resume();
          resolve(res.statusCode!);
        },
      );
      req.on('error', reject);
      req.write(Buffer.alloc(1024)); // the rest of the 100 MB body never comes
    });
    expect(status).toBe(503);
    expect(sockets).toEqual(['close']);
    await (await busy).text();
  });
});

describe('load-aware Retry-After on a real server', () => {
  it('gives each rejected client its own slot, further ahead for each, sent three ways', async () => {
    const { url } = await nodeServer(
      {
        limit: 1,
        queue: false,
        ramp: false,
        retryAfter: { mode: 'load-aware', initialDrainPerSecond: 10 },
      },
      2000,
    );
    const busy = fetch(url);
    await delay(50);
    const waits: number[] = [];
    for (let i = 0; i < 10; i++) {
      const r = await fetch(url);
      await r.text();
      expect(r.status).toBe(503);
      const ms = Number(r.headers.get('retry-after-ms'));
      expect(r.headers.get(PUSHBACK_HEADER)).toBe(String(ms));
      expect(r.headers.get('retry-after')).toBe(String(Math.ceil(ms / 1000)));
      waits.push(ms);
    }
    // About 100 ms (1 / 10 per second) further ahead for each client told to come back (more as
    // the measured drain rate falls: nothing finishes meanwhile).
    expect(waits[0]).toBeLessThanOrEqual(101);
    for (let i = 1; i < waits.length; i++) expect(waits[i]).toBeGreaterThan(waits[i - 1]!);
    expect(waits[9]).toBeGreaterThanOrEqual(500);
    await (await busy).text();
  });
});

describe('no leaks', () => {
  it('a caller that hangs up mid-request frees its slot, and a handler that throws frees it too', async () => {
    const { url, shed } = await nodeServer({ limit: 2, ramp: false }, 300);
    const controller = new AbortController();
    const pending = fetch(url, { signal: controller.signal }).catch(() => 'aborted');
    await delay(50);
    expect(shed.shedder.stats().inflight).toBe(1);
    controller.abort();
    expect(await pending).toBe('aborted');
    await delay(400);
    expect(shed.shedder.stats()).toMatchObject({ inflight: 0, queued: 0 });

    const web = webMiddleware({ ramp: false });
    const boom = new Error('handler failed');
    await expect(web(new Request('http://127.0.0.1/'), () => Promise.reject(boom))).rejects.toBe(
      boom,
    );
    expect(web.shedder.stats().inflight).toBe(0);
  });
});

describe('memory under sustained overload', () => {
  // 50,000 requests (10,000 to warm up) from an in-process keep-alive loop, 32 in flight against a limit of 4 and a
  // queue of 8: admitted, queued and rejected requests all pass through. Bounded by count and by
  // a deadline (the test fails, not passes, if the deadline comes first). About 8 to 20 s here.
  // After a full GC the heap grows by about 0.1 MB plus 1 B a request (0.12 to 0.13 MB after
  // 40,000, 0.16 to 0.18 MB after 100,000): anything kept per request, the smallest object
  // included (16 B), shows past the bound of 10 B a request.
  const REQUESTS = 40_000;
  it('keeps the heap flat over 40,000 requests (within 10 B a request after a full GC)', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const heapNow = () => {
      gc();
      gc();
      return getHeapStatistics().used_heap_size;
    };
    const shed = nodeMiddleware({ limit: 4, queue: { capacity: 8 }, ramp: false });
    const server = http.createServer((req, res) =>
      shed(req, res, () => setImmediate(() => res.end('ok'))),
    );
    const url = await listen(server);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
    const deadline = performance.now() + 100_000;
    const statuses = new Map<number, number>();
    const send = async (count: number) => {
      let left = count;
      await Promise.all(
        Array.from({ length: 32 }, async () => {
          while (left > 0 && performance.now() < deadline) {
            left--;
            const r = await request(url, agent, {}, false);
            const status = isNoAnswer(r) ? 0 : r.status;
            statuses.set(status, (statuses.get(status) ?? 0) + 1);
          }
        }),
      );
      expect(left).toBe(0); // every request was sent before the deadline
    };
    await send(10_000); // warm-up: code compiled, pools and sockets at their working size
    const before = heapNow();
    await send(REQUESTS);
    const growth = heapNow() - before;
    agent.destroy();
    expect([...statuses.keys()].sort()).toEqual([200, 503]);
    const stats = shed.shedder.stats();
    const shedTotal = Object.values(stats.shed).reduce((a, b) => a + b, 0);
    expect(stats.admitted + shedTotal).toBe(10_000 + REQUESTS);
    expect(stats.shed['queue-full']).toBeGreaterThan(1000);
    expect(stats).toMatchObject({ inflight: 0, queued: 0 });
    expect(growth).toBeLessThan(10 * REQUESTS);
  }, 120_000);
});

describe('reopening on a real server', () => {
  it('caps how many run at once at 20, 40, 60, 80 and 100% of the limit, step by step, after an outage', async () => {
    let down = true;
    const steps: string[] = [];
    const shedder = createShedder({
      limit: 20,
      queue: false,
      ramp: { windowMs: 250, minRequests: 20 },
      onRamp: (e) => steps.push(`${e.share}:${e.reason}`),
    });
    const shed = nodeMiddleware(shedder);
    // While healthy each request holds its place for 20 ms: at 400 requests/s about 8 run at
    // once, more than the first steps' share of the limit of 20.
    let running = 0;
    const most = new Map<number, number>();
    const server = http.createServer((req, res) => {
      shed(req, res, () => {
        const share = shedder.stats().rampShare;
        running++;
        if (!down) most.set(share, Math.max(most.get(share) ?? 0, running));
        setTimeout(
          () => {
            running--;
            res.statusCode = down ? 500 : 200;
            res.end();
          },
          down ? 0 : 20,
        );
      });
    });
    const url = await listen(server);
    // The outage trips the ramp (and, while it lasts, steps it back to the 10% floor) ...
    for (let i = 0; i < 20 && steps.length === 0; i++) await load(url, 400, 100);
    expect(steps[0]).toBe('0.2:errors');
    down = false;
    // ... and healthy traffic walks it back up, a checked step at a time.
    for (let i = 0; i < 40 && !steps.includes('1:open'); i++) await load(url, 400, 250);
    expect(steps.slice(-5), steps.join()).toEqual([
      '0.4:passed',
      '0.6:passed',
      '0.8:passed',
      '1:passed',
      '1:open',
    ]);
    expect(steps.slice(1, -5).every((e) => e === '0.1:error-rate' || e === '0.2:passed')).toBe(
      true,
    );
    // No step ran more at once than its share of the limit, and the first ones held some back.
    for (const [share, n] of most) expect(n, `share ${share}`).toBeLessThanOrEqual(share * 20);
    expect(most.get(0.2) ?? most.get(0.1)).toBeGreaterThan(0);
    expect(shedder.stats().shed.ramp).toBeGreaterThan(0);
  });
});

describe('gateway mode on real servers', () => {
  it('passes the attempt header down, does not retry, and turns a downstream "do not retry" into ours', async () => {
    const seen: Array<string | undefined> = [];
    const backend = http.createServer((req, res) => {
      seen.push(req.headers['stormproof-attempt'] as string | undefined);
      res.writeHead(503, { 'x-envoy-overloaded': 'true' });
      res.end();
    });
    const backendUrl = await listen(backend);
    const gateway = webMiddleware({ gateway: true, ramp: false });
    const proxy = (request: Request) =>
      gateway(request, (r) => fetch(backendUrl, { headers: r.headers }));
    const front = serve({ fetch: proxy, port: 0, hostname: '127.0.0.1' }) as http.Server;
    await once(front, 'listening');
    closers.push(async () => {
      front.closeAllConnections();
      front.close();
    });
    const url = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
    const response = await fetch(url, { headers: { 'stormproof-attempt': '2' } });
    expect(response.status).toBe(503);
    expect(response.headers.get('stormproof-overloaded')).toBe('1');
    expect(seen).toEqual(['2']); // forwarded once, header unchanged
    // A failing downstream is then throttled here: most requests never reach it.
    for (let i = 0; i < 200; i++) await (await fetch(url)).text();
    expect(seen.length).toBeLessThan(120);
    expect(gateway.shedder.stats().shed.throttle).toBeGreaterThan(80);
  });
});

describe('frameworks', () => {
  it('Fastify: the node middleware in an onRequest hook', async () => {
    const shed = nodeMiddleware({ limit: 1, queue: false, ramp: false, status: 429 });
    const app = Fastify();
    app.addHook('onRequest', (request, reply, done) => shed(request.raw, reply.raw, done));
    app.get('/', async () => {
      await delay(200);
      return { ok: true };
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    closers.push(() => app.close());
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/`;
    const slow = fetch(url);
    await delay(50);
    const rejected = await fetch(url);
    expect(rejected.status).toBe(429);
    expect(Number(rejected.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    await rejected.text();
    const ok = await slow;
    expect(await ok.json()).toEqual({ ok: true });
    await delay(20);
    expect(shed.shedder.stats()).toMatchObject({ inflight: 0, admitted: 1 });
  });

  for (const [name, makeApp] of [
    ['Express', () => express()],
    ['Connect', () => connect()],
  ] as const) {
    it(`${name}: the node middleware as app.use(shed)`, async () => {
      const shed = nodeMiddleware({ limit: 1, queue: false, ramp: false });
      const app = makeApp();
      app.use(shed);
      app.use((_req: IncomingMessage, res: ServerResponse) => {
        void delay(200).then(() => res.end('ok'));
      });
      const url = await listen(http.createServer(app));
      const slow = fetch(url);
      await delay(50);
      const rejected = await fetch(url);
      expect(rejected.status).toBe(503);
      expect(Number(rejected.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(Number(rejected.headers.get('stormproof-pushback-ms'))).toBeGreaterThanOrEqual(0);
      await rejected.text();
      expect(await (await slow).text()).toBe('ok');
      await delay(20);
      expect(shed.shedder.stats()).toMatchObject({ inflight: 0, admitted: 1 });
    });
  }

  it('Hono: the web middleware around app.fetch', async () => {
    const shed = webMiddleware({ limit: 1, queue: false, ramp: false });
    const app = new Hono();
    app.get('/', async (c) => {
      await delay(200);
      return c.text('ok');
    });
    const server = serve({
      fetch: (request: Request) => shed(request, (r) => Promise.resolve(app.fetch(r))),
      port: 0,
      hostname: '127.0.0.1',
    }) as http.Server;
    await once(server, 'listening');
    closers.push(async () => {
      server.closeAllConnections();
      server.close();
    });
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const slow = fetch(url);
    await delay(50);
    const rejected = await fetch(url, { method: 'POST', body: 'x'.repeat(100_000) });
    expect(rejected.status).toBe(503);
    expect(rejected.headers.get('retry-after-ms')).toMatch(/^\d+$/);
    expect(await (await slow).text()).toBe('ok');
    expect(shed.shedder.stats()).toMatchObject({ inflight: 0, admitted: 1 });
  });
});
