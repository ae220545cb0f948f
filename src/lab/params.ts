// The live lab's parameters: the storm story's shape, scaled to what one 2-core machine carries.
// Times of the story (the failover, the cache's TTL, the run's phases) are divided by `scale`;
// the times of one request (timeouts, service times) are real and never scaled, since they are
// what makes the loop: a queue longer than the client's patience.
import { LIVE_DEFAULT_SEED } from './fleet-random.js';

/** The three runs, in the order they are made. */
export const LIVE_RUNS = ['old-stack', 'stormproof-clients', 'stormproof-server'] as const;

/** One run of the live lab. */
export type LiveRunName = (typeof LIVE_RUNS)[number];

/** Options of `runLiveLab`. */
export interface LiveLabOptions {
  /**
   * Divides the story's times: the 30 s failover, the 20 s cache TTL, the 10 s before the
   * failover and the 60 s after it. 3 makes each run about 33 s, and the three about 2 minutes.
   * From 1 to 30.
   * @default 3
   * @example
   * ```ts
   * runLiveLab({ scale: 10 }) // a 3 s failover: a quick look
   * ```
   */
  scale?: number | undefined;
  /**
   * User requests (farmers' taps) a second across the fleet, open loop. From 10 to 200.
   * @default 60
   * @example
   * ```ts
   * runLiveLab({ rps: 40 })
   * ```
   */
  rps?: number | undefined;
  /**
   * Worker threads of client fleet. From 1 to 8.
   * @default 2
   * @example
   * ```ts
   * runLiveLab({ workers: 1 })
   * ```
   */
  workers?: number | undefined;
  /**
   * Which runs to make, in this order.
   * @default ['old-stack', 'stormproof-clients', 'stormproof-server']
   * @example
   * ```ts
   * runLiveLab({ runs: ['old-stack', 'stormproof-server'] })
   * ```
   */
  runs?: readonly LiveRunName[] | undefined;
  /**
   * The seed of the fleet's random draws: when taps arrive, which instance sends each, which
   * forecast it asks for, and each stormproof client's jitter. Two runs with the same seed draw
   * the same numbers, so what differs between them is only what the machine does. An integer
   * from 0 to 2^53 - 1, as the virtual-time lab's.
   * @default 1
   * @example
   * ```ts
   * runLiveLab({ seed: 42 })
   * ```
   */
  seed?: number | undefined;
  /**
   * Called with the share of the lab done (0 to 1), a few times a second.
   * @default undefined
   * @example
   * ```ts
   * runLiveLab({ onProgress: (f) => bar.update(f) })
   * ```
   */
  onProgress?: ((fraction: number) => void) | undefined;
  /**
   * Stops the lab early: servers closed, workers terminated; the promise rejects.
   * @default undefined
   * @example
   * ```ts
   * runLiveLab({ signal: AbortSignal.timeout(60_000) })
   * ```
   */
  signal?: AbortSignal | undefined;
}

/** Every parameter of a live run, filled: printed with the results. */
export interface LiveParameters {
  readonly scale: number;
  /** The seed of the fleet's draws (arrivals, instances, forecasts, client jitter). */
  readonly seed: number;
  /** User requests a second, all workers together. */
  readonly rps: number;
  readonly workers: number;
  /** Partner backend instances (each its own client and budget), 10 taps a second each. */
  readonly instances: number;
  /** Share of instances that wrap the client library in 3 retries of their own (old stack). */
  readonly wrappedShare: number;
  readonly warmupSeconds: number;
  readonly faultSeconds: number;
  readonly afterSeconds: number;
  /** Most seconds the run waits, after the last tap, for taps still under way. */
  readonly drainSeconds: number;
  /** Requests the API server holds at once (waiting or worked on); more get a quick 503. */
  readonly apiConnections: number;
  /** Requests the API server works on at once (its threads), first in first out. */
  readonly apiThreads: number;
  /** A thread's time per request, ms, before any database query (a timer: the lab measures the retries, not this machine's CPU). */
  readonly serviceMs: number;
  /** Forecasts the taps ask for (Zipf: the k-th is asked for in proportion to 1/k). */
  readonly forecasts: number;
  readonly cacheTtlMs: number;
  /** The database's connection pool: queries at once; more wait in line. */
  readonly dbPool: number;
  readonly dbQueryMs: number;
  /** During the failover a query fails after this long (a connect timeout). */
  readonly dbFailMs: number;
  /** The old client library's time limit per attempt, ms. */
  readonly clientTimeoutMs: number;
  /** The gateway's time limit per call to the API server, ms. */
  readonly gatewayTimeoutMs: number;
  /** Tries of each retrying layer of the old stack (1 + 3 retries, no wait). */
  readonly oldStackTries: number;
  /** Success ratio of a second's taps that counts as healthy. */
  readonly recoveryThreshold: number;
}

const RANGES = {
  scale: [1, 30],
  rps: [10, 200],
  workers: [1, 8],
} as const;

function checkNumber(name: keyof typeof RANGES, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  const [min, max] = RANGES[name];
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    throw new RangeError(
      `stormproof: runLiveLab ${name} must be a number from ${min} to ${max}, got ${value === null ? 'null' : JSON.stringify(value)}`,
    );
  }
  if (name === 'workers' && !Number.isInteger(value)) {
    throw new RangeError(`stormproof: runLiveLab workers must be an integer, got ${value}`);
  }
  return value;
}

/** Checks `options` and fills every parameter. Throws a TypeError or RangeError naming the option. */
export function liveParameters(options: LiveLabOptions = {}): {
  parameters: LiveParameters;
  runs: readonly LiveRunName[];
} {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError('stormproof: runLiveLab options must be an object');
  }
  const scale = checkNumber('scale', options.scale, 3);
  const rps = checkNumber('rps', options.rps, 60);
  const workers = checkNumber('workers', options.workers, 2);
  const seed = options.seed ?? LIVE_DEFAULT_SEED;
  if (
    typeof seed !== 'number' ||
    !Number.isInteger(seed) ||
    seed < 0 ||
    seed > Number.MAX_SAFE_INTEGER
  ) {
    throw new RangeError(
      `stormproof: runLiveLab seed must be an integer from 0 to ${Number.MAX_SAFE_INTEGER}, got ${seed === null ? 'null' : typeof seed === 'bigint' ? `${seed}n` : JSON.stringify(seed)}`,
    );
  }
  const runs = options.runs ?? LIVE_RUNS;
  if (
    !Array.isArray(runs) ||
    runs.length === 0 ||
    runs.some((r) => !(LIVE_RUNS as readonly string[]).includes(r))
  ) {
    throw new TypeError(
      `stormproof: runLiveLab runs must be a non-empty list of ${LIVE_RUNS.join(', ')}, got ${JSON.stringify(runs)}`,
    );
  }
  for (const name of ['onProgress'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function') {
      throw new TypeError(`stormproof: runLiveLab ${name} must be a function`);
    }
  }
  const round = (n: number) => Math.round(n * 100) / 100;
  return {
    runs,
    parameters: {
      scale,
      seed,
      rps,
      workers,
      instances: Math.max(workers, Math.round(rps / 10)),
      wrappedShare: 0.25,
      warmupSeconds: round(Math.max(2, 10 / scale)),
      faultSeconds: round(30 / scale),
      afterSeconds: round(Math.max(5, 60 / scale)),
      drainSeconds: 3,
      apiConnections: 400,
      apiThreads: 8,
      serviceMs: 48,
      forecasts: 300,
      cacheTtlMs: Math.round(20_000 / scale),
      dbPool: 4,
      dbQueryMs: 10,
      dbFailMs: 500,
      clientTimeoutMs: 1000,
      gatewayTimeoutMs: 2000,
      oldStackTries: 4,
      recoveryThreshold: 0.95,
    },
  };
}
