// The client policies the map compares. Each is a retry policy of the engine itself, resolved by
// `resolvePolicy` on the simulator's clock and seeded random source, with the engine's own budgets
// (`RetryBudget`, gRFC A6's `TokenBucket`, the AWS SDKs' `RetryQuota`) and `CircuitBreaker`; the
// model only feeds `step` (and, for `'budget-hedge'`, the policy's own `Hedging`).
import { CircuitBreaker } from '../../core/breaker/breaker.js';
import type { Budget } from '../../core/budgets/budget.js';
import { RetryBudget } from '../../core/budgets/retry-budget.js';
import { RetryQuota } from '../../core/budgets/retry-quota.js';
import { TokenBucket } from '../../core/budgets/token-bucket.js';
import type { Clock, RandomSource } from '../../core/clock.js';
import type { Hedging } from '../../core/hedge.js';
import { type ResolvedPolicy, type RetryPolicyOptions, resolvePolicy } from '../../core/options.js';

/**
 * The client policies of the map, from the storm story's old stack to stormproof's defaults.
 *
 * - `'naive'`: immediate retries, no wait; reads no server hint.
 * - `'backoff'`: capped exponential backoff (200 ms doubling to 5 s), no jitter; reads no hint.
 * - `'full-jitter'`: the same ceilings, full jitter; honours Retry-After and pushback.
 * - `'budget'`: full jitter with the 10 % retry budget (`RetryBudget`: 1 credit a request, 10 a retry).
 * - `'budget-hedge'`: `'budget'` plus the engine's hedging at its defaults (`hedge: {}`: one hedge
 *   after the learned p96, at most 5 % more attempts), each hedge paid from the same `RetryBudget`.
 * - `'a6'`: gRPC's retry design: the 0.8 to 1.2 jitter band and A6 retry throttling
 *   (`TokenBucket` of 10 tokens, 0.1 back per success).
 * - `'breaker'`: full jitter behind a `CircuitBreaker` with its defaults (5 failures in a row,
 *   open 5 s growing to 300 s, 1 probe).
 * - `'aws-2026'`: the AWS SDKs' 2026 defaults (aws-sdk-js-v3 #8037, `@smithy/util-retry` 4.6.2):
 *   its own 3 attempts and full jitter from 50 ms (1 s for a 429) capped at 20 s, whatever the
 *   run's shared backoff, and a `RetryQuota` per client (500 tokens, 14 a transient retry, 5 a
 *   throttled one, refunded on success). It reads `Retry-After` only, as the SDK does (not
 *   stormproof's pushback or don't-retry headers), and adds it to the backoff where the SDK
 *   waits `max(backoff, min(Retry-After, backoff + 5 s))`: with the map's server (Retry-After 1
 *   to 5 s, 503) the clamp never binds and the two differ by the backoff, under 100 ms.
 */
export type MapPolicy =
  | 'naive'
  | 'backoff'
  | 'full-jitter'
  | 'budget'
  | 'budget-hedge'
  | 'a6'
  | 'breaker'
  | 'aws-2026';

/** Every policy, in the map's order. */
export const MAP_POLICIES: readonly MapPolicy[] = [
  'naive',
  'backoff',
  'full-jitter',
  'budget',
  'budget-hedge',
  'a6',
  'breaker',
  'aws-2026',
];

/** One line per policy, for the output and the docs. */
export const POLICY_SUMMARY: Readonly<Record<MapPolicy, string>> = {
  naive: "immediate retries, no wait: the storm story's old stack",
  backoff: 'capped exponential backoff 200 ms x 2^n to 5 s, no jitter',
  'full-jitter': 'the same backoff with full jitter, Retry-After honoured',
  budget: 'full jitter with the 10% retry budget, a RetryBudget',
  'budget-hedge':
    'the same, plus hedging at its defaults (a hedge after the learned p96, at most 5% more), paid from the same RetryBudget',
  a6: 'gRFC A6: 0.8-1.2 jitter band and retry throttling, a TokenBucket of 10 and 0.1',
  breaker: 'full jitter behind a CircuitBreaker with its defaults',
  'aws-2026':
    "the AWS SDKs' 2026 defaults: 3 attempts, full jitter from 50 ms (1 s for a 429) to 20 s, a RetryQuota of 500 tokens (14 a transient retry, 5 a throttled one, refunded on success); of the hint headers reads only Retry-After and x-amz-retry-after",
};

/** What every policy of a run shares. */
export interface PolicyShape {
  /** Attempts per user request, the first included. */
  readonly maxAttempts: number;
  /** The client's time limit per attempt, ms. */
  readonly attemptTimeoutMs: number;
  /** The deadline of a whole user request, ms (Infinity: none). */
  readonly deadlineMs: number;
  /** The first backoff ceiling, ms (the policies that back off). */
  readonly baseDelayMs: number;
  /** The cap of the backoff ceiling, ms. */
  readonly maxDelayMs: number;
}

/** One client process: its retry policy, and the breaker the `'breaker'` policy puts in front. */
export interface PolicyClient {
  readonly policy: ResolvedPolicy;
  readonly breaker: CircuitBreaker | undefined;
  /** The policy's hedging (`'budget-hedge'`), shared by the process's calls as the engine's is. */
  readonly hedging: Hedging | undefined;
  /** Whether it reads the server's Retry-After and pushback (the naive loops do not). */
  readonly readsHints: boolean;
  /** The only response headers it reads, when not all of them (lower case). */
  readonly hintHeaders: readonly string[] | undefined;
}

/** What the AWS SDKs read of a rejection: `parseRetryAfterHeader` in `@smithy/core`'s retry middleware. */
const AWS_HINT_HEADERS: readonly string[] = ['retry-after', 'x-amz-retry-after'];

/** A rejection's headers as `client` sees them on the error it classifies. */
export function headersSeen(
  client: PolicyClient,
  headers: ReadonlyArray<readonly [string, string]>,
): Record<string, string> {
  const only = client.hintHeaders;
  return Object.fromEntries(
    only === undefined ? headers : headers.filter(([name]) => only.includes(name.toLowerCase())),
  );
}

// A deadline that never binds: the engine needs a number.
const NO_DEADLINE_MS = 1e15;

/** Makes one client process of `policy`: its own budget and breaker, the model's clock and random. */
export function makeClient(
  policy: MapPolicy,
  shape: PolicyShape,
  clock: Clock,
  random: RandomSource,
  key: string,
): PolicyClient {
  const shared: RetryPolicyOptions = {
    maxAttempts: shape.maxAttempts,
    attemptTimeoutMs: shape.attemptTimeoutMs,
    deadlineMs: Number.isFinite(shape.deadlineMs) ? shape.deadlineMs : NO_DEADLINE_MS,
    baseDelayMs: shape.baseDelayMs,
    maxDelayMs: shape.maxDelayMs,
    clock,
    random,
  };
  let options: RetryPolicyOptions;
  let breaker: CircuitBreaker | undefined;
  let budget: Budget | false = false;
  switch (policy) {
    case 'naive':
      options = {
        ...shared,
        baseDelayMs: 0,
        maxDelayMs: 0,
        jitter: 'none',
        honorRetryAfter: false,
      };
      break;
    case 'backoff':
      options = { ...shared, jitter: 'none', honorRetryAfter: false };
      break;
    case 'full-jitter':
      options = { ...shared, jitter: 'full' };
      break;
    case 'budget':
      options = { ...shared, jitter: 'full' };
      budget = new RetryBudget();
      break;
    case 'budget-hedge':
      // The engine's defaults: the hedge's delay, cap and refusals are `Hedging`'s own, and each
      // hedge asks the same budget as the retries (`tryRetry`).
      options = { ...shared, jitter: 'full', hedge: {} };
      budget = new RetryBudget();
      break;
    case 'a6':
      options = { ...shared, jitter: 'band' };
      budget = new TokenBucket();
      break;
    case 'breaker':
      options = { ...shared, jitter: 'full' };
      breaker = new CircuitBreaker(key, { clock, random });
      break;
    case 'aws-2026':
      // The SDK's own schedule; it shares the run's attempt timeout and deadline. It retries a
      // 500 as any transient error, so every retry may be one.
      options = {
        ...shared,
        maxAttempts: 3,
        baseDelayMs: 50,
        throttledDelayMultiplier: 20,
        maxDelayMs: 20_000,
        jitter: 'full',
        maxInternalErrorRetries: 2,
      };
      budget = new RetryQuota();
      break;
  }
  const resolved = resolvePolicy(
    'map policy',
    { ...options, budget },
    {
      defaultBudget: false,
      allowCallKeys: false,
    },
  );
  return {
    policy: resolved,
    breaker,
    hedging: resolved.hedge,
    readsHints: policy !== 'naive' && policy !== 'backoff',
    hintHeaders: policy === 'aws-2026' ? AWS_HINT_HEADERS : undefined,
  };
}
