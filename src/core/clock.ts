/**
 * Where the engine gets time from. Injected so that tests and the simulator run on virtual time,
 * exactly and repeatably; the default uses the platform's monotonic clock and timers.
 *
 * @example
 * ```ts
 * // A clock whose sleeps return at once and move virtual time forward.
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
}

/** A source of uniform random numbers in [0, 1), like `Math.random`. */
export type RandomSource = () => number;

/** Sleeps on a real timer; an abort clears the timer and removes the listener at once. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal === undefined) {
    return new Promise((resolve) => {
      setTimeout(resolve, ms);
    });
  }
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

// Looked up once: reading the global on every call costs a few nanoseconds on the success path.
const platformPerformance = globalThis.performance;

/**
 * The default clock: `performance.now()` and `setTimeout`, available in Node, browsers, Deno,
 * Bun and workers alike.
 */
export const systemClock: Clock = Object.freeze({
  now: () => platformPerformance.now(),
  sleep,
});
