// Periodic work with positive jitter: slot i runs at i * interval (counted from the Unix epoch)
// plus an offset below `jitter * interval`, fixed by the key or drawn afresh for each run.
import { checkKnownKeys, checkNumber, checkOptionsObject, show } from '../validate.js';
import { SHARED_KEYS, settle, type TimerOptions } from './options.js';
import { runSchedule, type TimerRun } from './schedule.js';
import { spreadOf } from './spread.js';

/** The options of {@link every}. Every field is optional. */
export interface EveryOptions extends TimerOptions {
  /**
   * The largest offset, as a fraction of the interval, from 0 (run exactly on the multiples of
   * the interval) up to but not including 1. Offsets are only ever added: a run is never early,
   * so a restart cannot run a task twice in one slot (node-cron's maintainers insist on the same,
   * and a vendor's documented rule caps it at 10% of the period).
   * @default 0.1
   * @example
   * ```ts
   * every(3_600_000, sync, { key: hostId, jitter: 0.5 }) // some minute in the first half hour
   * ```
   */
  jitter?: number | undefined;
}

const OWNER = 'every';
const KNOWN_KEYS = [...SHARED_KEYS, 'jitter'] as const;

/**
 * Runs `task` every `intervalMs` milliseconds of wall time, at a fixed slot: run `i` is due at
 * `i * intervalMs` after the Unix epoch plus an offset in `[0, jitter * intervalMs)`, the same
 * for a given key in every process. Runs never overlap: a run still going when the next is due
 * makes that one skip (and `onSkip` hears of it). A timer that wakes late runs once and goes
 * back to its slots: nothing drifts.
 *
 * @returns a promise that resolves once `signal` has aborted and a run still going has settled.
 *   It never rejects: a failed run goes to `onError`.
 * @throws TypeError or RangeError naming the option at fault, at once.
 * @example
 * ```ts
 * const stop = new AbortController();
 * // Each host refreshes once an hour, at its own minute within the first six.
 * every(3_600_000, ({ signal }) => refreshCache(signal), { key: hostId, signal: stop.signal });
 * ```
 */
export function every(
  intervalMs: number,
  task: (run: TimerRun) => unknown,
  options?: EveryOptions,
): Promise<void> {
  checkNumber(OWNER, 'intervalMs', intervalMs, { min: 0, minExclusive: true });
  if (typeof task !== 'function') {
    throw new TypeError(`stormproof: ${OWNER} task must be a function, got ${show(task)}`);
  }
  const o = checkOptionsObject(OWNER, options);
  checkKnownKeys(OWNER, o, KNOWN_KEYS);
  const jitter = checkNumber(OWNER, 'jitter', o.jitter === undefined ? 0.1 : o.jitter, {
    min: 0,
    max: 1,
  });
  if (jitter === 1) throw new RangeError(`stormproof: ${OWNER} jitter must be < 1, got 1`);
  const s = settle(OWNER, o);
  const widest = jitter * intervalMs;
  const fixed = s.key === undefined ? undefined : Math.floor(spreadOf(s.key) * widest);
  return runSchedule(
    {
      indexOf: (wallMs) => Math.floor(wallMs / intervalMs),
      at: (i) => i * intervalMs + (fixed ?? Math.floor(s.random() * widest)),
    },
    task,
    s,
  );
}
