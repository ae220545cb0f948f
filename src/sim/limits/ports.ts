// Faithful ports of the anchors' adaptive concurrency limiters, for `stormproof sim limits`: Netflix
// VegasLimit, Envoy's adaptive-concurrency gradient controller, go-zero's adaptive shedder and
// failsafe-go's adaptive limiter, each behind stormproof's `ConcurrencyLimit` so the simulator can
// run them against a new limiter on virtual time. Not part of the public server API.
//
// Rules of the ports:
// - Every default and rule names the file (and function) it came from. Versions read:
//   Netflix/concurrency-limits 78a74b9 (2026-01-12); envoyproxy/envoy 149521d (gradient_controller.cc
//   and .h, adaptive_concurrency.proto, the filter's docs) with libcircllhist py-0.3.2 (the version
//   Envoy's bazel/repository_locations.bzl pins); zeromicro/go-zero 11f2109 (2026-08-15);
//   failsafe-go/failsafe-go 5759a5e (2026-08-16) with influxdata/tdigest v0.0.1 (its go.mod's).
// - Time comes only from `nowMs`, randomness only from an injected `random` in [0, 1). Latencies are
//   rounded to whole nanoseconds first, as the originals' monotonic clocks count them, so that
//   comparisons and bucket edges are exact.
// - Nothing here schedules anything: what the originals do on a timer happens when the first sample
//   at or after the timer's deadline arrives.

import { checkKnownKeys, checkNumber, checkOptionsObject, show } from '../../core/validate.js';
import type { ConcurrencyLimit } from '../../server/limits.js';

const NS_PER_MS = 1_000_000;

/** Milliseconds as whole nanoseconds, the unit of Java's `System.nanoTime`, Go's and Envoy's clocks. */
function toNs(ms: number): number {
  return Math.round(ms * NS_PER_MS);
}

/** Reads a number option: `undefined` gives the fallback; anything else must pass the check. */
function numberOption(
  owner: string,
  o: Record<string, unknown>,
  name: string,
  fallback: number,
  range: Parameters<typeof checkNumber>[3],
): number {
  const value = o[name];
  return value === undefined ? fallback : checkNumber(owner, name, value, range);
}

/** Reads an optional number option (no default: `undefined` stays `undefined`). */
function optionalNumber(
  owner: string,
  o: Record<string, unknown>,
  name: string,
  range: Parameters<typeof checkNumber>[3],
): number | undefined {
  const value = o[name];
  return value === undefined ? undefined : checkNumber(owner, name, value, range);
}

function functionOption<T extends (...args: never[]) => unknown>(
  owner: string,
  o: Record<string, unknown>,
  name: string,
  required: boolean,
): T | undefined {
  const value = o[name];
  if (value === undefined && !required) return undefined;
  if (typeof value !== 'function') {
    throw new TypeError(`stormproof: ${owner} ${name} must be a function, got ${show(value)}`);
  }
  return value as T;
}

/** Java's `(int)` cast of a double: toward zero, NaN to 0, clamped to the int range. */
function javaInt(x: number): number {
  if (Number.isNaN(x)) return 0;
  return Math.max(-2147483648, Math.min(2147483647, Math.trunc(x)));
}

// ---------------------------------------------------------------------------------------------
// Netflix VegasLimit
// ---------------------------------------------------------------------------------------------

/** Options of the Netflix VegasLimit port. */
export interface VegasPortOptions {
  /**
   * Uniform in [0, 1): draws the probe jitter (Netflix: `ThreadLocalRandom.nextDouble(0.5, 1)`).
   * @default (required)
   * @example
   * ```ts
   * vegasPort({ random: rng.random.bind(rng) })
   * ```
   */
  random: () => number;
  /**
   * The limit before any sample (VegasLimit.java, `Builder.initialLimit = 20`).
   * @default 20
   * @example
   * ```ts
   * vegasPort({ random, initialLimit: 50 })
   * ```
   */
  initialLimit?: number | undefined;
  /**
   * The limit never goes above this (VegasLimit.java, `Builder.maxConcurrency = 1000`).
   * @default 1000
   * @example
   * ```ts
   * vegasPort({ random, maxConcurrency: 200 })
   * ```
   */
  maxConcurrency?: number | undefined;
  /**
   * How much of each new limit is taken (VegasLimit.java, `Builder.smoothing = 1.0`: all of it).
   * @default 1
   * @example
   * ```ts
   * vegasPort({ random, smoothing: 0.5 })
   * ```
   */
  smoothing?: number | undefined;
  /**
   * rtt_noload is re-probed every `probeMultiplier × limit` samples, times a jitter in [0.5, 1)
   * (VegasLimit.java, `Builder.probeMultiplier = 30`).
   * @default 30
   * @example
   * ```ts
   * vegasPort({ random, probeMultiplier: 60 })
   * ```
   */
  probeMultiplier?: number | undefined;
}

/** The Vegas port, with its internals exposed for plots and tests. */
export interface VegasPort extends ConcurrencyLimit {
  /** The unrounded limit (VegasLimit's `estimatedLimit`). */
  readonly estimatedLimit: number;
  /** The no-load latency in ms that the queue is estimated against; 0 before the first sample. */
  readonly rttNoLoadMs: number;
}

const VEGAS_KEYS = ['random', 'initialLimit', 'maxConcurrency', 'smoothing', 'probeMultiplier'];

/**
 * Netflix's `Log10RootIntFunction` (functions/Log10RootIntFunction.java:13-19, 35): `max(1, (int) log10(t))`
 * from a table below 1000, plain `(int) log10(t)` from 1000 on. So it is 1 up to 99, 2 up to 999.
 */
export function netflixLog10(t: number): number {
  // The table, `lookup[i] = max(1, (int) log10(i))`, covers 0-999; log10(0) casts to
  // Integer.MIN_VALUE, so its entry 0 is 1 as well.
  if (t < 1000) return t <= 0 ? 1 : Math.max(1, javaInt(Math.log10(t)));
  return javaInt(Math.log10(t));
}

/**
 * Netflix concurrency-limits' `VegasLimit`, the default limit of every Netflix limiter builder,
 * as `AbstractLimiter` drives it: one update per finished request (not windowed), fed the latency,
 * the in-flight count when the request started (itself included) and whether it was dropped.
 *
 * The queue is estimated as `ceil(limit × (1 − rtt_noload / rtt))`, with `rtt_noload` the lowest
 * latency seen since the last probe. Thresholds use log10 of the limit: at most log10 queued grows
 * the limit by 6·log10, under 3·log10 by log10, over 6·log10 shrinks it by log10; a drop shrinks it
 * by log10; nothing moves while fewer than half the limit were in flight.
 *
 * Source: concurrency-limits-core/src/main/java/com/netflix/concurrency/limits/limit/VegasLimit.java
 * (`_update`, `updateEstimatedLimit`), limiter/AbstractLimiter.java (`createListener`, lines
 * 159-185: the in-flight count is taken when the request starts), Netflix/concurrency-limits 78a74b9.
 *
 * @example
 * ```ts
 * const rng = new PythonRandom(1);
 * const vegas = vegasPort({ random: () => rng.random() });
 * vegas.sample(10, 10, 20, false); // the first sample only sets rtt_noload
 * vegas.current; // 20
 * ```
 */
export function vegasPort(options: VegasPortOptions): VegasPort {
  const owner = 'sim limit (vegas port)';
  const o = checkOptionsObject(owner, options);
  checkKnownKeys(owner, o, VEGAS_KEYS);
  const random = functionOption<() => number>(owner, o, 'random', true)!;
  // VegasLimit.Builder defaults (VegasLimit.java, lines 48-58).
  const initialLimit = numberOption(owner, o, 'initialLimit', 20, { min: 1, integer: true });
  // Netflix only logs a warning when initialLimit > maxConcurrency (Builder.build), so we do not
  // refuse it either: the first update clamps the limit into range.
  const maxLimit = numberOption(owner, o, 'maxConcurrency', 1000, { min: 1, integer: true });
  const smoothing = numberOption(owner, o, 'smoothing', 1.0, { min: 0, max: 1 });
  const probeMultiplier = numberOption(owner, o, 'probeMultiplier', 30, { min: 1, integer: true });

  let estimatedLimit = initialLimit;
  // AbstractLimit keeps the int limit that limiters read; it starts at the initial limit.
  let limit = initialLimit;
  // rtt_noload starts at 0, which means "none yet" (VegasLimit.java, `rtt_noload = 0`).
  let rttNoLoad = 0;
  let probeCount = 0;
  // ThreadLocalRandom.nextDouble(0.5, 1), drawn once at construction and after every probe
  // (VegasLimit.resetProbeJitter, VegasLimit.java:240-242).
  const drawJitter = () => 0.5 + 0.5 * random();
  let probeJitter = drawJitter();

  // VegasLimit.updateEstimatedLimit (VegasLimit.java:279-321).
  const updateEstimatedLimit = (
    rtt: number,
    noLoad: number,
    inflight: number,
    didDrop: boolean,
  ) => {
    const est = estimatedLimit;
    const queueSize = javaInt(Math.ceil(est * (1 - noLoad / rtt)));
    let newLimit: number;
    const log10 = netflixLog10(javaInt(est));
    if (didDrop) {
      // Any drop (a timeout, or "overloaded" from below) shrinks the limit (decreaseFunc).
      newLimit = est - log10;
    } else if (inflight * 2 < est) {
      // Too few in flight to say anything: no upward drift while the limit is not used.
      return javaInt(est);
    } else {
      // alphaFunc = 3·log10, betaFunc = 6·log10, thresholdFunc = log10 (Builder defaults).
      const alpha = 3 * log10;
      const beta = 6 * log10;
      const threshold = log10;
      if (queueSize <= threshold) {
        // No queue to speak of: grow fast, by beta.
        newLimit = est + beta;
      } else if (queueSize < alpha) {
        // Still a small queue: increaseFunc, + log10.
        newLimit = est + log10;
      } else if (queueSize > beta) {
        // Queueing: decreaseFunc, − log10.
        newLimit = est - log10;
      } else {
        // Between alpha and beta: the sweet spot, no change.
        return javaInt(est);
      }
    }
    newLimit = Math.max(1, Math.min(maxLimit, newLimit));
    newLimit = (1 - smoothing) * est + smoothing * newLimit;
    estimatedLimit = newLimit;
    return javaInt(newLimit);
  };

  // VegasLimit._update (VegasLimit.java:249-277): one call per finished request.
  const update = (rtt: number, inflight: number, didDrop: boolean): number => {
    probeCount++;
    // shouldProbe() (VegasLimit.java:244-246): every probeJitter × probeMultiplier × limit samples, take this latency as the
    // new rtt_noload, whatever it is, and change nothing else.
    if (probeJitter * probeMultiplier * estimatedLimit <= probeCount) {
      probeJitter = drawJitter();
      probeCount = 0;
      rttNoLoad = rtt;
      return javaInt(estimatedLimit);
    }
    // A new minimum only moves rtt_noload (even on a drop).
    if (rttNoLoad === 0 || rtt < rttNoLoad) {
      rttNoLoad = rtt;
      return javaInt(estimatedLimit);
    }
    return updateEstimatedLimit(rtt, rttNoLoad, inflight, didDrop);
  };

  return {
    get current() {
      return limit;
    },
    get estimatedLimit() {
      return estimatedLimit;
    },
    get rttNoLoadMs() {
      return rttNoLoad / NS_PER_MS;
    },
    sample(_nowMs, latencyMs, inflight, dropped) {
      const rtt = toNs(latencyMs);
      // VegasLimit._update throws IllegalArgumentException on rtt <= 0; so do we.
      if (!(rtt > 0)) {
        throw new RangeError(
          `stormproof: ${owner} latency must be > 0 (VegasLimit refuses rtt <= 0), got ${show(latencyMs)}`,
        );
      }
      // AbstractLimit.onSample (AbstractLimit.java:33-35): setLimit(_update(...)).
      limit = update(rtt, inflight, dropped);
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Envoy adaptive concurrency: gradient controller
// ---------------------------------------------------------------------------------------------

/**
 * The part of libcircllhist (py-0.3.2, src/circllhist.c) that Envoy's controller uses: values
 * binned with two significant decimal digits, and `hist_approx_quantile` (type-1 quantiles placed
 * inside their bin at k/(n+1) of its width). Envoy inserts whole microseconds.
 */
class Circllhist {
  // Bin key: exp * 100 + val (val in 10-99), or -1 for the zero bin. Values are never negative.
  readonly #bins = new Map<number, number>();
  #count = 0;

  get count(): number {
    return this.#count;
  }

  clear(): void {
    this.#bins.clear();
    this.#count = 0;
  }

  /** `hist_insert` of a non-negative value, through `double_to_hist_bucket`. */
  insert(value: number): void {
    let key = -1;
    if (value > 0) {
      let exp = Math.floor(Math.log10(value));
      let d = value / 10 ** exp;
      d *= 10;
      // circllhist allows a 1e-13 margin so that 0.11 lands in bin 11, not 10.
      let val = Math.floor(d + 1e-13);
      if (val === 100) {
        val = 10;
        exp++;
      }
      key = exp * 100 + val;
    }
    this.#bins.set(key, (this.#bins.get(key) ?? 0) + 1);
    this.#count++;
  }

  /** `hist_approx_quantile` for one quantile q in [0, 1] (type 1). */
  quantile(q: number): number {
    const keys = [...this.#bins.keys()].sort((a, b) => a - b);
    const qn = this.#count * q;
    let lower = 0;
    let upper = 0;
    const track = (index: number) => {
      lower = upper;
      upper = lower + this.#bins.get(keys[index]!)!;
    };
    // Start at the first bin and walk until it holds the q·n-th sample.
    let i = 0;
    track(0);
    while (i < keys.length - 1 && upper < qn) {
      i++;
      track(i);
    }
    const key = keys[i]!;
    if (key === -1) return 0; // the zero bin has no width
    const exp = Math.floor(key / 100);
    const val = key % 100;
    const left = (val / 10) * 10 ** exp; // hist_bucket_to_double
    const width = 10 ** exp / 10; // hist_bucket_to_double_bin_width
    const n = this.#bins.get(key)!;
    if (qn === lower) return left + (1 / (n + 1)) * width;
    const k = Math.ceil(qn - lower);
    return left + (k / (n + 1)) * width;
  }
}

/** Options of the Envoy gradient controller port (names follow adaptive_concurrency.proto). */
export interface EnvoyGradientPortOptions {
  /**
   * Uniform in [0, 1): draws the minRTT window's start jitter (Envoy: `random_.random() % range`).
   * @default (required)
   * @example
   * ```ts
   * envoyGradientPort({ random: rng.random.bind(rng) })
   * ```
   */
  random: () => number;
  /**
   * When the controller is created, in the caller's ms: its first minRTT window and its first
   * update interval start here.
   * @default 0
   * @example
   * ```ts
   * envoyGradientPort({ random, startMs: 5000 })
   * ```
   */
  startMs?: number | undefined;
  /**
   * `concurrency_limit_params.concurrency_update_interval`: the limit is recomputed once per
   * interval. Required in the proto (no default); 100 ms is the docs' example (`0.1s`).
   * @default 100
   * @example
   * ```ts
   * envoyGradientPort({ random, concurrencyUpdateIntervalMs: 250 })
   * ```
   */
  concurrencyUpdateIntervalMs?: number | undefined;
  /**
   * `concurrency_limit_params.max_concurrency_limit` (proto and gradient_controller.cc: 1000).
   * @default 1000
   * @example
   * ```ts
   * envoyGradientPort({ random, maxConcurrencyLimit: 200 })
   * ```
   */
  maxConcurrencyLimit?: number | undefined;
  /**
   * `concurrency_limit_params.min_concurrency_limit`: the floor of the computed limit. Unset (the
   * default) it is `minConcurrency` and minRTT windows pin the limit; set, they leave it alone.
   * @default undefined
   * @example
   * ```ts
   * envoyGradientPort({ random, minConcurrencyLimit: 1 })
   * ```
   */
  minConcurrencyLimit?: number | undefined;
  /**
   * `sample_aggregate_percentile`, in percent (proto and gradient_controller.cc: p50).
   * @default 50
   * @example
   * ```ts
   * envoyGradientPort({ random, sampleAggregatePercentile: 90 })
   * ```
   */
  sampleAggregatePercentile?: number | undefined;
  /**
   * `min_rtt_calc_params.interval`: time between minRTT measurements. Required in the proto unless
   * `fixed_value` is set; 60 s is the docs' example (`interval: 60s`).
   * @default 60000
   * @example
   * ```ts
   * envoyGradientPort({ random, minRttIntervalMs: 10_000 })
   * ```
   */
  minRttIntervalMs?: number | undefined;
  /**
   * `min_rtt_calc_params.fixed_value`: a minRTT to use instead of measuring one (no default).
   * @default undefined
   * @example
   * ```ts
   * envoyGradientPort({ random, fixedMinRttMs: 10 })
   * ```
   */
  fixedMinRttMs?: number | undefined;
  /**
   * `min_rtt_calc_params.request_count`: samples per minRTT measurement (proto: 50).
   * @default 50
   * @example
   * ```ts
   * envoyGradientPort({ random, requestCount: 100 })
   * ```
   */
  requestCount?: number | undefined;
  /**
   * `min_rtt_calc_params.jitter`, in percent of the interval, added to each minRTT window's start
   * (proto: 15 %).
   * @default 15
   * @example
   * ```ts
   * envoyGradientPort({ random, jitterPercent: 0 })
   * ```
   */
  jitterPercent?: number | undefined;
  /**
   * `min_rtt_calc_params.min_concurrency`: the limit while minRTT is measured (proto: 3).
   * @default 3
   * @example
   * ```ts
   * envoyGradientPort({ random, minConcurrency: 5 })
   * ```
   */
  minConcurrency?: number | undefined;
  /**
   * `min_rtt_calc_params.buffer`, in percent of minRTT added before comparing (proto: 25 %).
   * @default 25
   * @example
   * ```ts
   * envoyGradientPort({ random, bufferPercent: 10 })
   * ```
   */
  bufferPercent?: number | undefined;
}

/** The Envoy port, with its internals exposed for plots and tests. */
export interface EnvoyGradientPort extends ConcurrencyLimit {
  /** Whether a minRTT measurement is under way (`inMinRTTSamplingWindow()`). */
  readonly measuringMinRtt: boolean;
  /** The last minRTT in ms (whole microseconds, as Envoy keeps it); NaN before the first. */
  readonly minRttMs: number;
  /** The last sampleRTT in ms (whole microseconds); NaN before the first update. */
  readonly sampleRttMs: number;
}

const ENVOY_KEYS = [
  'random',
  'startMs',
  'concurrencyUpdateIntervalMs',
  'maxConcurrencyLimit',
  'minConcurrencyLimit',
  'sampleAggregatePercentile',
  'minRttIntervalMs',
  'fixedMinRttMs',
  'requestCount',
  'jitterPercent',
  'minConcurrency',
  'bufferPercent',
];

/**
 * C++ `std::min` and `std::max`: unlike Math.min and Math.max they return the first argument when a
 * NaN makes `<` false (a 0 µs sampleRTT over a 0 µs minRTT gives gradient 2, not NaN).
 */
function stdMin(a: number, b: number): number {
  if (b < a) return b;
  return a;
}
function stdMax(a: number, b: number): number {
  if (a < b) return b;
  return a;
}

/**
 * Envoy's adaptive-concurrency gradient controller. The limit starts pinned at `minConcurrency`
 * (3) while minRTT is measured as the p50 of the first `requestCount` (50) latencies; then, once
 * per update interval, the p50 of that interval's latencies (sampleRTT) moves it:
 * `gradient = clamp(minRTT × 1.25 / sampleRTT, 0.5, 2)`,
 * `limit = trunc(limit × gradient + sqrt(limit × gradient))`, clamped to [3, 1000]. minRTT is
 * measured again every interval plus up to 15 % jitter, and at once after 5 updates in a row that
 * leave the limit at its floor. Samples from requests started before the last minRTT window began
 * are ignored. Latencies go through a circllhist as whole microseconds, so quantiles are those of
 * its two-digit bins (p50 of fifty 10 ms samples is 10.490 ms).
 *
 * Source: source/extensions/filters/http/adaptive_concurrency/controller/gradient_controller.cc
 * and .h, api/envoy/extensions/filters/http/adaptive_concurrency/v3/adaptive_concurrency.proto,
 * envoyproxy/envoy 149521d; libcircllhist py-0.3.2.
 *
 * @example
 * ```ts
 * const rng = new PythonRandom(1);
 * const envoy = envoyGradientPort({ random: () => rng.random() });
 * envoy.current; // 3: pinned while the first minRTT is measured
 * ```
 */
export function envoyGradientPort(options: EnvoyGradientPortOptions): EnvoyGradientPort {
  const owner = 'sim limit (envoy gradient port)';
  const o = checkOptionsObject(owner, options);
  checkKnownKeys(owner, o, ENVOY_KEYS);
  const random = functionOption<() => number>(owner, o, 'random', true)!;
  const startMs = numberOption(owner, o, 'startMs', 0, {});
  // Durations are whole milliseconds in Envoy (DurationUtil::durationToMilliseconds).
  const updateIntervalMs = numberOption(owner, o, 'concurrencyUpdateIntervalMs', 100, {
    min: 1,
    integer: true,
  });
  // GradientControllerConfig's constructor: PROTOBUF_GET_WRAPPED_OR_DEFAULT(..., 1000).
  const maxLimit = numberOption(owner, o, 'maxConcurrencyLimit', 1000, { min: 1, integer: true });
  // ..., sample_aggregate_percentile, 50); the runtime getter clamps to [0, 100] and divides by 100.
  const percentile = numberOption(owner, o, 'sampleAggregatePercentile', 50, { min: 0, max: 100 });
  const minRttIntervalMs = numberOption(owner, o, 'minRttIntervalMs', 60_000, {
    min: 1,
    integer: true,
  });
  const fixedMinRttMs = optionalNumber(owner, o, 'fixedMinRttMs', { min: 1, integer: true });
  // ..., request_count, 50); ..., jitter, 15); ..., min_concurrency, 3); ..., buffer, 25).
  const requestCount = numberOption(owner, o, 'requestCount', 50, { min: 1, integer: true });
  const jitterPct = numberOption(owner, o, 'jitterPercent', 15, { min: 0, max: 100 }) / 100;
  const minConcurrency = numberOption(owner, o, 'minConcurrency', 3, { min: 1, integer: true });
  const bufferPct = numberOption(owner, o, 'bufferPercent', 25, { min: 0, max: 100 }) / 100;
  // min_concurrency_limit defaults to min_concurrency; when set, minRTT windows stop pinning the
  // limit (gradient_controller.h: minConcurrencyLimit(), minRTTCalcAdjustsConcurrency()).
  const configuredFloor = optionalNumber(owner, o, 'minConcurrencyLimit', {
    min: 1,
    integer: true,
  });
  const floor = configuredFloor ?? minConcurrency;
  const windowsPinLimit = configuredFloor === undefined;
  // isMinRTTSamplingEnabled(): a fixed value turns the measurement off.
  const samplingEnabled = fixedMinRttMs === undefined;
  const q = percentile / 100;
  const updateIntervalNs = updateIntervalMs * NS_PER_MS;

  const hist = new Circllhist();
  // concurrency_limit_(config_.minConcurrencyLimit()).
  let limit = floor;
  // Non-zero while a minRTT window is open: the limit to restore at its end.
  let deferredLimit = 0;
  let minRttNs = Number.NaN;
  let sampleRttNs = Number.NaN;
  let consecutiveAtFloor = 0;
  let epochNs = Number.NEGATIVE_INFINITY;
  // The two timers, as deadlines in ns (undefined: not armed).
  let minRttTimerNs: number | undefined;
  let sampleResetTimerNs: number | undefined;

  const inWindow = () => deferredLimit > 0;

  // updateConcurrencyLimit(): counts updates that keep the limit at its floor outside a minRTT
  // window; the 5th in a row fires the minRTT timer at once (PR #10647).
  const setLimit = (newLimit: number, atNs: number) => {
    const old = limit;
    limit = newLimit;
    if (!inWindow() && old === floor && newLimit === floor) consecutiveAtFloor++;
    else consecutiveAtFloor = 0;
    if (consecutiveAtFloor >= 5 && samplingEnabled) minRttTimerNs = atNs;
  };

  // enterMinRTTSamplingWindow(): remember the limit, pin it, drop the samples so far, and start a
  // new epoch: requests sent before it are not sampled (PR #11579).
  const enterMinRttWindow = (atNs: number) => {
    if (inWindow()) return;
    deferredLimit = limit;
    if (windowsPinLimit) setLimit(minConcurrency, atNs);
    hist.clear();
    epochNs = atNs;
  };

  // processLatencySamplesAndClear(): the quantile, cut to whole microseconds (static_cast<int>).
  const aggregateNs = () => {
    const us = Math.trunc(hist.quantile(q));
    hist.clear();
    return us * 1000;
  };

  // applyJitter(): interval + random() % ceil(interval × jitter), in whole ms.
  const jitteredMs = (intervalMs: number) => {
    if (jitterPct === 0) return intervalMs;
    const range = Math.ceil(intervalMs * jitterPct);
    return intervalMs + Math.floor(random() * range);
  };

  // updateMinRTT(): once the window holds request_count samples, set minRTT, restore the limit and
  // arm both timers from now.
  const updateMinRtt = (nowNs: number) => {
    if (!samplingEnabled) return;
    if (!inWindow() || hist.count < requestCount) return;
    minRttNs = aggregateNs();
    if (windowsPinLimit) setLimit(deferredLimit, nowNs);
    deferredLimit = 0;
    minRttTimerNs = nowNs + jitteredMs(minRttIntervalMs) * NS_PER_MS;
    sampleResetTimerNs = nowNs + updateIntervalNs;
  };

  // calculateNewLimit().
  const newLimit = () => {
    const bufferedMinRtt = minRttNs + minRttNs * bufferPct;
    const rawGradient = bufferedMinRtt / sampleRttNs;
    const gradient = stdMax(0.5, stdMin(2.0, rawGradient));
    const scaled = limit * gradient;
    const headroom = Math.sqrt(scaled);
    // The sum is stored in a uint32_t: truncated.
    const next = Math.trunc(scaled + headroom);
    return stdMax(floor, stdMin(maxLimit, next));
  };

  // The sample-reset timer's callback: in a minRTT window it gives up without re-arming (updateMinRTT
  // re-arms it); otherwise resetSampleWindow() and re-arm one interval later.
  const onSampleResetTimer = (atNs: number) => {
    if (inWindow()) {
      sampleResetTimerNs = undefined;
      return;
    }
    if (hist.count > 0) {
      sampleRttNs = aggregateNs();
      setLimit(newLimit(), atNs);
    }
    sampleResetTimerNs = atNs + updateIntervalNs;
  };

  // Fires, in deadline order, every timer due by `nowNs`. A timer fires at its own deadline, so the
  // update cadence is Envoy's; but a minRTT window's epoch is `nowNs`, the moment this port's limit
  // actually drops, so that requests admitted under the old limit are the ones ignored.
  const runTimers = (nowNs: number) => {
    for (;;) {
      const reset = sampleResetTimerNs;
      const minRtt = minRttTimerNs;
      const resetDue = reset !== undefined && reset <= nowNs;
      const minRttDue = minRtt !== undefined && minRtt <= nowNs;
      if (!resetDue && !minRttDue) return;
      // On a tie the sample-reset timer goes first (Envoy's dispatcher gives no order).
      if (resetDue && (!minRttDue || reset <= minRtt)) {
        onSampleResetTimer(reset);
      } else {
        minRttTimerNs = undefined;
        enterMinRttWindow(nowNs);
      }
    }
  };

  // The constructor: measure minRTT first, unless it is fixed; the sample timer starts either way.
  const startNs = toNs(startMs);
  if (samplingEnabled) {
    enterMinRttWindow(startNs);
  } else {
    minRttNs = fixedMinRttMs! * NS_PER_MS;
    setLimit(floor, startNs);
  }
  sampleResetTimerNs = startNs + updateIntervalNs;

  return {
    get current() {
      return limit;
    },
    get measuringMinRtt() {
      return inWindow();
    },
    get minRttMs() {
      return minRttNs / NS_PER_MS;
    },
    get sampleRttMs() {
      return sampleRttNs / NS_PER_MS;
    },
    // recordLatencySample(rq_send_time). Envoy samples every request that completes, whatever its
    // status (a stream reset cancels the sample instead), so `dropped` changes nothing here; the
    // in-flight count is Envoy's own business (`num_rq_outstanding_`), not the controller's input.
    sample(nowMs, latencyMs) {
      const nowNs = toNs(nowMs);
      runTimers(nowNs);
      const latencyNs = toNs(latencyMs);
      // The request started at now − latency; one sent before the current epoch is not sampled.
      if (nowNs - latencyNs < epochNs) return;
      // duration_cast<microseconds>: truncated.
      hist.insert(Math.trunc(latencyNs / 1000));
      updateMinRtt(nowNs);
    },
  };
}

// ---------------------------------------------------------------------------------------------
// go-zero adaptive shedder (its estimator, without the CPU gate)
// ---------------------------------------------------------------------------------------------

/** Options of the go-zero adaptive shedder port. */
export interface GoZeroPortOptions {
  /**
   * When the shedder is created, in the caller's ms: its buckets are aligned to this instant
   * (go-zero's RollingWindow starts `lastTime` at `timex.Now()`).
   * @default 0
   * @example
   * ```ts
   * goZeroPort({ startMs: 5000 })
   * ```
   */
  startMs?: number | undefined;
  /**
   * The rolling window's length (adaptiveshedder.go, `defaultWindow = time.Second * 5`).
   * @default 5000
   * @example
   * ```ts
   * goZeroPort({ windowMs: 10_000 })
   * ```
   */
  windowMs?: number | undefined;
  /**
   * How many buckets the window holds (adaptiveshedder.go, `defaultBuckets = 50`).
   * @default 50
   * @example
   * ```ts
   * goZeroPort({ buckets: 100 })
   * ```
   */
  buckets?: number | undefined;
  /**
   * Reads the caller's number of requests in flight now, after the finishing request has left
   * (go-zero's own `flying` counter, which feeds `avgFlying`). Without it the port takes the
   * in-flight count the finishing request started with, less itself: an estimate.
   * @default undefined
   * @example
   * ```ts
   * goZeroPort({ inflightNow: () => server.inflight })
   * ```
   */
  inflightNow?: (() => number) | undefined;
}

/** The go-zero port, with its internals exposed for plots and tests. */
export interface GoZeroPort extends ConcurrencyLimit {
  /** `maxFlight()`: max(1, maxPass × minRt × windowScale), as of the last sample. */
  readonly maxFlight: number;
  /** The EMA of in-flight requests, updated at each completion (β = 0.9). */
  readonly avgFlying: number;
}

const GO_ZERO_KEYS = ['startMs', 'windowMs', 'buckets', 'inflightNow'];

/**
 * go-zero's `RollingWindow` (core/collection/rollingwindow.go) with `IgnoreCurrentBucket`, in whole
 * nanoseconds. One window holds both the shedder's counters: `passCounter` and `rtCounter` are
 * always added to together, so the pass count of a bucket is the rt counter's `Count`.
 */
class RollingWindow {
  readonly #sums: number[];
  readonly #counts: number[];
  #offset = 0;
  #lastTime: number;

  constructor(
    readonly size: number,
    readonly intervalNs: number,
    startNs: number,
  ) {
    this.#sums = new Array<number>(size).fill(0);
    this.#counts = new Array<number>(size).fill(0);
    this.#lastTime = startNs;
  }

  // span(): whole intervals since the last bucket began (Go's integer division truncates), or
  // `size` when that is out of range.
  #span(nowNs: number): number {
    const offset = Math.trunc((nowNs - this.#lastTime) / this.intervalNs);
    return offset >= 0 && offset < this.size ? offset : this.size;
  }

  // updateOffset(): reset the buckets passed over and realign lastTime to the interval grid.
  #updateOffset(nowNs: number): void {
    const span = this.#span(nowNs);
    if (span <= 0) return;
    for (let i = 0; i < span; i++) {
      const b = (this.#offset + i + 1) % this.size;
      this.#sums[b] = 0;
      this.#counts[b] = 0;
    }
    this.#offset = (this.#offset + span) % this.size;
    this.#lastTime = nowNs - ((nowNs - this.#lastTime) % this.intervalNs);
  }

  add(nowNs: number, value: number): void {
    this.#updateOffset(nowNs);
    this.#sums[this.#offset]! += value;
    this.#counts[this.#offset]!++;
  }

  // Reduce(): every bucket still in the window except the current one (partial data).
  reduce(nowNs: number, fn: (sum: number, count: number) => void): void {
    const span = this.#span(nowNs);
    const diff = span === 0 ? this.size - 1 : this.size - span;
    if (diff <= 0) return;
    const start = (this.#offset + span + 1) % this.size;
    for (let i = 0; i < diff; i++) {
      const b = (start + i) % this.size;
      fn(this.#sums[b]!, this.#counts[b]!);
    }
  }
}

/**
 * go-zero's adaptive shedder (`load.NewAdaptiveShedder`) without its CPU gate: its Little's-law
 * estimate `maxFlight = max(1, maxPass × minRt × windowScale)`, where maxPass is the most passes in
 * one 100 ms bucket (at least 1), minRt the lowest bucket-average latency in whole ms (1000 with no
 * data) and windowScale = buckets per second / 1000, over 50 buckets (5 s), the current bucket left
 * out. go-zero sheds only when both `flying` and `avgFlying` (an EMA, β 0.9, updated at each
 * completion) exceed maxFlight × overloadFactor.
 *
 * How that maps onto `current` (admit while in flight < current): the CPU gate is taken as always
 * open, at exactly the threshold, so `overloadFactor` = (1000 − 900) / (1000 − 900) = 1. go-zero
 * admits while `flying <= maxFlight` or `avgFlying <= maxFlight`; for a whole in-flight count the
 * first is `inflight < floor(maxFlight) + 1`, so `current` is `floor(maxFlight) + 1` while
 * avgFlying exceeds maxFlight and `Infinity` otherwise (the shedder does not shed at all then).
 * `maxFlight` and `avgFlying` are exposed for plots. Both are taken as of the last sample: the
 * interface gives `current` no clock.
 *
 * Source: core/load/adaptiveshedder.go (`maxFlight`, `maxPass`, `minRt`, `highThru`, `addFlying`,
 * `promise.Pass/Fail`), core/collection/rollingwindow.go, rest/handler/sheddinghandler.go,
 * zeromicro/go-zero 11f2109.
 *
 * @example
 * ```ts
 * let inflight = 0;
 * const goZero = goZeroPort({ inflightNow: () => inflight });
 * goZero.maxFlight; // 10: 1 pass × 1000 ms × 0.01 before any data
 * ```
 */
export function goZeroPort(options: GoZeroPortOptions = {}): GoZeroPort {
  const owner = 'sim limit (go-zero port)';
  const o = checkOptionsObject(owner, options);
  checkKnownKeys(owner, o, GO_ZERO_KEYS);
  const startMs = numberOption(owner, o, 'startMs', 0, {});
  // defaultWindow = 5 s, defaultBuckets = 50 (adaptiveshedder.go, lines 19-20).
  const windowMs = numberOption(owner, o, 'windowMs', 5000, { min: 0, minExclusive: true });
  const buckets = numberOption(owner, o, 'buckets', 50, { min: 1, integer: true });
  const inflightNow = functionOption<() => number>(owner, o, 'inflightNow', false);
  // bucketDuration := window / buckets, a Duration: whole nanoseconds, truncated.
  const bucketNs = Math.trunc(toNs(windowMs) / buckets);
  if (bucketNs < 1) {
    throw new RangeError(`stormproof: ${owner} windowMs / buckets must be at least 1 ns`);
  }
  // windowScale = float64(time.Second) / float64(bucketDuration) / millisecondsPerSecond.
  const windowScale = 1e9 / bucketNs / 1000;
  // defaultMinRt = float64(time.Second / time.Millisecond): 1000 ms when no bucket has data.
  const defaultMinRt = 1000;
  // flyingBeta = 0.9. Go folds the constant 1 - flyingBeta exactly, so the other weight is the
  // double nearest 0.1, not 1 - 0.9 computed in doubles.
  const flyingBeta = 0.9;
  const oneMinusBeta = 0.1;

  const window = new RollingWindow(buckets, bucketNs, toNs(startMs));
  let avgFlying = 0;
  let lastNs = toNs(startMs);
  let maxFlight = 0;

  const computeMaxFlight = () => {
    // maxPass(): starts at 1, the largest bucket.
    let maxPass = 1;
    // minRt(): starts at 1000, the smallest rounded bucket average (math.Round: half away from
    // zero, the same as Math.round for these positive values).
    let minRt = defaultMinRt;
    window.reduce(lastNs, (sum, count) => {
      if (count > maxPass) maxPass = count;
      if (count <= 0) return;
      const avg = Math.round(sum / count);
      if (avg < minRt) minRt = avg;
    });
    // mathx.AtLeast(maxFlight, 1).
    return Math.max(maxPass * minRt * windowScale, 1);
  };
  maxFlight = computeMaxFlight();

  return {
    get current() {
      // highThru() sheds only when avgFlying > maxFlight and flying > maxFlight (overloadFactor 1).
      return avgFlying > maxFlight ? Math.floor(maxFlight) + 1 : Number.POSITIVE_INFINITY;
    },
    get maxFlight() {
      return maxFlight;
    },
    get avgFlying() {
      return avgFlying;
    },
    sample(nowMs, latencyMs, inflight, dropped) {
      const nowNs = toNs(nowMs);
      // addFlying(-1): the EMA takes the in-flight count after this request left.
      const flying = inflightNow ? inflightNow() : Math.max(0, inflight - 1);
      avgFlying = avgFlying * flyingBeta + flying * oneMinusBeta;
      // promise.Pass() records the latency, ceiled to whole ms, and one pass; Fail() (what the
      // REST handler calls on a 503) records nothing.
      if (!dropped) window.add(nowNs, Math.ceil(toNs(latencyMs) / NS_PER_MS));
      lastNs = nowNs;
      maxFlight = computeMaxFlight();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// failsafe-go adaptive limiter
// ---------------------------------------------------------------------------------------------

interface Centroid {
  mean: number;
  weight: number;
}

/**
 * influxdata/tdigest v0.0.1 (tdigest.go, centroid.go), the version failsafe-go's go.mod pins:
 * merging t-digest with the arcsine scale. Only Add, Reset and Quantile are ported. Exported for
 * the tests.
 */
export class TDigest {
  readonly #compression: number;
  readonly #maxProcessed: number;
  readonly #maxUnprocessed: number;
  #processed: Centroid[] = [];
  #unprocessed: Centroid[] = [];
  #cumulative: number[] = [];
  #processedWeight = 0;
  #unprocessedWeight = 0;
  #min = Number.MAX_VALUE;
  #max = -Number.MAX_VALUE;

  constructor(compression: number) {
    this.#compression = compression;
    // processedSize(0, c) = 2·ceil(c); unprocessedSize(0, c) = 8·ceil(c).
    this.#maxProcessed = 2 * Math.ceil(compression);
    this.#maxUnprocessed = 8 * Math.ceil(compression);
  }

  reset(): void {
    this.#processed = [];
    this.#unprocessed = [];
    this.#cumulative = [];
    this.#processedWeight = 0;
    this.#unprocessedWeight = 0;
    this.#min = Number.MAX_VALUE;
    this.#max = -Number.MAX_VALUE;
  }

  // Add → AddCentroid: buffer, and merge once either list is over its size.
  add(x: number, w: number): void {
    if (Number.isNaN(x)) return;
    this.#unprocessed.push({ mean: x, weight: w });
    this.#unprocessedWeight += w;
    if (
      this.#processed.length > this.#maxProcessed ||
      this.#unprocessed.length > this.#maxUnprocessed
    ) {
      this.#process();
    }
  }

  #integratedQ(k: number): number {
    const c = this.#compression;
    return (Math.sin((Math.min(k, c) * Math.PI) / c - Math.PI / 2) + 1) / 2;
  }

  #integratedLocation(q: number): number {
    return (this.#compression * (Math.asin(2 * q - 1) + Math.PI / 2)) / Math.PI;
  }

  #process(): void {
    if (this.#unprocessed.length === 0 && this.#processed.length <= this.#maxProcessed) return;
    // Go's sort.Sort is not stable; this sort is. Centroids that tie on the mean may then merge in
    // another order, which can only move weight between centroids of the same mean.
    const all = [...this.#unprocessed, ...this.#processed].sort((a, b) => a.mean - b.mean);
    const first = all[0]!;
    const processed: Centroid[] = [{ mean: first.mean, weight: first.weight }];
    this.#processedWeight += this.#unprocessedWeight;
    this.#unprocessedWeight = 0;
    let soFar = first.weight;
    let limit = this.#processedWeight * this.#integratedQ(1.0);
    for (let i = 1; i < all.length; i++) {
      const c = all[i]!;
      const projected = soFar + c.weight;
      if (projected <= limit) {
        soFar = projected;
        // Centroid.Add: the weighted running mean.
        const last = processed[processed.length - 1]!;
        if (last.weight !== 0) {
          last.weight += c.weight;
          last.mean += (c.weight * (c.mean - last.mean)) / last.weight;
        } else {
          last.weight = c.weight;
          last.mean = c.mean;
        }
      } else {
        const k1 = this.#integratedLocation(soFar / this.#processedWeight);
        limit = this.#processedWeight * this.#integratedQ(k1 + 1.0);
        soFar += c.weight;
        processed.push({ mean: c.mean, weight: c.weight });
      }
    }
    this.#processed = processed;
    this.#min = Math.min(this.#min, processed[0]!.mean);
    this.#max = Math.max(this.#max, processed[processed.length - 1]!.mean);
    // updateCumulative(): each centroid's midpoint in cumulative weight, then the total.
    const cumulative: number[] = [];
    let prev = 0;
    for (const c of processed) {
      cumulative.push(prev + c.weight / 2);
      prev += c.weight;
    }
    cumulative.push(prev);
    this.#cumulative = cumulative;
    this.#unprocessed = [];
  }

  quantile(q: number): number {
    this.#process();
    const p = this.#processed;
    if (q < 0 || q > 1 || p.length === 0) return Number.NaN;
    if (p.length === 1) return p[0]!.mean;
    const index = q * this.#processedWeight;
    if (index <= p[0]!.weight / 2) {
      return this.#min + ((2 * index) / p[0]!.weight) * (p[0]!.mean - this.#min);
    }
    // sort.Search: the first cumulative entry at or above the index.
    const cum = this.#cumulative;
    let lower = 0;
    while (lower < cum.length && !(cum[lower]! >= index)) lower++;
    if (lower + 1 !== cum.length) {
      const z1 = index - cum[lower - 1]!;
      const z2 = cum[lower]! - index;
      return weightedAverage(p[lower - 1]!.mean, z2, p[lower]!.mean, z1);
    }
    const z1 = index - this.#processedWeight - p[lower - 1]!.weight / 2;
    const z2 = p[lower - 1]!.weight / 2 - z1;
    return weightedAverage(p[p.length - 1]!.mean, z1, this.#max, z2);
  }
}

function weightedAverage(x1: number, w1: number, x2: number, w2: number): number {
  if (x1 <= x2) return weightedAverageSorted(x1, w1, x2, w2);
  return weightedAverageSorted(x2, w2, x1, w1);
}

function weightedAverageSorted(x1: number, w1: number, x2: number, w2: number): number {
  const x = (x1 * w1 + x2 * w2) / (w1 + w2);
  return Math.max(x1, Math.min(x, x2));
}

/** failsafe-go's util.MovingAverage (internal/util/average.go): a plain mean while warming up, then an EMA. */
class MovingAverage {
  readonly #warmup: number;
  readonly #factor: number;
  #count = 0;
  #value = 0;
  #sum = 0;

  constructor(age: number, warmupSamples: number) {
    this.#warmup = warmupSamples;
    this.#factor = 2 / (age + 1);
  }

  add(value: number): number {
    if (this.#count < this.#warmup) {
      this.#count++;
      this.#sum += value;
      this.#value = this.#sum / this.#count;
    } else {
      // util.Smooth: old·(1 − f) + new·f.
      this.#value = this.#value * (1 - this.#factor) + value * this.#factor;
    }
    return this.#value;
  }
}

/** failsafe-go's util.MovingMedian (internal/util/median.go): the value itself until the window is nearly full. */
class MovingMedian {
  readonly #values: number[];
  #index = 0;
  #size = 0;

  constructor(size: number) {
    this.#values = new Array<number>(size).fill(0);
  }

  add(value: number): number {
    const n = this.#values.length;
    this.#values[this.#index] = value;
    this.#index = (this.#index + 1) % n;
    if (this.#size < n - 1) {
      this.#size++;
      return value;
    }
    const sorted = [...this.#values].sort((a, b) => a - b);
    return sorted[Math.floor(n / 2)]!;
  }
}

/** failsafe-go's util.MovingSum (internal/util/windows.go): zeros are not added at all. */
class MovingSum {
  readonly #samples: number[];
  size = 0;
  #index = 0;
  #sumY = 0;
  #sumSquares = 0;

  constructor(capacity: number) {
    this.#samples = new Array<number>(capacity).fill(0);
  }

  add(value: number): { old: number; full: boolean } {
    let old = 0;
    let full = false;
    if (value !== 0) {
      if (this.size === this.#samples.length) {
        full = true;
        old = this.#samples[this.#index]!;
        this.#sumY -= old;
        this.#sumSquares -= old * old;
      } else {
        this.size++;
      }
      this.#samples[this.#index] = value;
      this.#sumY += value;
      this.#sumSquares += value * value;
      this.#index = (this.#index + 1) % this.#samples.length;
    }
    return { old, full };
  }

  // CalculateCV(): NaN below 2 samples, for a negative variance or a zero mean.
  cv(): { cv: number; mean: number; variance: number } {
    if (this.size < 2) return { cv: Number.NaN, mean: Number.NaN, variance: Number.NaN };
    const mean = this.#sumY / this.size;
    const variance = this.#sumSquares / this.size - mean * mean;
    if (variance < 0 || mean === 0) {
      return { cv: Number.NaN, mean: Number.NaN, variance: Number.NaN };
    }
    return { cv: Math.sqrt(variance) / mean, mean, variance };
  }
}

/** failsafe-go's util.CorrelationWindow (internal/util/windows.go): Pearson's r over two MovingSums. */
class CorrelationWindow {
  readonly #warmup: number;
  readonly #x: MovingSum;
  readonly #y: MovingSum;
  #sumXY = 0;

  constructor(capacity: number, warmupSamples: number) {
    this.#warmup = warmupSamples;
    this.#x = new MovingSum(capacity);
    this.#y = new MovingSum(capacity);
  }

  /** Returns [correlation, cvX, cvY]. */
  add(x: number, y: number): [number, number, number] {
    if (!Number.isFinite(x) && !Number.isNaN(x)) return [0, 0, 0];
    if (!Number.isFinite(y) && !Number.isNaN(y)) return [0, 0, 0];
    const { old: oldX, full } = this.#x.add(x);
    const { old: oldY } = this.#y.add(y);
    const sx = this.#x.cv();
    const sy = this.#y.cv();
    // The product sum drops the oldest pair only when x's window was full, and always adds the new
    // pair, zeros included (which the sums themselves skip): as in the original.
    if (full) this.#sumXY -= oldX * oldY;
    this.#sumXY += x * y;
    if (Number.isNaN(sx.cv) || Number.isNaN(sy.cv)) return [0, 0, 0];
    if (this.#x.size < this.#warmup) return [0, 0, 0];
    // Measurements that vary by less than 1 % say nothing.
    const minCV = 0.01;
    if (sx.cv < minCV || sy.cv < minCV) return [0, sx.cv, sy.cv];
    const covariance = this.#sumXY / this.#x.size - sx.mean * sy.mean;
    const correlation = covariance / (Math.sqrt(sx.variance) * Math.sqrt(sy.variance));
    return [correlation, sx.cv, sy.cv];
  }
}

/**
 * failsafe-go's util.Log10Func(factor): factor × (1 below 100, 2 below 1000, else (int) log10).
 */
function failsafeLog10(factor: number, limit: number): number {
  if (limit < 100) return factor * 1;
  if (limit < 1000) return factor * 2;
  return factor * Math.trunc(Math.log10(limit));
}

/** Options of the failsafe-go adaptive limiter port (names follow its Builder). */
export interface FailsafeGoPortOptions {
  /**
   * When the limiter is built, in the caller's ms: its first update may come right after
   * (`nextUpdateTime: time.Now()` in Build).
   * @default 0
   * @example
   * ```ts
   * failsafeGoPort({ startMs: 5000 })
   * ```
   */
  startMs?: number | undefined;
  /**
   * The limit never goes below this (NewBuilder: `minLimit: 1`).
   * @default 1
   * @example
   * ```ts
   * failsafeGoPort({ minLimit: 2 })
   * ```
   */
  minLimit?: number | undefined;
  /**
   * The limit never goes above this (NewBuilder: `maxLimit: 200`).
   * @default 200
   * @example
   * ```ts
   * failsafeGoPort({ maxLimit: 1000 })
   * ```
   */
  maxLimit?: number | undefined;
  /**
   * The limit before any update (NewBuilder: `initialLimit: 20`).
   * @default 20
   * @example
   * ```ts
   * failsafeGoPort({ initialLimit: 10 })
   * ```
   */
  initialLimit?: number | undefined;
  /**
   * The limit stays under this multiple of the window's max in flight (NewBuilder:
   * `maxLimitFactor: 5.0`).
   * @default 5
   * @example
   * ```ts
   * failsafeGoPort({ maxLimitFactor: 2 })
   * ```
   */
  maxLimitFactor?: number | undefined;
  /**
   * The shortest recent window (NewBuilder: `recentWindowMinDuration: time.Second`).
   * @default 1000
   * @example
   * ```ts
   * failsafeGoPort({ recentWindowMinMs: 500 })
   * ```
   */
  recentWindowMinMs?: number | undefined;
  /**
   * The longest recent window (NewBuilder: `recentWindowMaxDuration: 30 * time.Second`).
   * @default 30000
   * @example
   * ```ts
   * failsafeGoPort({ recentWindowMaxMs: 10_000 })
   * ```
   */
  recentWindowMaxMs?: number | undefined;
  /**
   * Samples a recent window needs (NewBuilder: `recentWindowMinSamples: 50`).
   * @default 50
   * @example
   * ```ts
   * failsafeGoPort({ recentWindowMinSamples: 20 })
   * ```
   */
  recentWindowMinSamples?: number | undefined;
  /**
   * The quantile of recent latencies compared (NewBuilder: `recentQuantile: 0.9`).
   * @default 0.9
   * @example
   * ```ts
   * failsafeGoPort({ recentQuantile: 0.5 })
   * ```
   */
  recentQuantile?: number | undefined;
  /**
   * The baseline's moving-average age, in windows (NewBuilder: `baselineWindowAge: 10`).
   * @default 10
   * @example
   * ```ts
   * failsafeGoPort({ baselineWindowAge: 20 })
   * ```
   */
  baselineWindowAge?: number | undefined;
  /**
   * Windows kept by the two correlation windows (NewBuilder: `correlationWindowSize: 50`).
   * @default 50
   * @example
   * ```ts
   * failsafeGoPort({ correlationWindowSize: 20 })
   * ```
   */
  correlationWindowSize?: number | undefined;
  /**
   * Reads the caller's number of requests in flight now, after the finishing request has left;
   * the port adds it back, since failsafe-go releases the permit only after updating (its
   * `semaphore.IsFull()` is the "overloaded" signal). Without it the port takes the in-flight
   * count the finishing request started with: an estimate.
   * @default undefined
   * @example
   * ```ts
   * failsafeGoPort({ inflightNow: () => server.inflight })
   * ```
   */
  inflightNow?: (() => number) | undefined;
}

/** The failsafe-go port, with its internals exposed for plots and tests. */
export interface FailsafeGoPort extends ConcurrencyLimit {
  /** The unrounded limit. */
  readonly limit: number;
}

const FAILSAFE_KEYS = [
  'startMs',
  'minLimit',
  'maxLimit',
  'initialLimit',
  'maxLimitFactor',
  'recentWindowMinMs',
  'recentWindowMaxMs',
  'recentWindowMinSamples',
  'recentQuantile',
  'baselineWindowAge',
  'correlationWindowSize',
  'inflightNow',
];

/**
 * failsafe-go's adaptive limiter (`adaptivelimiter.NewBuilder().Build()`, no queueing, no
 * priorities). Each recent window (at least 1 s, or twice its fastest latency, at most 30 s, and
 * at least 50 samples) gives its p90 latency from a t-digest, through a 5-window moving median and
 * a 5-window moving average; a baseline averages those (age 10). With `queue = ceil(limit × (1 −
 * baseline / recent))` the limit drops by log10 when the queue is over 6·log10, or when the limiter
 * is full and in-flight correlates with falling throughput or with rising latency; it grows by
 * log10 when the queue is under 3·log10. It stays within [1, 200] and under 5 × the window's max in
 * flight.
 *
 * Source: adaptivelimiter/adaptivelimiter.go (`NewBuilder`, `record`, `updateLimit`,
 * `computeChange`, `computeMaxLimit`), adaptivelimiter/adaptiveexecutor.go (Drop on cancellation,
 * else Record), internal/util (average.go, median.go, windows.go, util.go `Log10Func`),
 * failsafe-go/failsafe-go 5759a5e (2026-08-16); influxdata/tdigest v0.0.1.
 *
 * @example
 * ```ts
 * let inflight = 0;
 * const failsafe = failsafeGoPort({ inflightNow: () => inflight });
 * failsafe.current; // 20
 * ```
 */
export function failsafeGoPort(options: FailsafeGoPortOptions = {}): FailsafeGoPort {
  const owner = 'sim limit (failsafe-go port)';
  const o = checkOptionsObject(owner, options);
  checkKnownKeys(owner, o, FAILSAFE_KEYS);
  const startMs = numberOption(owner, o, 'startMs', 0, {});
  // NewBuilder defaults (adaptivelimiter.go); WithLimits raises minLimit to at least 1 and asserts
  // min <= initial <= max.
  const minLimit = Math.max(1, numberOption(owner, o, 'minLimit', 1, { min: 0, integer: true }));
  const maxLimit = numberOption(owner, o, 'maxLimit', 200, { min: minLimit, integer: true });
  const initialLimit = numberOption(owner, o, 'initialLimit', 20, {
    min: minLimit,
    max: maxLimit,
    integer: true,
  });
  const maxLimitFactor = numberOption(owner, o, 'maxLimitFactor', 5, { min: 1 });
  const windowMinNs = toNs(numberOption(owner, o, 'recentWindowMinMs', 1000, { min: 0 }));
  const windowMaxNs = toNs(
    numberOption(owner, o, 'recentWindowMaxMs', 30_000, { min: windowMinNs / NS_PER_MS }),
  );
  const minSamples = numberOption(owner, o, 'recentWindowMinSamples', 50, {
    min: 0,
    integer: true,
  });
  const recentQuantile = numberOption(owner, o, 'recentQuantile', 0.9, {
    min: 0,
    max: 1,
    minExclusive: true,
  });
  if (recentQuantile >= 1) {
    throw new RangeError(`stormproof: ${owner} recentQuantile must be < 1, got ${recentQuantile}`);
  }
  const baselineAge = numberOption(owner, o, 'baselineWindowAge', 10, { min: 1, integer: true });
  const correlationSize = numberOption(owner, o, 'correlationWindowSize', 50, {
    min: 1,
    integer: true,
  });
  const inflightNow = functionOption<() => number>(owner, o, 'inflightNow', false);
  // warmupSamples = 10, smoothedSamples = 5 (adaptivelimiter.go constants).
  const warmupSamples = 10;
  const smoothedSamples = 5;

  let limit = initialLimit;
  // The semaphore's size: int(limit), set after every update.
  let size = initialLimit;
  // recentRTT: a t-digest with compression 100, plus the window's fastest latency, max in flight
  // and count (tdigestSample).
  const digest = new TDigest(100);
  let windowMinRtt = 0;
  let windowMaxInflight = 0;
  let windowSize = 0;
  const medianFilter = new MovingMedian(smoothedSamples);
  const smoothedRecentRtt = new MovingAverage(smoothedSamples, warmupSamples);
  const baselineRtt = new MovingAverage(baselineAge, warmupSamples);
  const throughputCorrelation = new CorrelationWindow(correlationSize, warmupSamples);
  const rttCorrelation = new CorrelationWindow(correlationSize, warmupSamples);
  let nextUpdateNs = toNs(startMs);

  // updateLimit(recentRTT, inflight, now), latencies in ns as Go's float64(Duration).
  const updateLimit = (recentRtt: number, inflight: number, used: number) => {
    const baseline = baselineRtt.add(recentRtt);
    const gradient = baseline / recentRtt;
    // Go's int(): toward zero.
    const queueSize = Math.trunc(Math.ceil(limit * (1 - gradient)));
    const throughput = inflight / (recentRtt / 1e9);
    const [throughputCorr, , throughputCV] = throughputCorrelation.add(inflight, throughput);
    const [rttCorr] = rttCorrelation.add(inflight, recentRtt);
    // semaphore.IsFull(): used >= size.
    const overloaded = used >= size;
    const alpha = failsafeLog10(3, Math.trunc(limit));
    const beta = failsafeLog10(6, Math.trunc(limit));
    // computeChange().
    let change: 'increase' | 'decrease' | 'hold';
    if (queueSize > beta) change = 'decrease';
    else if (overloaded && throughputCorr < 0) change = 'decrease';
    else if (overloaded && throughputCorr < 0.3 && rttCorr > 0.5) change = 'decrease';
    else if (overloaded && throughputCV < 0.2 && rttCorr > 0.5) change = 'decrease';
    else if (queueSize < alpha) change = 'increase';
    else change = 'hold';
    const old = limit;
    let next = old;
    if (change === 'decrease') next = old - failsafeLog10(1, Math.trunc(old));
    else if (change === 'increase') next = old + failsafeLog10(1, Math.trunc(old));
    // computeMaxLimit(): inflight × maxLimitFactor (no decay, no stabilization window by default).
    const maxByInflight = inflight * maxLimitFactor;
    if (next > maxByInflight) {
      // Over it: come down gradually if the old limit was over too, else sit at it.
      if (old > maxByInflight) next = old - failsafeLog10(1, Math.trunc(old));
      else next = maxByInflight;
    }
    if (next > maxLimit) next = maxLimit;
    else if (next < minLimit) next = minLimit;
    size = Math.trunc(next);
    limit = next;
  };

  return {
    get current() {
      return size;
    },
    get limit() {
      return limit;
    },
    // record(now, rtt, inflight, dropped): Drop() (a cancelled execution, here `dropped`) adds no
    // latency but may still close the window.
    sample(nowMs, latencyMs, inflight, dropped) {
      const nowNs = toNs(nowMs);
      const rtt = toNs(latencyMs);
      if (!dropped) {
        if (windowSize === 0) {
          windowMinRtt = rtt;
          windowMaxInflight = inflight;
        } else {
          windowMinRtt = Math.min(windowMinRtt, rtt);
          windowMaxInflight = Math.max(windowMaxInflight, inflight);
        }
        windowSize++;
        digest.add(rtt, 1);
      }
      if (nowNs > nextUpdateNs && windowSize >= minSamples) {
        const quantile = digest.quantile(recentQuantile);
        const filtered = medianFilter.add(quantile);
        const smoothed = smoothedRecentRtt.add(filtered);
        // The permit is released after the update, so the finishing request still counts as used.
        const used = inflightNow ? inflightNow() + 1 : inflight;
        updateLimit(smoothed, windowMaxInflight, used);
        const minRtt = windowMinRtt;
        digest.reset();
        windowMinRtt = 0;
        windowMaxInflight = 0;
        windowSize = 0;
        // The next window lasts max(2 × its fastest latency, 1 s), at most 30 s.
        const windowNs = Math.min(Math.max(minRtt * 2, windowMinNs), windowMaxNs);
        nextUpdateNs = nowNs + windowNs;
      }
    },
  };
}
