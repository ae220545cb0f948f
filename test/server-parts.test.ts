// The server engine's parts, each on its own: the CoDel queue, the shares and criticality, the
// answers, the options. The engine that assembles them is tested in server.test.ts and pinned by
// server-trace.test.ts.
import { describe, expect, it } from 'vitest';
import { Answers } from '../src/server/answers.js';
import { DemandGauge } from '../src/server/demand.js';
import { resolveShedderOptions } from '../src/server/options.js';
import { createPushback } from '../src/server/pushback.js';
import { CodelQueue, type Waiter } from '../src/server/queue.js';
import { RANKS, Shares } from '../src/server/shares.js';
import { ManualClock } from './helpers/clocks.js';

const SETTINGS = { capacity: 3, targetMs: 5, intervalMs: 100 };

function queueOn(clock: ManualClock) {
  const expired: Array<{ id: number; at: number }> = [];
  const q = new CodelQueue<string>(SETTINGS, RANKS, clock, (waiter, nowMs) =>
    waiter.resolve(`expired at ${nowMs}`),
  );
  const waiter = (id: number, retry = false): Waiter<string> => ({
    enqueuedAt: clock.t,
    retry,
    caller: undefined,
    resolve: (answer) => expired.push({ id, at: Number(answer.split(' ').pop()) }),
  });
  return { q, waiter, expired };
}

describe('the CoDel queue', () => {
  it('serves oldest first until a queue forms, then newest first', async () => {
    const clock = new ManualClock();
    const { q, waiter } = queueOn(clock);
    const a = waiter(1);
    q.push(0, a, clock.t);
    await clock.advance(1);
    const b = waiter(2);
    q.push(0, b, clock.t);
    expect(q.take(clock.t, () => false)).toBe(a); // oldest waited 1 ms: FIFO
    const c = waiter(3);
    q.push(0, c, clock.t);
    await clock.advance(10); // the oldest (b) has now waited past the 5 ms target
    expect(q.take(clock.t, () => false)).toBe(c);
    expect(q.take(clock.t, () => false)).toBe(b);
    expect(q.length).toBe(0);
    q.schedule(clock.t);
    expect(clock.pending.timers).toBe(0);
  });

  it('turns overloaded after an interval not empty, and then allows only twice the target', async () => {
    const clock = new ManualClock();
    const { q, waiter } = queueOn(clock);
    q.push(0, waiter(1), clock.t);
    expect(q.maxWait(clock.t)).toBe(100);
    await clock.advance(50);
    expect(q.isOverloaded(clock.t)).toBe(false);
    // Keep it non-empty: take one, add one, every 20 ms.
    for (let i = 0; i < 3; i++) {
      q.push(0, waiter(10 + i), clock.t);
      q.take(clock.t, () => false);
      await clock.advance(20);
    }
    expect(q.isOverloaded(clock.t)).toBe(true);
    expect(q.maxWait(clock.t)).toBe(10);
    q.clear();
    q.schedule(clock.t);
  });

  for (const lateMs of [0, 7]) {
    it(`sweeps out a waiter past the interval with one timer (clock ${lateMs} ms late)`, async () => {
      const clock = new ManualClock({ lateMs });
      const { q, waiter, expired } = queueOn(clock);
      q.push(0, waiter(1), clock.t);
      await clock.advance(5);
      q.push(1, waiter(2, true), clock.t);
      expect(clock.pending.timers).toBe(1);
      await clock.advance(200);
      // The sweep is due when the queue turns overloaded (not empty for the 100 ms interval):
      // the first waiter is then past the interval, and the second past the 10 ms an overloaded
      // queue allows. Never before, at most the clock's lateness after.
      expect(expired.map((e) => e.id)).toEqual([1, 2]);
      for (const e of expired) {
        expect(e.at).toBeGreaterThan(100);
        expect(e.at).toBeLessThanOrEqual(101 + lateMs);
      }
      expect(q.length).toBe(0);
      expect(clock.pending.timers).toBe(0);
    });
  }

  it('evicts the oldest of the least important rank below the one given, and nothing else', () => {
    const clock = new ManualClock();
    const { q, waiter } = queueOn(clock);
    const low1 = waiter(1);
    const low2 = waiter(2);
    q.push(6, low1, 0);
    q.push(6, low2, 0);
    q.push(2, waiter(3), 0);
    expect(q.full).toBe(true);
    expect(q.evictBelow(6)).toBeUndefined();
    expect(q.evictBelow(2)).toBe(low1);
    expect(q.length).toBe(2);
    expect(q.clear().length).toBe(2);
    q.schedule(0);
    expect(clock.pending.timers).toBe(0);
  });

  it('takes the most critical first, and retries of a level only when told to', () => {
    const clock = new ManualClock();
    const { q, waiter } = queueOn(clock);
    const retry0 = waiter(1, true);
    const first0 = waiter(2);
    const first1 = waiter(3);
    q.push(3, first1, 0);
    q.push(1, retry0, 0);
    q.push(0, first0, 0);
    expect(q.take(0, () => false)).toBe(first0);
    expect(q.take(0, () => false)).toBe(retry0); // no first attempt left at level 0
    expect(q.take(0, () => true)).toBe(first1);
    q.schedule(0);
  });
});

/**
 * One block of the gauge: `arrivals` and `completions` interleaved evenly, ending with 32
 * completions or 48 arrivals (what closes a block).
 */
function block(gauge: DemandGauge, arrivals: number, completions: number): boolean {
  const events = [
    ...Array.from({ length: arrivals }, (_, i) => ({ at: (i + 1) / arrivals, arrival: true })),
    ...Array.from({ length: completions }, (_, i) => ({
      at: (i + 1) / completions,
      arrival: false,
    })),
  ].sort((a, b) => a.at - b.at);
  for (const e of events) {
    if (e.arrival) gauge.arrived();
    else gauge.completed();
  }
  return gauge.belowCapacity;
}

describe('the demand gauge (arrivals against completions)', () => {
  it('starts above capacity, and turns below after four blocks of fewer than 1.5 arrivals a completion', () => {
    const gauge = new DemandGauge();
    expect(gauge.belowCapacity).toBe(false);
    for (let i = 0; i < 3; i++) expect(block(gauge, 47, 32)).toBe(false);
    expect(block(gauge, 47, 32)).toBe(true);
  });

  it('needs the four in a row, and turns back above after one block', () => {
    const gauge = new DemandGauge();
    for (let i = 0; i < 3; i++) block(gauge, 30, 32);
    expect(block(gauge, 48, 24)).toBe(false); // 48 arrivals close a block: 2 a completion
    for (let i = 0; i < 3; i++) expect(block(gauge, 30, 32)).toBe(false);
    expect(block(gauge, 30, 32)).toBe(true);
    expect(block(gauge, 48, 24)).toBe(false);
  });

  it('judges a block that completes nothing by its arrivals: a backend that hangs is above', () => {
    const gauge = new DemandGauge();
    for (let i = 0; i < 4; i++) block(gauge, 0, 32);
    expect(gauge.belowCapacity).toBe(true);
    expect(block(gauge, 48, 0)).toBe(false); // a block of 48 arrivals, no completion
  });
});

describe('the CoDel queue while requests arrive below capacity', () => {
  const latencyMs = 10;
  const patient = (clock: ManualClock) => {
    const answers: string[] = [];
    const q = new CodelQueue<string>(
      { ...SETTINGS, capacity: 100, follow: () => latencyMs },
      RANKS,
      clock,
      (waiter, nowMs) => waiter.resolve(`expired at ${nowMs}`),
    );
    const waiter = (id: number): Waiter<string> => ({
      enqueuedAt: clock.t,
      retry: false,
      caller: undefined,
      resolve: (answer) => answers.push(`${id} ${answer}`),
    });
    return { q, waiter, answers };
  };

  it('lets a request wait 20 unloaded latencies, oldest first; strict again when arrivals outrun completions', async () => {
    const clock = new ManualClock();
    const { q, waiter } = patient(clock);
    expect(q.demand?.belowCapacity).toBe(false);
    // Strict: half the unloaded latency at most, newest first once the oldest waited a quarter.
    expect(q.maxWait(clock.t)).toBe(5);
    for (let i = 0; i < 4; i++) block(q.demand!, 40, 32);
    expect(q.demand!.belowCapacity).toBe(true);
    expect(q.maxWait(clock.t)).toBe(20 * latencyMs);
    const a = waiter(1);
    q.push(0, a, clock.t);
    await clock.advance(1);
    q.push(0, waiter(2), clock.t);
    await clock.advance(50); // far past the target and the interval
    expect(q.take(clock.t, () => false)).toBe(a);
    expect(q.wouldOverrun(clock.t, 1)).toBe(false);
    block(q.demand!, 48, 0);
    expect(q.demand!.belowCapacity).toBe(false);
    expect(q.maxWait(clock.t)).toBeLessThan(2 * latencyMs);
    q.clear();
    q.schedule(clock.t);
  });

  for (const lateMs of [0, 7]) {
    it(`sweeps a waiter out after 20 unloaded latencies, not before (clock ${lateMs} ms late)`, async () => {
      const clock = new ManualClock({ lateMs });
      const { q, waiter, answers } = patient(clock);
      for (let i = 0; i < 4; i++) block(q.demand!, 40, 32);
      q.push(0, waiter(1), clock.t);
      await clock.advance(199);
      expect(answers).toEqual([]);
      await clock.advance(100);
      expect(answers).toHaveLength(1);
      const at = Number(answers[0]!.split(' ').pop());
      expect(at).toBeGreaterThan(200);
      expect(at).toBeLessThanOrEqual(201 + lateMs + 5);
      expect(clock.pending.timers).toBe(0);
    });
  }

  it('has no gauge when its times are given (they do not follow a latency)', () => {
    const clock = new ManualClock();
    expect(new CodelQueue<string>(SETTINGS, RANKS, clock, () => {}).demand).toBeUndefined();
  });
});

describe('shares and criticality', () => {
  const shares = (prioritize = true) =>
    new Shares({ prioritize, retryShare: 0.1, criticalityHeader: 'x-crit', defaultLevel: 1 });

  it('guarantees retries 10% of the limit and first attempts the rest', () => {
    const s = shares();
    for (let i = 0; i < 8; i++) s.start(false);
    expect(s.withinShare(false, 10)).toBe(true);
    s.start(false);
    expect(s.withinShare(false, 10)).toBe(false);
    expect(s.withinShare(true, 10)).toBe(true);
    s.start(true);
    expect(s.withinShare(true, 10)).toBe(false);
    expect([s.inflight, s.inflightRetries]).toEqual([10, 1]);
    s.end(true);
    expect([s.inflight, s.inflightRetries]).toEqual([9, 0]);
  });

  it('ranks by level, then first attempts before retries, unless told to treat all alike', () => {
    expect(shares().rank(0, false)).toBe(0);
    expect(shares().rank(0, true)).toBe(1);
    expect(shares().rank(3, true)).toBe(7);
    expect(shares(false).rank(2, true)).toBe(4);
    expect(shares(false).retriesFirst(10)).toBe(true);
  });

  it('reads the criticality header, and the default for a missing or malformed one', () => {
    const s = shares();
    expect(s.levelOf((n) => (n === 'x-crit' ? 'SHEDDABLE' : undefined))).toBe(3);
    expect(s.levelOf((n) => (n === 'x-crit' ? 'critical-plus' : undefined))).toBe(0);
    expect(s.levelOf(() => 'nonsense')).toBe(1);
    expect(s.levelOf(() => undefined)).toBe(1);
  });
});

describe('the answers', () => {
  const make = (serviceOverloaded?: () => boolean, spread = true) => {
    const events: unknown[] = [];
    const answers = new Answers(
      {
        status: 429,
        doNotRetryStatus: 503,
        spread,
        serviceOverloaded,
        onShed: (e) => events.push(e),
      },
      createPushback({ mode: 'fixed', ms: 1500 }, () => 0.5),
    );
    return { answers, events };
  };

  it('come back later: Retry-After rounded up, the exact ms, and the spread marker', () => {
    const { answers, events } = make();
    const r = answers.comeBackLater('queue-timeout', true, 0);
    expect(r).toEqual({
      admitted: false,
      reason: 'queue-timeout',
      kind: 'come-back-later',
      status: 429,
      headers: [
        ['retry-after', '2'],
        ['retry-after-ms', '1500'],
        ['stormproof-pushback-ms', '1500'],
      ],
      waitMs: 1500,
    });
    expect(events).toEqual([
      { reason: 'queue-timeout', kind: 'come-back-later', retry: true, waitMs: 1500 },
    ]);
    expect(answers.shed['queue-timeout']).toBe(1);
    expect(make(undefined, false).answers.comeBackLater('limit', false, 0).headers).toHaveLength(2);
  });

  it('says do not retry while the service is overloaded, counted once', () => {
    const { answers, events } = make(() => true);
    const r = answers.comeBackLater('limit', false, 0);
    expect(r).toMatchObject({ kind: 'do-not-retry', status: 503 });
    expect(r.headers).toEqual([['stormproof-overloaded', '1']]);
    expect(answers.shed.limit).toBe(1);
    expect(events).toEqual([{ reason: 'limit', kind: 'do-not-retry', retry: false }]);
    answers.doNotRetry('throttle', true);
    expect(answers.shed.throttle).toBe(1);
  });
});

describe('the options, filled once', () => {
  it('fills every default', () => {
    const s = resolveShedderOptions(undefined);
    expect(s.queue).toMatchObject({ capacity: 100, targetMs: 5, intervalMs: 100 });
    // The queue's times follow the latency the limit measures (none for Gradient2).
    expect(s.queue === false ? false : s.queue.follow?.()).toBeUndefined();
    expect(resolveShedderOptions({ queue: { targetMs: 5 } }).queue).toMatchObject({
      follow: undefined,
    });
    expect(s.shares).toEqual({
      prioritize: true,
      retryShare: 0.1,
      criticalityHeader: undefined,
      defaultLevel: 1,
    });
    expect(s.retryAfter).toEqual({ mode: 'spread', minMs: 1000, maxMs: 5000 });
    expect(s.ramp).toEqual({
      steps: [0.2, 0.4, 0.6, 0.8, 1],
      floor: 0.1,
      windowMs: 1000,
      minRequests: 20,
      maxErrorRate: 0.05,
      tripErrorRate: 0.5,
      latencyTolerance: 2,
    });
    expect(s.gateway).toBeUndefined();
    expect([s.status, s.doNotRetryStatus]).toEqual([503, 503]);
  });

  it('lower-cases the criticality header and turns parts off when told', () => {
    const s = resolveShedderOptions({
      criticalityHeader: 'X-Criticality',
      queue: false,
      ramp: false,
      gateway: true,
    });
    expect(s.shares.criticalityHeader).toBe('x-criticality');
    expect(s.queue).toBe(false);
    expect(s.ramp).toBeUndefined();
    expect(s.gateway).toEqual({ k: 2, windowMs: 30_000, maxRejection: 0.8, minRequests: 20 });
  });
});
