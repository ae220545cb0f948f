// The error a call fails with when its breaker does not admit it.

const BRAND = Symbol.for('stormproof.BreakerOpenError');

/**
 * A call refused at once because its circuit breaker is open (or isolated, or its probes are
 * all out). It is not retried and spends no budget. Check it with {@link isBreakerOpenError} or
 * its `code`, which survive two installed copies of stormproof.
 */
export class BreakerOpenError extends Error {
  override readonly name = 'BreakerOpenError';
  /** Stable code for checks that must survive two installed copies of stormproof. */
  readonly code = 'STORMPROOF_BREAKER_OPEN';
  /** The breaker's key (an origin, a method...). */
  readonly key: string;
  /**
   * Milliseconds until the breaker lets its next probe through, as Polly's `RetryAfter` does;
   * `undefined` while the breaker is isolated by hand (no probe until `reset`).
   */
  readonly retryAfterMs: number | undefined;
  constructor(key: string, retryAfterMs: number | undefined) {
    const when =
      retryAfterMs === undefined ? 'isolated until reset' : `next probe in ${retryAfterMs} ms`;
    super(`stormproof: circuit breaker ${JSON.stringify(key)} is open (${when})`);
    this.key = key;
    this.retryAfterMs = retryAfterMs;
  }
  /** The brand {@link isBreakerOpenError} looks for. */
  get [BRAND](): true {
    return true;
  }
}

/** True for a {@link BreakerOpenError} from any installed copy of stormproof. */
export function isBreakerOpenError(error: unknown): error is BreakerOpenError {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as Record<symbol, unknown>)[BRAND] === true
  );
}
