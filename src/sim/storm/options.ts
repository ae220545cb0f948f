// The storm model's options: what a run may change, the defaults (each one's reason is in
// docs/storm-model.md) and their validation. Everything is checked and filled here, once, before
// a run starts; the model's parts read the filled `StormParameters`.
import {
  BREAKER_RULE_KEYS,
  type BreakerOptions,
  resolveBreakerOptions,
} from '../../core/breaker/options.js';
import type { Budget } from '../../core/budgets/budget.js';
import type { RetryPolicyOptions } from '../../core/options.js';
import { checkKnownKeys, checkNumber, checkOptionsObject, show } from '../../core/validate.js';

/** Which retry setup the partner apps, the gateway and the API servers run. */
export type StormPolicy = 'naive' | 'stormproof';

/**
 * What protects the API servers from overload, beyond their connection limit: nothing, the real
 * stormproof/server engine in each server, or an all-or-nothing shedder in the style of Fastify's
 * under-pressure (everything rejected with a constant `Retry-After: 10` while a 1 s sample says
 * the server is under pressure).
 */
export type StormServer = 'none' | 'stormproof' | 'all-or-nothing';

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
   * What protects the API servers. `'none'`: only their connection limit, as in the storm
   * story. `'stormproof'`: each API server runs the real stormproof/server engine
   * (`createShedder` with its defaults: a Gradient2 concurrency limit, a CoDel queue of 100,
   * first attempts before retries, a spread Retry-After, reopening in 20% steps with an error and
   * latency check per step) on the simulator's clock and random source. `'all-or-nothing'`:
   * Fastify under-pressure's mechanism: every second the servers sample their CPU queue's delay
   * (the event-loop delay of a Node server), and while it is above 1,000 ms every request is
   * rejected with a 503 and `Retry-After: 10`.
   * @default 'none'
   * @example
   * ```ts
   * runStorm({ policy: 'naive', server: 'stormproof' })
   * ```
   */
  server?: StormServer | undefined;
  /**
   * How many API servers share the connections and the cores (16 servers x 2,000 connections x 2
   * cores by default). With `server: 'stormproof'` each runs its own engine, as each process
   * runs its own middleware, and the gateway spreads its tries over them in turn.
   * @default 16
   * @example
   * ```ts
   * runStorm({ server: 'stormproof', apiServers: 4 })
   * ```
   */
  apiServers?: number | undefined;
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
  /**
   * Called after each simulated second with that second's lines of the report's chart, final by
   * then: requests arriving at the edge, and user requests that succeeded and failed in it (the
   * same figures as `series`), so that a chart can be drawn while the run goes on.
   * @default undefined
   * @example
   * ```ts
   * runStorm({ onSecond: ({ t, offered, failed }) => console.log(`${t} s: ${offered} offered, ${failed} failed`) })
   * ```
   */
  onSecond?: ((second: StormLiveSecond) => void) | undefined;
}

/** One second as {@link StormOptions.onSecond} hears it: part of that second's `StormSecond`. */
export interface StormLiveSecond {
  /** Seconds since the start of the run. */
  readonly t: number;
  /** Requests arriving at the edge that second. */
  readonly offered: number;
  /** User requests that ended with a forecast that second. */
  readonly succeeded: number;
  /** User requests that ended with an error that second. */
  readonly failed: number;
}

/**
 * The parameters a run used, every default filled in (`retryPolicy`, `onProgress` and `onSecond`
 * left out; `breaker` is `false` or the breaker's rules with their defaults).
 */
export type StormParameters = {
  readonly [K in Exclude<
    keyof StormOptions,
    'retryPolicy' | 'onProgress' | 'onSecond' | 'breaker'
  >]-?: Exclude<StormOptions[K], undefined>;
} & { readonly breaker: false | Readonly<StormBreakerOptions> };

/** The name errors give: the options are `runStorm`'s. */
export const OWNER = 'runStorm';

const DEFAULTS: StormParameters = Object.freeze({
  policy: 'naive',
  manualRecovery: false,
  breaker: false,
  server: 'none',
  apiServers: 16,
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

const KNOWN_KEYS: readonly string[] = [
  ...Object.keys(DEFAULTS),
  'retryPolicy',
  'onProgress',
  'onSecond',
];
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

const SERVERS: readonly StormServer[] = ['none', 'stormproof', 'all-or-nothing'];

function resolveServer(value: unknown): StormServer {
  if (value === undefined) return DEFAULTS.server;
  if (!SERVERS.includes(value as StormServer)) {
    throw new TypeError(
      `stormproof: ${OWNER} server must be 'none', 'stormproof' or 'all-or-nothing', got ${show(value)}`,
    );
  }
  return value as StormServer;
}

function checkBoolean(name: string, value: unknown): boolean {
  if (typeof value !== 'boolean') {
    throw new TypeError(`stormproof: ${OWNER} ${name} must be a boolean, got ${show(value)}`);
  }
  return value;
}

/** Fills the defaults and checks every option; throws naming the option and the value. */
export function resolveOptions(options: unknown): {
  p: StormParameters;
  retryPolicy: StormRetryPolicy | undefined;
  onProgress: ((done: number, total: number) => void) | undefined;
  onSecond: ((second: StormLiveSecond) => void) | undefined;
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
    server: resolveServer(o.server),
    apiServers: num('apiServers', { min: 1, max: 100_000, integer: true }),
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
  const onSecond = o.onSecond;
  if (onSecond !== undefined && typeof onSecond !== 'function') {
    throw new TypeError(`stormproof: ${OWNER} onSecond must be a function, got ${show(onSecond)}`);
  }
  return {
    p,
    retryPolicy,
    onProgress: onProgress as ((done: number, total: number) => void) | undefined,
    onSecond: onSecond as ((second: StormLiveSecond) => void) | undefined,
  };
}
