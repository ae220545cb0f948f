// The live lab's figures, from the measured per-second curves: the same questions the simulated
// lab answers (normal load, peak after the database is back, time to recover, failures).

/** One second of a live run. */
export interface LiveSecond {
  /** Seconds since the run's start. */
  readonly t: number;
  /** Client-library attempts sent to the edge (what the story's graphs showed). */
  readonly offered: number;
  /** Taps (user requests) that arrived. */
  readonly arrived: number;
  /** Of the taps that arrived this second, those that got a forecast (whenever they ended). */
  readonly okByArrival: number;
  /** Taps that ended this second with a forecast: served. */
  readonly succeeded: number;
  /** Taps that ended this second with an error. */
  readonly failed: number;
  /** Calls that reached the API server. */
  readonly apiCalls: number;
  /** Requests the edge's shedder answered itself. */
  readonly shed: number;
}

/** Whole-run counts. */
export interface LiveTotals {
  readonly failed: number;
  readonly unfinished: number;
  readonly offered: number;
  readonly apiCalls: number;
  /** Calls the API server rejected at once: every connection was busy. */
  readonly apiRejected: number;
  /** API answers that reached the gateway after its caller had hung up. */
  readonly wasted: number;
  readonly shed: number;
}

/** A live run's figures. */
export interface LiveFigures {
  /** Mean attempts a second at the edge in the whole seconds before the failover. */
  readonly normalRps: number;
  /** The busiest second at the edge once the database was back. */
  readonly peakAfterDbBackRps: number;
  /** `peakAfterDbBackRps` over `normalRps`. */
  readonly peakOverNormal: number;
  /** Mean taps served a second in the last third of the time after the database was back. */
  readonly servedAfterRps: number;
  /** Mean attempts a second at the edge in that same stretch. */
  readonly offeredAfterRps: number;
  /**
   * Seconds from the database being back to the start of the first second from which every
   * second's taps succeeded at the threshold ratio, to the end of the run; null when that
   * stretch is shorter than `HOLD_SECONDS` (not recovered by the end).
   */
  readonly recoveredAfterSeconds: number | null;
  readonly userRequests: number;
  readonly failedUserRequests: number;
  /** Taps still under way when the run's drain time was up (not counted as failed). */
  readonly unfinishedUserRequests: number;
  /** Attempts at the edge per tap. */
  readonly edgeCallsPerUserRequest: number;
  /** Calls at the API server per tap. */
  readonly apiCallsPerUserRequest: number;
  /** Calls the API server rejected at once because every connection was busy. */
  readonly apiRejected: number;
  readonly wastedAnswers: number;
  readonly shed: number;
}

/** A recovery must hold this many seconds to count. */
export const HOLD_SECONDS = 3;

const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;
const mean = (values: readonly number[]) =>
  values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length;

/** The figures of one run. */
export function liveFigures(
  series: readonly LiveSecond[],
  totals: LiveTotals,
  faultFromSeconds: number,
  faultUntilSeconds: number,
  threshold: number,
): LiveFigures {
  const before = series.filter((s) => s.t + 1 <= faultFromSeconds);
  const normalRps = mean(before.map((s) => s.offered));
  const back = Math.ceil(faultUntilSeconds);
  const after = series.filter((s) => s.t >= back);
  const peak = Math.max(0, ...after.map((s) => s.offered));
  const lastThird = after.slice(Math.floor((after.length * 2) / 3));
  // Recovery: the healthy stretch that runs to the end, by the second the taps arrived.
  const healthy = (s: LiveSecond) => s.arrived === 0 || s.okByArrival / s.arrived >= threshold;
  let first = series.length;
  while (
    first > 0 &&
    series[first - 1]!.t >= Math.floor(faultUntilSeconds) &&
    healthy(series[first - 1]!)
  )
    first--;
  const stretch = series.length - first;
  const recovered =
    stretch >= Math.min(HOLD_SECONDS, after.length) && first < series.length
      ? Math.max(0, series[first]!.t - faultUntilSeconds)
      : null;
  const taps = series.reduce((n, s) => n + s.arrived, 0);
  return {
    normalRps: round(normalRps),
    peakAfterDbBackRps: peak,
    peakOverNormal: normalRps > 0 ? round(peak / normalRps) : 0,
    servedAfterRps: round(mean(lastThird.map((s) => s.succeeded))),
    offeredAfterRps: round(mean(lastThird.map((s) => s.offered))),
    recoveredAfterSeconds: recovered === null ? null : round(recovered, 1),
    userRequests: taps,
    failedUserRequests: totals.failed,
    unfinishedUserRequests: totals.unfinished,
    edgeCallsPerUserRequest: taps > 0 ? round(totals.offered / taps) : 0,
    apiCallsPerUserRequest: taps > 0 ? round(totals.apiCalls / taps) : 0,
    apiRejected: totals.apiRejected,
    wastedAnswers: totals.wasted,
    shed: totals.shed,
  };
}
