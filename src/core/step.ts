// The retry decision, in one synchronous step: classify the outcome, compute the next wait, check
// the deadline, ask the budget. `retry()`, the fetch and gRPC adapters and the simulator all
// drive this same function; none of them decides anything on its own.
import { backoffCeiling, jitteredDelay } from './backoff.js';
import { classify, type Verdict } from './classify.js';
import type { GiveUpReason, ResolvedPolicy, UnrepeatableReason } from './options.js';

/** Where a call stands between attempts. Immutable: `step` returns the next one. */
export interface RetryState {
  /** When the call started, on the policy's clock. */
  readonly startedAt: number;
  /** The attempt being judged (or about to run), from 1. */
  readonly attempt: number;
  /** n of the next backoff ceiling `base * 2^n`; starts again at 0 after a pushback. */
  readonly backoffIndex: number;
  /** The last backoff wait, for decorrelated jitter (the base before the first retry). */
  readonly previousDelayMs: number;
  /** Milliseconds waited so far. */
  readonly totalDelayMs: number;
  /** How many 500s this call has retried. */
  readonly internalErrorRetries: number;
  /**
   * Set when the call must not be repeated (a POST without an idempotency key, a streamed body):
   * a failure that could pass then gives up with this reason, before the budget is asked.
   */
  readonly unrepeatable?: UnrepeatableReason;
}

/** How an attempt ended. */
export type Outcome = { readonly ok: true } | { readonly ok: false; readonly error: unknown };

/** What to do next. */
export type Decision =
  | { readonly action: 'succeed' }
  | {
      readonly action: 'retry';
      /** Wait this long, then run attempt `state.attempt`. */
      readonly delayMs: number;
      readonly verdict: Verdict;
      /** The state for the next attempt. */
      readonly state: RetryState;
    }
  | {
      readonly action: 'give-up';
      readonly reason: GiveUpReason;
      readonly verdict: Verdict;
      readonly state: RetryState;
    };

/** The decision after any success: the call is done. Shared, so a success allocates nothing. */
const SUCCEEDED: Decision = Object.freeze({ action: 'succeed' });

/** The state of a call that starts at `nowMs`, before its first attempt. */
export function startState(policy: ResolvedPolicy, nowMs: number): RetryState {
  return {
    startedAt: nowMs,
    attempt: 1,
    backoffIndex: 0,
    previousDelayMs: policy.baseDelayMs,
    totalDelayMs: 0,
    internalErrorRetries: 0,
  };
}

/** The default verdict, with the per-call limit on 500s applied, then the user's override. */
function judge(policy: ResolvedPolicy, state: RetryState, error: unknown, nowMs: number): Verdict {
  let verdict = classify(error);
  if (
    verdict.kind === 'internal' &&
    verdict.retryable &&
    state.internalErrorRetries >= policy.maxInternalErrorRetries
  ) {
    verdict = { ...verdict, retryable: false };
  }
  const override = policy.shouldRetry;
  if (override === undefined) return verdict;
  const answer = override({
    error,
    attempt: state.attempt,
    elapsedMs: nowMs - state.startedAt,
    verdict,
  });
  return typeof answer === 'boolean' ? { ...verdict, retryable: answer } : answer;
}

/**
 * Decides what follows an attempt that ended with `outcome` at `nowMs` (a success does not read
 * the time).
 *
 * Synchronous and deterministic: its only effects are one draw from `policy.random` (for a
 * jittered wait) and the calls to `policy.budget`, which it asks just before a wait.
 *
 * @example
 * ```ts
 * const policy = createRetryPolicy({ random: () => 0.5 });
 * let state = startState(policy.options, 0);
 * const d = step(policy.options, state, { ok: false, error: { status: 503 } }, 10);
 * // d.action === 'retry', d.delayMs === 100 (full jitter: 0.5 * 200)
 * ```
 */
export function step(
  policy: ResolvedPolicy,
  state: RetryState,
  outcome: Outcome,
  nowMs: number,
): Decision {
  const budget = policy.budget;
  if (outcome.ok) {
    budget?.recordSuccess();
    return SUCCEEDED;
  }
  const verdict = judge(policy, state, outcome.error, nowMs);
  budget?.recordFailure(nowMs, verdict.retryable || verdict.kind === 'do-not-retry');
  const giveUp = (reason: GiveUpReason): Decision => ({
    action: 'give-up',
    reason,
    verdict,
    state,
  });
  if (!verdict.retryable) return giveUp('not-retryable');
  if (state.unrepeatable !== undefined) return giveUp(state.unrepeatable);
  if (state.attempt >= policy.maxAttempts) return giveUp('max-attempts');

  let delayMs: number;
  let serverPauseMs: number;
  let backoffIndex: number;
  let previousDelayMs: number;
  if (verdict.pushbackMs !== undefined) {
    // The server chose the wait: use it exactly, and start the backoff over after it.
    delayMs = serverPauseMs = verdict.pushbackMs;
    backoffIndex = 0;
    previousDelayMs = policy.baseDelayMs;
  } else {
    const base =
      verdict.kind === 'throttled'
        ? policy.baseDelayMs * policy.throttledDelayMultiplier
        : policy.baseDelayMs;
    const ceiling = backoffCeiling(base, policy.maxDelayMs, state.backoffIndex);
    const backoff = jitteredDelay(
      policy.jitter,
      ceiling,
      state.previousDelayMs,
      Math.min(base, policy.maxDelayMs),
      policy.maxDelayMs,
      policy.random,
    );
    serverPauseMs = policy.honorRetryAfter ? (verdict.retryAfterMs ?? 0) : 0;
    // The server's pause is added to the jittered wait, never max(wait, pause): clients that were
    // told the same value must not return in the same instant.
    delayMs = backoff + serverPauseMs;
    backoffIndex = state.backoffIndex + 1;
    previousDelayMs = backoff;
  }

  const elapsedMs = nowMs - state.startedAt;
  if (elapsedMs + serverPauseMs > policy.deadlineMs) return giveUp('retry-after-beyond-deadline');
  if (elapsedMs + delayMs > policy.deadlineMs || elapsedMs >= policy.deadlineMs) {
    return giveUp('deadline');
  }
  if (budget !== undefined && !budget.tryRetry(nowMs)) return giveUp('budget');

  return {
    action: 'retry',
    delayMs,
    verdict,
    state: {
      startedAt: state.startedAt,
      attempt: state.attempt + 1,
      backoffIndex,
      previousDelayMs,
      totalDelayMs: state.totalDelayMs + delayMs,
      internalErrorRetries: state.internalErrorRetries + (verdict.kind === 'internal' ? 1 : 0),
    },
  };
}
