// The `storm` scenario: the weather API of the storm story, rebuilt as a discrete-event
// model on virtual time. Partner apps send ~4,000 forecast requests a second through up to three
// retrying layers (partner wrapper, client library, gateway) to API servers with a connection
// limit, a CPU, a forecast cache and a database that fails over for 30 s. Every layer's retry
// decision is the library's own `step` function, fed the simulator's clock and seeded random
// source: the naive setup is the engine configured as the storm story's old stack (4 attempts, no
// wait, no budget), the stormproof setup is one engine-driven retry layer with full jitter, a
// retry budget and Retry-After, and optionally the engine's CircuitBreaker per partner instance.
// The model and every parameter are described in docs/storm-model.md.
import { type BreakerAdmission, CircuitBreaker } from '../core/breaker/breaker.js';
import {
  BREAKER_RULE_KEYS,
  type BreakerOptions,
  resolveBreakerOptions,
} from '../core/breaker/options.js';
import type { Budget } from '../core/budgets/budget.js';
import { RetryBudget } from '../core/budgets/retry-budget.js';
import type { Clock } from '../core/clock.js';
import { type ResolvedPolicy, type RetryPolicyOptions, resolvePolicy } from '../core/options.js';
import { type Outcome, type RetryState, startState, step } from '../core/step.js';
import { checkKnownKeys, checkNumber, checkOptionsObject, show } from '../core/validate.js';
import { PythonRandom } from './python-random.js';
import { Calendar } from './storm-calendar.js';

/** Which retry setup the partner apps, the gateway and the API servers run. */
export type StormPolicy = 'naive' | 'stormproof';

/**
 * The client library's retry options in the storm, on top of the setup's own (see
 * {@link StormOptions.retryPolicy}). The same options as `createRetryPolicy`, except that the
 * clock and random source are the simulator's and the budget is made once per partner instance.
 */
export interface StormRetryPolicy
  extends Pick<
    RetryPolicyOptions,
    | 'maxAttempts'
    | 'baseDelayMs'
    | 'maxDelayMs'
    | 'deadlineMs'
    | 'attemptTimeoutMs'
    | 'jitter'
    | 'throttledDelayMultiplier'
    | 'honorRetryAfter'
  > {
  /**
   * Makes the retry budget of one partner instance (each instance runs its own copy of the
   * client library, so each has its own budget), or `false` for none.
   * @default () => new RetryBudget() in the stormproof setup; false in the naive one
   * @example
   * ```ts
   * { budget: () => new RetryBudget({ cost: 20 }) }
   * { budget: false }
   * ```
   */
  budget?: (() => Budget) | false | undefined;
}

/**
 * The rules of the circuit breaker each partner instance's client library gets (see
 * {@link StormOptions.breaker}): the options of `new CircuitBreaker`, without the clock and random
 * source (the simulator's) and without hooks or a store.
 */
export type StormBreakerOptions = Pick<
  BreakerOptions,
  | 'consecutiveFailures'
  | 'failureRatio'
  | 'windowMs'
  | 'minimumCalls'
  | 'openMs'
  | 'maxOpenMs'
  | 'probes'
  | 'successesToClose'
>;

/** The options of {@link runStorm}. Every field is optional; see docs/storm-model.md for why each default is what it is. */
export interface StormOptions {
  /**
   * The retry setup. `'naive'`: the storm story's stack before the fix (partner wrappers
   * and the gateway retry, the client library retries 3 times with no wait, no budget).
   * `'stormproof'`: one retry layer, the client library, with full jitter, a retry budget per
   * partner instance and the server's Retry-After; wrappers removed, the gateway does not retry.
   * @default 'naive'
   * @example
   * ```ts
   * runStorm({ policy: 'stormproof' })
   * ```
   */
  policy?: StormPolicy | undefined;
  /**
   * Whether the on-call engineer steps in: at `shedAfterFaultSeconds` the edge load balancer
   * rejects all partner instances but `stepFraction` of them with a quick 503, then lets
   * `stepFraction` more back every `stepSeconds` while the gateway's error ratio stays at or below
   * `maxStepErrorRatio`.
   * @default false
   * @example
   * ```ts
   * runStorm({ policy: 'naive', manualRecovery: true })
   * ```
   */
  manualRecovery?: boolean | undefined;
  /**
   * Gives the client library of each partner instance a circuit breaker (the engine's
   * `breaker` option: one `CircuitBreaker` per instance, as `createFetch({ breaker: true })` makes
   * one per origin), on the simulator's clock and random source. `true` for the breaker's
   * defaults, or its options. Only with `policy: 'stormproof'`.
   * @default false
   * @example
   * ```ts
   * runStorm({ policy: 'stormproof', breaker: true })
   * runStorm({ policy: 'stormproof', breaker: { openMs: 1000, maxOpenMs: 5000 } })
   * ```
   */
  breaker?: boolean | StormBreakerOptions | undefined;
  /**
   * Seed of the one CPython-compatible generator (`random.Random(seed)`) behind every random
   * draw: arrivals, forecast keys, network delays, jitter. The same seed gives the same run.
   * A non-negative integer.
   * @default 1
   * @example
   * ```ts
   * runStorm({ seed: 42 })
   * ```
   */
  seed?: number | undefined;
  /**
   * User requests (farmers' taps) per second across all partner apps, a Poisson stream.
   * @default 4000
   * @example
   * ```ts
   * runStorm({ rps: 1000 })
   * ```
   */
  rps?: number | undefined;
  /**
   * Length of the simulated run in seconds of virtual time.
   * @default 180
   * @example
   * ```ts
   * runStorm({ durationSeconds: 600 })
   * ```
   */
  durationSeconds?: number | undefined;
  /**
   * When the database starts to fail over, in seconds from the start of the run. The seconds
   * before it measure `normalRps`.
   * @default 10
   * @example
   * ```ts
   * runStorm({ faultAtSeconds: 60 })
   * ```
   */
  faultAtSeconds?: number | undefined;
  /**
   * How long the failover lasts: every database query fails during it.
   * @default 30
   * @example
   * ```ts
   * runStorm({ faultSeconds: 5 })
   * ```
   */
  faultSeconds?: number | undefined;
  /**
   * How many partner backend instances send the traffic (evenly); each runs its own client
   * library, so each has its own retry budget, and the edge sheds whole instances.
   * @default 400
   * @example
   * ```ts
   * runStorm({ partnerInstances: 40 })
   * ```
   */
  partnerInstances?: number | undefined;
  /**
   * Share of partner instances whose backend wraps the client library in 3 retries of its own
   * (naive setup only; the stormproof setup has no wrappers). From 0 to 1.
   * @default 0.25
   * @example
   * ```ts
   * runStorm({ wrappedShare: 0.5 })
   * ```
   */
  wrappedShare?: number | undefined;
  /**
   * How many distinct forecasts (locations) can be asked for.
   * @default 50000
   * @example
   * ```ts
   * runStorm({ forecastKeys: 10_000 })
   * ```
   */
  forecastKeys?: number | undefined;
  /**
   * Popularity skew of the forecasts: the k-th most asked-for is asked for in proportion to
   * `1 / k^zipfExponent`.
   * @default 1
   * @example
   * ```ts
   * runStorm({ zipfExponent: 0.8 })
   * ```
   */
  zipfExponent?: number | undefined;
  /**
   * How long a cached forecast is kept, in seconds from the database answer that filled it.
   * Shorter than the failover, so the cache empties during it.
   * @default 20
   * @example
   * ```ts
   * runStorm({ cacheTtlSeconds: 60 })
   * ```
   */
  cacheTtlSeconds?: number | undefined;
  /**
   * Connections the API servers accept in all (16 servers x 2,000). A request holds one from
   * the moment it is accepted until its answer is written, queued or not; a request that finds
   * none free is rejected at once with a 503.
   * @default 32000
   * @example
   * ```ts
   * runStorm({ apiConnections: 4000 })
   * ```
   */
  apiConnections?: number | undefined;
  /**
   * CPU cores of the API servers in all (16 servers x 2). They serve accepted requests first in,
   * first out, after paying for rejections.
   * @default 32
   * @example
   * ```ts
   * runStorm({ apiCores: 64 })
   * ```
   */
  apiCores?: number | undefined;
  /**
   * CPU milliseconds to answer from the cache.
   * @default 2
   * @example
   * ```ts
   * runStorm({ hitCpuMs: 1 })
   * ```
   */
  hitCpuMs?: number | undefined;
  /**
   * CPU milliseconds to answer a cache miss (build the forecast from the database rows and cache
   * it), on top of the database query.
   * @default 6
   * @example
   * ```ts
   * runStorm({ missCpuMs: 4 })
   * ```
   */
  missCpuMs?: number | undefined;
  /**
   * CPU milliseconds an API server spends to reject a request it has no connection for (accept,
   * read, answer 503, close). Rejections at the edge cost the API servers nothing.
   * @default 0.02
   * @example
   * ```ts
   * runStorm({ rejectCpuMs: 0.2 }) // the servers spend all their CPU rejecting
   * ```
   */
  rejectCpuMs?: number | undefined;
  /**
   * Milliseconds one database query takes when the database is healthy.
   * @default 10
   * @example
   * ```ts
   * runStorm({ dbQueryMs: 20 })
   * ```
   */
  dbQueryMs?: number | undefined;
  /**
   * Queries the database runs at once; more wait in line. With `dbQueryMs` this is its capacity
   * (10,000 queries a second by default).
   * @default 100
   * @example
   * ```ts
   * runStorm({ dbConcurrency: 20 })
   * ```
   */
  dbConcurrency?: number | undefined;
  /**
   * During the failover, how long a query takes to fail (the driver's connect timeout), holding
   * the API connection all the while.
   * @default 500
   * @example
   * ```ts
   * runStorm({ dbFailMs: 50 })
   * ```
   */
  dbFailMs?: number | undefined;
  /**
   * One-way network delay between a partner backend and the edge, in ms; each trip draws
   * uniformly from half to one and a half times it. The hops inside the data centre are free.
   * @default 20
   * @example
   * ```ts
   * runStorm({ networkLatencyMs: 50 })
   * ```
   */
  networkLatencyMs?: number | undefined;
  /**
   * The client library's time limit per attempt, in ms (the engine's `attemptTimeoutMs`, cut
   * short by the deadline in the stormproof setup). When it passes, the client hangs up: the
   * gateway stops working on that request, but the API server does not know and finishes it.
   * @default 1000
   * @example
   * ```ts
   * runStorm({ clientTimeoutMs: 2000 })
   * ```
   */
  clientTimeoutMs?: number | undefined;
  /**
   * The gateway's time limit per try to an API server, in ms; it answers 504 when it passes.
   * @default 2000
   * @example
   * ```ts
   * runStorm({ gatewayTimeoutMs: 500 })
   * ```
   */
  gatewayTimeoutMs?: number | undefined;
  /**
   * Retry-After, in whole seconds, on every 503 from the API servers and the edge; 0 sends none.
   * The naive library ignores it; the stormproof one adds it to its jittered wait.
   * @default 2 in the stormproof setup, 0 (none, as the storm story's old API) in the naive one
   * @example
   * ```ts
   * runStorm({ retryAfterSeconds: 0 })
   * ```
   */
  retryAfterSeconds?: number | undefined;
  /**
   * With `manualRecovery`: when the edge starts shedding, in seconds after the fault began. The
   * storm story's engineer acted after 33 minutes (1980 s); the default compresses that timeline.
   * @default 90
   * @example
   * ```ts
   * runStorm({ manualRecovery: true, shedAfterFaultSeconds: 1980, durationSeconds: 2400 })
   * ```
   */
  shedAfterFaultSeconds?: number | undefined;
  /**
   * With `manualRecovery`: seconds the edge keeps only the first step open, so that connections
   * drain and the cache fills, before the first error check.
   * @default 10
   * @example
   * ```ts
   * runStorm({ manualRecovery: true, drainSeconds: 30 })
   * ```
   */
  drainSeconds?: number | undefined;
  /**
   * With `manualRecovery`: seconds between error checks; each passing check opens one more step.
   * @default 10
   * @example
   * ```ts
   * runStorm({ manualRecovery: true, stepSeconds: 60 })
   * ```
   */
  stepSeconds?: number | undefined;
  /**
   * With `manualRecovery`: share of partner instances let through per step, from 0.01 to 1.
   * @default 0.2
   * @example
   * ```ts
   * runStorm({ manualRecovery: true, stepFraction: 0.1 })
   * ```
   */
  stepFraction?: number | undefined;
  /**
   * With `manualRecovery`: the highest error ratio of the gateway (errors and hang-ups over all
   * requests it handled) in the last half of a step that still allows the next step.
   * @default 0.01
   * @example
   * ```ts
   * runStorm({ manualRecovery: true, maxStepErrorRatio: 0.05 })
   * ```
   */
  maxStepErrorRatio?: number | undefined;
  /**
   * The success ratio of user requests that counts as healthy: the service has recovered at the
   * first second after the database is back from which every second's ratio is at least this.
   * @default 0.99
   * @example
   * ```ts
   * runStorm({ recoveryThreshold: 0.95 })
   * ```
   */
  recoveryThreshold?: number | undefined;
  /**
   * Seconds of the run that must follow a recovery for it to count: a run that is healthy only
   * in its last few seconds reports `recoveredAfterFaultSeconds: null`.
   * @default 10
   * @example
   * ```ts
   * runStorm({ recoveryHoldSeconds: 30 })
   * ```
   */
  recoveryHoldSeconds?: number | undefined;
  /**
   * Replaces options of the client library's retry policy, for either setup. The setups'
   * libraries: naive `{ maxAttempts: 4, baseDelayMs: 0, maxDelayMs: 0, jitter: 'none',
   * honorRetryAfter: false, budget: false }` with no deadline; stormproof the engine's defaults
   * (`createRetryPolicy()`: 4 attempts, base 200 ms, cap 5 s, deadline 3 s, full jitter,
   * Retry-After honoured, a `RetryBudget` per instance). Both use `clientTimeoutMs` as
   * `attemptTimeoutMs` unless it is given here.
   * @default undefined
   * @example
   * ```ts
   * runStorm({ policy: 'stormproof', retryPolicy: { budget: false } })
   * runStorm({ policy: 'stormproof', retryPolicy: { maxAttempts: 1 } })
   * ```
   */
  retryPolicy?: StormRetryPolicy | undefined;
  /**
   * Called after each simulated second with the seconds done and the run's length.
   * @default undefined
   * @example
   * ```ts
   * runStorm({ onProgress: (done, total) => process.stderr.write(`\r${done}/${total} s`) })
   * ```
   */
  onProgress?: ((doneSeconds: number, totalSeconds: number) => void) | undefined;
}

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

/**
 * The parameters a run used, every default filled in (`retryPolicy` and `onProgress` left out;
 * `breaker` is `false` or the breaker's rules with their defaults).
 */
export type StormParameters = {
  readonly [K in Exclude<keyof StormOptions, 'retryPolicy' | 'onProgress' | 'breaker'>]-?: Exclude<
    StormOptions[K],
    undefined
  >;
} & { readonly breaker: false | Readonly<StormBreakerOptions> };

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
  /** When the database was healthy again, in seconds from the start of the run. */
  readonly dbHealthyAtSeconds: number;
  /** The manual recovery, when `manualRecovery` was on and the shedding started within the run. */
  readonly recovery: StormRecovery | null;
  /** Totals over the run. */
  readonly totals: StormTotals;
  /** One entry per second of the run. */
  readonly series: StormSecond[];
  /** The parameters used. */
  readonly parameters: StormParameters;
}

const OWNER = 'runStorm';

const DEFAULTS: StormParameters = Object.freeze({
  policy: 'naive',
  manualRecovery: false,
  breaker: false,
  seed: 1,
  rps: 4000,
  durationSeconds: 180,
  faultAtSeconds: 10,
  faultSeconds: 30,
  partnerInstances: 400,
  wrappedShare: 0.25,
  forecastKeys: 50_000,
  zipfExponent: 1,
  cacheTtlSeconds: 20,
  apiConnections: 32_000,
  apiCores: 32,
  hitCpuMs: 2,
  missCpuMs: 6,
  rejectCpuMs: 0.02,
  dbQueryMs: 10,
  dbConcurrency: 100,
  dbFailMs: 500,
  networkLatencyMs: 20,
  clientTimeoutMs: 1000,
  gatewayTimeoutMs: 2000,
  retryAfterSeconds: 2, // 0 in the naive setup: see resolveOptions
  shedAfterFaultSeconds: 90,
  drainSeconds: 10,
  stepSeconds: 10,
  stepFraction: 0.2,
  maxStepErrorRatio: 0.01,
  recoveryThreshold: 0.99,
  recoveryHoldSeconds: 10,
});

/** The storm model's defaults, for the CLI's help. */
export const STORM_DEFAULTS: Readonly<StormParameters> = DEFAULTS;

const KNOWN_KEYS: readonly string[] = [...Object.keys(DEFAULTS), 'retryPolicy', 'onProgress'];
const RETRY_POLICY_KEYS: readonly string[] = [
  'maxAttempts',
  'baseDelayMs',
  'maxDelayMs',
  'deadlineMs',
  'attemptTimeoutMs',
  'jitter',
  'throttledDelayMultiplier',
  'honorRetryAfter',
  'budget',
];

const BREAKER_KEYS: readonly (keyof StormBreakerOptions)[] = BREAKER_RULE_KEYS;

/** `breaker`: false, or the breaker's rules checked and filled by the breaker's own code. */
function resolveBreaker(value: unknown, policy: StormPolicy): false | StormBreakerOptions {
  if (value === undefined || value === false) return false;
  if (policy !== 'stormproof') {
    throw new TypeError(
      `stormproof: ${OWNER} breaker needs policy 'stormproof' (the naive stack has no breaker), got policy ${show(policy)}`,
    );
  }
  const options = value === true ? {} : value;
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(
      `stormproof: ${OWNER} breaker must be true, false or an object of breaker options, got ${show(value)}`,
    );
  }
  const o = options as Record<string, unknown>;
  checkKnownKeys(`${OWNER} breaker`, o, BREAKER_KEYS);
  const filled = resolveBreakerOptions(`${OWNER} breaker`, o);
  return Object.freeze(Object.fromEntries(BREAKER_KEYS.map((k) => [k, filled[k]])));
}

/** A deadline long enough never to bind: the naive layers have none. */
const NO_DEADLINE_MS = 1e12;

function checkBoolean(name: string, value: unknown): boolean {
  if (typeof value !== 'boolean') {
    throw new TypeError(`stormproof: ${OWNER} ${name} must be a boolean, got ${show(value)}`);
  }
  return value;
}

/** Fills the defaults and checks every option; throws naming the option and the value. */
function resolveOptions(options: unknown): {
  p: StormParameters;
  retryPolicy: StormRetryPolicy | undefined;
  onProgress: ((done: number, total: number) => void) | undefined;
} {
  const o = checkOptionsObject(OWNER, options);
  checkKnownKeys(OWNER, o, KNOWN_KEYS);
  const num = (name: keyof StormParameters, limits: Parameters<typeof checkNumber>[3]) =>
    checkNumber(OWNER, name, o[name] ?? DEFAULTS[name], limits);
  const policy = o.policy ?? DEFAULTS.policy;
  if (policy !== 'naive' && policy !== 'stormproof') {
    throw new TypeError(
      `stormproof: ${OWNER} policy must be 'naive' or 'stormproof', got ${show(policy)}`,
    );
  }
  const positive = { min: 0, minExclusive: true };
  const durationSeconds = num('durationSeconds', { min: 1, max: 86_400, integer: true });
  const faultAtSeconds = num('faultAtSeconds', { min: 2, max: durationSeconds, integer: true });
  const p: StormParameters = {
    policy,
    manualRecovery: checkBoolean('manualRecovery', o.manualRecovery ?? DEFAULTS.manualRecovery),
    breaker: resolveBreaker(o.breaker, policy),
    seed: num('seed', { min: 0, max: Number.MAX_SAFE_INTEGER, integer: true }),
    rps: num('rps', { ...positive, max: 1_000_000 }),
    durationSeconds,
    faultAtSeconds,
    faultSeconds: num('faultSeconds', {
      min: 0,
      max: durationSeconds - faultAtSeconds,
      integer: true,
    }),
    partnerInstances: num('partnerInstances', { min: 1, max: 1_000_000, integer: true }),
    wrappedShare: num('wrappedShare', { min: 0, max: 1 }),
    forecastKeys: num('forecastKeys', { min: 1, max: 10_000_000, integer: true }),
    zipfExponent: num('zipfExponent', { min: 0, max: 10 }),
    cacheTtlSeconds: num('cacheTtlSeconds', { min: 0, max: 86_400 }),
    apiConnections: num('apiConnections', { min: 1, max: 100_000_000, integer: true }),
    apiCores: num('apiCores', { ...positive, max: 1_000_000 }),
    hitCpuMs: num('hitCpuMs', { ...positive, max: 60_000 }),
    missCpuMs: num('missCpuMs', { ...positive, max: 60_000 }),
    rejectCpuMs: num('rejectCpuMs', { min: 0, max: 60_000 }),
    dbQueryMs: num('dbQueryMs', { min: 0, max: 600_000, integer: true }),
    dbConcurrency: num('dbConcurrency', { min: 1, max: 100_000_000, integer: true }),
    dbFailMs: num('dbFailMs', { min: 0, max: 600_000, integer: true }),
    networkLatencyMs: num('networkLatencyMs', { min: 0, max: 60_000 }),
    clientTimeoutMs: num('clientTimeoutMs', { min: 1, max: 600_000, integer: true }),
    gatewayTimeoutMs: num('gatewayTimeoutMs', { min: 1, max: 600_000, integer: true }),
    retryAfterSeconds: checkNumber(
      OWNER,
      'retryAfterSeconds',
      o.retryAfterSeconds ?? (policy === 'naive' ? 0 : 2),
      { min: 0, max: 86_400, integer: true },
    ),
    shedAfterFaultSeconds: num('shedAfterFaultSeconds', { min: 0, max: 86_400, integer: true }),
    drainSeconds: num('drainSeconds', { min: 1, max: 86_400, integer: true }),
    stepSeconds: num('stepSeconds', { min: 1, max: 86_400, integer: true }),
    stepFraction: num('stepFraction', { min: 0.01, max: 1 }),
    maxStepErrorRatio: num('maxStepErrorRatio', { min: 0, max: 1 }),
    recoveryThreshold: num('recoveryThreshold', { ...positive, max: 1 }),
    recoveryHoldSeconds: num('recoveryHoldSeconds', { min: 1, max: 86_400, integer: true }),
  };
  let retryPolicy: StormRetryPolicy | undefined;
  if (o.retryPolicy !== undefined) {
    const r = checkOptionsObject(`${OWNER} retryPolicy`, o.retryPolicy);
    checkKnownKeys(`${OWNER} retryPolicy`, r, RETRY_POLICY_KEYS);
    const budget = r.budget;
    if (budget !== undefined && budget !== false && typeof budget !== 'function') {
      throw new TypeError(
        `stormproof: ${OWNER} retryPolicy budget must be a function that makes a Budget, or false, got ${show(budget)}`,
      );
    }
    retryPolicy = r as StormRetryPolicy;
  }
  const onProgress = o.onProgress;
  if (onProgress !== undefined && typeof onProgress !== 'function') {
    throw new TypeError(
      `stormproof: ${OWNER} onProgress must be a function, got ${show(onProgress)}`,
    );
  }
  return {
    p,
    retryPolicy,
    onProgress: onProgress as ((done: number, total: number) => void) | undefined,
  };
}

// ---------------------------------------------------------------------------------------------
// The model's moving parts.

/** One farmer's tap, as the partner backend handles it. */
interface UserRequest {
  readonly instance: number;
  readonly key: number;
  /** The partner wrapper's attempt (library call) number, or 0 when this instance does not wrap. */
  wrapperAttempt: number;
  /** The client library's attempt number in its current call (from 1). */
  libAttempt: number;
  /** When the library's current call started. */
  libStartedAt: number;
  /** The engine's state of the library's current call (undefined when the library is fixed). */
  lib: RetryState | undefined;
}

// Where a client-library attempt is.
/** On its way to the edge. */
const TO_EDGE = 0;
/** With the gateway, which is trying the API servers. */
const IN_GATEWAY = 1;
/** Answered (by the edge or the gateway); the answer is on its way back. */
const ANSWERED = 2;

/** One client-library attempt, and the gateway's handling of it (one gateway request). */
interface Attempt {
  readonly user: UserRequest;
  /** The client has its answer or has hung up: nothing more happens to this attempt. */
  done: boolean;
  stage: number;
  /** The gateway's attempt number for this request (its tries that got an answer or failed). */
  gatewayAttempt: number;
  /** Number of the gateway's current try; answers to older tries are ignored. */
  tryNo: number;
  /** The answer travelling back to the client. */
  answer: Outcome;
  /** Its instance's circuit breaker's admission, recorded when the attempt ends. */
  readonly admission: BreakerAdmission | undefined;
}

/** A request accepted by an API server: it holds a connection until it is answered. */
interface Job {
  readonly attempt: Attempt;
  readonly tryNo: number;
  readonly key: number;
  /** CPU ms still to do; NaN until the CPU first reaches it and looks in the cache. */
  remaining: number;
  miss: boolean;
}

// Event kinds. The low 4 bits of a code are the kind; the gateway timeout keeps its try number
// in the bits above.
const EV_EDGE = 0;
const EV_CLIENT_TIMEOUT = 1;
const EV_ANSWER = 2;
const EV_LIBRARY_RETRY = 3;
const EV_WRAPPER_RETRY = 4;
const EV_GATEWAY_RETRY = 5;
const EV_GATEWAY_TIMEOUT = 6;
const EV_DB_DONE = 7;
const EV_DB_FAILED = 8;

const OK: Outcome = Object.freeze({ ok: true });
const CLIENT_TIMEOUT: Outcome = Object.freeze({
  ok: false,
  error: Object.freeze({ timedOut: true }),
});
const GATEWAY_TIMEOUT: Outcome = Object.freeze({
  ok: false,
  error: Object.freeze({ status: 504 }),
});

/** A 503 as the servers send it: with `Retry-After: N` when N > 0. */
function unavailable(retryAfterSeconds: number): Outcome {
  const error =
    retryAfterSeconds > 0
      ? { status: 503, headers: Object.freeze({ 'retry-after': String(retryAfterSeconds) }) }
      : { status: 503 };
  return Object.freeze({ ok: false, error: Object.freeze(error) });
}

/**
 * A retry layer of the old stack (a partner wrapper, the gateway, the old client library): the
 * engine with 4 attempts, no wait, no budget, no deadline and Retry-After ignored. Its decisions
 * then depend only on the attempt number and the failure, never on time, chance or history (the
 * other fields of the engine's state only matter for backoff, which is 0 here, and for 500s,
 * which the model never sends), so the engine's `step` is asked once per attempt number and
 * failure, the first time it comes up, and its answer reused. These layers make tens of
 * millions of decisions in a storm; asking once keeps a run to seconds. A library with a budget,
 * jitter or a deadline (the stormproof one, or any `retryPolicy` that adds them) calls `step`
 * for every decision.
 */
class FixedLayer {
  readonly #policy: ResolvedPolicy;
  /** Per failure: the wait after attempt n (at index n - 1), or -1 for giving up. */
  readonly #answers = new Map<Outcome, number[]>();

  /**
   * Whether the policy's decisions depend on nothing but the attempt number and the failure: no
   * budget, no override, Retry-After ignored, no random or growing wait, a deadline that never
   * binds.
   */
  static fits(policy: ResolvedPolicy): boolean {
    return (
      policy.budget === undefined &&
      policy.shouldRetry === undefined &&
      !policy.honorRetryAfter &&
      policy.jitter.kind === 'none' &&
      policy.maxDelayMs === 0 &&
      policy.deadlineMs >= NO_DEADLINE_MS
    );
  }

  constructor(policy: ResolvedPolicy) {
    if (!FixedLayer.fits(policy)) {
      throw new Error('stormproof: a FixedLayer needs a policy that depends only on the attempt');
    }
    this.#policy = policy;
  }

  /** The engine's wait before the next attempt after `attempt` failed with `outcome`, or -1. */
  afterFailure(attempt: number, outcome: Outcome): number {
    let answers = this.#answers.get(outcome);
    if (answers === undefined) {
      answers = [];
      let state: RetryState = startState(this.#policy, 0);
      for (;;) {
        const d = step(this.#policy, state, outcome, 0);
        if (d.action !== 'retry') break;
        answers.push(d.delayMs);
        state = d.state;
      }
      this.#answers.set(outcome, answers);
    }
    return answers[attempt - 1] ?? -1;
  }
}

/** Which of `n` items (0-based) a uniform draw `u` in [0, 1) picks under the cumulative weights. */
function pick(cumulative: Float64Array, u: number): number {
  const target = u * cumulative[cumulative.length - 1]!;
  let lo = 0;
  let hi = cumulative.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (cumulative[mid]! > target) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/**
 * Runs the `storm` scenario: the storm story's weather API, its 30-second database
 * failover and the retry storm that followed, in virtual time. Deterministic for a seed; no
 * wall-clock time is read or slept.
 *
 * With the defaults, `'naive'` shows the metastable state (several times the normal load at the
 * edge, the service still failing at the end of the run), `manualRecovery` ends it by shedding at
 * the edge and reopening in 20% steps, and `'stormproof'` recovers within seconds of the
 * database's return. The model and its parameters: docs/storm-model.md.
 *
 * @throws TypeError or RangeError naming the option and the value, for an unknown option or a
 *   bad value.
 * @example
 * ```ts
 * const { normalRps, peakRpsAfterFailover, recoveredAfterFaultSeconds } = runStorm({ policy: 'stormproof' });
 * ```
 */
export function runStorm(options?: StormOptions): StormResult {
  const { p, retryPolicy, onProgress } = resolveOptions(options);
  const rng = new PythonRandom(p.seed);
  const random = (): number => rng.random();
  let now = 0;
  const clock: Clock = { now: () => now, sleep: () => Promise.resolve() };

  // --- The retry layers: every one is the library's engine, configured as the setup says. ---
  const naive = p.policy === 'naive';
  const naiveLayer: RetryPolicyOptions = {
    maxAttempts: 4,
    baseDelayMs: 0,
    maxDelayMs: 0,
    jitter: 'none',
    honorRetryAfter: false,
    budget: false,
    deadlineMs: NO_DEADLINE_MS,
    clock,
    random,
  };
  const layer = (name: string, o: RetryPolicyOptions) =>
    resolvePolicy(`${OWNER} ${name}`, o, { defaultBudget: false, allowCallKeys: false });
  const wrapper =
    naive && p.wrappedShare > 0 ? new FixedLayer(layer('wrapper', naiveLayer)) : undefined;
  const gateway = naive ? new FixedLayer(layer('gateway', naiveLayer)) : undefined;
  const wrappedInstances = Math.round(p.wrappedShare * p.partnerInstances);
  const { budget: budgetFactory, ...libraryOverrides } = retryPolicy ?? {};
  const libraryBase: RetryPolicyOptions = naive
    ? { ...naiveLayer, attemptTimeoutMs: p.clientTimeoutMs }
    : { attemptTimeoutMs: p.clientTimeoutMs, clock, random };
  const libraryPolicies: ResolvedPolicy[] = [];
  for (let i = 0; i < p.partnerInstances; i++) {
    let budget: Budget | false = false;
    if (budgetFactory !== undefined && budgetFactory !== false) budget = budgetFactory();
    else if (budgetFactory === undefined && !naive) budget = new RetryBudget();
    libraryPolicies.push(
      layer('retryPolicy', { ...libraryBase, ...libraryOverrides, budget, clock, random }),
    );
  }
  // Without a budget every instance's library decides alike, and the old library depends on
  // nothing but the attempt: then its answers are asked once (see FixedLayer).
  const fixedLibrary = FixedLayer.fits(libraryPolicies[0]!)
    ? new FixedLayer(libraryPolicies[0]!)
    : undefined;
  // One breaker per instance's client library, as the engine's `breaker` option is per policy.
  let breakerOpenings = 0;
  const breakerOptions: BreakerOptions | false = p.breaker && {
    ...p.breaker,
    clock,
    random,
    onStateChange: (t) => {
      if (t.to === 'open') breakerOpenings++;
    },
  };
  const breakers = breakerOptions
    ? Array.from(
        { length: p.partnerInstances },
        (_, i) => new CircuitBreaker(`partner-${i}`, breakerOptions),
      )
    : undefined;

  // --- Forecast popularity and the cache, prefilled in its steady state. ---
  const cumulative = new Float64Array(p.forecastKeys);
  let total = 0;
  for (let k = 0; k < p.forecastKeys; k++) {
    total += 1 / (k + 1) ** p.zipfExponent;
    cumulative[k] = total;
  }
  const ttlMs = p.cacheTtlSeconds * 1000;
  const cacheExpiry = new Float64Array(p.forecastKeys);
  for (let k = 0; k < p.forecastKeys; k++) {
    // A key asked for r times a second is cached rT / (1 + rT) of the time, and a cached entry
    // has a uniformly distributed time left to live.
    const rT = ((p.rps * (1 / (k + 1) ** p.zipfExponent)) / total) * p.cacheTtlSeconds;
    cacheExpiry[k] = random() < rT / (1 + rT) ? random() * ttlMs : -1;
  }

  // --- The edge: partner instances let through, in a seeded random order. ---
  const admitOrder = new Int32Array(p.partnerInstances);
  for (let i = 0; i < p.partnerInstances; i++) admitOrder[i] = i;
  rng.shuffle(admitOrder);
  const admitRank = new Int32Array(p.partnerInstances);
  for (let r = 0; r < p.partnerInstances; r++) admitRank[admitOrder[r]!] = r;
  let admittedShare = 1;
  let admittedCount = p.partnerInstances;

  const OVERLOADED = unavailable(p.retryAfterSeconds);
  const DB_DOWN = OVERLOADED;
  const SHED = OVERLOADED;

  // --- Time and per-second statistics. ---
  const seconds = p.durationSeconds;
  const endMs = seconds * 1000;
  const faultStartMs = p.faultAtSeconds * 1000;
  const faultEndMs = (p.faultAtSeconds + p.faultSeconds) * 1000;
  const stat = () => new Float64Array(seconds);
  const sOffered = stat();
  const sUsers = stat();
  const sSucceeded = stat();
  const sFailed = stat();
  const sShed = stat();
  const sApi = stat();
  const sRejected = stat();
  const sRetries = stat();
  const sWasted = stat();
  const sDb = stat();
  const sHits = stat();
  const sLookups = stat();
  const sBusy = stat();
  const sAdmitted = stat();
  const sGatewayOk = stat();
  const sGatewayErr = stat();
  const sRefused = stat();
  let sec = 0;
  let wrapperRetries = 0;
  let libraryRetries = 0;
  let gatewayRetries = 0;
  let budgetRefusals = 0;
  let breakerRefusals = 0;

  const calendar = new Calendar<unknown>(13);
  const latency = (): number =>
    p.networkLatencyMs === 0 ? 0 : Math.round(p.networkLatencyMs * (0.5 + random()));

  // --- API servers: connections, a first-in-first-out CPU, the database. ---
  let busy = 0;
  let cpuDebtMs = 0;
  let cpuQueue: Job[] = [];
  let cpuHead = 0;
  let dbBusy = 0;
  let dbQueue: Job[] = [];
  let dbHead = 0;

  /** The gateway's answer for attempt `a` leaves now and reaches the client after the network trip. */
  function answer(a: Attempt, outcome: Outcome, ok: boolean): void {
    if (ok) sGatewayOk[sec]!++;
    else sGatewayErr[sec]!++;
    a.stage = ANSWERED;
    a.answer = outcome;
    calendar.schedule(now + latency(), a, EV_ANSWER);
  }

  /** The gateway tries the API servers for attempt `a`, retrying at once while its policy says so. */
  function gatewayTry(a: Attempt): void {
    for (;;) {
      sApi[sec]!++;
      if (busy < p.apiConnections) {
        busy++;
        a.tryNo++;
        cpuQueue.push({
          attempt: a,
          tryNo: a.tryNo,
          key: a.user.key,
          remaining: Number.NaN,
          miss: false,
        });
        calendar.schedule(now + p.gatewayTimeoutMs, a, EV_GATEWAY_TIMEOUT | (a.tryNo << 4));
        return;
      }
      sRejected[sec]!++;
      cpuDebtMs += p.rejectCpuMs;
      if (!gatewayFailed(a, OVERLOADED)) return;
    }
  }

  /**
   * The gateway's try for `a` failed with `outcome`: ask the gateway's policy. Returns true when
   * it retries at once (the caller tries again), false when it waits or gave up.
   */
  function gatewayFailed(a: Attempt, outcome: Outcome): boolean {
    const delayMs = gateway === undefined ? -1 : gateway.afterFailure(a.gatewayAttempt, outcome);
    if (delayMs < 0) {
      answer(a, outcome, false);
      return false;
    }
    gatewayRetries++;
    a.gatewayAttempt++;
    if (delayMs === 0) return true;
    calendar.schedule(now + Math.ceil(delayMs), a, EV_GATEWAY_RETRY);
    return false;
  }

  /** An API server writes its answer to job `j` and frees the connection. */
  function finishJob(j: Job, outcome: Outcome): void {
    busy--;
    const a = j.attempt;
    if (a.done || a.stage !== IN_GATEWAY || a.tryNo !== j.tryNo) {
      sWasted[sec]!++;
      return;
    }
    if (outcome.ok) {
      answer(a, outcome, true);
      return;
    }
    if (gatewayFailed(a, outcome)) gatewayTry(a);
  }

  function startQuery(j: Job): void {
    sDb[sec]!++;
    if (now >= faultStartMs && now < faultEndMs) {
      calendar.schedule(now + p.dbFailMs, j, EV_DB_FAILED);
      return;
    }
    if (dbBusy < p.dbConcurrency) {
      dbBusy++;
      calendar.schedule(now + p.dbQueryMs, j, EV_DB_DONE);
    } else {
      dbQueue.push(j);
    }
  }

  /** Runs the API servers' CPU for one millisecond: rejections first, then the queue in order. */
  function runCpu(): void {
    let available = p.apiCores;
    if (cpuDebtMs > 0) {
      const paid = Math.min(cpuDebtMs, available);
      cpuDebtMs -= paid;
      available -= paid;
    }
    while (available > 0 && cpuHead < cpuQueue.length) {
      const j = cpuQueue[cpuHead]!;
      if (Number.isNaN(j.remaining)) {
        sLookups[sec]!++;
        if (cacheExpiry[j.key]! > now) {
          sHits[sec]!++;
          j.remaining = p.hitCpuMs;
        } else {
          j.miss = true;
          j.remaining = p.missCpuMs;
        }
      }
      if (j.remaining > available) {
        j.remaining -= available;
        break;
      }
      available -= j.remaining;
      cpuHead++;
      if (j.miss) startQuery(j);
      else finishJob(j, OK);
    }
    if (cpuHead > 4096 && cpuHead * 2 > cpuQueue.length) {
      cpuQueue = cpuQueue.slice(cpuHead);
      cpuHead = 0;
    }
  }

  // --- The partner side: wrapper, client library, attempts. ---

  function startAttempt(u: UserRequest): void {
    // As the engine's driver: the breaker is asked before every attempt. A refused first attempt
    // fails the call at once (BreakerOpenError), a refused retry gives up with the last failure;
    // either way no attempt is sent, and the stormproof setup has no wrapper to retry it.
    const admission = breakers === undefined ? undefined : breakers[u.instance]!.admit();
    if (admission !== undefined && !admission.admitted) {
      breakerRefusals++;
      sRefused[sec]!++;
      finishUser(false);
      return;
    }
    const a: Attempt = {
      user: u,
      done: false,
      stage: TO_EDGE,
      gatewayAttempt: 0,
      tryNo: 0,
      answer: OK,
      admission,
    };
    // The engine's attempt timeout: fresh for each attempt, cut short by the deadline.
    const policy = libraryPolicies[u.instance]!;
    const left = policy.deadlineMs - (now - u.libStartedAt);
    const limit = Math.max(0, Math.min(policy.attemptTimeoutMs ?? left, left));
    calendar.schedule(now + Math.ceil(limit), a, EV_CLIENT_TIMEOUT);
    calendar.schedule(now + latency(), a, EV_EDGE);
  }

  function startLibraryCall(u: UserRequest): void {
    u.libAttempt = 1;
    u.libStartedAt = now;
    if (fixedLibrary === undefined) {
      const policy = libraryPolicies[u.instance]!;
      u.lib = startState(policy, now);
      policy.budget?.recordRequest(now);
    }
    startAttempt(u);
  }

  function startUser(): void {
    sUsers[sec]!++;
    const instance = Math.floor(random() * p.partnerInstances);
    const key = pick(cumulative, random());
    const u: UserRequest = {
      instance,
      key,
      wrapperAttempt: wrapper !== undefined && instance < wrappedInstances ? 1 : 0,
      libAttempt: 1,
      libStartedAt: now,
      lib: undefined,
    };
    startLibraryCall(u);
  }

  function finishUser(ok: boolean): void {
    if (ok) sSucceeded[sec]!++;
    else sFailed[sec]!++;
  }

  /** The wrapper sees the outcome of a library call. */
  function wrapperOutcome(u: UserRequest, outcome: Outcome): void {
    if (outcome.ok || u.wrapperAttempt === 0 || wrapper === undefined) {
      finishUser(outcome.ok);
      return;
    }
    const delayMs = wrapper.afterFailure(u.wrapperAttempt, outcome);
    if (delayMs < 0) {
      finishUser(false);
      return;
    }
    wrapperRetries++;
    u.wrapperAttempt++;
    if (delayMs === 0) startLibraryCall(u);
    else calendar.schedule(now + Math.ceil(delayMs), u, EV_WRAPPER_RETRY);
  }

  /** The client library sees the outcome of attempt `a`: its answer, or its own timeout. */
  function libraryOutcome(a: Attempt, outcome: Outcome): void {
    const u = a.user;
    let delayMs: number;
    if (fixedLibrary !== undefined) {
      delayMs = outcome.ok ? -1 : fixedLibrary.afterFailure(u.libAttempt, outcome);
    } else {
      const d = step(libraryPolicies[u.instance]!, u.lib!, outcome, now);
      if (d.action === 'retry') {
        u.lib = d.state;
        delayMs = d.delayMs;
      } else {
        if (d.action === 'give-up' && d.reason === 'budget') budgetRefusals++;
        delayMs = -1;
      }
    }
    // After the decision, as the driver records it. Every failure the model sends (a 503, a 504,
    // a timeout) is one the engine counts against the service.
    if (a.admission !== undefined) {
      breakers![u.instance]!.record(a.admission, outcome.ok ? 'success' : 'failure');
    }
    if (delayMs < 0) {
      wrapperOutcome(u, outcome);
      return;
    }
    libraryRetries++;
    sRetries[sec]!++;
    u.libAttempt++;
    if (delayMs === 0) startAttempt(u);
    else calendar.schedule(now + Math.ceil(delayMs), u, EV_LIBRARY_RETRY);
  }

  /** An attempt reaches the edge: shed, or handed to the gateway. */
  function atEdge(a: Attempt): void {
    sOffered[sec]!++;
    if (a.done) return;
    if (admitRank[a.user.instance]! >= admittedCount) {
      sShed[sec]!++;
      a.stage = ANSWERED;
      a.answer = SHED;
      calendar.schedule(now + latency(), a, EV_ANSWER);
      return;
    }
    a.stage = IN_GATEWAY;
    a.gatewayAttempt = 1;
    gatewayTry(a);
  }

  function dispatch(item: unknown, code: number): void {
    switch (code & 15) {
      case EV_EDGE:
        atEdge(item as Attempt);
        return;
      case EV_CLIENT_TIMEOUT: {
        const a = item as Attempt;
        if (a.done) return;
        a.done = true;
        if (a.stage === IN_GATEWAY) sGatewayErr[sec]!++; // the client hung up on the gateway
        libraryOutcome(a, CLIENT_TIMEOUT);
        return;
      }
      case EV_ANSWER: {
        const a = item as Attempt;
        if (a.done) return;
        a.done = true;
        libraryOutcome(a, a.answer);
        return;
      }
      case EV_LIBRARY_RETRY:
        startAttempt(item as UserRequest);
        return;
      case EV_WRAPPER_RETRY:
        startLibraryCall(item as UserRequest);
        return;
      case EV_GATEWAY_RETRY: {
        const a = item as Attempt;
        if (!a.done && a.stage === IN_GATEWAY) gatewayTry(a);
        return;
      }
      case EV_GATEWAY_TIMEOUT: {
        const a = item as Attempt;
        if (a.done || a.stage !== IN_GATEWAY || a.tryNo !== code >>> 4) return;
        a.tryNo++; // the try in flight is abandoned; its answer, when it comes, is ignored
        if (gatewayFailed(a, GATEWAY_TIMEOUT)) gatewayTry(a);
        return;
      }
      case EV_DB_DONE: {
        const j = item as Job;
        dbBusy--;
        cacheExpiry[j.key] = now + ttlMs;
        finishJob(j, OK);
        while (dbBusy < p.dbConcurrency && dbHead < dbQueue.length) {
          dbBusy++;
          calendar.schedule(now + p.dbQueryMs, dbQueue[dbHead++]!, EV_DB_DONE);
        }
        if (dbHead > 4096 && dbHead * 2 > dbQueue.length) {
          dbQueue = dbQueue.slice(dbHead);
          dbHead = 0;
        }
        return;
      }
      case EV_DB_FAILED:
        finishJob(item as Job, DB_DOWN);
        return;
    }
  }

  // --- The on-call engineer. ---
  const shedAtSeconds = p.faultAtSeconds + p.shedAfterFaultSeconds;
  const checkWindow = Math.max(1, Math.floor(p.stepSeconds / 2));
  let recovery: {
    shedAtSeconds: number;
    steps: [number, number][];
    reopenedAtSeconds: number | null;
  } | null = null;
  let nextCheck = Number.POSITIVE_INFINITY;
  let steps = 0;
  function openStep(): void {
    steps++;
    // Whole steps of the fraction, without the float error of adding 0.2 again and again.
    const share = Math.min(1, Math.round(steps * p.stepFraction * 1e9) / 1e9);
    admittedShare = share;
    admittedCount = Math.round(admittedShare * p.partnerInstances);
    recovery?.steps.push([sec, admittedShare]);
    if (admittedShare >= 1 && recovery !== null) {
      recovery.reopenedAtSeconds = sec;
      nextCheck = Number.POSITIVE_INFINITY;
    }
  }
  function engineer(): void {
    if (p.manualRecovery && sec === shedAtSeconds) {
      recovery = { shedAtSeconds, steps: [], reopenedAtSeconds: null };
      openStep();
      nextCheck = sec + p.drainSeconds;
    }
    if (sec === nextCheck) {
      let ok = 0;
      let errors = 0;
      for (let s = Math.max(0, sec - checkWindow); s < sec; s++) {
        ok += sGatewayOk[s]!;
        errors += sGatewayErr[s]!;
      }
      if (ok + errors === 0 || errors / (ok + errors) <= p.maxStepErrorRatio) {
        openStep();
      }
      if (admittedShare < 1) nextCheck = sec + p.stepSeconds;
    }
  }

  // --- The main loop: one millisecond at a time. ---
  const meanGapMs = 1000 / p.rps;
  let nextArrival = -Math.log(1 - random()) * meanGapMs;
  for (sec = 0; sec < seconds; sec++) {
    engineer();
    const secondEnd = (sec + 1) * 1000;
    for (now = sec * 1000; now < secondEnd; now++) {
      while (nextArrival < now + 1) {
        startUser();
        nextArrival += -Math.log(1 - random()) * meanGapMs;
      }
      const bucket = calendar.take(now);
      const items = bucket.items;
      const codes = bucket.codes;
      let i = 0;
      for (; i < bucket.size; i++) dispatch(items[i], codes[i]!);
      runCpu();
      // What the CPU finished may be due this same millisecond (no network delay, say).
      for (; i < bucket.size; i++) dispatch(items[i], codes[i]!);
      calendar.clear(bucket);
    }
    sBusy[sec] = busy;
    sAdmitted[sec] = admittedShare;
    onProgress?.(sec + 1, seconds);
  }
  now = endMs;

  // --- Figures. ---
  const dbHealthyAtSeconds = p.faultAtSeconds + p.faultSeconds;
  const series: StormSecond[] = [];
  let peakRpsAfterFailover = 0;
  let peakEdgeRps = 0;
  let peakApiRps = 0;
  for (let s = 0; s < seconds; s++) {
    const lookups = sLookups[s]!;
    series.push({
      t: s,
      offered: sOffered[s]!,
      load: sOffered[s]! - sShed[s]!,
      userRequests: sUsers[s]!,
      succeeded: sSucceeded[s]!,
      failed: sFailed[s]!,
      shed: sShed[s]!,
      apiCalls: sApi[s]!,
      rejected: sRejected[s]!,
      retries: sRetries[s]!,
      wasted: sWasted[s]!,
      dbQueries: sDb[s]!,
      cacheHitRatio: lookups === 0 ? 0 : Math.round((sHits[s]! / lookups) * 1000) / 1000,
      busyConnections: sBusy[s]!,
      admitted: sAdmitted[s]!,
      refused: sRefused[s]!,
    });
    if (s >= dbHealthyAtSeconds)
      peakRpsAfterFailover = Math.max(peakRpsAfterFailover, sOffered[s]! - sShed[s]!);
    peakEdgeRps = Math.max(peakEdgeRps, sOffered[s]!);
    peakApiRps = Math.max(peakApiRps, sApi[s]!);
  }
  let normalSum = 0;
  for (let s = 1; s < p.faultAtSeconds; s++) normalSum += sOffered[s]! - sShed[s]!;
  const normalRps = Math.round(normalSum / (p.faultAtSeconds - 1));

  let recoveredAt: number | null = null;
  for (let s = seconds - 1; s >= dbHealthyAtSeconds; s--) {
    const finished = sSucceeded[s]! + sFailed[s]!;
    if (finished === 0 || sSucceeded[s]! / finished < p.recoveryThreshold) break;
    recoveredAt = s;
  }
  if (recoveredAt !== null && seconds - recoveredAt < p.recoveryHoldSeconds) recoveredAt = null;

  const sum = (a: Float64Array) => a.reduce((x, y) => x + y, 0);
  return {
    normalRps,
    peakRpsAfterFailover,
    peakEdgeRps,
    peakApiRps,
    recoveredAfterFaultSeconds: recoveredAt === null ? null : recoveredAt - dbHealthyAtSeconds,
    dbHealthyAtSeconds,
    recovery,
    totals: {
      userRequests: sum(sUsers),
      succeeded: sum(sSucceeded),
      failed: sum(sFailed),
      edgeRequests: sum(sOffered),
      apiCalls: sum(sApi),
      retries: { wrapper: wrapperRetries, library: libraryRetries, gateway: gatewayRetries },
      budgetRefusals,
      breakerRefusals,
      breakerOpenings,
      wasted: sum(sWasted),
    },
    series,
    parameters: p,
  };
}
