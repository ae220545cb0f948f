// gRPC's retry throttling. The count is kept in whole thousandths of a token (as grpc core keeps
// milli-tokens), so adding 0.1 ten times gives exactly 1 and the bounds are exact.

import { channels } from '../instrument.js';
import { checkKnownKeys, checkNumber, checkOptionsObject, given } from '../validate.js';
import type { Budget } from './budget.js';

const budgetChannel = channels.budget;

/** Options of {@link TokenBucket}, named and bounded as in gRFC A6's `retryThrottling`. */
export interface TokenBucketOptions {
  /**
   * The most tokens, and the starting count. Retries stop once the count is at or below half of
   * it. A whole number in (0, 1000], as gRFC A6 requires. The default is the gRFC's own example.
   * @default 10
   * @example
   * ```ts
   * new TokenBucket({ maxTokens: 100 }); // 50 more failures than it can absorb before retries stop
   * ```
   */
  maxTokens?: number | undefined;
  /**
   * Tokens each success adds back. Greater than 0; digits past the third decimal are ignored, as
   * gRFC A6 says (0.5466 counts as 0.546), so it must be at least 0.001. The default is the
   * gRFC's own example.
   * @default 0.1
   * @example
   * ```ts
   * new TokenBucket({ tokenRatio: 0.5 }); // two successes make up for one failure
   * ```
   */
  tokenRatio?: number | undefined;
}

const KEYS = ['maxTokens', 'tokenRatio'] as const;

/**
 * `value` in thousandths, with the digits past the third decimal dropped. It reads the decimal
 * that JavaScript prints for the number (what the user wrote), not the binary value, which for
 * 1.001 is a hair below it and would lose a thousandth. `value` is finite and positive. Shared
 * with the gRPC service config, which must truncate `tokenRatio` the same way.
 */
export function truncatedThousandths(value: number): number {
  const [mantissa = '', exponent = '0'] = String(value).split('e');
  const [whole = '', fraction = ''] = mantissa.split('.');
  const digits = whole + fraction;
  const keep = whole.length + Number(exponent) + 3;
  if (keep <= 0) return 0;
  return Number(digits.slice(0, keep).padEnd(keep, '0'));
}

/**
 * Retry throttling exactly as gRPC specifies it in gRFC A6 (`retryThrottling`): the count starts
 * at `maxTokens` and stays within [0, maxTokens]; each attempt that fails with a retryable status
 * (or a server's "don't retry") removes 1 token, each success adds `tokenRatio`, and while the
 * count is at or below `maxTokens / 2` no call is retried.
 *
 * A retry spends nothing here: the failure that led to it already cost its token. Failures of a
 * malformed request (`retryable` false) say nothing about the server's health and are not
 * counted. New requests are not counted either.
 *
 * @example
 * ```ts
 * // gRFC A6's example: { "maxTokens": 10, "tokenRatio": 0.1 }
 * const policy = createRetryPolicy({ budget: new TokenBucket({ maxTokens: 10, tokenRatio: 0.1 }) });
 * ```
 */
export class TokenBucket implements Budget {
  /** The most tokens, and the starting count. */
  readonly maxTokens: number;
  /** Tokens a success adds back, after dropping digits past the third decimal. */
  readonly tokenRatio: number;
  readonly #maxMilli: number;
  readonly #ratioMilli: number;
  #milli: number;

  /** Throws a TypeError or RangeError naming the option and the value when an option is bad. */
  constructor(options?: TokenBucketOptions) {
    const o = checkOptionsObject('TokenBucket', options);
    checkKnownKeys('TokenBucket', o, KEYS);
    this.maxTokens = checkNumber('TokenBucket', 'maxTokens', given(o.maxTokens, 10), {
      min: 0,
      minExclusive: true,
      max: 1000,
      integer: true,
    });
    // At least 0.001: anything smaller would truncate to 0 and never refill the bucket.
    const ratio = checkNumber('TokenBucket', 'tokenRatio', given(o.tokenRatio, 0.1), {
      min: 0.001,
    });
    const ratioMilli = truncatedThousandths(ratio);
    this.tokenRatio = ratioMilli / 1000;
    this.#maxMilli = this.maxTokens * 1000;
    // A ratio above maxTokens refills the bucket in one success, the same as maxTokens itself;
    // capping it keeps every sum a small whole number.
    this.#ratioMilli = Math.min(ratioMilli, this.#maxMilli);
    this.#milli = this.#maxMilli;
  }

  /** The current count, in [0, maxTokens], exact to the thousandth (for example 9.9). */
  get tokens(): number {
    return this.#milli / 1000;
  }

  /** Not counted by this budget. */
  recordRequest(_nowMs: number): void {}

  /** Adds `tokenRatio`, up to `maxTokens`. */
  recordSuccess(): void {
    this.#milli = Math.min(this.#maxMilli, this.#milli + this.#ratioMilli);
  }

  /** Removes 1 token when the failure was retryable (the server's or the network's), never below 0. */
  recordFailure(_nowMs: number, retryable: boolean): void {
    if (retryable) this.#milli = Math.max(0, this.#milli - 1000);
  }

  /** True while the count is above `maxTokens / 2`. Spends nothing. */
  tryRetry(_nowMs: number): boolean {
    const allowed = this.#milli * 2 > this.#maxMilli;
    if (budgetChannel.hasSubscribers) {
      budgetChannel.publish({
        type: allowed ? 'allowed' : 'refused',
        budget: this,
        tokens: this.#milli / 1000,
      });
    }
    return allowed;
  }
}
