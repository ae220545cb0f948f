/**
 * Where the engine gets time from. Injected so that tests and the simulator run on virtual time,
 * exactly and repeatably; the default uses the platform's monotonic clock and timers.
 *
 * @example
 * ```ts
 * // A clock whose sleeps return at once and move virtual time forward (a simulator's clock).
 * let t = 0;
 * const clock: Clock = { now: () => t, sleep: async (ms) => { t += ms; } };
 * ```
 */
export interface Clock {
  /** Milliseconds on a monotonic scale; only differences matter. */
  now(): number;
  /**
   * Resolves after `ms` milliseconds. When `signal` aborts first, it must reject at once with
   * `signal.reason` and release its timer and its listener.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /**
   * Optional: calls `callback` once, `ms` milliseconds from now, unless the returned function is
   * called first. The engine needs it to end an attempt that is still running when its attempt
   * timeout or the call's deadline passes. A clock without it (a simulator's clock whose sleeps
   * jump time forward, as in the example above) cannot interrupt a running attempt: the deadline
   * and the attempt timeout are then checked only between attempts.
   */
  setTimer?(ms: number, callback: () => void): () => void;
  /**
   * Optional, with `setTimer`: lets calls that start within one window of this many ms share one
   * reading of `now()` as their start. The first call reads the clock and arms a timer of
   * `coarseMs`; the calls that start before it fires count their deadline, attempt timeout and
   * elapsed time from that reading, so a call's clock may start up to one window (plus the
   * timer's lateness) before the call did, never after. Without it, every call reads `now()`.
   * The system clock has 1: a clock read costs about as much as a bare `await`.
   */
  coarseMs?: number;
}

/** A source of uniform random numbers in [0, 1), like `Math.random`. */
export type RandomSource = () => number;

/**
 * The longest delay `setTimeout` keeps: 2^31 - 1 ms (about 24.8 days). A longer one fires after
 * about 1 ms in every runtime, so longer waits are made of several timers.
 */
export const MAX_TIMER_MS = 2_147_483_647;

// Looked up once: reading the global on every call costs a few nanoseconds on the success path.
const platformPerformance = globalThis.performance;

/**
 * A real timer, chained past MAX_TIMER_MS. With `unref`, it does not hold the process open
 * (where the platform's timers can be unreferenced).
 */
function chainedTimer(ms: number, callback: () => void, unref: boolean): () => void {
  const end = platformPerformance.now() + ms;
  let timer: ReturnType<typeof setTimeout>;
  const wait = (left: number) => {
    timer = setTimeout(
      () => {
        const rest = end - platformPerformance.now();
        if (left > MAX_TIMER_MS && rest > 0) wait(rest);
        else callback();
      },
      Math.min(left, MAX_TIMER_MS),
    );
    if (unref) (timer as { unref?: () => unknown }).unref?.();
  };
  wait(ms);
  return () => clearTimeout(timer);
}

const setTimer = (ms: number, callback: () => void) => chainedTimer(ms, callback, false);
const setUnrefTimer = (ms: number, callback: () => void) => chainedTimer(ms, callback, true);

/** Sleeps on `setTimer`; an abort clears the timer and removes the listener at once. */
function sleepOn(setTimer: (ms: number, callback: () => void) => () => void): Clock['sleep'] {
  return (ms, signal) => {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        cancel();
        reject(signal?.reason);
      };
      const cancel = setTimer(ms, () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  };
}

/**
 * The default clock: `performance.now()` and `setTimeout`, available in Node, browsers, Deno,
 * Bun and workers alike. Waits longer than 2^31 - 1 ms are chained, never cut short.
 */
export const systemClock: Clock = Object.freeze({
  now: () => platformPerformance.now(),
  sleep: sleepOn(setTimer),
  setTimer,
  coarseMs: 1,
});

/**
 * The system clock's time, with timers that do not hold the process open: for an adapter whose
 * waits must not keep a process alive (stormproof/undici's `unref: true`). No `coarseMs`: its
 * calls read the clock each.
 * @internal
 */
export const unrefSystemClock: Clock = Object.freeze({
  now: systemClock.now,
  sleep: sleepOn(setUnrefTimer),
  setTimer: setUnrefTimer,
});
