// Two defects of breakers sharing a store, found by driving a fleet from outside (issue 19),
// pinned here in one process: two registries on one memory store and a virtual clock, exact and
// with timers that fire late (as on a busy machine).
import { describe, expect, it } from 'vitest';
import {
  type BreakerAdmission,
  BreakerOpenError,
  BreakerRegistry,
  type BreakerStore,
  type BreakerStoreEvent,
  createMemoryBreakerStore,
  createRetryPolicy,
} from '../src/index.js';
import { ManualClock } from './helpers/clocks.js';

const CLOCKS = [
  { name: 'exact timers', lateMs: 0 },
  { name: 'timers 7 ms late', lateMs: 7 },
] as const;

const TIMEOUT_MS = 20; // the simulated store's timeout, as createRedisBreakerStore's timeoutMs

/**
 * One memory store seen by two processes: `x` talks to it directly, `y` through a link that can
 * fail its calls at once (`'fails'`) or leave them unanswered until a timeout on the clock's own
 * timers (`'times out'`). Every store call each process starts is counted.
 */
function fleet(lateMs: number, options: { consecutiveFailures?: number } = {}) {
  const clock = new ManualClock({ lateMs });
  const inner = createMemoryBreakerStore(clock);
  const counted = (calls: string[], link?: { mode: 'ok' | 'fails' | 'times out' }) => {
    const through =
      <A extends unknown[], R>(name: string, method: (...args: A) => Promise<R>) =>
      (...args: A): Promise<R> => {
        calls.push(name);
        if (link?.mode === 'fails') return Promise.reject(new Error('connection reset'));
        if (link?.mode === 'times out') {
          return new Promise((_, reject) => {
            clock.setTimer(TIMEOUT_MS, () => reject(new Error('store did not answer')));
          });
        }
        return method(...args);
      };
    const store: BreakerStore = {
      report: through('report', inner.report),
      claimProbe: through('claim', inner.claimProbe),
      settleProbe: through('settle', inner.settleProbe),
      control: through('control', inner.control),
    };
    return store;
  };
  const xCalls: string[] = [];
  const yCalls: string[] = [];
  const yLink = { mode: 'ok' as 'ok' | 'fails' | 'times out' };
  const yEvents: BreakerStoreEvent[] = [];
  const x = new BreakerRegistry({
    store: counted(xCalls),
    clock,
    random: () => 0,
    ...options,
  }).get('api');
  const y = new BreakerRegistry({
    store: counted(yCalls, yLink),
    clock,
    random: () => 0,
    onStoreEvent: (e) => yEvents.push(e),
    ...options,
  }).get('api');
  return { clock, x, y, xCalls, yCalls, yLink, yEvents };
}

describe.each(CLOCKS)('a fleet on one memory store ($name)', ({ lateMs }) => {
  describe.each(['fails', 'times out'] as const)(
    'two probes in one open period across a fleet (a store call %s)',
    (failure) => {
      it('a process that waits on another probe stays open for the rest of that lease', async () => {
        const { clock, x, y, yLink, yEvents } = fleet(lateMs);
        // x trips the key for the fleet; y learns it with its next call.
        for (let i = 0; i < 5; i++) x.record(x.admit(), 'failure');
        await clock.advance(0);
        y.record(y.admit(), 'success');
        await clock.advance(0);
        expect(y.admit()).toEqual({ admitted: false, retryAfterMs: 2500 }); // 5 s ceiling, draw 0
        // The open period ends: x claims the fleet's probe and sends it (it is still out).
        await clock.advance(2500);
        expect(x.admit()).toEqual({ admitted: false, retryAfterMs: 0 });
        await clock.advance(0);
        const probe = x.admit();
        expect(probe).toEqual({ admitted: true, probe: true });
        const leaseEnds = clock.t + 5000; // the lease lasts the ceiling
        // y asks for the probe too and is told to wait for x's.
        expect(y.admit()).toEqual({ admitted: false, retryAfterMs: 0 });
        await clock.advance(0);
        expect(y.admit().admitted).toBe(false);
        // y's store calls now fail: it goes on alone, but x's probe is still out.
        yLink.mode = failure;
        const probes: number[] = [];
        const refusals: Array<number | undefined> = [];
        while (clock.t < leaseEnds + 100) {
          await clock.advance(10);
          const a: BreakerAdmission = y.admit();
          if (a.admitted && a.probe) {
            probes.push(clock.t);
            y.record(a, 'ignored');
          } else if (!a.admitted) {
            refusals.push(a.retryAfterMs);
          }
        }
        expect(yEvents.map((e) => e.type)).toEqual(['unavailable']);
        // No second probe while x's lease lasts; after it, y may probe on its own.
        expect(probes.filter((t) => t < leaseEnds)).toEqual([]);
        expect(probes.length).toBeGreaterThan(0);
        // While it waited with the store away, y said when x's lease ends.
        expect(refusals).toContain(leaseEnds - (2500 + 80));
        x.record(probe, 'ignored');
        await clock.advance(TIMEOUT_MS + lateMs);
        expect(clock.pending).toEqual({ timers: 0, listeners: 0 });
      });
    },
  );

  it('a fleet trip is not seen by a process whose calls hang', async () => {
    const { clock, x, y, yCalls } = fleet(lateMs);
    // y calls every 20 ms through a policy; each call hangs 2 s, then succeeds.
    const policy = createRetryPolicy({ clock, breaker: y, maxAttempts: 1, budget: false });
    const started: number[] = [];
    const admitted: number[] = [];
    const refused: number[] = [];
    let calls = 0;
    let running = true;
    const pending: Promise<unknown>[] = [];
    const loop = (async () => {
      while (running) {
        calls++;
        started.push(clock.t);
        const call = policy.retry(async () => {
          admitted.push(clock.t);
          await clock.sleep(2000);
          return 'ok';
        });
        pending.push(
          call.catch((e: unknown) => {
            if (!(e instanceof BreakerOpenError)) throw e;
            refused.push(clock.t);
          }),
        );
        await clock.sleep(20);
      }
    })();
    await clock.advance(500);
    const tripAt = clock.t;
    const callsBefore = calls;
    const roundTripsBefore = yCalls.length;
    for (let i = 0; i < 5; i++) x.record(x.admit(), 'failure'); // the fleet trips
    await clock.advance(1900);
    running = false;
    await clock.advance(3000); // the hanging calls end
    await loop;
    await Promise.all(pending);
    // Seen by y's first call that found its copy syncMs (50 ms) old, one round trip later: the
    // call that started the refresh goes, the next is refused. Calls are 20 ms (+ lateness) apart.
    const after = admitted.filter((t) => t > tripAt);
    expect(after.length).toBeLessThanOrEqual(Math.ceil(50 / 20) + 1);
    const callsAfter = started.filter((t) => t > tripAt).length;
    expect(callsAfter).toBeGreaterThan(60);
    expect(refused.filter((t) => t > tripAt).length).toBe(callsAfter - after.length);
    // The round-trip budget: while closed and healthy about one per syncMs, never one per call.
    expect(roundTripsBefore).toBeLessThanOrEqual(Math.ceil(500 / 50) + 1);
    expect(roundTripsBefore).toBeLessThanOrEqual(callsBefore);
    expect(yCalls.length).toBeLessThanOrEqual(calls);
    expect(clock.pending).toEqual({ timers: 0, listeners: 0 });
  });

  it('a failure held back for the next call counts for nothing once the fleet has opened', async () => {
    const { clock, x, y } = fleet(lateMs);
    for (let i = 0; i < 5; i++) x.record(x.admit(), 'failure');
    await clock.advance(0); // the fleet is open
    // y's copy is stale: this call's admission asks the store, so its failure waits for the next
    // call; the answer says the fleet is open, where a failure changes nothing.
    const call = y.admit();
    expect(call).toEqual({ admitted: true, probe: false });
    y.record(call, 'failure');
    await clock.advance(0);
    expect(y.admit().admitted).toBe(false);
    // The open period ends; x's probe succeeds and the fleet closes.
    await clock.advance(2500);
    x.admit();
    await clock.advance(0);
    const probe = x.admit();
    expect(probe).toEqual({ admitted: true, probe: true });
    x.record(probe, 'success');
    await clock.advance(0);
    // y follows within a few calls, and its old failure is not counted in the new period.
    const answers: boolean[] = [];
    for (let i = 0; i < 10; i++) {
      const a = y.admit();
      answers.push(a.admitted);
      if (a.admitted) y.record(a, 'success');
      await clock.advance(10);
    }
    expect(answers.slice(3)).toEqual(Array(7).fill(true));
    for (let i = 0; i < 4; i++) x.record(x.admit(), 'failure');
    await clock.advance(100);
    x.record(x.admit(), 'success'); // a stale copy: brings the fleet's count
    await clock.advance(0);
    expect(x.toJSON().failures).toBe(0); // 4 failures then a success: no stale fifth
    expect(y.state).toBe('closed');
  });

  it('a local trip whose failure was held back reaches the fleet with the next call', async () => {
    const { clock, x, y, yCalls } = fleet(lateMs, { consecutiveFailures: 1 });
    // y's admission refreshes its stale copy; its call fails and trips y, and that failure
    // waits for the next call (this one has had its round trip).
    const call = y.admit();
    y.record(call, 'failure');
    expect(y.state).toBe('open');
    await clock.advance(0);
    expect(yCalls).toEqual(['report']);
    expect(y.admit().admitted).toBe(false); // the next call: refused, and it sends the failure
    await clock.advance(0);
    expect(yCalls).toEqual(['report', 'report']);
    // The fleet has tripped: x sees it at its next call.
    await clock.advance(50);
    x.record(x.admit(), 'success');
    await clock.advance(0);
    expect(x.admit().admitted).toBe(false);
    // And when y's open period ends it asks for the probe, which the fleet grants.
    await clock.advance(2500);
    y.admit();
    await clock.advance(0);
    expect(y.admit()).toEqual({ admitted: true, probe: true });
  });

  it('admission refreshes within the round-trip budget: never more than one per call', async () => {
    // Slow calls that fail, sequential, in ratio mode (so the breaker stays closed): each call
    // finds its copy stale when admitted, and its failure is news for the fleet.
    const clock = new ManualClock({ lateMs });
    const inner = createMemoryBreakerStore(clock);
    let roundTrips = 0;
    const count =
      <A extends unknown[], R>(method: (...args: A) => Promise<R>) =>
      (...args: A): Promise<R> => {
        roundTrips++;
        return method(...args);
      };
    const store: BreakerStore = {
      report: count(inner.report),
      claimProbe: count(inner.claimProbe),
      settleProbe: count(inner.settleProbe),
      control: count(inner.control),
    };
    const b = new BreakerRegistry({
      store,
      clock,
      failureRatio: 0.9,
      minimumCalls: 1000,
    }).get('api');
    for (let i = 0; i < 40; i++) {
      const a = b.admit();
      expect(a.admitted).toBe(true);
      await clock.advance(120);
      b.record(a, i % 2 === 0 ? 'failure' : 'success');
      await clock.advance(0);
      expect(roundTrips).toBeLessThanOrEqual(i + 1);
    }
    expect(roundTrips).toBeGreaterThanOrEqual(39); // every call's news still reaches the store
  });
});
