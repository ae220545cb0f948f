// The delay functions axios-retry users pass as `retryDelay`, with stormproof's meaning. Pure
// functions of (retryCount, error); `exponentialDelay` is also a marker: passed as `retryDelay`,
// it hands the wait to the engine's own backoff (full jitter, capped, Retry-After added).
import { readRetryAfterMs } from '../core/retry-after.js';

/** The part of an axios error a delay function reads: the response's headers, if any. */
export interface DelayError {
  readonly response?: { readonly headers?: unknown } | undefined;
}

/** The cap of {@link exponentialDelay}'s ceiling when called directly, in ms: the engine's `maxDelayMs`. */
const DIRECT_CAP_MS = 5000;

/**
 * The server's Retry-After (or `retry-after-ms`) on an axios error's response, in ms; 0 when
 * there is none or it cannot be read. Both forms of Retry-After are read (delay seconds and an
 * HTTP date), as stormproof/fetch reads them.
 *
 * @example
 * ```ts
 * retryAfter({ response: { headers: { 'retry-after': '2' } } }); // 2000
 * ```
 */
export function retryAfter(error?: DelayError): number {
  const headers = error?.response?.headers;
  return headers === undefined ? 0 : (readRetryAfterMs(headers) ?? 0);
}

/**
 * No backoff: retry at once, or after the server's Retry-After. axios-retry's default; not
 * stormproof's (a burst of immediate retries is how a herd forms): pass it only where you know
 * the retries are few and cheap. The budget and the deadline still apply.
 *
 * @example
 * ```ts
 * axiosRetry(axios, { retryDelay: noDelay });
 * ```
 */
export function noDelay(_retryCount?: number, error?: DelayError): number {
  return retryAfter(error);
}

/**
 * A delay that grows by `delayFactor` ms per retry: `retryCount * delayFactor`, or the server's
 * Retry-After when that is longer. No jitter, as in axios-retry.
 *
 * @param delayFactor - ms per retry. @default 100
 * @example
 * ```ts
 * axiosRetry(axios, { retryDelay: linearDelay(50) }); // 50, 100, 150 ms
 * ```
 */
export function linearDelay(delayFactor = 100): (retryCount: number, error?: DelayError) => number {
  return (retryCount = 0, error = undefined) =>
    Math.max(retryCount * delayFactor, retryAfter(error));
}

/**
 * Exponential backoff. Passed as `retryDelay`, it means the engine's backoff, the one stormproof
 * uses by default: a wait drawn uniformly from [0, min(baseDelayMs * 2^(retry-1), maxDelayMs)]
 * (full jitter), a 429 with a larger base, and the server's Retry-After added on top.
 * Called directly (inside your own `retryDelay`), it returns a full-jitter draw from
 * [0, min(2^retryCount * delayFactor, 5000)] plus the Retry-After: with the default factor of
 * 100 the first retry's ceiling is 200 ms, the engine's base.
 *
 * Unlike axios-retry's (`2^n * factor` plus 0-20%, no cap), the wait is fully jittered and
 * capped, so clients that failed together do not return together.
 *
 * @param retryCount - the retry about to be made, from 1.
 * @param error - the failed attempt's error (its Retry-After is read).
 * @param delayFactor - half the first retry's ceiling, in ms. @default 100
 * @example
 * ```ts
 * axiosRetry(axios, { retryDelay: exponentialDelay }); // the engine's backoff (the default)
 * axiosRetry(axios, { retryDelay: (n, error) => exponentialDelay(n, error, 1000) });
 * ```
 */
export function exponentialDelay(retryCount = 0, error?: DelayError, delayFactor = 100): number {
  const ceiling = Math.min(2 ** retryCount * delayFactor, Math.max(DIRECT_CAP_MS, delayFactor));
  return Math.random() * ceiling + retryAfter(error);
}
