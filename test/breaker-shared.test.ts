// Breakers sharing state through a store, on one virtual clock: the protocol that
// stormproof/redis runs as Lua scripts, here with the in-memory store, exactly.
import { describe, expect, it } from 'vitest';
import {
  BreakerRegistry,
  type BreakerStore,
  type BreakerStoreEvent,
  type Clock,
  createMemoryBreakerStore,
} from '../src/index.js';
import { flush } from './helpers/clocks.js';

function setup(options: { syncMs?: number } = {}) {
  const clock: Clock & { t: number } = { t: 0, now: () => clock.t, sleep: async () => {} };
  const inner = createMemoryBreakerStore(clock);
  const calls: string[] = [];
  let down = false;
  // Counts every store call, and fails them all while `down`.
  const through =
    <A extends unknown[], R>(name: string, method: (...args: A) => Promise<R>) =>
    (...args: A): Promise<R> => {
      calls.push(name);
      return down ? Promise.reject(new Error('down')) : method(...args);
    };
  const store: BreakerStore = {
    report: through('report', inner.report),
    claimProbe: through('claim', inner.claimProbe),
    settleProbe: through('settle', inner.settleProbe),
    control: through('control', inner.control),
  };
  const events: BreakerStoreEvent[] = [];
  const member = (draw: number) =>
    new BreakerRegistry({
      store,
      clock,
      random: () => draw,
      onStoreEvent: (e) => events.push(e),
      ...options,
    }).get('api');
  const setDown = (d: boolean) => {
    down = d;
  };
  return { clock, calls, events, member, setDown };
}

describe('breakers sharing a store', () => {
  it('closed and healthy: one report per syncMs at most, never more than one per call', async () => {
    const { clock, calls, member } = setup();
    const a = member(0);
    for (let i = 0; i < 200; i++) {
      a.record(a.admit(), 'success');
      await flush();
      clock.t += 1;
    }
    // 200 calls over 200 ms: a report at t = 0, 50, 100, 150.
    expect(calls).toEqual(['report', 'report', 'report', 'report']);
  });

  it('a trip in one process is seen by another at its first call after syncMs', async () => {
    const { clock, member } = setup();
    const a = member(0);
    const b = member(0.5);
    b.record(b.admit(), 'success'); // b's copy is fresh at t = 0
    await flush();
    for (let i = 0; i < 5; i++) a.record(a.admit(), 'failure');
    await flush();
    expect(a.state).toBe('open');
    clock.t = 49;
    b.record(b.admit(), 'success');
    await flush();
    expect(b.admit().admitted).toBe(true); // its copy is 49 ms old: not refreshed yet
    clock.t = 50;
    b.record(b.admit(), 'success'); // stale: this call's outcome brings the fleet's state
    await flush();
    // The fleet's open period (drawn by a's report: 0 -> 2500 ms) holds for b too.
    expect(b.admit()).toEqual({ admitted: false, retryAfterMs: 2450 });
  });

  it('one probe for the whole fleet per open period; its success closes every member', async () => {
    const { clock, calls, member } = setup();
    const members = [member(0), member(0), member(0)];
    for (let i = 0; i < 5; i++) members[0]!.record(members[0]!.admit(), 'failure');
    await flush();
    for (const m of members.slice(1)) {
      m.record(m.admit(), 'success'); // learn the trip
      await flush();
    }
    expect(members.map((m) => m.admit().admitted)).toEqual([false, false, false]);
    clock.t = 2500;
    calls.length = 0;
    // Every member asks for the probe; the store grants one.
    expect(members.map((m) => m.admit())).toEqual(
      members.map(() => ({ admitted: false, retryAfterMs: 0 })),
    );
    await flush();
    expect(calls).toEqual(['claim', 'claim', 'claim']);
    const answers = members.map((m) => m.admit());
    expect(answers.filter((a) => a.admitted && a.probe)).toHaveLength(1);
    const prober = members[answers.findIndex((a) => a.admitted)]!;
    prober.record({ admitted: true, probe: true }, 'success');
    await flush();
    expect(prober.state).toBe('closed');
    // The others were told to wait for the probe's lease, but ask again after syncMs at most.
    clock.t += 50;
    for (const m of members) m.admit();
    await flush();
    expect(members.map((m) => m.state)).toEqual(['closed', 'closed', 'closed']);
  });

  it('a failed probe reopens the key for every member, for longer', async () => {
    const { clock, member } = setup();
    const a = member(0);
    const b = member(0);
    for (let i = 0; i < 5; i++) a.record(a.admit(), 'failure');
    await flush();
    clock.t = 2500;
    a.admit();
    await flush();
    const probe = a.admit();
    expect(probe).toEqual({ admitted: true, probe: true });
    a.record(probe, 'failure');
    await flush();
    b.record(b.admit(), 'success'); // b's copy is stale: this outcome brings the fleet's state
    await flush();
    expect(a.admit()).toEqual({ admitted: false, retryAfterMs: 5000 }); // level 1: 10 s ceiling
    expect(b.admit()).toEqual({ admitted: false, retryAfterMs: 5000 });
  });

  it('when the store fails: decides alone, says so once, and takes the fleet state back later', async () => {
    const { clock, events, member, setDown } = setup();
    const a = member(0);
    setDown(true);
    a.record(a.admit(), 'success');
    await flush();
    expect(events).toEqual([{ type: 'unavailable', key: 'api', error: new Error('down') }]);
    for (let i = 0; i < 5; i++) a.record(a.admit(), 'failure'); // a local trip, no store call
    expect(a.state).toBe('open');
    clock.t += 2500;
    // A second has passed since the failure: the store is asked for the probe once more, fails,
    // and the breaker sends a local probe (no lease) instead.
    expect(a.admit()).toEqual({ admitted: false, retryAfterMs: 0 });
    await flush();
    expect(events).toHaveLength(1); // still the same outage: said once
    expect(a.admit()).toEqual({ admitted: true, probe: true });
    a.record({ admitted: true, probe: true }, 'success');
    expect(a.state).toBe('closed');
    setDown(false);
    clock.t += 1000; // the store is tried again after a second
    a.record(a.admit(), 'success');
    await flush();
    expect(events.map((e) => e.type)).toEqual(['unavailable', 'available']);
    expect(a.shared).toBe(true);
  });

  it('isolate and reset reach every member', async () => {
    const { clock, member } = setup();
    const a = member(0);
    const b = member(0);
    await a.isolate();
    clock.t = 100;
    b.record(b.admit(), 'success');
    await flush();
    expect(b.admit()).toEqual({ admitted: false, retryAfterMs: undefined });
    await a.reset();
    expect(a.admit().admitted).toBe(true);
  });

  it('the memory store follows the same ratio rule as the Lua script', async () => {
    const clock: Clock & { t: number } = { t: 0, now: () => clock.t, sleep: async () => {} };
    const store = createMemoryBreakerStore(clock);
    const rules = {
      consecutiveFailures: 5,
      failureRatio: 0.5,
      windowMs: 10_000,
      minimumCalls: 10,
      openMs: 1000,
      maxOpenMs: 300_000,
      successesToClose: 1,
    };
    const report = (failures: number, successes: number) => ({
      reset: false,
      failures,
      successes,
      draw: 0,
    });
    expect((await store.report('k', rules, report(5, 4))).state).toBe('closed'); // 9 calls
    clock.t = 10_000; // the first bucket slides out
    expect((await store.report('k', rules, report(4, 5))).state).toBe('closed');
    expect((await store.report('k', rules, report(1, 0))).state).toBe('open'); // 5 of 10
  });
});
