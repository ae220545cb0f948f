// The two hooks the storm simulator needs to run the real server engine on virtual time, and
// nothing of the engine's rules: `admitOrQueue` hands a queued request's decision to a callback
// instead of a promise, and the queue's timer uses the clock's `setTimer` when it has one (a
// direct callback), falling back to `sleep` (a promise) when it does not.
import { describe, expect, it } from 'vitest';
import type { Clock } from '../src/index.js';
import { type Admission, createShedder, type Ticket } from '../src/server/index.js';
import { flush, ManualClock } from './helpers/clocks.js';

const first = (): null => null;

function ticket(a: Admission | Promise<Admission> | undefined): Ticket {
  if (a === undefined || a instanceof Promise || !a.admitted) throw new Error('expected a ticket');
  return a;
}

/** A clock with timers that fire only when the test says, synchronously: no promise involved. */
class TimerOnlyClock implements Clock {
  t = 0;
  readonly timers: { at: number; fire: () => void; live: boolean }[] = [];
  constructor(private readonly lateMs = 0) {}
  now = () => this.t;
  sleep = (): Promise<void> => {
    throw new Error('the engine must use setTimer when the clock has it');
  };
  setTimer = (ms: number, callback: () => void) => {
    const timer = { at: this.t + ms + this.lateMs, fire: callback, live: true };
    this.timers.push(timer);
    return () => {
      timer.live = false;
    };
  };
  /** Moves to `to`, firing due timers in order, synchronously. */
  runTo(to: number): void {
    for (;;) {
      const due = this.timers.filter((x) => x.live && x.at <= to).sort((a, b) => a.at - b.at)[0];
      if (due === undefined) break;
      this.t = due.at;
      due.live = false;
      due.fire();
    }
    this.t = to;
  }
  get live(): number {
    return this.timers.filter((x) => x.live).length;
  }
}

describe('admitOrQueue: a queued request is settled through a callback, exactly once', () => {
  it('decides at once when it can, and settles a queued request when a ticket finishes', () => {
    const clock = new TimerOnlyClock();
    const s = createShedder({ clock, limit: 1, ramp: false, random: () => 0.5 });
    const settled: Admission[] = [];
    const running = ticket(s.admitOrQueue(first, (a) => settled.push(a)));
    expect(s.admitOrQueue(first, (a) => settled.push(a))).toBeUndefined();
    expect(s.stats().queued).toBe(1);
    clock.t = 3;
    running.finish(200);
    // Synchronously, inside finish: no promise callback to wait for.
    expect(settled).toHaveLength(1);
    expect(settled[0]?.admitted).toBe(true);
    ticket(settled[0]).finish(200);
    expect(settled).toHaveLength(1);
    expect(clock.live).toBe(0);
  });

  for (const [name, lateMs] of [
    ['an exact clock', 0],
    ['a clock that fires late', 37],
  ] as const) {
    it(`rejects a request that waited past its time from the clock's timer, on ${name}`, () => {
      const clock = new TimerOnlyClock(lateMs);
      const s = createShedder({ clock, limit: 1, ramp: false, random: () => 0.5 });
      const running = ticket(s.admitOrQueue(first, () => {}));
      const settled: Admission[] = [];
      expect(s.admitOrQueue(first, (a) => settled.push(a))).toBeUndefined();
      clock.runTo(100);
      expect(settled).toHaveLength(0); // 100 ms is allowed while not overloaded
      clock.runTo(102 + lateMs);
      expect(settled).toEqual([
        expect.objectContaining({ admitted: false, reason: 'queue-timeout', status: 503 }),
      ]);
      expect(s.stats().queued).toBe(0);
      running.finish(200);
      expect(clock.live).toBe(0); // the queue's timer is gone once the queue is empty
    });
  }

  it('still uses sleep, and leaves nothing behind, on a clock without setTimer', async () => {
    const manual = new ManualClock();
    const clock: Clock = { now: manual.now, sleep: manual.sleep };
    const s = createShedder({ clock, limit: 1, ramp: false, random: () => 0.5 });
    const running = ticket(s.admit(first));
    const waiting = s.admit(first) as Promise<Admission>;
    let answer: Admission | undefined;
    void waiting.then((a) => {
      answer = a;
    });
    expect(manual.sleeps.length).toBeGreaterThan(0);
    await manual.advance(102);
    expect(answer).toMatchObject({ admitted: false, reason: 'queue-timeout' });
    running.finish(200);
    await flush();
    expect(manual.pending).toEqual({ timers: 0, listeners: 0 });
  });
});
