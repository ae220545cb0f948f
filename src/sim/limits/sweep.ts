// `stormproof sim limits`: one contender (a concurrency limit) in front of every backend of a
// grid (true concurrency C x service time S x offered load), and through a failover to a smaller
// replica and back. The targets a cell is judged on: the limit inside [C, 1.3 C + 1] for good
// within 3 s (or 20 round trips), goodput at least 95 % of capacity, admitted p99 at most 2 S.
import type { ConcurrencyLimit, LimitOption } from '../../server/limits.js';
import { envoyGradientPort, failsafeGoPort, goZeroPort, vegasPort } from './ports.js';
import {
  bandEntryMs,
  type ConcurrencyStep,
  type LimitPoint,
  runLimitCell,
  type ServiceSpread,
  seededRandom,
} from './run.js';

/** The limits `stormproof sim limits` compares. */
export const LIMIT_CONTENDERS = [
  'knee',
  'gradient2',
  'vegas',
  'envoy',
  'go-zero',
  'failsafe-go',
] as const;
export type LimitContender = (typeof LIMIT_CONTENDERS)[number];

/** The limit a contender's name stands for: an option of `createShedder`, or a fresh port. */
export function contenderLimit(
  name: LimitContender,
  seed: number,
): LimitOption | (() => ConcurrencyLimit) {
  switch (name) {
    case 'knee':
      return { kind: 'knee' };
    case 'gradient2':
      return { kind: 'gradient2' };
    case 'vegas':
      return () => vegasPort({ random: seededRandom(seed) });
    case 'envoy':
      return () => envoyGradientPort({ random: seededRandom(seed) });
    case 'go-zero':
      return () => goZeroPort();
    case 'failsafe-go':
      return () => failsafeGoPort();
  }
}

export interface LimitsSweepOptions {
  /**
   * The limit under test.
   * @default (required)
   * @example
   * ```ts
   * { contender: 'knee' }
   * ```
   */
  readonly contender: LimitContender;
  /**
   * The backends' true concurrencies.
   * @default [1, 4, 10, 32, 100, 1000]
   * @example
   * ```ts
   * { concurrencies: [4, 32] }
   * ```
   */
  readonly concurrencies?: readonly number[];
  /**
   * The backends' service times, ms.
   * @default [1, 20, 200]
   * @example
   * ```ts
   * { servicesMs: [20] }
   * ```
   */
  readonly servicesMs?: readonly number[];
  /**
   * Offered loads, as multiples of the backend's capacity.
   * @default [2, 5]
   * @example
   * ```ts
   * { loads: [2] }
   * ```
   */
  readonly loads?: readonly number[];
  /**
   * How the backends' service times spread: `'uniform'` over [0.9, 1.1] times S, or
   * `'exponential'` (as wide as the mean, as the map's server).
   * @default 'uniform'
   * @example
   * ```ts
   * { service: 'exponential' }
   * ```
   */
  readonly service?: ServiceSpread;
  /**
   * The most requests a cell may offer; a cell above it is skipped (reported, not run). C = 1000
   * at S = 1 ms and 5x is five million requests a second of virtual time.
   * @default 3_000_000
   * @example
   * ```ts
   * { maxRequests: 500_000 }
   * ```
   */
  readonly maxRequests?: number;
  /**
   * The seed of every cell's arrivals and service times, and of a port's jitter.
   * @default 1
   * @example
   * ```ts
   * { seed: 2 }
   * ```
   */
  readonly seed?: number;
  /**
   * Hears how many cells are done.
   * @default undefined
   * @example
   * ```ts
   * { onProgress: (done, total) => bar.update(done / total) }
   * ```
   */
  readonly onProgress?: ((done: number, total: number) => void) | undefined;
}

/** One backend, one load: how the contender did. */
export interface LimitsCell {
  readonly concurrency: number;
  readonly serviceMs: number;
  readonly load: number;
  /** Skipped: more requests than `maxRequests`. */
  readonly skipped: boolean;
  /** When the limit entered the band for good, ms; null when it never did. */
  readonly bandEntryMs: number | null;
  readonly goodput: number;
  readonly admittedP99: number;
  readonly rejectionP99Ms: number;
  /** The share of the requests offered in the measured half that were rejected. */
  readonly rejectedShare: number;
  /** The share of the measured half that the limit spent below C. */
  readonly belowShare: number;
  /** Where the limit ended. */
  readonly finalLimit: number;
  /**
   * Above capacity: all three targets met. Below it (a load under 1x): at most 1% of the
   * requests rejected, since the backend could serve them all.
   */
  readonly pass: boolean;
  /**
   * The targets the cell missed, empty when it passed: `'band'` (not inside [C, 1.3 C + 1] for
   * good in time), `'goodput'`, `'p99'` (above capacity), `'shed'` (below it).
   */
  readonly missed: readonly LimitsTarget[];
}

/** A target of a cell (see {@link LimitsCell.missed}). */
export type LimitsTarget = 'band' | 'goodput' | 'p99' | 'shed';

/** The failover: C from 32 to 4 and back, S = 20 ms, offered twice the larger capacity. */
export interface LimitsStep {
  /** Into [4, 6.2] after the drop, and back into [32, 42.6] after the return, ms (null: never). */
  readonly downMs: number | null;
  readonly upMs: number | null;
  /** Both within 2 s. */
  readonly pass: boolean;
  /** The limit over the run, at most one point per 10 ms. */
  readonly trace: readonly LimitPoint[];
}

/**
 * A slowdown: C = 32 and S = 20 ms throughout, but every request is served 5 times slower from
 * 3 s to 6 s (a database failing over slows every query; the backend still serves 32 at once),
 * offered twice the full capacity.
 */
export interface LimitsSlowdown {
  /** Into [32, 42.6] after the service slowed, and again after it recovered, ms (null: never). */
  readonly slowMs: number | null;
  readonly backMs: number | null;
  /** Goodput and admitted p99 over S once the service recovered (from 7 s on: a second to settle). */
  readonly goodputAfter: number;
  readonly admittedP99After: number;
  /** Both within 2 s. */
  readonly pass: boolean;
  /** The limit over the run, at most one point per 10 ms. */
  readonly trace: readonly LimitPoint[];
}

export interface LimitsSweepResult {
  readonly contender: LimitContender;
  /** How the backends' service times spread. */
  readonly service: ServiceSpread;
  readonly cells: readonly LimitsCell[];
  readonly step: LimitsStep;
  readonly slowdown: LimitsSlowdown;
}

/** How long a cell runs: 6 s, or 40 round trips of a slow backend. */
export function cellDurationMs(serviceMs: number): number {
  return Math.max(6000, 40 * serviceMs);
}

/** Keeps at most one point per `ms` (the last of each), so a trace stays short. */
function thin(trace: readonly LimitPoint[], ms: number): LimitPoint[] {
  const out: LimitPoint[] = [];
  for (const p of trace) {
    const last = out.at(-1);
    if (last !== undefined && Math.floor(last.atMs / ms) === Math.floor(p.atMs / ms)) out.pop();
    out.push(p);
  }
  return out;
}

/** Runs one contender over the grid, the failover and the slowdown. Exact and repeatable for a seed. */
export function runLimitsSweep(o: LimitsSweepOptions): LimitsSweepResult {
  const concurrencies = o.concurrencies ?? [1, 4, 10, 32, 100, 1000];
  const servicesMs = o.servicesMs ?? [1, 20, 200];
  const loads = o.loads ?? [2, 5];
  const maxRequests = o.maxRequests ?? 3_000_000;
  const seed = o.seed ?? 1;
  const service = o.service ?? 'uniform';
  if (service !== 'uniform' && service !== 'exponential') {
    throw new TypeError(
      `stormproof: runLimitsSweep service must be 'uniform' or 'exponential', got ${String(service)}`,
    );
  }
  // Admitted p99 at most twice the unloaded one: 2 S for a steady service (its p99 is 1.1 S, and
  // the bound was set at 2 S), 2 ln(100) S for an exponential one (its p99 is ln(100) S).
  const p99Bound = service === 'exponential' ? 2 * Math.log(100) : 2;
  const total = concurrencies.length * servicesMs.length * loads.length + 2;
  let done = 0;
  const cells: LimitsCell[] = [];
  for (const concurrency of concurrencies) {
    for (const serviceMs of servicesMs) {
      for (const load of loads) {
        const durationMs = cellDurationMs(serviceMs);
        const requests = (load * concurrency * durationMs) / serviceMs;
        if (requests > maxRequests) {
          cells.push({
            concurrency,
            serviceMs,
            load,
            skipped: true,
            bandEntryMs: null,
            goodput: 0,
            admittedP99: 0,
            rejectionP99Ms: 0,
            rejectedShare: 0,
            belowShare: 0,
            finalLimit: 0,
            pass: false,
            missed: [],
          });
        } else {
          const r = runLimitCell({
            limit: contenderLimit(o.contender, seed),
            concurrency,
            serviceMs,
            load,
            durationMs,
            measureFromMs: durationMs / 2,
            service,
            seed,
          });
          const entry = bandEntryMs(r.trace, concurrency, 1.3 * concurrency + 1);
          const inTime = entry !== undefined && entry <= Math.max(3000, 20 * serviceMs);
          const missed: LimitsTarget[] = [];
          if (load < 1) {
            if (r.rejectedShare > 0.01) missed.push('shed');
          } else {
            if (!inTime) missed.push('band');
            if (!(r.goodput >= 0.95)) missed.push('goodput');
            if (!(r.admittedP99 <= p99Bound)) missed.push('p99');
          }
          cells.push({
            concurrency,
            serviceMs,
            load,
            skipped: false,
            bandEntryMs: entry ?? null,
            goodput: r.goodput,
            admittedP99: r.admittedP99,
            rejectionP99Ms: r.rejectionP99Ms,
            rejectedShare: r.rejectedShare,
            belowShare: r.belowShare,
            finalLimit: r.trace.at(-1)?.limit ?? 0,
            pass: missed.length === 0,
            missed,
          });
        }
        o.onProgress?.(++done, total);
      }
    }
  }
  // The failover and the slowdown: C = 32 and S = 20 ms at 2x, a change at 3 s and back at 6 s.
  const changed = (steps: readonly ConcurrencyStep[], measureFromMs: number) => {
    const r = runLimitCell({
      limit: contenderLimit(o.contender, seed),
      concurrency: 32,
      serviceMs: 20,
      load: 2,
      durationMs: 9000,
      measureFromMs,
      steps,
      service,
      seed,
    });
    o.onProgress?.(++done, total);
    return r;
  };
  const s = changed(
    [
      { atMs: 3000, concurrency: 4 },
      { atMs: 6000, concurrency: 32 },
    ],
    1000,
  );
  const downMs = bandEntryMs(s.trace, 4, 6.2, 3000, 6000) ?? null;
  const upMs = bandEntryMs(s.trace, 32, 42.6, 6000) ?? null;
  const slow = changed(
    [
      { atMs: 3000, concurrency: 32, slowdown: 5 },
      { atMs: 6000, concurrency: 32 },
    ],
    7000,
  );
  const slowMs = bandEntryMs(slow.trace, 32, 42.6, 3000, 6000) ?? null;
  const backMs = bandEntryMs(slow.trace, 32, 42.6, 6000) ?? null;
  return {
    contender: o.contender,
    service,
    cells,
    step: {
      downMs,
      upMs,
      pass: downMs !== null && downMs <= 2000 && upMs !== null && upMs <= 2000,
      trace: thin(s.trace, 10),
    },
    slowdown: {
      slowMs,
      backMs,
      goodputAfter: slow.goodput,
      admittedP99After: slow.admittedP99,
      pass: slowMs !== null && slowMs <= 2000 && backMs !== null && backMs <= 2000,
      trace: thin(slow.trace, 10),
    },
  };
}
