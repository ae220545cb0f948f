// Concurrency limits: how many requests may run at once. A fixed number, or one found from
// latency like a TCP congestion window (Netflix concurrency-limits: Gradient2 and AIMD).
import { checkKnownKeys, checkNumber, checkOptionsObject } from '../core/validate.js';
import { type KneeOptions, kneeLimit } from './knee.js';

/** A concurrency limit fed by the requests it admitted. */
export interface ConcurrencyLimit {
  /** The number of requests that may run at once now. */
  readonly current: number;
  /**
   * One finished request: its latency, the number in flight when it started, and whether it was
   * dropped (timed out or answered "overloaded" by what it called).
   */
  sample(nowMs: number, latencyMs: number, inflight: number, dropped: boolean): void;
  /**
   * The backend's unloaded latency as the limit measures it, ms (undefined when it does not):
   * the queue's target and interval follow it unless they were given.
   */
  readonly floorMs?: number | undefined;
}

/** The concurrency limit moved. */
export interface LimitEvent {
  readonly limit: number;
  readonly previous: number;
}

/** A limit that never moves. */
export function fixedLimit(limit: number): ConcurrencyLimit {
  checkNumber('server', 'limit', limit, { min: 1, integer: true });
  return { current: limit, sample() {} };
}

/** Options of the latency-gradient limit (Netflix Gradient2). */
export interface Gradient2Options {
  /**
   * The limit before any sample (Netflix Gradient2's default).
   * @default 20
   * @example
   * ```ts
   * { kind: 'gradient2', initial: 50 }
   * ```
   */
  initial?: number | undefined;
  /**
   * The limit never goes below this (Netflix Gradient2's default).
   * @default 20
   * @example
   * ```ts
   * { kind: 'gradient2', min: 10 }
   * ```
   */
  min?: number | undefined;
  /**
   * The limit never goes above this; it is also the limit during the cold start (Netflix
   * Gradient2's default).
   * @default 200
   * @example
   * ```ts
   * { kind: 'gradient2', max: 500 }
   * ```
   */
  max?: number | undefined;
  /**
   * How much of each new estimate enters the limit (Netflix Gradient2's default).
   * @default 0.2
   * @example
   * ```ts
   * { kind: 'gradient2', smoothing: 0.1 }
   * ```
   */
  smoothing?: number | undefined;
  /**
   * How much slower than the long-run latency the recent latency may be before the limit
   * shrinks (Netflix Gradient2's `rttTolerance`).
   * @default 1.5
   * @example
   * ```ts
   * { kind: 'gradient2', tolerance: 2 }
   * ```
   */
  tolerance?: number | undefined;
  /**
   * Head room added to each estimate so the limit can grow (Netflix Gradient2's `queueSize`).
   * @default 4
   * @example
   * ```ts
   * { kind: 'gradient2', queueSize: 8 }
   * ```
   */
  queueSize?: number | undefined;
  /**
   * Samples are averaged over windows of this length (Netflix WindowedLimit: 1 s).
   * @default 1000
   * @example
   * ```ts
   * { kind: 'gradient2', windowMs: 500 }
   * ```
   */
  windowMs?: number | undefined;
  /**
   * A window needs at least this many samples to count (Netflix WindowedLimit: 10). The limit
   * holds `initial` from the first request and moves only on full windows, so a cold server is
   * protected at once and too few samples move nothing.
   * @default 10
   * @example
   * ```ts
   * { kind: 'gradient2', minSamples: 20 }
   * ```
   */
  minSamples?: number | undefined;
}

/** Options of the additive-increase, multiplicative-decrease limit (Netflix AIMD). */
export interface AimdOptions {
  /**
   * The limit before any sample.
   * @default 20
   * @example
   * ```ts
   * { kind: 'aimd', initial: 50 }
   * ```
   */
  initial?: number | undefined;
  /**
   * The limit never goes below this (Netflix AIMD's default).
   * @default 20
   * @example
   * ```ts
   * { kind: 'aimd', min: 10 }
   * ```
   */
  min?: number | undefined;
  /**
   * The limit never goes above this (Netflix AIMD's default).
   * @default 200
   * @example
   * ```ts
   * { kind: 'aimd', max: 500 }
   * ```
   */
  max?: number | undefined;
  /**
   * The factor applied on a drop; Netflix moved from 0.5 to 0.9 because 0.5 shed too hard.
   * @default 0.9
   * @example
   * ```ts
   * { kind: 'aimd', backoff: 0.8 }
   * ```
   */
  backoff?: number | undefined;
  /**
   * A request slower than this counts as a drop (Netflix AIMD's default: 5 s).
   * @default 5000
   * @example
   * ```ts
   * { kind: 'aimd', timeoutMs: 1000 }
   * ```
   */
  timeoutMs?: number | undefined;
  /**
   * Samples needed before the limit moves; until then it holds `initial`, from the first request.
   * @default 10
   * @example
   * ```ts
   * { kind: 'aimd', minSamples: 20 }
   * ```
   */
  minSamples?: number | undefined;
}

const GRADIENT2_KEYS = [
  'kind',
  'initial',
  'min',
  'max',
  'smoothing',
  'tolerance',
  'queueSize',
  'windowMs',
  'minSamples',
];
const AIMD_KEYS = ['kind', 'initial', 'min', 'max', 'backoff', 'timeoutMs', 'minSamples'];

/** Reads `value` as an option, `undefined` giving `fallback` and `null` an error naming it. */
function numberOption(
  owner: string,
  name: string,
  value: unknown,
  fallback: number,
  range: Parameters<typeof checkNumber>[3],
): number {
  return value === undefined ? fallback : checkNumber(owner, name, value, range);
}

function bounds(owner: string, o: Record<string, unknown>) {
  const min = numberOption(owner, 'min', o.min, 20, { min: 1, integer: true });
  const max = numberOption(owner, 'max', o.max, 200, { min, integer: true });
  const initial = numberOption(owner, 'initial', o.initial, Math.min(Math.max(20, min), max), {
    min,
    max,
    integer: true,
  });
  const minSamples = numberOption(owner, 'minSamples', o.minSamples, 10, { min: 1, integer: true });
  return { min, max, initial, minSamples };
}

/**
 * Netflix's Gradient2: the limit follows the ratio of the long-run latency to the recent one.
 * When recent requests are slower than `tolerance` times the long-run average, the limit
 * shrinks (never below half per window); otherwise it grows by `queueSize`.
 */
export function gradient2Limit(options: Gradient2Options = {}): ConcurrencyLimit {
  const owner = 'server limit (gradient2)';
  const o = checkOptionsObject(owner, options);
  checkKnownKeys(owner, o, GRADIENT2_KEYS);
  const { min, max, initial, minSamples } = bounds(owner, o);
  const smoothing = numberOption(owner, 'smoothing', o.smoothing, 0.2, {
    min: 0,
    max: 1,
    minExclusive: true,
  });
  const tolerance = numberOption(owner, 'tolerance', o.tolerance, 1.5, { min: 1 });
  const queueSize = numberOption(owner, 'queueSize', o.queueSize, 4, { min: 0 });
  const windowMs = numberOption(owner, 'windowMs', o.windowMs, 1000, { min: 1 });
  // The long-run latency: an exponential average over about 600 windows' worth (Netflix).
  const longWeight = 2 / (600 + 1);
  let limit = initial;
  let warm = false;
  let longRtt = 0;
  let windowStart = Number.NaN;
  let windowSum = 0;
  let windowCount = 0;
  let windowMaxInflight = 0;

  const endWindow = () => {
    const shortRtt = windowSum / windowCount;
    if (!warm) {
      warm = true;
      longRtt = shortRtt;
    } else {
      longRtt += (shortRtt - longRtt) * longWeight;
    }
    // After an overload the long average lags far above the recent one: let it come down.
    if (longRtt > 2 * shortRtt) longRtt *= 0.95;
    // Too few requests in flight to say anything about the limit ("app limited").
    if (windowMaxInflight < limit / 2) return;
    const gradient = Math.max(0.5, Math.min(1, (tolerance * longRtt) / shortRtt));
    const estimate = limit * gradient + queueSize;
    limit = Math.min(max, Math.max(min, limit * (1 - smoothing) + estimate * smoothing));
  };

  return {
    // From the first request: a server started into a storm (a restart, a deploy, a failover)
    // needs its limit most before it has measured anything.
    get current() {
      return Math.floor(limit);
    },
    sample(nowMs, latencyMs, inflight) {
      if (Number.isNaN(windowStart)) windowStart = nowMs;
      windowSum += latencyMs;
      windowCount++;
      if (inflight > windowMaxInflight) windowMaxInflight = inflight;
      if (nowMs - windowStart >= windowMs && windowCount >= minSamples) {
        endWindow();
        windowStart = nowMs;
        windowSum = 0;
        windowCount = 0;
        windowMaxInflight = 0;
      }
    },
  };
}

/**
 * Additive increase, multiplicative decrease (Netflix AIMD): +1 per sample while the server is
 * busy (at least half the limit in flight), times `backoff` on a drop or a sample slower than
 * `timeoutMs`.
 */
export function aimdLimit(options: AimdOptions = {}): ConcurrencyLimit {
  const owner = 'server limit (aimd)';
  const o = checkOptionsObject(owner, options);
  checkKnownKeys(owner, o, AIMD_KEYS);
  const { min, max, initial, minSamples } = bounds(owner, o);
  const backoff = numberOption(owner, 'backoff', o.backoff, 0.9, {
    min: 0.5,
    max: 1,
    minExclusive: false,
  });
  if (backoff >= 1)
    throw new RangeError(`stormproof: ${owner} backoff must be < 1, got ${backoff}`);
  const timeoutMs = numberOption(owner, 'timeoutMs', o.timeoutMs, 5000, {
    min: 0,
    minExclusive: true,
  });
  let limit = initial;
  let samples = 0;
  return {
    // From the first request, as Gradient2's; too few samples move nothing.
    get current() {
      return Math.floor(limit);
    },
    sample(_nowMs, latencyMs, inflight, dropped) {
      if (++samples < minSamples) return;
      if (dropped || latencyMs > timeoutMs) limit = Math.max(min, limit * backoff);
      else if (inflight >= limit / 2) limit = Math.min(max, limit + 1);
    },
  };
}

/**
 * How the concurrency limit is chosen: a number (fixed), an adaptive kind with its options, or
 * a limit of your own (an object with `current` and `sample`).
 */
export type LimitOption =
  | number
  | ({ kind: 'knee' } & KneeOptions)
  | ({ kind: 'gradient2' } & Gradient2Options)
  | ({ kind: 'aimd' } & AimdOptions)
  | ConcurrencyLimit;

/** Builds the limit an option describes. */
export function createLimit(option: LimitOption): ConcurrencyLimit {
  if (typeof option === 'number') return fixedLimit(option);
  if (option === null || typeof option !== 'object') {
    throw new TypeError(
      `stormproof: server limit must be a number or { kind: 'knee' | 'gradient2' | 'aimd' }, got ${String(option)}`,
    );
  }
  if (!('kind' in option)) {
    if (typeof option.sample === 'function') return option;
    throw new TypeError(
      "stormproof: server limit must be a number, { kind: 'knee' | 'gradient2' | 'aimd' } or an object with current and sample(), got an object without them",
    );
  }
  if (option.kind === 'knee') return kneeLimit(option);
  if (option.kind === 'gradient2') return gradient2Limit(option);
  if (option.kind === 'aimd') return aimdLimit(option);
  throw new TypeError(
    `stormproof: server limit kind must be 'knee', 'gradient2' or 'aimd', got ${JSON.stringify((option as { kind: unknown }).kind)}`,
  );
}
