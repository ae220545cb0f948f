import type { FailureKind } from '../classify.js';

/**
 * A retry budget: shared across calls, it decides whether one more retry may be sent.
 *
 * The engine calls these hooks, always with the injected clock's time in milliseconds:
 * `recordRequest` once when a call starts, `recordSuccess` or `recordFailure` after every
 * attempt, and `tryRetry` just before it would sleep for a retry. A budget that says no makes
 * the call give up at once, with reason `'budget'`.
 *
 * Implement this interface to plug in a budget of your own.
 */
export interface Budget {
  /** A new call is starting (its first attempt, not a retry). */
  recordRequest(nowMs: number): void;
  /**
   * An attempt succeeded. It is given no time: no budget of the field counts successes by time,
   * and sparing the success path a clock read keeps a retry wrapper nearly free when nothing fails.
   * `retried` is the kind of failure the attempt retried, undefined for a call's first attempt:
   * a budget that charges retries by kind can refund what the retry cost (the AWS SDKs' retry
   * quota does).
   */
  recordSuccess(retried?: FailureKind): void;
  /**
   * An attempt failed. `retryable` is true when the failure was the server's or the network's
   * (a retryable error, or a server's "overloaded, don't retry"), false for a malformed request,
   * which must not count against the server's health.
   */
  recordFailure(nowMs: number, retryable: boolean): void;
  /**
   * Asked just before a retry waits: true allows it (and spends what it costs), false refuses.
   * `kind` is the kind of failure the retry is for, so a retry of a throttled call can cost less
   * or more than one of a timeout; undefined when the engine asks for a hedge, which follows no
   * failure.
   */
  tryRetry(nowMs: number, kind?: FailureKind): boolean;
}

/** Whether `value` has the four methods of a {@link Budget}. */
export function isBudget(value: unknown): value is Budget {
  const b = value as Partial<Record<keyof Budget, unknown>> | null;
  return (
    typeof b === 'object' &&
    b !== null &&
    typeof b.recordRequest === 'function' &&
    typeof b.recordSuccess === 'function' &&
    typeof b.recordFailure === 'function' &&
    typeof b.tryRetry === 'function'
  );
}
