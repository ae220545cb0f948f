// The AWS SDKs' retry quota: a retry costs tokens by the kind of failure it retries, and a success
// gives back what its retry cost. Whole numbers only, as the SDKs keep it.

import type { FailureKind } from '../classify.js';
import { channels } from '../instrument.js';
import { checkKnownKeys, checkNumber, checkOptionsObject, given } from '../validate.js';
import type { Budget } from './budget.js';

const budgetChannel = channels.budget;

/**
 * Options of {@link RetryQuota}: whole numbers. The defaults are the AWS SDKs' 2026 values
 * (aws-sdk-js-v3 #8037; `@smithy/util-retry` 4.6.2 with `SMITHY_NEW_RETRIES_2026`).
 */
export interface RetryQuotaOptions {
  /**
   * The most tokens the quota holds; it starts this full. A whole number from 1 to 1,000,000,000.
   * @default 500
   * @example
   * ```ts
   * new RetryQuota({ maxTokens: 1000 }); // twice the AWS SDKs' quota
   * ```
   */
  maxTokens?: number | undefined;
  /**
   * Tokens a retry costs when the failure it retries is not a throttle: a timeout, a dropped
   * connection, a 5xx. From 1 to `maxTokens`. AWS raised it from 10 to 14 in 2026.
   * @default 14
   * @example
   * ```ts
   * new RetryQuota({ retryCost: 10 }); // the AWS SDKs' value before 2026
   * ```
   */
  retryCost?: number | undefined;
  /**
   * Tokens a retry costs when the failure it retries is a throttle (429): cheaper, because its
   * backoff is already longer. From 1 to `maxTokens`.
   * @default 5
   * @example
   * ```ts
   * new RetryQuota({ throttledRetryCost: 14 }); // every retry costs the same
   * ```
   */
  throttledRetryCost?: number | undefined;
  /**
   * Tokens a call's first attempt gives back when it succeeds (an attempt that retried gives
   * back what its retry cost instead). From 0 to `maxTokens`.
   * @default 1
   * @example
   * ```ts
   * new RetryQuota({ successTokens: 0 }); // only successful retries refill the quota
   * ```
   */
  successTokens?: number | undefined;
}

const KEYS = ['maxTokens', 'retryCost', 'throttledRetryCost', 'successTokens'] as const;

/**
 * The retry quota of the AWS SDKs' standard retry mode: it starts full at `maxTokens`; a retry
 * costs `retryCost` tokens (`throttledRetryCost` for a throttled failure, a 429) and is refused
 * when fewer are left; a success gives back what the retry that led to it cost, or
 * `successTokens` when the call's first attempt succeeded; it never holds more than `maxTokens`.
 *
 * With the defaults (the SDKs' 2026 values: 500, 14, 5, 1), an outage of timeouts and 5xx
 * answers empties it after 35 failed retries, and it then allows a retry for every 14 first
 * attempts that succeed; a retry that succeeds costs nothing in the end. A hedge (which retries
 * no failure) costs `retryCost` and is not given back. Failures and new requests are not
 * counted.
 *
 * @example
 * ```ts
 * // The AWS SDKs' 2026 defaults: 3 attempts, full jitter from 50 ms (1 s for a throttle) to 20 s
 * const policy = createRetryPolicy({
 *   maxAttempts: 3,
 *   baseDelayMs: 50,
 *   throttledDelayMultiplier: 20,
 *   maxDelayMs: 20_000,
 *   budget: new RetryQuota(),
 * });
 * ```
 */
export class RetryQuota implements Budget {
  /** The most tokens the quota holds. */
  readonly maxTokens: number;
  /** Tokens a retry of any failure but a throttle costs. */
  readonly retryCost: number;
  /** Tokens a retry of a throttled failure costs. */
  readonly throttledRetryCost: number;
  /** Tokens a first attempt's success gives back. */
  readonly successTokens: number;
  #tokens: number;

  /** Throws a TypeError or RangeError naming the option and the value when an option is bad. */
  constructor(options?: RetryQuotaOptions) {
    const o = checkOptionsObject('RetryQuota', options);
    checkKnownKeys('RetryQuota', o, KEYS);
    this.maxTokens = checkNumber('RetryQuota', 'maxTokens', given(o.maxTokens, 500), {
      min: 1,
      max: 1_000_000_000,
      integer: true,
    });
    const cost = { min: 1, max: this.maxTokens, integer: true };
    this.retryCost = checkNumber('RetryQuota', 'retryCost', given(o.retryCost, 14), cost);
    this.throttledRetryCost = checkNumber(
      'RetryQuota',
      'throttledRetryCost',
      given(o.throttledRetryCost, 5),
      cost,
    );
    this.successTokens = checkNumber('RetryQuota', 'successTokens', given(o.successTokens, 1), {
      ...cost,
      min: 0,
    });
    this.#tokens = this.maxTokens;
  }

  /** Tokens left now, a whole number in [0, maxTokens]. */
  get tokens(): number {
    return this.#tokens;
  }

  /** What a retry of a failure of `kind` costs (`retryCost` for a hedge, which has no kind). */
  costOf(kind: FailureKind | undefined): number {
    return kind === 'throttled' ? this.throttledRetryCost : this.retryCost;
  }

  /** Not counted by this quota. */
  recordRequest(_nowMs: number): void {}

  /** Gives back what the retry cost (`successTokens` after a first attempt), up to `maxTokens`. */
  recordSuccess(retried?: FailureKind): void {
    const back = retried === undefined ? this.successTokens : this.costOf(retried);
    this.#tokens = Math.min(this.maxTokens, this.#tokens + back);
  }

  /** Not counted by this quota. */
  recordFailure(_nowMs: number, _retryable: boolean): void {}

  /** Spends the retry's cost and returns true when that many tokens are left; otherwise false. */
  tryRetry(_nowMs: number, kind?: FailureKind): boolean {
    const cost = this.costOf(kind);
    const allowed = this.#tokens >= cost;
    if (allowed) this.#tokens -= cost;
    if (budgetChannel.hasSubscribers) {
      budgetChannel.publish({
        type: allowed ? 'allowed' : 'refused',
        budget: this,
        tokens: this.#tokens,
      });
    }
    return allowed;
  }
}
