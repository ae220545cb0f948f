// The retry decision, in one synchronous step: classify the outcome, compute the next wait, check
// the deadline, ask the budget. `retry()`, the fetch adapter and the simulator all drive this
// same function; none of them decides anything on its own.
import { backoffCeiling, jitteredDelay } from './backoff.js';
import { classify, type FailureKind, type Verdict } from './classify.js';
import type {
  GiveUpReason,
  ResolvedPolicy,
  RetryAnswer,
  RetryReport,
  UnrepeatableReason,
} from './options.js';
import { retriedBelow } from './report.js';
import { isThenable, show } from './validate.js';

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
  /** The call's own deadline, when it is not the policy's `deadlineMs`. */
  readonly deadlineMs?: number;
  /** How many 500s this call has retried. */
  readonly internalErrorRetries: number;
  /**
   * The kind of failure this attempt retries; absent on the first attempt. Told to the budget
   * when the attempt succeeds, so a budget that charges by kind can refund the retry.
   */
  readonly retriedKind?: FailureKind;
  /**
   * Set when the call must not be repeated (a POST without an idempotency key, a streamed body):
   * a failure that could pass then gives up with this reason, before the budget is asked.
   */
  readonly unrepeatable?: UnrepeatableReason;
}

/**
 * How an attempt ended. A failure may carry the verdict already reached (the driver does, after
 * awaiting an asynchronous `shouldRetry`); without one, `step` judges it.
 */
export type Outcome =
  | { readonly ok: true }
  | { readonly ok: false; readonly error: unknown; readonly verdict?: Verdict };

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
      /** With `'already-retried'`: the report of the call the failure came out of. */
      readonly inner?: RetryReport;
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

/** The default classifier's verdict, with the per-call limit on 500s applied. */
export function defaultVerdict(policy: ResolvedPolicy, state: RetryState, error: unknown): Verdict {
  const verdict = classify(error);
  if (
    verdict.kind === 'internal' &&
    verdict.retryable &&
    state.internalErrorRetries >= policy.maxInternalErrorRetries
  ) {
    return { ...verdict, retryable: false };
  }
  return verdict;
}

/**
 * Turns `shouldRetry`'s answer into a verdict: yes or no changes only `retryable`, `undefined`
 * keeps the default, a verdict replaces it. Anything else is a TypeError (the answer is a bug).
 */
export function applyAnswer(verdict: Verdict, answer: RetryAnswer): Verdict {
  if (answer === undefined) return verdict;
  if (typeof answer === 'boolean') {
    return answer === verdict.retryable ? verdict : { ...verdict, retryable: answer };
  }
  if (typeof answer === 'object' && answer !== null && typeof answer.retryable === 'boolean') {
    return answer;
  }
  throw new TypeError(
    `stormproof: shouldRetry must answer true, false, undefined or a verdict, got ${show(answer)}`,
  );
}

/** The verdict for a failure: the default classifier's, then `shouldRetry`'s answer, synchronously. */
function judgeNow(
  policy: ResolvedPolicy,
  state: RetryState,
  error: unknown,
  nowMs: number,
): Verdict {
  const verdict = defaultVerdict(policy, state, error);
  const shouldRetry = policy.shouldRetry;
  if (shouldRetry === undefined) return verdict;
  const answer = shouldRetry({
    error,
    attempt: state.attempt,
    elapsedMs: nowMs - state.startedAt,
    verdict,
  });
  if (isThenable(answer)) {
    throw new TypeError(
      'stormproof: step() cannot wait for an asynchronous shouldRetry; await it and pass outcome.verdict',
    );
  }
  return applyAnswer(verdict, answer);
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
    budget?.recordSuccess(state.retriedKind);
    return SUCCEEDED;
  }
  const error = outcome.error;
  // One layer retries: a failure that already came out of a retrying call passes up untouched.
  const inner = policy.allowNestedRetries ? undefined : retriedBelow(error);
  if (inner !== undefined) {
    const verdict = outcome.verdict ?? defaultVerdict(policy, state, error);
    budget?.recordFailure(nowMs, verdict.retryable || verdict.kind === 'do-not-retry');
    return { action: 'give-up', reason: 'already-retried', verdict, state, inner };
  }
  const verdict = outcome.verdict ?? judgeNow(policy, state, error, nowMs);
  budget?.recordFailure(nowMs, verdict.retryable || verdict.kind === 'do-not-retry');
  if (!verdict.retryable) return givenUp('not-retryable', verdict, state);
  if (state.unrepeatable !== undefined) return givenUp(state.unrepeatable, verdict, state);
  if (state.attempt >= policy.maxAttempts) return givenUp('max-attempts', verdict, state);
  const elapsedMs = nowMs - state.startedAt;
  const deadlineMs = state.deadlineMs ?? policy.deadlineMs;
  // Checked first: a timer that fires late must not make the deadline look like the server's.
  if (elapsedMs >= deadlineMs) return givenUp('deadline', verdict, state);

  let delayMs: number;
  let backoffIndex: number;
  let previousDelayMs: number;
  if (verdict.pushbackMs !== undefined) {
    // The server chose the wait: use it exactly, and start the backoff over after it.
    if (elapsedMs + verdict.pushbackMs >= deadlineMs) {
      return givenUp('pushback-beyond-deadline', verdict, state);
    }
    delayMs = verdict.pushbackMs;
    backoffIndex = 0;
    previousDelayMs = policy.baseDelayMs;
  } else {
    const base =
      verdict.kind === 'throttled'
        ? policy.baseDelayMs * policy.throttledDelayMultiplier
        : policy.baseDelayMs;
    const ceiling = backoffCeiling(base, policy.maxDelayMs, state.backoffIndex);
    const floor = Math.min(base, policy.maxDelayMs);
    const backoff = jitteredDelay(
      policy.jitter,
      ceiling,
      // Decorrelated jitter draws from [base, 3 * previous]: a larger (throttled) base starts
      // its own sequence instead of drawing from an inverted range.
      Math.max(state.previousDelayMs, floor),
      floor,
      policy.maxDelayMs,
      policy.random,
    );
    const serverPauseMs = policy.honorRetryAfter ? (verdict.retryAfterMs ?? 0) : 0;
    if (serverPauseMs > 0 && elapsedMs + serverPauseMs >= deadlineMs) {
      return givenUp('retry-after-beyond-deadline', verdict, state);
    }
    // The server's pause is added to the jittered wait, never max(wait, pause): clients that were
    // told the same value must not return in the same instant.
    delayMs = backoff + serverPauseMs;
    backoffIndex = state.backoffIndex + 1;
    previousDelayMs = backoff;
  }
  // A retry must start before the deadline, with time left to run.
  if (elapsedMs + delayMs >= deadlineMs) return givenUp('deadline', verdict, state);
  if (budget !== undefined && !budget.tryRetry(nowMs, verdict.kind))
    return givenUp('budget', verdict, state);

  const next: { -readonly [K in keyof RetryState]: RetryState[K] } = {
    startedAt: state.startedAt,
    attempt: state.attempt + 1,
    backoffIndex,
    previousDelayMs,
    totalDelayMs: state.totalDelayMs + delayMs,
    internalErrorRetries: state.internalErrorRetries + (verdict.kind === 'internal' ? 1 : 0),
    retriedKind: verdict.kind,
  };
  // Set only when there is one (no spread: a literal with a spread in it is built key by key).
  if (state.deadlineMs !== undefined) next.deadlineMs = state.deadlineMs;
  return { action: 'retry', delayMs, verdict, state: next };
}

/** The decision to give up for `reason` (a function, not a closure made at every step). */
function givenUp(reason: GiveUpReason, verdict: Verdict, state: RetryState): Decision {
  return { action: 'give-up', reason, verdict, state };
}

/**
 * The call's deadline passed while an attempt was still running (or `shouldRetry` was still
 * deciding): the call gives up at once with reason `'deadline'`, and the unfinished attempt counts
 * as a failure (a timeout) for the budget. After a wait that overran the deadline there is
 * nothing to count: `step` counted that failure before the wait.
 */
export function deadlinePassed(
  policy: ResolvedPolicy,
  verdict: Verdict,
  nowMs: number,
  attemptUnfinished: boolean,
): GiveUpReason {
  if (attemptUnfinished) policy.budget?.recordFailure(nowMs, verdict.retryable);
  return 'deadline';
}
