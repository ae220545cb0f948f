// What `every` and `daily` share: where time comes from, how to stop, what to tell.
import { type Clock, type RandomSource, systemClock } from '../clock.js';
import { checkNumber, show } from '../validate.js';
import type { ScheduleSettings, TimerRun, TimerSkip } from './schedule.js';
import type { TimerKey } from './spread.js';

/** The options `every` and `daily` share. Every field is optional. */
export interface TimerOptions {
  /**
   * A stable name for this timer's slot: a device or host id (hashed), or a device number
   * (consecutive numbers spread evenly). The same key gives the same slot in every process and
   * after every restart, so an overload repeats in a pattern one can debug. Without a key, each
   * run gets a fresh random slot from `random`.
   * @default undefined (a fresh random slot for each run)
   * @example
   * ```ts
   * every(3_600_000, refresh, { key: os.hostname() })
   * ```
   */
  key?: TimerKey | undefined;
  /**
   * Stops the timer: no new run starts, a run still going gets the same signal, and the
   * promise the timer returned resolves once that run has settled.
   * @default undefined (runs until the process ends)
   * @example
   * ```ts
   * const stop = new AbortController();
   * every(60_000, poll, { signal: stop.signal });
   * stop.abort();
   * ```
   */
  signal?: AbortSignal | undefined;
  /**
   * Wall time in epoch milliseconds. Timers plan on the calendar (a slot is a time of day, or a
   * multiple of the interval since the Unix epoch), so they need wall time, which the
   * monotonic `Clock.now` does not give. It is read again after every wait, so a wait that
   * fires late, or a clock set forward or back, never shifts the slots.
   * @default Date.now
   * @example
   * ```ts
   * let t = Date.UTC(2026, 2, 29); // a virtual calendar for a test
   * every(1000, task, { wallClock: () => t, clock: { now: () => t, sleep: async (ms) => { t += ms; } } })
   * ```
   */
  wallClock?: (() => number) | undefined;
  /**
   * Waits through `clock.sleep`; `clock.now` is not used (see `wallClock`).
   * @default systemClock
   * @example
   * ```ts
   * every(1000, task, { clock: myVirtualClock, wallClock: () => myVirtualClock.wallNow })
   * ```
   */
  clock?: Clock | undefined;
  /**
   * Random numbers in [0, 1) for the slots of a timer without a key.
   * @default Math.random
   * @example
   * ```ts
   * every(1000, task, { random: () => 0.5 })
   * ```
   */
  random?: RandomSource | undefined;
  /**
   * Told of every run that did not happen: skipped because the previous run was still going
   * (`'overlap'`), or passed over because the timer woke too late (`'late'`).
   * @default undefined
   * @example
   * ```ts
   * every(60_000, poll, { onSkip: (s) => log.warn(`poll ${s.reason} at ${s.scheduledAt}`) })
   * ```
   */
  onSkip?: ((skip: TimerSkip) => void) | undefined;
  /**
   * Told of a run that threw or rejected (and of a hook that threw). A failed run does not
   * stop the timer. Without this hook such errors are dropped, so set it.
   * @default undefined
   * @example
   * ```ts
   * every(60_000, poll, { onError: (e, run) => log.error(e, run.scheduledAt) })
   * ```
   */
  onError?: ((error: unknown, run: TimerRun) => void) | undefined;
}

export const SHARED_KEYS = [
  'key',
  'signal',
  'wallClock',
  'clock',
  'random',
  'onSkip',
  'onError',
] as const;

function optional<T>(owner: string, name: string, value: unknown, type: string): T | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== type) {
    throw new TypeError(`stormproof: ${owner} ${name} must be a ${type}, got ${show(value)}`);
  }
  return value as T;
}

/** Checks the shared options once, when the timer is made. */
export function settle(
  owner: string,
  o: Record<string, unknown>,
): ScheduleSettings & { key: TimerKey | undefined; random: RandomSource } {
  const key = o.key;
  if (typeof key === 'number') {
    checkNumber(owner, 'key', key, { min: 0, max: Number.MAX_SAFE_INTEGER, integer: true });
  } else if (key !== undefined && typeof key !== 'string') {
    throw new TypeError(
      `stormproof: ${owner} key must be a string or a non-negative integer, got ${show(key)}`,
    );
  }
  const signal = o.signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new TypeError(`stormproof: ${owner} signal must be an AbortSignal, got ${show(signal)}`);
  }
  const clock = o.clock;
  if (clock !== undefined && (clock === null || typeof (clock as Clock).sleep !== 'function')) {
    throw new TypeError(
      `stormproof: ${owner} clock must have a sleep(ms, signal) method, got ${show(clock)}`,
    );
  }
  return {
    key,
    signal,
    clock: (clock as Clock | undefined) ?? systemClock,
    wallClock: optional(owner, 'wallClock', o.wallClock, 'function') ?? Date.now,
    random: optional(owner, 'random', o.random, 'function') ?? Math.random,
    onSkip: optional(owner, 'onSkip', o.onSkip, 'function'),
    onError: optional(owner, 'onError', o.onError, 'function'),
  };
}
