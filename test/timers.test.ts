// Jittered timers on a virtual calendar: slots exact to the millisecond, a clock that fires
// late, overlap, abort, daylight-saving days in a named zone.
import { describe, expect, it } from 'vitest';
import { type Clock, daily, every, spreadOf, type TimerSkip } from '../src/index.js';
import { ManualClock } from './helpers/clocks.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const START = Date.UTC(2026, 0, 1); // a Thursday, midnight UTC

/** A calendar on a manual clock; `lateMs` makes every wait fire that much late, as real timers do. */
function calendar(start = START, lateMs = 0) {
  const manual = new ManualClock();
  manual.t = start;
  const clock: Clock = {
    now: manual.now,
    sleep: (ms, signal) => manual.sleep(ms + lateMs, signal),
  };
  return { manual, clock, wallClock: () => manual.t };
}

describe('spreadOf', () => {
  it('is a fraction in [0, 1) fixed by the key', () => {
    for (const key of ['a', 'device-1', '', 'ü', 0, 1, 2 ** 40, Number.MAX_SAFE_INTEGER]) {
      const x = spreadOf(key);
      expect(x).toBeGreaterThanOrEqual(0);
      expect(x).toBeLessThan(1);
      expect(spreadOf(key)).toBe(x);
    }
    expect(spreadOf('device-1')).not.toBe(spreadOf('device-2'));
  });

  it('numbered devices fill a window almost exactly evenly; hashed names like random draws', () => {
    const perSecond = (keys: Array<string | number>) => {
      const bins = new Array<number>(1200).fill(0);
      for (const k of keys) bins[Math.floor(spreadOf(k) * 1200)]!++;
      return bins;
    };
    const numbered = perSecond(Array.from({ length: 10_000 }, (_, i) => i));
    expect(Math.max(...numbered)).toBeLessThanOrEqual(10); // uniform: 8.33 a second
    const hashed = perSecond(Array.from({ length: 120_000 }, (_, i) => `device-${i}`));
    // 100 a second expected; a fair die over 1200 faces stays within about 5 sigma.
    expect(Math.max(...hashed)).toBeLessThan(150);
    expect(Math.min(...hashed)).toBeGreaterThan(50);
  });
});

describe('every', () => {
  it('runs at i * interval plus a fixed offset below 10% of it, the same after a restart', async () => {
    const { manual, clock, wallClock } = calendar();
    const runs: number[] = [];
    const stop = new AbortController();
    const done = every(HOUR, (r) => void runs.push(r.scheduledAt), {
      key: 'host-7',
      clock,
      wallClock,
      signal: stop.signal,
    });
    await manual.advance(5 * HOUR);
    const offset = Math.floor(spreadOf('host-7') * 0.1 * HOUR);
    expect(offset).toBeGreaterThan(0);
    expect(offset).toBeLessThan(0.1 * HOUR);
    expect(runs).toEqual([0, 1, 2, 3, 4].map((i) => START + i * HOUR + offset));
    stop.abort();
    await done;
    expect(manual.pending).toEqual({ timers: 0, listeners: 0 });

    // A restart right after a run: the same slots, and the run just done is not repeated.
    const again: number[] = [];
    const stop2 = new AbortController();
    const done2 = every(HOUR, (r) => void again.push(r.scheduledAt), {
      key: 'host-7',
      clock,
      wallClock,
      signal: stop2.signal,
    });
    await manual.advance(2 * HOUR);
    expect(again).toEqual([5, 6].map((i) => START + i * HOUR + offset));
    stop2.abort();
    await done2;
  });

  it('a clock that fires late runs late but never drifts', async () => {
    const { manual, clock, wallClock } = calendar(START, 37);
    const started: number[] = [];
    const scheduled: number[] = [];
    const stop = new AbortController();
    const done = every(
      1000,
      (r) => {
        started.push(manual.t);
        scheduled.push(r.scheduledAt);
      },
      { clock, wallClock, signal: stop.signal, jitter: 0 },
    );
    await manual.advance(100_037);
    expect(scheduled).toEqual(Array.from({ length: 100 }, (_, i) => START + (i + 1) * 1000));
    expect(started).toEqual(scheduled.map((t) => t + 37)); // late by one firing, not 100 of them
    stop.abort();
    await done;
  });

  it('a wake after several slots runs once and says how many it skipped', async () => {
    const { manual, clock, wallClock } = calendar(START, 3500);
    const scheduled: number[] = [];
    const skips: TimerSkip[] = [];
    const stop = new AbortController();
    const done = every(1000, (r) => void scheduled.push(r.scheduledAt), {
      clock,
      wallClock,
      signal: stop.signal,
      jitter: 0,
      onSkip: (s) => skips.push(s),
    });
    await manual.advance(4600);
    // Due at +1 s, woken at +4.5 s: slots 2, 3 and 4 are gone; the next wait aims at +5 s.
    expect(scheduled).toEqual([START + 1000]);
    expect(skips).toEqual([{ reason: 'late', scheduledAt: START + 1000, skipped: 3 }]);
    stop.abort();
    await done;
  });

  it('a run still going makes the next ones skip, and says so', async () => {
    const { manual, clock, wallClock } = calendar();
    const scheduled: number[] = [];
    const skips: TimerSkip[] = [];
    const stop = new AbortController();
    const done = every(
      1000,
      async (r) => {
        scheduled.push(r.scheduledAt);
        if (scheduled.length === 1) await manual.sleep(2500);
      },
      { clock, wallClock, signal: stop.signal, jitter: 0, onSkip: (s) => skips.push(s) },
    );
    await manual.advance(5000);
    expect(scheduled).toEqual([1000, 4000, 5000].map((t) => START + t));
    expect(skips).toEqual([
      { reason: 'overlap', scheduledAt: START + 2000, skipped: 1 },
      { reason: 'overlap', scheduledAt: START + 3000, skipped: 1 },
    ]);
    stop.abort();
    await done;
  });

  it('without a key, each run draws a fresh offset from random', async () => {
    const { manual, clock, wallClock } = calendar();
    const draws = [0.5, 0.25, 0.99];
    const scheduled: number[] = [];
    const stop = new AbortController();
    const done = every(1000, (r) => void scheduled.push(r.scheduledAt), {
      clock,
      wallClock,
      signal: stop.signal,
      random: () => draws.shift() ?? 0,
    });
    await manual.advance(3100);
    // Offsets are at most 10% of the interval: 0.5 -> 50 ms, 0.25 -> 25, 0.99 -> 99, 0 -> 0.
    expect(scheduled).toEqual([START + 50, START + 1025, START + 2099, START + 3000]);
    stop.abort();
    await done;
  });

  it('abort: no run after it, the running one gets the signal, nothing left behind', async () => {
    const { manual, clock, wallClock } = calendar();
    const stop = new AbortController();
    let seen: AbortSignal | undefined;
    let settled = false;
    const done = every(
      1000,
      (r) =>
        new Promise<void>((resolve) => {
          seen = r.signal;
          r.signal.addEventListener('abort', () => resolve(), { once: true });
        }),
      { clock, wallClock, signal: stop.signal, jitter: 0 },
    ).then(() => {
      settled = true;
    });
    await manual.advance(1000);
    expect(seen?.aborted).toBe(false);
    stop.abort();
    await done;
    expect(settled).toBe(true);
    expect(seen?.aborted).toBe(true);
    expect(manual.pending).toEqual({ timers: 0, listeners: 0 });
    // Already aborted: never runs.
    const ran: number[] = [];
    await every(1000, (r) => void ran.push(r.scheduledAt), {
      clock,
      wallClock,
      signal: stop.signal,
    });
    expect(ran).toEqual([]);
  });

  it('a run that throws goes to onError and the timer goes on', async () => {
    const { manual, clock, wallClock } = calendar();
    const errors: unknown[] = [];
    const stop = new AbortController();
    let n = 0;
    const done = every(
      1000,
      () => {
        n++;
        if (n === 1) throw new Error('sync');
        if (n === 2) return Promise.reject(new Error('async'));
      },
      {
        clock,
        wallClock,
        signal: stop.signal,
        jitter: 0,
        onError: (e) => errors.push((e as Error).message),
      },
    );
    await manual.advance(3000);
    expect(n).toBe(3);
    expect(errors).toEqual(['sync', 'async']);
    stop.abort();
    await done;
  });

  it('bad options fail at once, naming the option', () => {
    const task = () => {};
    expect(() => every(0, task)).toThrow('stormproof: every intervalMs must be > 0, got 0');
    expect(() => every(null as never, task)).toThrow(/every intervalMs must be a finite number/);
    expect(() => every(1000, task, { jitter: 1 })).toThrow('every jitter must be < 1, got 1');
    expect(() => every(1000, task, { jitter: null as never })).toThrow(/every jitter must be/);
    expect(() => every(1000, task, { key: -1 })).toThrow(/every key must be >= 0/);
    expect(() => every(1000, task, { key: {} as never })).toThrow(/every key must be a string/);
    expect(() => every(1000, task, { jiter: 0.1 } as never)).toThrow(/did you mean jitter/);
    expect(() => every(1000, 'task' as never)).toThrow(/every task must be a function/);
    expect(() => every(1000, task, { signal: null as never })).toThrow(/every signal must be/);
    expect(() => every(1000, task, { wallClock: null as never })).toThrow(
      /every wallClock must be a function, got null/,
    );
  });
});

/** Runs a daily timer over `days` days from `start` and returns the wall time of each run. */
async function dailyRuns(
  window: string,
  options: { key?: string | number; timeZone?: string },
  start: number,
  days: number,
  lateMs = 0,
) {
  const { manual, clock, wallClock } = calendar(start, lateMs);
  const runs: number[] = [];
  const stop = new AbortController();
  const done = daily(window, (r) => void runs.push(r.scheduledAt), {
    ...options,
    clock,
    wallClock,
    signal: stop.signal,
  });
  await manual.advance(days * DAY);
  stop.abort();
  await done;
  expect(manual.pending).toEqual({ timers: 0, listeners: 0 });
  return runs;
}

/** Local wall time as "YYYY-MM-DD HH:MM:SS" (Sweden's format is ISO's). */
const localTime = (timeZone: string) =>
  new Intl.DateTimeFormat('sv-SE', { timeZone, dateStyle: 'short', timeStyle: 'medium' });

describe('daily', () => {
  it("once a day at the key's own second in the window, in UTC", async () => {
    const runs = await dailyRuns('05:50-06:10', { key: 'device-1' }, START, 5);
    const at = START + 5 * HOUR + 50 * 60_000 + Math.floor(spreadOf('device-1') * 20 * 60_000);
    expect(runs).toEqual([0, 1, 2, 3, 4].map((d) => at + d * DAY));
  });

  it('a clock that fires late still runs once a day, on the same slots', async () => {
    const runs = await dailyRuns('05:50-06:10', { key: 'device-1' }, START, 5, 61_000);
    const at = START + 5 * HOUR + 50 * 60_000 + Math.floor(spreadOf('device-1') * 20 * 60_000);
    expect(runs).toEqual([0, 1, 2, 3, 4].map((d) => at + d * DAY));
  });

  it('a window in the hour Berlin skips (29 March 2026) runs once, an hour on', async () => {
    // 02:00 to 03:00 does not exist that night; a key at 02:30 runs at 03:30 CEST.
    const key = Array.from({ length: 200 }, (_, i) => `d${i}`).find(
      (k) => Math.abs(spreadOf(k) - 0.5) < 0.01,
    )!;
    const runs = await dailyRuns(
      '02:00-03:00',
      { key, timeZone: 'Europe/Berlin' },
      Date.UTC(2026, 2, 27, 12),
      3,
    );
    const local = runs.map((t) => localTime('Europe/Berlin').format(t));
    const m = Math.floor(spreadOf(key) * 60)
      .toString()
      .padStart(2, '0');
    expect(local.map((s) => s.slice(0, 16))).toEqual([
      `2026-03-28 02:${m}`,
      `2026-03-29 03:${m}`,
      `2026-03-30 02:${m}`,
    ]);
  });

  it('a window in the hour Berlin repeats (25 October 2026) runs once, at its first occurrence', async () => {
    const runs = await dailyRuns(
      '02:00-03:00',
      { key: 'device-1', timeZone: 'Europe/Berlin' },
      Date.UTC(2026, 9, 23, 12),
      3,
    );
    expect(runs).toHaveLength(3);
    const m = Math.floor(spreadOf('device-1') * 60);
    // 02:mm CEST is 00:mm UTC on the 25th (the second 02:mm, CET, would be 01:mm UTC).
    expect(runs).toEqual(
      [Date.UTC(2026, 9, 24, 0, m), Date.UTC(2026, 9, 25, 0, m), Date.UTC(2026, 9, 26, 1, m)].map(
        (t) => t + (Math.floor(spreadOf('device-1') * HOUR) % 60_000),
      ),
    );
  });

  it('every day of a year in New York: one run per local day, inside the window', async () => {
    const runs = await dailyRuns(
      '05:50-06:10',
      { key: 42, timeZone: 'America/New_York' },
      START,
      365,
    );
    expect(runs).toHaveLength(365);
    const fmt = new Intl.DateTimeFormat('sv-SE', {
      timeZone: 'America/New_York',
      dateStyle: 'short',
      timeStyle: 'medium',
    });
    const local = runs.map((t) => fmt.format(t));
    expect(new Set(local.map((s) => s.slice(0, 10))).size).toBe(365);
    const times = new Set(local.map((s) => s.slice(11)));
    expect(times.size).toBe(1); // the same local second every day, DST or not
    expect([...times][0]! >= '05:50:00' && [...times][0]! < '06:10:00').toBe(true);
  });

  it('a window across midnight', async () => {
    const runs = await dailyRuns('23:50-00:10', { key: 'n' }, START, 3);
    const at = START - 10 * 60_000 + Math.floor(spreadOf('n') * 20 * 60_000);
    expect(runs).toEqual([1, 2, 3].map((d) => at + d * DAY).filter((t) => t < START + 3 * DAY));
  });

  it('bad windows and zones fail at once', () => {
    const task = () => {};
    expect(() => daily('5:50-06:10', task)).toThrow(
      'stormproof: daily window must be "HH:MM-HH:MM" or "HH:MM" (24-hour, seconds optional), got "5:50-06:10"',
    );
    expect(() => daily('24:00', task)).toThrow(/daily window must be/);
    expect(() => daily(null as never, task)).toThrow(/daily window must be .* got null/);
    expect(() => daily('06:00', task, { timeZone: 'Mars/Olympus' })).toThrow(
      'stormproof: daily timeZone must be an IANA time zone name such as "Europe/Berlin", got "Mars/Olympus"',
    );
    expect(() => daily('06:00', task, { timeZone: null as never })).toThrow(
      /daily timeZone must be a string, got null/,
    );
  });
});
