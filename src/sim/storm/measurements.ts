// Measurements: what the model counts, second by second, and the figures a run reports (the
// definitions are in docs/storm-model.md, "What is measured"). The model's parts count into the
// per-second arrays; `figures` turns them into the result once the run is over.
import type { RampReason } from '../../server/ramp.js';
import type { StormParameters } from './options.js';

/**
 * Goodput counts as back when the taps that ended with a forecast in a second are at least this
 * share of the taps started in it ("at least 95% of capacity", where the capacity that matters is the demand, 4,000 a
 * second, is what the servers are asked to serve, well below what they can).
 */
export const GOODPUT_SHARE = 0.95;

/** What happened in one second of virtual time. Counts are per second. */
export interface StormSecond {
  /** The second, from 0 at the start of the run. */
  readonly t: number;
  /** Requests arriving at the edge load balancer: client-library attempts, shed ones included. */
  readonly offered: number;
  /** Requests the edge passed on to the gateway (`offered` minus `shed`): the load on the service. */
  readonly load: number;
  /** New user requests (farmers' taps) started. */
  readonly userRequests: number;
  /** User requests that ended with a forecast. */
  readonly succeeded: number;
  /** User requests that ended with an error, after every layer gave up. */
  readonly failed: number;
  /** Requests the edge rejected with a quick 503 (manual recovery). */
  readonly shed: number;
  /** Calls that reached the API servers: the gateway's tries, accepted or rejected. */
  readonly apiCalls: number;
  /** API calls rejected for want of a free connection. */
  readonly rejected: number;
  /** Retries the client library started (attempts after the first of a library call). */
  readonly retries: number;
  /** Requests the API servers finished after their caller had hung up: work thrown away. */
  readonly wasted: number;
  /** Database queries started (healthy or failing). */
  readonly dbQueries: number;
  /** Cache hits over lookups this second (0 when there were none). */
  readonly cacheHitRatio: number;
  /** API connections in use at the end of the second. */
  readonly busyConnections: number;
  /** Share of partner instances the edge lets through at the end of the second. */
  readonly admitted: number;
  /** Client-library attempts the instances' circuit breakers refused (0 without breakers). */
  readonly refused: number;
}

/** Totals over the whole run. */
export interface StormTotals {
  /** User requests started. */
  readonly userRequests: number;
  /** User requests that ended with a forecast. */
  readonly succeeded: number;
  /** User requests that ended with an error. */
  readonly failed: number;
  /** Requests that arrived at the edge (client-library attempts). */
  readonly edgeRequests: number;
  /** Calls that reached the API servers. */
  readonly apiCalls: number;
  /** Retries started by the partner wrappers, the client library and the gateway. */
  readonly retries: {
    readonly wrapper: number;
    readonly library: number;
    readonly gateway: number;
  };
  /** Library calls that gave up because the retry budget refused a retry. */
  readonly budgetRefusals: number;
  /**
   * Library calls that ended because a circuit breaker refused an attempt: at once (the first
   * attempt) or with their last failure (a retry). 0 without breakers.
   */
  readonly breakerRefusals: number;
  /** Times a breaker opened: a trip, or a failed probe. 0 without breakers. */
  readonly breakerOpenings: number;
  /** API requests finished after their caller had hung up. */
  readonly wasted: number;
}

/** The manual recovery as it happened. */
export interface StormRecovery {
  /** When the edge started shedding, in seconds from the start of the run. */
  readonly shedAtSeconds: number;
  /** Each change of the share of partner instances let through: `[second, share]`. */
  readonly steps: readonly (readonly [number, number])[];
  /** When the edge let everyone through again, or null if it had not by the end of the run. */
  readonly reopenedAtSeconds: number | null;
}

/** One move of one API server's ramp (stormproof/server reopening in steps). */
export interface StormServerRampStep {
  /** When, in seconds from the start of the run (to the millisecond). */
  readonly atSeconds: number;
  /** Which API server (0-based). */
  readonly server: number;
  /** The share of its concurrency limit it lets run at once from then on. */
  readonly share: number;
  /** Why: the engine's `RampEvent` reason. */
  readonly reason: RampReason;
  /** The error rate and mean latency of the window that led here, when one did. */
  readonly errorRate?: number;
  readonly meanLatencyMs?: number;
}

/** What the API servers' protection did (`server` other than `'none'`). */
export interface StormServerReport {
  readonly kind: 'stormproof' | 'all-or-nothing';
  /**
   * Requests it rejected, by reason: the engine's shed reasons (`limit`, `queue-full`,
   * `queue-timeout`, `ramp`, ...) summed over the servers, or `pressure` for all-or-nothing.
   */
  readonly shed: Readonly<Record<string, number>>;
  /**
   * Per second, at its end: the mean share of the limit the servers' ramps let run at once
   * (stormproof), or 1 when the all-or-nothing shedder is open and 0 while it rejects everything.
   */
  readonly admittedShare: readonly number[];
  /** Every move of every server's ramp, in order (stormproof; empty for all-or-nothing). */
  readonly ramp: readonly StormServerRampStep[];
  /**
   * When the last server's ramp opened fully again, in seconds from the start, if every
   * server's last move opened it; null otherwise, or when no ramp moved.
   */
  readonly reopenedAtSeconds: number | null;
}

/** The outcome of {@link runStorm}. */
export interface StormResult {
  /**
   * The normal load: mean requests per second that the edge passed on to the service (client
   * library attempts) over the seconds before the fault, the first second left out.
   */
  readonly normalRps: number;
  /**
   * The peak load while the database was healthy again: the most requests the edge passed on to
   * the service in any one second from `dbHealthyAtSeconds` to the end of the run (the storm
   * story's "24,000 requests per second ... while the database was already healthy again").
   */
  readonly peakRpsAfterFailover: number;
  /**
   * The most requests that arrived at the edge in any one second of the whole run, the fault and
   * the quickly rejected (shed) ones included.
   */
  readonly peakEdgeRps: number;
  /** The most calls that reached the API servers in any one second of the run (the gateway's tries included). */
  readonly peakApiRps: number;
  /**
   * Seconds from the moment the database is healthy again to the first second from which every
   * second to the end of the run (at least `recoveryHoldSeconds` of them) has a user success
   * ratio of at least `recoveryThreshold`; null if there is none.
   */
  readonly recoveredAfterFaultSeconds: number | null;
  /**
   * Seconds from the moment the database is healthy again to the first second from which every
   * second to the end of the run (at least `recoveryHoldSeconds` of them) has a goodput of at
   * least 95% of the demand: taps that ended with a forecast in that second over taps started in
   * it ({@link GOODPUT_SHARE}). Null if there is none.
   */
  readonly goodputRecoveredAfterFaultSeconds: number | null;
  /** When the database was healthy again, in seconds from the start of the run. */
  readonly dbHealthyAtSeconds: number;
  /** The manual recovery, when `manualRecovery` was on and the shedding started within the run. */
  readonly recovery: StormRecovery | null;
  /** What the API servers' protection did, or null with `server: 'none'`. */
  readonly server: StormServerReport | null;
  /** Totals over the run. */
  readonly totals: StormTotals;
  /** One entry per second of the run. */
  readonly series: StormSecond[];
  /** The parameters used. */
  readonly parameters: StormParameters;
}

/** Per-second counters, one array slot per second of the run. */
export class Measurements {
  /** Requests arriving at the edge. */
  readonly offered: Float64Array;
  /** User requests (taps) started, succeeded, failed. */
  readonly users: Float64Array;
  readonly succeeded: Float64Array;
  readonly failed: Float64Array;
  /** Requests the edge shed. */
  readonly shed: Float64Array;
  /** Calls reaching the API servers, and those rejected for want of a connection. */
  readonly apiCalls: Float64Array;
  readonly rejected: Float64Array;
  /** Client-library retries. */
  readonly retries: Float64Array;
  /** Answers written after the caller hung up. */
  readonly wasted: Float64Array;
  /** Database queries started; cache hits and lookups. */
  readonly dbQueries: Float64Array;
  readonly hits: Float64Array;
  readonly lookups: Float64Array;
  /** API connections in use and the edge's admitted share, at the end of each second. */
  readonly busy: Float64Array;
  readonly admitted: Float64Array;
  /** The gateway's answers to its clients: forecasts, and errors or hang-ups. */
  readonly gatewayOk: Float64Array;
  readonly gatewayErrors: Float64Array;
  /** Attempts the partner instances' circuit breakers refused. */
  readonly refused: Float64Array;
  /** Retries per layer and library calls ended by the budget or a breaker, over the run. */
  wrapperRetries = 0;
  libraryRetries = 0;
  gatewayRetries = 0;
  budgetRefusals = 0;
  breakerRefusals = 0;
  breakerOpenings = 0;

  constructor(readonly seconds: number) {
    const stat = () => new Float64Array(seconds);
    this.offered = stat();
    this.users = stat();
    this.succeeded = stat();
    this.failed = stat();
    this.shed = stat();
    this.apiCalls = stat();
    this.rejected = stat();
    this.retries = stat();
    this.wasted = stat();
    this.dbQueries = stat();
    this.hits = stat();
    this.lookups = stat();
    this.busy = stat();
    this.admitted = stat();
    this.gatewayOk = stat();
    this.gatewayErrors = stat();
    this.refused = stat();
  }

  /** The run's figures, from the counts and the parameters used. */
  figures(
    p: StormParameters,
    recovery: StormRecovery | null,
    server: StormServerReport | null,
  ): StormResult {
    const seconds = this.seconds;
    const dbHealthyAtSeconds = p.faultAtSeconds + p.faultSeconds;
    const series: StormSecond[] = [];
    let peakRpsAfterFailover = 0;
    let peakEdgeRps = 0;
    let peakApiRps = 0;
    for (let s = 0; s < seconds; s++) {
      const lookups = this.lookups[s]!;
      const load = this.offered[s]! - this.shed[s]!;
      series.push({
        t: s,
        offered: this.offered[s]!,
        load,
        userRequests: this.users[s]!,
        succeeded: this.succeeded[s]!,
        failed: this.failed[s]!,
        shed: this.shed[s]!,
        apiCalls: this.apiCalls[s]!,
        rejected: this.rejected[s]!,
        retries: this.retries[s]!,
        wasted: this.wasted[s]!,
        dbQueries: this.dbQueries[s]!,
        cacheHitRatio: lookups === 0 ? 0 : Math.round((this.hits[s]! / lookups) * 1000) / 1000,
        busyConnections: this.busy[s]!,
        admitted: this.admitted[s]!,
        refused: this.refused[s]!,
      });
      if (s >= dbHealthyAtSeconds) peakRpsAfterFailover = Math.max(peakRpsAfterFailover, load);
      peakEdgeRps = Math.max(peakEdgeRps, this.offered[s]!);
      peakApiRps = Math.max(peakApiRps, this.apiCalls[s]!);
    }
    let normalSum = 0;
    for (let s = 1; s < p.faultAtSeconds; s++) normalSum += this.offered[s]! - this.shed[s]!;
    const normalRps = Math.round(normalSum / (p.faultAtSeconds - 1));

    const recoveredAt = this.#healthyFrom(dbHealthyAtSeconds, p.recoveryHoldSeconds, (s) => {
      const finished = this.succeeded[s]! + this.failed[s]!;
      return finished > 0 && this.succeeded[s]! / finished >= p.recoveryThreshold;
    });
    const goodputAt = this.#healthyFrom(
      dbHealthyAtSeconds,
      p.recoveryHoldSeconds,
      (s) => this.succeeded[s]! >= GOODPUT_SHARE * this.users[s]!,
    );

    const sum = (a: Float64Array) => a.reduce((x, y) => x + y, 0);
    return {
      normalRps,
      peakRpsAfterFailover,
      peakEdgeRps,
      peakApiRps,
      recoveredAfterFaultSeconds: recoveredAt === null ? null : recoveredAt - dbHealthyAtSeconds,
      goodputRecoveredAfterFaultSeconds: goodputAt === null ? null : goodputAt - dbHealthyAtSeconds,
      dbHealthyAtSeconds,
      recovery,
      server,
      totals: {
        userRequests: sum(this.users),
        succeeded: sum(this.succeeded),
        failed: sum(this.failed),
        edgeRequests: sum(this.offered),
        apiCalls: sum(this.apiCalls),
        retries: {
          wrapper: this.wrapperRetries,
          library: this.libraryRetries,
          gateway: this.gatewayRetries,
        },
        budgetRefusals: this.budgetRefusals,
        breakerRefusals: this.breakerRefusals,
        breakerOpenings: this.breakerOpenings,
        wasted: sum(this.wasted),
      },
      series,
      parameters: p,
    };
  }

  /**
   * The first second at or after `from` from which every second to the end is `healthy`, with
   * at least `hold` seconds of the run left; null if there is none.
   */
  #healthyFrom(from: number, hold: number, healthy: (s: number) => boolean): number | null {
    let at: number | null = null;
    for (let s = this.seconds - 1; s >= from; s--) {
      if (!healthy(s)) break;
      at = s;
    }
    return at !== null && this.seconds - at < hold ? null : at;
  }
}
