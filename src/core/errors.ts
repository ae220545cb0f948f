/**
 * The error an attempt fails with when its own time runs out (`attemptTimeoutMs`, capped by the
 * time left before the deadline). Its `name` is `'TimeoutError'`, like the platform's
 * `AbortSignal.timeout()`, so any classifier treats it as a timeout.
 */
export class AttemptTimeoutError extends Error {
  override readonly name = 'TimeoutError';
  /** Stable code for checks that must survive two installed copies of stormproof. */
  readonly code = 'STORMPROOF_ATTEMPT_TIMEOUT';
  /** The time limit this attempt had, in milliseconds. */
  readonly timeoutMs: number;
  constructor(timeoutMs: number) {
    super(`stormproof: attempt timed out after ${timeoutMs} ms`);
    this.timeoutMs = timeoutMs;
  }
}

/**
 * The reason an attempt's `signal` aborts with when the call's total deadline passes while the
 * attempt runs.
 */
export class DeadlineExceededError extends Error {
  override readonly name = 'TimeoutError';
  readonly code = 'STORMPROOF_DEADLINE_EXCEEDED';
  /** The call's deadline, in milliseconds. */
  readonly deadlineMs: number;
  constructor(deadlineMs: number) {
    super(`stormproof: the call's deadline of ${deadlineMs} ms passed`);
    this.deadlineMs = deadlineMs;
  }
}
