// Defects of stormproof/server found from outside, each pinned by the test that failed before
// its fix: a fixed limit that was not a cap, repeated attempt and criticality headers read as
// malformed, and rejections that took a queue timeout to arrive.
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type Admission,
  createShedder,
  isRetry,
  nodeMiddleware,
  type ShedEvent,
  type Ticket,
  webMiddleware,
} from '../src/server/index.js';
import { ManualClock } from './helpers/clocks.js';

function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe('a fixed limit is a cap, whatever the mix of first attempts and retries', () => {
  it('limit 4 without a queue never runs a fifth, even when retries filled it first', () => {
    const s = createShedder({ limit: 4, queue: false, ramp: false });
    const retry = (n: string) => (n === 'stormproof-attempt' ? '2' : undefined);
    const first = () => undefined;
    for (let i = 0; i < 4; i++) expect((s.admit(retry) as Admission).admitted).toBe(true);
    expect(s.admit(first)).toMatchObject({ admitted: false, reason: 'limit' });
    expect(s.stats().inflight).toBe(4);
  });

  for (const queue of [false, { capacity: 50 }] as const) {
    for (const lateMs of [0, 4]) {
      it(`in flight never exceeds limits of 1 to 32 under a random mix (queue ${queue === false ? 'off' : 'on'}, clock ${lateMs} ms late)`, async () => {
        for (const limit of [1, 2, 4, 10, 32]) {
          const clock = new ManualClock({ lateMs });
          const s = createShedder({ limit, queue, ramp: false, clock, random: seeded(limit) });
          const traffic = seeded(limit * 7);
          const running: Array<{ ticket: Ticket; doneAt: number }> = [];
          let most = 0;
          const start = (a: Admission) => {
            if (!a.admitted) return;
            running.push({ ticket: a, doneAt: clock.t + 1 + Math.floor(traffic() * 20) });
            most = Math.max(most, s.stats().inflight);
          };
          for (let t = 0; t < 500; t++) {
            // Bursts of retries, then of first attempts, at about 3x what the limit serves.
            const retries = Math.floor(t / 50) % 2 === 0;
            for (let k = 0; k < Math.ceil(limit / 3); k++) {
              const retry = retries ? traffic() < 0.9 : traffic() < 0.1;
              const header = (n: string) => (n === 'stormproof-attempt' && retry ? '3' : undefined);
              const now = s.admitOrQueue(header, start);
              if (now !== undefined) start(now);
            }
            await clock.advance(1);
            for (let i = running.length - 1; i >= 0; i--) {
              if (running[i]!.doneAt <= clock.t) running.splice(i, 1)[0]!.ticket.finish(200);
            }
            most = Math.max(most, s.stats().inflight);
          }
          s.close();
          for (const r of running) r.ticket.finish(200);
          expect({ limit, most: Math.min(most, limit + 1) }).toEqual({ limit, most: limit });
          expect(s.stats().inflight).toBe(0);
          expect(clock.pending.timers).toBe(0);
        }
      });
    }
  }

  it('queued first attempts still go before queued retries once retries hold their share', () => {
    const clock = new ManualClock();
    const s = createShedder({ limit: 10, ramp: false, clock });
    const retry = (n: string) => (n === 'stormproof-attempt' ? '2' : undefined);
    const running = Array.from({ length: 10 }, () => s.admit(retry) as Ticket);
    const order: string[] = [];
    const wait = (kind: string, header: (n: string) => string | undefined) =>
      s.admitOrQueue(header, (a) => {
        if (a.admitted) order.push(kind);
      });
    expect(wait('retry', retry)).toBeUndefined();
    expect(wait('first', () => undefined)).toBeUndefined();
    expect(s.stats().inflight).toBe(10);
    running[0]!.finish(200);
    // Nine retries still run, above their 10% share: the first attempt goes first.
    expect(order).toEqual(['first']);
    s.close();
  });
});

describe('a repeated attempt or criticality header is read by its first value', () => {
  it('isRetry reads the first of a joined list, as Node and fetch join repeated headers', () => {
    expect(isRetry((n) => (n === 'stormproof-attempt' ? '2, 3' : undefined))).toBe(true);
    expect(isRetry((n) => (n === 'stormproof-attempt' ? '1, 2' : undefined))).toBe(false);
    expect(isRetry((n) => (n === 'x-envoy-attempt-count' ? '3,1' : undefined))).toBe(true);
    expect(isRetry((n) => (n === 'grpc-previous-rpc-attempts' ? '1, 0' : undefined))).toBe(true);
    // Still malformed: a first attempt.
    expect(isRetry((n) => (n === 'stormproof-attempt' ? ', 2' : undefined))).toBe(false);
    expect(isRetry((n) => (n === 'stormproof-attempt' ? '2 3' : undefined))).toBe(false);
  });

  it('the web adapter sees a retry and a criticality in repeated headers', async () => {
    const events: ShedEvent[] = [];
    const shed = webMiddleware({
      limit: 1,
      queue: { capacity: 1 },
      ramp: false,
      criticalityHeader: 'x-criticality',
      onShed: (e) => events.push(e),
    });
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    const hold = shed(new Request('http://x/'), async () => {
      await held;
      return new Response('ok');
    });
    const headers = new Headers();
    headers.append('x-criticality', 'sheddable');
    headers.append('x-criticality', 'critical');
    const queued = shed(new Request('http://x/', { headers }), async () => new Response('ok'));
    // A more critical request pushes it out: it was read as sheddable, its first value.
    const critical = shed(
      new Request('http://x/', { headers: { 'x-criticality': 'critical' } }),
      async () => new Response('ok'),
    );
    expect((await queued).status).toBe(503);
    const retryHeaders = new Headers();
    retryHeaders.append('stormproof-attempt', '2');
    retryHeaders.append('stormproof-attempt', '3');
    const retry = await shed(
      new Request('http://x/', { headers: retryHeaders }),
      async () => new Response('ok'),
    );
    expect(retry.status).toBe(503);
    expect(events.map((e) => [e.reason, e.retry])).toEqual([
      ['queue-full', false],
      ['queue-full', true],
    ]);
    release();
    expect((await hold).status).toBe(200);
    expect((await critical).status).toBe(200);
    shed.shedder.close();
  });

  describe('the Node adapter', () => {
    let server: http.Server | undefined;
    afterEach(async () => {
      server?.closeAllConnections();
      if (server) await new Promise((r) => server!.close(r));
      server = undefined;
    });

    it('sees a retry in a repeated stormproof-attempt header', async () => {
      const events: ShedEvent[] = [];
      const shed = nodeMiddleware({
        limit: 1,
        queue: false,
        ramp: false,
        onShed: (e) => events.push(e),
      });
      let release!: () => void;
      const held = new Promise<void>((r) => {
        release = r;
      });
      server = http.createServer((req, res) =>
        shed(req, res, () => {
          held.then(() => res.end('ok'));
        }),
      );
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      const { port } = server.address() as AddressInfo;
      const first = fetch(`http://127.0.0.1:${port}/`);
      // Wait until the first request holds the limit.
      while (shed.shedder.stats().inflight < 1) await new Promise((r) => setTimeout(r, 5));
      // Two header lines of the same name, as a proxy that appends may send them.
      const answer = await new Promise<number>((resolve, reject) => {
        const req = http.request({
          host: '127.0.0.1',
          port,
          path: '/',
          headers: [
            ['host', `127.0.0.1:${port}`],
            ['stormproof-attempt', '2'],
            ['stormproof-attempt', '3'],
          ].flat(),
        });
        req.on('response', (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end();
      });
      expect(answer).toBe(503);
      expect(events).toEqual([expect.objectContaining({ reason: 'limit', retry: true })]);
      release();
      expect((await first).status).toBe(200);
    });
  });
});

describe('a rejection arrives at once, not after a queue timeout', () => {
  // Five times what a backend of 4 x 10 ms serves (2 arrivals a ms, 0.4 served a ms), for 1.5 s,
  // through the default queue: every rejection after the first interval of the overload.
  for (const lateMs of [0, 3]) {
    it(`at 5x, the p99 of the time to a rejection is under 5 ms once the overload lasted one interval (clock ${lateMs} ms late)`, async () => {
      const clock = new ManualClock({ lateMs });
      const s = createShedder({ limit: 4, ramp: false, clock, random: seeded(3) });
      const running: Array<{ ticket: Ticket; doneAt: number }> = [];
      const rejectedAfter: number[] = [];
      const admittedWaits: number[] = [];
      for (let t = 0; t < 1500; t++) {
        for (let k = 0; k < 2; k++) {
          const at = clock.t;
          const decided = (a: Admission) => {
            if (a.admitted) {
              running.push({ ticket: a, doneAt: clock.t + 10 });
              if (at >= 200) admittedWaits.push(clock.t - at);
            } else if (at >= 200) rejectedAfter.push(clock.t - at);
          };
          const now = s.admitOrQueue(() => undefined, decided);
          if (now !== undefined) decided(now);
        }
        await clock.advance(1);
        for (let i = running.length - 1; i >= 0; i--) {
          if (running[i]!.doneAt <= clock.t) running.splice(i, 1)[0]!.ticket.finish(200);
        }
      }
      s.close();
      for (const r of running) r.ticket.finish(200);
      const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.99)]!;
      expect(rejectedAfter.length).toBeGreaterThan(2000);
      expect(p99(rejectedAfter)).toBeLessThanOrEqual(5);
      // What got in still waited no longer than an overloaded queue allows (twice the target).
      expect(Math.max(...admittedWaits)).toBeLessThanOrEqual(10 + lateMs);
      // Goodput: the backend stayed busy (4 at once for 1.3 s of 10 ms requests: 520).
      expect(admittedWaits.length).toBeGreaterThan(500);
      expect(clock.pending.timers).toBe(0);
    });
  }
});
