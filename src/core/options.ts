// The retry options, their defaults (docs/retry.md gives the source of each) and their validation. Defaults
// are filled and every value checked once, when a policy is made; a call never re-reads them.
import type { Jitter, ResolvedJitter } from './backoff.js';
import type { CircuitBreaker } from './breaker/breaker.js';
import { type Budget, isBudget } from './budgets/budget.js';
import { RetryBudget } from './budgets/retry-budget.js';
import type { FailureKind, Verdict } from './classify.js';
import { type Clock, type RandomSource, systemClock } from './clock.js';
import { type HedgeOptions, type HedgeReport, Hedging } from './hedge.js';
import { checkKnownKeys, checkNumber, checkOptionsObject, show } from './validate.js';

/** Why a call stopped retrying. */
export type GiveUpReason =
  /** The failure cannot pass (a 4xx, an unknown error, a second 500, a server's "don't retry"). */
  | 'not-retryable'
  /**
   * The failure could pass, but the request is not safe to repeat: a non-idempotent method (POST,
   * PATCH) without an idempotency key (RFC 9110 section 9.2.2). Set by an adapter.
   */
  | 'not-idempotent'
  /** The failure could pass, but the request's body cannot be sent twice (a stream). Set by an adapter. */
  | 'body-not-replayable'
  /**
   * The failure came out of another stormproof call that already retried (or chose not to): one
   * layer retries, the ones above pass its failure up (RFC 9110 section 9.2.2: "A client SHOULD
   * NOT automatically retry a failed automatic retry"). See `allowNestedRetries`. Set by an
   * adapter too, for a request that is itself a layer above's retry (stormproof/undici reads an
   * SDK's attempt header): it is sent once.
   */
  | 'already-retried'
  /** `maxAttempts` attempts were made. */
  | 'max-attempts'
  /** The deadline passed, or the next wait would end at or past it. */
  | 'deadline'
  /** The server's Retry-After alone reaches past `deadlineMs`. */
  | 'retry-after-beyond-deadline'
  /** The server's exact pushback (gRPC pushback, `stormproof-pushback-ms`) alone reaches past `deadlineMs`. */
  | 'pushback-beyond-deadline'
  /** The retry budget refused the retry. */
  | 'budget'
  /**
   * The circuit breaker did not admit the attempt (open, isolated, or its probes are out): the
   * call rejects at once with a `BreakerOpenError` (a refused retry gives up with the last
   * failure instead), and no retry is made.
   */
  | 'breaker-open'
  /** `shouldRetry` threw or rejected: the call rejects with what it threw. */
  | 'should-retry-failed'
  /** The caller's signal aborted. */
  | 'aborted';

/**
 * Why an adapter knows that a call must not be repeated. A failure that could pass then ends the
 * call with this reason instead of a retry; the budget is not charged.
 */
export type UnrepeatableReason = Extract<
  GiveUpReason,
  'not-idempotent' | 'body-not-replayable' | 'already-retried'
>;

/** What the engine knows about a call that gave up. Read it with `getRetryReport(error)`. */
export interface RetryReport {
  /** Why the call stopped. */
  readonly reason: GiveUpReason;
  /** How many attempts were made, the first included. */
  readonly attempts: number;
  /** Milliseconds spent waiting between attempts. */
  readonly totalDelayMs: number;
  /** Milliseconds from the start of the call until it gave up, on the policy's clock. */
  readonly elapsedMs: number;
  /** How the last failure was judged (absent when the caller aborted). */
  readonly verdict?: Verdict;
  /** With `'already-retried'`: the report of the stormproof call the failure came out of. */
  readonly inner?: RetryReport;
  /** What hedging did, when the policy hedges. */
  readonly hedges?: HedgeReport;
}

/** The context an operation receives on each attempt. */
export interface AttemptContext {
  /** The attempt number, from 1. */
  readonly attempt: number;
  /**
   * Aborts when the caller's signal aborts, when this attempt's timeout passes or when the call's
   * deadline passes. Pass it on (to `fetch`, a gRPC call, a database driver) so that an attempt
   * that is no longer wanted stops. Created on first read.
   */
  readonly signal: AbortSignal;
  /** When the policy hedges: 0 for an attempt's first copy, 1 and up for its hedges. */
  readonly hedge?: number;
}

/** What `shouldRetry` is asked about a failed attempt. */
export interface RetryDecisionContext {
  /** What the attempt failed with (a thrown error, or a failed result such as a Response). */
  readonly error: unknown;
  /** The attempt that failed, from 1. */
  readonly attempt: number;
  /** Milliseconds since the call started. */
  readonly elapsedMs: number;
  /** The default classifier's judgement; return it, change it, or answer yes or no. */
  readonly verdict: Verdict;
}

/** `shouldRetry`'s answer: yes, no, a verdict, or `undefined` for the default verdict. */
export type RetryAnswer = boolean | Verdict | undefined;

/** Decides whether a failed attempt may be retried; see `RetryPolicyOptions.shouldRetry`. */
export type ShouldRetry = (context: RetryDecisionContext) => RetryAnswer | PromiseLike<RetryAnswer>;

/** Sent to `onRetry` just before the engine waits to retry. */
export interface RetryEvent {
  /** The attempt that failed, from 1; the retry will be attempt + 1. */
  readonly attempt: number;
  /** What the attempt failed with. */
  readonly error: unknown;
  /** How the failure was judged. */
  readonly verdict: Verdict;
  /** The wait before the retry, in ms (jitter plus any Retry-After). */
  readonly delayMs: number;
  /** Milliseconds since the call started. */
  readonly elapsedMs: number;
}

/** Sent to `onGiveUp` when a call stops retrying and fails. */
export interface GiveUpEvent extends RetryReport {
  /** The error the call rejects with (or the failed result it resolves with). */
  readonly error: unknown;
}

/** Sent to `onSuccess` when an attempt succeeds. */
export interface SuccessEvent {
  /** How many attempts it took, the first included. */
  readonly attempts: number;
  /** Milliseconds spent waiting between attempts. */
  readonly totalDelayMs: number;
  /** Milliseconds from the start of the call, on the policy's clock. */
  readonly elapsedMs: number;
  /** What hedging did, when the policy hedges. */
  readonly hedges?: HedgeReport;
}

/**
 * Hooks for logs and metrics. A hook that throws, or returns a promise that rejects, is ignored:
 * it never changes the outcome and never becomes an unhandled rejection.
 */
export interface RetryHooks {
  /**
   * Called before each wait for a retry.
   * @default undefined
   * @example
   * ```ts
   * onRetry: (e) => console.warn(`attempt ${e.attempt} failed (${e.verdict.kind}); retrying in ${Math.round(e.delayMs)} ms`)
   * ```
   */
  onRetry?: ((event: RetryEvent) => unknown) | undefined;
  /**
   * Called once when the call gives up.
   * @default undefined
   * @example
   * ```ts
   * onGiveUp: (e) => metrics.increment('retry.give_up', { reason: e.reason })
   * ```
   */
  onGiveUp?: ((event: GiveUpEvent) => unknown) | undefined;
  /**
   * Called once when an attempt succeeds.
   * @default undefined
   * @example
   * ```ts
   * onSuccess: (e) => metrics.histogram('retry.attempts', e.attempts)
   * ```
   */
  onSuccess?: ((event: SuccessEvent) => unknown) | undefined;
}

/** Options of one call: what may differ from call to call under the same policy. */
export interface CallOptions extends RetryHooks {
  /**
   * Cancels the call: the running attempt's signal aborts, a wait stops at once, and the call
   * rejects with `signal.reason`. An aborted call is never retried.
   * @default undefined
   * @example
   * ```ts
   * await policy.retry(op, { signal: AbortSignal.timeout(10_000) });
   * ```
   */
  signal?: AbortSignal | undefined;
  /**
   * This call's own deadline, in ms from its start, instead of the policy's `deadlineMs`: the
   * time its caller has left (a gRPC deadline, a request's remaining budget). The same promise:
   * the call settles by then whatever the operation does.
   * @default the policy's deadlineMs
   * @example
   * ```ts
   * await policy.retry(op, { deadlineMs: Math.max(1, request.deadline - Date.now()) });
   * ```
   */
  deadlineMs?: number | undefined;
  /**
   * This call's circuit breaker, instead of the policy's: the breaker of its key (its origin,
   * its method), taken from a `BreakerRegistry`.
   * @default the policy's breaker
   * @example
   * ```ts
   * await policy.retry(op, { breaker: breakers.get('GET /forecast') });
   * ```
   */
  breaker?: CircuitBreaker | undefined;
}

/** The options of a retry policy. Every field is optional; docs/retry.md gives the source of each default. */
export interface RetryPolicyOptions extends RetryHooks {
  /**
   * Total attempts, the first one included. An integer >= 1; 1 means never retry.
   * @default 4
   * @example
   * ```ts
   * { maxAttempts: 3 } // the SRE book's limit
   * ```
   */
  maxAttempts?: number | undefined;
  /**
   * The backoff ceiling of the first retry, in ms; it doubles after each retry.
   * @default 200
   * @example
   * ```ts
   * { baseDelayMs: 100 }
   * ```
   */
  baseDelayMs?: number | undefined;
  /**
   * The cap of the backoff ceiling, in ms. Must be >= `baseDelayMs`.
   * @default 5000
   * @example
   * ```ts
   * { maxDelayMs: 20_000 } // a nightly sync nobody is waiting on
   * ```
   */
  maxDelayMs?: number | undefined;
  /**
   * The total time of a call, in ms, from its start: a promise to the caller. The call settles by
   * then, whatever the operation does: the running attempt's signal aborts with a
   * `DeadlineExceededError`, the call rejects with it, and a later result is dropped. A retry
   * whose wait would reach it is not made: the call gives up at once instead of sleeping first.
   * Waits longer than 2^31-1 ms are kept exactly (timers are chained).
   * @default 3000
   * @example
   * ```ts
   * { deadlineMs: 10_000 }
   * ```
   */
  deadlineMs?: number | undefined;
  /**
   * Time limit of each attempt, in ms, fresh for every attempt. When it passes, the attempt's
   * signal aborts and the attempt fails with an `AttemptTimeoutError` (a timeout, so retryable
   * while time is left), whether or not the operation honours its signal. An attempt that would
   * outlast the call's deadline is ended by the deadline. Unset: attempts are limited only by the
   * deadline.
   * @default undefined
   * @example
   * ```ts
   * { attemptTimeoutMs: 800 }
   * ```
   */
  attemptTimeoutMs?: number | undefined;
  /**
   * How each wait is drawn below its ceiling. Full jitter unless you have a reason.
   * @default 'full'
   * @example
   * ```ts
   * { jitter: 'decorrelated' }
   * { jitter: { band: [0.8, 1.2] } }
   * ```
   */
  jitter?: Jitter | undefined;
  /**
   * 429 Too Many Requests is retried more slowly: its backoff ceiling is
   * `min(maxDelayMs, baseDelayMs * throttledDelayMultiplier * 2^n)`. A number >= 1.
   * @default 5
   * @example
   * ```ts
   * { throttledDelayMultiplier: 10 }
   * { baseDelayMs: 50, throttledDelayMultiplier: 20 } // the AWS SDKs' 2026 bases: 50 ms, 1 s for a 429
   * ```
   */
  throttledDelayMultiplier?: number | undefined;
  /**
   * How many times one call may retry a 500 Internal Server Error. A 500 often comes from a bug,
   * and the work may have half run.
   * @default 1
   * @example
   * ```ts
   * { maxInternalErrorRetries: 0 } // never retry a 500
   * ```
   */
  maxInternalErrorRetries?: number | undefined;
  /**
   * Whether to honour the server's Retry-After (and `retry-after-ms`). Its pause is added to the
   * jittered wait, never used alone, so clients told the same value do not return together.
   * @default true
   * @example
   * ```ts
   * { honorRetryAfter: false }
   * ```
   */
  honorRetryAfter?: boolean | undefined;
  /**
   * Replaces the retry decision. Sees the error, the attempt, the elapsed time and the default
   * verdict; answers yes, no, a verdict of its own, or `undefined` for the default verdict, at
   * once or as a promise. Limits, deadline and budget still apply. If it throws or rejects, the
   * call ends without retrying and rejects with what it threw (the operation's error as its
   * `cause`), reason `'should-retry-failed'`.
   * @default undefined (the default classifier decides)
   * @example
   * ```ts
   * { shouldRetry: ({ error, verdict }) => verdict.retryable || error instanceof LockConflict }
   * { shouldRetry: async ({ error }) => (await isTransient(error)) || undefined }
   * ```
   */
  shouldRetry?: ShouldRetry | undefined;
  /**
   * Retry a failure that came out of another stormproof call. Off by default: that call already
   * retried (or decided not to), and retrying its failure again multiplies the calls at the
   * bottom of the stack (three layers of 4 attempts make 64). The failure passes up at once with
   * reason `'already-retried'`.
   * @default false
   * @example
   * ```ts
   * { allowNestedRetries: true } // an outer job that retries whole batches on purpose
   * ```
   */
  allowNestedRetries?: boolean | undefined;
  /**
   * Append the caller's stack to the error a call gives up with. The engine runs attempts from
   * promise callbacks and timers, so V8's async stack trace of a failed attempt ends at the
   * engine, not at the function that called `retry` (p-retry, a plain `await` loop, keeps it).
   * With this on, each call captures its caller's stack once when it starts (about a microsecond)
   * and the error's `stack` gains a `called from` section with it. Off by default: the success
   * path pays nothing.
   * @default false
   * @example
   * ```ts
   * createRetryPolicy({ callerStack: process.env.NODE_ENV !== 'production' })
   * ```
   */
  callerStack?: boolean | undefined;
  /**
   * A circuit breaker in front of every attempt, for outages that last minutes: while it is open
   * a call fails at once with a `BreakerOpenError` (reason `'breaker-open'`, `retryAfterMs` until
   * its next probe) and is not retried (a refused retry gives up with its last failure). Each attempt's outcome is recorded: a
   * failure that could pass (or a server's "don't retry") counts against the service; a 4xx, an
   * abort or a success does not. Share one breaker per dependency; per key, take them from a
   * `BreakerRegistry` and pass one per call.
   * @default undefined (no breaker)
   * @example
   * ```ts
   * const breaker = new CircuitBreaker('forecast-db');
   * const policy = createRetryPolicy({ breaker });
   * ```
   */
  breaker?: CircuitBreaker | undefined;
  /**
   * The retry budget shared by the calls of this policy: a `RetryBudget`, `TokenBucket`,
   * `RatioBudget`, `RetryQuota`, your own `Budget`, or `false` for none.
   * @default new RetryBudget() for createRetryPolicy; none for a one-off retry()
   * @example
   * ```ts
   * const budget = new RetryBudget();
   * const a = createRetryPolicy({ budget });
   * const b = createRetryPolicy({ budget }); // a and b share one budget
   * ```
   */
  budget?: Budget | false | undefined;
  /**
   * Hedge slow attempts of an idempotent operation: when an attempt is slower than nearly all
   * recent ones, send a copy and take whichever answers first, the other aborted through its
   * signal. Each hedge is paid from `budget` (none sent when it refuses), and none is sent while
   * the service pushes back (a 429, a 503, Retry-After, "don't retry"), while `breaker` is not
   * closed, or while hedges stop winning. Only for operations safe to run twice at once.
   * @default undefined (no hedging)
   * @example
   * ```ts
   * createRetryPolicy({ hedge: {} }) // one hedge after the p96 of recent attempts
   * ```
   */
  hedge?: HedgeOptions | false | undefined;
  /**
   * Where time comes from. Inject a virtual clock in tests and simulations.
   * @default systemClock (performance.now and setTimeout)
   * @example
   * ```ts
   * { clock: { now: () => t, sleep: async (ms) => { t += ms; } } }
   * ```
   */
  clock?: Clock | undefined;
  /**
   * Uniform random numbers in [0, 1) for jitter. Inject a seeded source to repeat a run.
   * @default Math.random
   * @example
   * ```ts
   * { random: () => 0.5 }
   * ```
   */
  random?: RandomSource | undefined;
  /**
   * A name for the policy, reported with its events (`stormproof:call`) and by stormproof/otel as
   * the `stormproof.policy` attribute. Keep it low-cardinality: one name per kind of call
   * ("payments-api"), never an id or a URL. At most 100 characters.
   * @default undefined (no name)
   * @example
   * ```ts
   * createRetryPolicy({ name: 'payments-api' })
   * ```
   */
  name?: string | undefined;
}

/** The options of a one-off `retry()`: a policy's options and a call's. */
export interface RetryOptions extends RetryPolicyOptions, CallOptions {}

/** A policy's options after defaults and validation (frozen when `createRetryPolicy` hands them out). */
export interface ResolvedPolicy {
  readonly maxAttempts: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  readonly deadlineMs: number;
  readonly attemptTimeoutMs: number | undefined;
  readonly jitter: ResolvedJitter;
  readonly throttledDelayMultiplier: number;
  readonly maxInternalErrorRetries: number;
  readonly honorRetryAfter: boolean;
  readonly shouldRetry: ShouldRetry | undefined;
  readonly allowNestedRetries: boolean;
  readonly callerStack: boolean;
  readonly breaker: CircuitBreaker | undefined;
  readonly budget: Budget | undefined;
  readonly hedge: Hedging | undefined;
  readonly clock: Clock;
  readonly random: RandomSource;
  readonly name: string | undefined;
  readonly onRetry: RetryHooks['onRetry'];
  readonly onGiveUp: RetryHooks['onGiveUp'];
  readonly onSuccess: RetryHooks['onSuccess'];
}

const HOOKS = ['onRetry', 'onGiveUp', 'onSuccess'] as const;
const POLICY_KEYS = [
  'maxAttempts',
  'baseDelayMs',
  'maxDelayMs',
  'deadlineMs',
  'attemptTimeoutMs',
  'jitter',
  'throttledDelayMultiplier',
  'maxInternalErrorRetries',
  'honorRetryAfter',
  'shouldRetry',
  'allowNestedRetries',
  'callerStack',
  'breaker',
  'budget',
  'hedge',
  'clock',
  'random',
  'name',
  ...HOOKS,
] as const;
const CALL_KEYS = ['signal', 'deadlineMs', 'breaker', ...HOOKS] as const;

/** Every option `retry()` accepts. */
export const RETRY_OPTION_KEYS: readonly string[] = [...POLICY_KEYS, 'signal'];

const JITTER_KINDS = ['full', 'equal', 'decorrelated', 'none', 'band'];
const GRPC_BAND: ResolvedJitter = Object.freeze({ kind: 'band', low: 0.8, high: 1.2 });

function resolveJitter(owner: string, jitter: unknown): ResolvedJitter {
  if (jitter === undefined) return { kind: 'full' };
  if (typeof jitter === 'string') {
    if (jitter === 'band') return GRPC_BAND;
    if (JITTER_KINDS.includes(jitter)) return { kind: jitter as 'full' };
  } else if (typeof jitter === 'object' && jitter !== null && 'band' in jitter) {
    const band = (jitter as { band: unknown }).band;
    if (Array.isArray(band) && band.length === 2) {
      const low = checkNumber(owner, 'jitter.band[0]', band[0], { min: 0 });
      const high = checkNumber(owner, 'jitter.band[1]', band[1], { min: low });
      return { kind: 'band', low, high };
    }
    throw new TypeError(`stormproof: ${owner} jitter.band must be [low, high], got ${show(band)}`);
  }
  throw new TypeError(
    `stormproof: ${owner} jitter must be one of ${JITTER_KINDS.map((k) => `'${k}'`).join(', ')} or { band: [low, high] }, got ${show(jitter)}`,
  );
}

function checkFunction<F>(owner: string, name: string, value: unknown): F | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') {
    throw new TypeError(`stormproof: ${owner} ${name} must be a function, got ${show(value)}`);
  }
  return value as F;
}

function checkBudget(owner: string, budget: unknown): Budget | undefined {
  if (budget === false) return undefined;
  if (!isBudget(budget)) {
    throw new TypeError(
      `stormproof: ${owner} budget must be a Budget (RetryBudget, TokenBucket, RatioBudget, RetryQuota, or an object with recordRequest, recordSuccess, recordFailure and tryRetry) or false, got ${show(budget)}`,
    );
  }
  return budget;
}

function checkBreaker(owner: string, name: string, breaker: unknown): CircuitBreaker | undefined {
  if (breaker === undefined) return undefined;
  const b = breaker as Partial<Record<'admit' | 'record' | 'key', unknown>> | null;
  if (
    typeof b !== 'object' ||
    b === null ||
    typeof b.admit !== 'function' ||
    typeof b.record !== 'function' ||
    typeof b.key !== 'string'
  ) {
    throw new TypeError(
      `stormproof: ${owner} ${name} must be a CircuitBreaker (from new CircuitBreaker(key) or a BreakerRegistry), got ${show(breaker)}`,
    );
  }
  return breaker as CircuitBreaker;
}

function checkClock(owner: string, clock: unknown): Clock {
  if (clock === undefined) return systemClock;
  const c = clock as Partial<Record<keyof Clock, unknown>> | null;
  if (
    typeof c !== 'object' ||
    c === null ||
    typeof c.now !== 'function' ||
    typeof c.sleep !== 'function'
  ) {
    throw new TypeError(
      `stormproof: ${owner} clock must have now() and sleep(ms, signal) functions, got ${show(clock)}`,
    );
  }
  if (c.coarseMs !== undefined) {
    checkNumber(owner, 'clock.coarseMs', c.coarseMs, { min: 0, minExclusive: true });
    if (typeof c.setTimer !== 'function') {
      throw new TypeError(`stormproof: ${owner} clock.coarseMs needs clock.setTimer`);
    }
  }
  return clock as Clock;
}

function checkSignal(owner: string, signal: unknown): void {
  const s = signal as { aborted?: unknown; addEventListener?: unknown } | null;
  if (
    typeof s !== 'object' ||
    s === null ||
    typeof s.aborted !== 'boolean' ||
    typeof s.addEventListener !== 'function'
  ) {
    throw new TypeError(`stormproof: ${owner} signal must be an AbortSignal, got ${show(signal)}`);
  }
}

/** Checks that call options hold only call options, with the right types. */
export function checkCallOptions(owner: string, call: unknown): CallOptions | undefined {
  if (call === undefined) return undefined;
  const options = checkOptionsObject(owner, call);
  checkKnownKeys(owner, options, CALL_KEYS);
  if (options.signal !== undefined) checkSignal(owner, options.signal);
  checkBreaker(owner, 'breaker', options.breaker);
  if (options.deadlineMs !== undefined) {
    checkNumber(owner, 'deadlineMs', options.deadlineMs, { min: 0, minExclusive: true });
  }
  for (const hook of HOOKS) checkFunction(owner, hook, options[hook]);
  return options as CallOptions;
}

const POLICY_KEY_SET: ReadonlySet<string> = new Set(POLICY_KEYS);
const RETRY_KEY_SET: ReadonlySet<string> = new Set(RETRY_OPTION_KEYS);
const FULL: ResolvedJitter = Object.freeze({ kind: 'full' });

function checkBoolean(owner: string, name: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') {
    throw new TypeError(`stormproof: ${owner} ${name} must be a boolean, got ${show(value)}`);
  }
  return value;
}

/**
 * A plain object's options are its enumerable own properties, as a spread copies them: one that
 * defines an option non-enumerable is read without it. `retry(op, options)` keeps the last
 * options' resolution and knows a literal by its enumerable keys (`for...in`): read with the
 * hidden option, `retry(op, { baseDelayMs: 1 })` was then served the `maxAttempts: 1` of an
 * earlier object that hid it, and that object the defaults of an earlier literal. A class's
 * accessors are read as before (they are not own properties).
 */
function enumerableOptions(o: Record<string, unknown>): Record<string, unknown> {
  const proto = Object.getPrototypeOf(o);
  if (proto !== Object.prototype && proto !== null) return o;
  for (const name of Object.getOwnPropertyNames(o)) {
    if (!Object.prototype.propertyIsEnumerable.call(o, name)) return { ...o };
  }
  return o;
}

/**
 * Fills the defaults and checks every value. Throws a TypeError or RangeError that names the
 * option and the value at fault. Only `undefined` means "the default": `null` is rejected like
 * any other wrong type. Not frozen: `createRetryPolicy` freezes what it hands out, and a one-off
 * `retry()` never hands its policy out (freezing costs more than the rest of a successful call).
 */
export function resolvePolicy(
  owner: string,
  input: unknown,
  { defaultBudget, allowCallKeys }: { defaultBudget: boolean; allowCallKeys: boolean },
): ResolvedPolicy {
  const o = enumerableOptions(checkOptionsObject(owner, input));
  const known = allowCallKeys ? RETRY_KEY_SET : POLICY_KEY_SET;
  for (const key in o) {
    if (!known.has(key)) checkKnownKeys(owner, o, allowCallKeys ? RETRY_OPTION_KEYS : POLICY_KEYS);
  }
  // An option left out takes its default without a check: `retry(op, { ... })` resolves its
  // options on every call, and most calls give two or three.
  const maxAttempts =
    o.maxAttempts === undefined
      ? 4
      : checkNumber(owner, 'maxAttempts', o.maxAttempts, ATTEMPTS_RANGE);
  const baseDelayMs =
    o.baseDelayMs === undefined
      ? 200
      : checkNumber(owner, 'baseDelayMs', o.baseDelayMs, NON_NEGATIVE);
  const maxDelayMs =
    o.maxDelayMs === undefined
      ? Math.max(5000, baseDelayMs)
      : checkNumber(owner, 'maxDelayMs', o.maxDelayMs, { min: baseDelayMs });
  const deadlineMs =
    o.deadlineMs === undefined ? 3000 : checkNumber(owner, 'deadlineMs', o.deadlineMs, POSITIVE);
  const attemptTimeoutMs =
    o.attemptTimeoutMs === undefined
      ? undefined
      : checkNumber(owner, 'attemptTimeoutMs', o.attemptTimeoutMs, POSITIVE);
  if (o.signal !== undefined) checkSignal(owner, o.signal);
  return {
    maxAttempts,
    baseDelayMs,
    maxDelayMs,
    deadlineMs,
    attemptTimeoutMs,
    jitter: o.jitter === undefined ? FULL : resolveJitter(owner, o.jitter),
    throttledDelayMultiplier:
      o.throttledDelayMultiplier === undefined
        ? 5
        : checkNumber(owner, 'throttledDelayMultiplier', o.throttledDelayMultiplier, AT_LEAST_ONE),
    maxInternalErrorRetries:
      o.maxInternalErrorRetries === undefined
        ? 1
        : checkNumber(owner, 'maxInternalErrorRetries', o.maxInternalErrorRetries, COUNT),
    honorRetryAfter: checkBoolean(owner, 'honorRetryAfter', o.honorRetryAfter, true),
    shouldRetry: checkFunction<ShouldRetry>(owner, 'shouldRetry', o.shouldRetry),
    allowNestedRetries: checkBoolean(owner, 'allowNestedRetries', o.allowNestedRetries, false),
    callerStack: checkBoolean(owner, 'callerStack', o.callerStack, false),
    breaker: o.breaker === undefined ? undefined : checkBreaker(owner, 'breaker', o.breaker),
    budget:
      o.budget === undefined
        ? defaultBudget
          ? new RetryBudget()
          : undefined
        : checkBudget(owner, o.budget),
    hedge: o.hedge === undefined || o.hedge === false ? undefined : new Hedging(owner, o.hedge),
    clock: o.clock === undefined ? systemClock : checkClock(owner, o.clock),
    random:
      o.random === undefined
        ? Math.random
        : checkFunction<RandomSource>(owner, 'random', o.random)!,
    name: o.name === undefined ? undefined : checkName(owner, o.name),
    onRetry: checkFunction<ResolvedPolicy['onRetry']>(owner, 'onRetry', o.onRetry),
    onGiveUp: checkFunction<ResolvedPolicy['onGiveUp']>(owner, 'onGiveUp', o.onGiveUp),
    onSuccess: checkFunction<ResolvedPolicy['onSuccess']>(owner, 'onSuccess', o.onSuccess),
  };
}

function checkName(owner: string, name: unknown): string {
  if (typeof name !== 'string' || name === '' || name.length > 100) {
    throw new TypeError(
      `stormproof: ${owner} name must be a non-empty string of at most 100 characters, got ${show(name)}`,
    );
  }
  return name;
}

const ATTEMPTS_RANGE = { min: 1, integer: true };
const NON_NEGATIVE = { min: 0 };
const POSITIVE = { min: 0, minExclusive: true };
const AT_LEAST_ONE = { min: 1 };
const COUNT = { min: 0, integer: true };

export type { FailureKind, Verdict };
