/**
 * stormproof: retries that never become the outage.
 *
 * The runtime-agnostic core: the retry engine, its step function, backoff and jitter, the
 * classifier, Retry-After parsing and the retry budgets. No runtime dependencies, no `node:`.
 *
 * @module
 */
export { backoffCeiling, type Jitter, jitteredDelay, type ResolvedJitter } from './core/backoff.js';
export {
  type BreakerAdmission,
  type BreakerAdmitted,
  BreakerOpenError,
  type BreakerOptions,
  type BreakerOutcome,
  BreakerRegistry,
  type BreakerRegistryOptions,
  type BreakerRejected,
  type BreakerReport,
  type BreakerRules,
  type BreakerSnapshot,
  type BreakerState,
  type BreakerStore,
  type BreakerStoreEvent,
  type BreakerTransition,
  CircuitBreaker,
  createMemoryBreakerStore,
  isBreakerOpenError,
  type SharedBreakerState,
} from './core/breaker/index.js';
export type { Budget } from './core/budgets/budget.js';
export {
  RatioBudget,
  type RatioBudgetOptions,
  RetryBudget,
  type RetryBudgetOptions,
  RetryQuota,
  type RetryQuotaOptions,
  TokenBucket,
  type TokenBucketOptions,
} from './core/budgets/index.js';
export {
  classify,
  type FailureKind,
  OVERLOADED_HEADER,
  PUSHBACK_HEADER,
  type Verdict,
} from './core/classify.js';
export { type Clock, type RandomSource, systemClock } from './core/clock.js';
export { AttemptTimeoutError, DeadlineExceededError } from './core/errors.js';
export {
  HedgeLostError,
  type HedgeOptions,
  type HedgeRefusal,
  type HedgeReport,
} from './core/hedge.js';
export {
  type AttemptMessage,
  type AttemptWrapper,
  type BreakerMessage,
  type BudgetMessage,
  type CallMessage,
  type CallRef,
  CHANNEL_NAMES,
  channels,
  type EventChannel,
  type FetchMessage,
  type HedgeMessage,
  type ServerMessage,
  type TimerMessage,
  usesDiagnosticsChannel,
  wrapAttempts,
} from './core/instrument.js';
export type {
  AttemptContext,
  CallOptions,
  GiveUpEvent,
  GiveUpReason,
  ResolvedPolicy,
  RetryAnswer,
  RetryDecisionContext,
  RetryEvent,
  RetryHooks,
  RetryOptions,
  RetryPolicyOptions,
  RetryReport,
  ShouldRetry,
  SuccessEvent,
} from './core/options.js';
export {
  createRetryPolicy,
  getRetryReport,
  type Operation,
  type RetryPolicy,
  retry,
} from './core/retry.js';
export {
  getHeader,
  parseRateLimit,
  parseRateLimitReset,
  parseRetryAfter,
  parseRetryAfterMs,
  readRateLimitPauseMs,
  readRetryAfterMs,
} from './core/retry-after.js';
export { type Decision, type Outcome, type RetryState, startState, step } from './core/step.js';
export {
  type DailyOptions,
  daily,
  type EveryOptions,
  every,
  spreadOf,
  type TimerKey,
  type TimerOptions,
  type TimerRun,
  type TimerSkip,
} from './core/timers/index.js';
