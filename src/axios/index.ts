/**
 * stormproof/axios: axios requests retried by the stormproof engine, as a drop-in for
 * axios-retry.
 *
 * `axiosRetry(axios, options?)` adds one request interceptor that puts a retrying adapter in
 * front of each request's own: every attempt sends the same, already transformed request, and
 * the interceptors and transforms run once per request. It retries what can pass (network
 * errors, timeouts, 408, 429, 502, 503, 504, a 500 once) and only what is safe to repeat
 * (idempotent methods, or a request with an `Idempotency-Key`), with full jitter, Retry-After and
 * the rate-limit headers, a deadline, and a budget and a breaker per origin. axios-retry's
 * options (`retries`, `retryCondition`, `retryDelay`, `shouldResetTimeout`, `onRetry`,
 * `onMaxRetryTimesExceeded`, `validateResponse`) mean the same here where they can; docs/axios.md
 * names each difference.
 *
 * No runtime dependency on axios: you pass yours.
 *
 * @example
 * ```ts
 * import axios from 'axios';
 * import { axiosRetry } from 'stormproof/axios';
 *
 * axiosRetry(axios);
 * const { data } = await axios.get('https://api.example.com/user/42');
 * ```
 *
 * @module
 */
import {
  isIdempotentRequestError,
  isNetworkError,
  isNetworkOrIdempotentRequestError,
  isRetryableError,
  isSafeRequestError,
} from './conditions.js';
import { exponentialDelay, linearDelay, noDelay, retryAfter } from './delays.js';
import { axiosRetry as install } from './interceptor.js';

export type { Budget } from '../core/budgets/budget.js';
export type { HedgeOptions } from '../core/hedge.js';
export type { GiveUpReason, RetryEvent, RetryReport } from '../core/options.js';
export { getRetryReport } from '../core/report.js';
export type { BudgetFactory } from '../fetch/budgets.js';
export { DEFAULT_RETRY_METHODS, HEDGE_HEADER, IDEMPOTENCY_KEY_HEADER } from '../fetch/request.js';
export { DEFAULT_ATTEMPT_HEADER } from '../http/checks.js';
export {
  type ConditionError,
  isIdempotentRequestError,
  isNetworkError,
  isNetworkOrIdempotentRequestError,
  isRetryableError,
  isSafeRequestError,
} from './conditions.js';
export { type DelayError, exponentialDelay, linearDelay, noDelay, retryAfter } from './delays.js';
export {
  AXIOS_ATTEMPT_TIMEOUT_MS,
  AXIOS_DEADLINE_MS,
  AXIOS_MAX_ORIGINS,
  type AxiosEventContext,
  type AxiosGiveUpEvent,
  type AxiosLike,
  type AxiosRetryHandle,
  type AxiosRetryOptions,
  type AxiosRetryRequestOptions,
  type AxiosSuccessEvent,
  type OnMaxRetryTimesExceeded,
  type OnRetry,
  type RetryCondition,
  type RetryDelay,
} from './interceptor.js';

/**
 * The key under which axios-retry reads a request's own options: `config['axios-retry']`, read
 * here as an alias of `config.stormproof`.
 *
 * @example
 * ```ts
 * await api.get('/items', { [namespace]: { retries: 0 } });
 * ```
 */
export const namespace = 'axios-retry';

/**
 * The helpers axios-retry hangs on its default export, here on `axiosRetry` (named or default).
 *
 * @example
 * ```ts
 * axiosRetry(axios, { retryCondition: axiosRetry.isSafeRequestError, retryDelay: axiosRetry.linearDelay(50) });
 * ```
 */
export interface AxiosRetryStatics {
  readonly isNetworkError: typeof isNetworkError;
  readonly isRetryableError: typeof isRetryableError;
  readonly isSafeRequestError: typeof isSafeRequestError;
  readonly isIdempotentRequestError: typeof isIdempotentRequestError;
  readonly isNetworkOrIdempotentRequestError: typeof isNetworkOrIdempotentRequestError;
  readonly exponentialDelay: typeof exponentialDelay;
  readonly linearDelay: typeof linearDelay;
  readonly noDelay: typeof noDelay;
  readonly retryAfter: typeof retryAfter;
}

/**
 * Runs every request of `axios` through the stormproof engine (see the module's description),
 * with axios-retry's helpers attached as it attaches them: `axiosRetry.isNetworkError`,
 * `axiosRetry.exponentialDelay`, ...
 *
 * @example
 * ```ts
 * import axiosRetry from 'stormproof/axios';
 *
 * axiosRetry(axios, { retryCondition: axiosRetry.isNetworkOrIdempotentRequestError });
 * ```
 */
export const axiosRetry: typeof install & AxiosRetryStatics = Object.assign(install, {
  isNetworkError,
  isRetryableError,
  isSafeRequestError,
  isIdempotentRequestError,
  isNetworkOrIdempotentRequestError,
  exponentialDelay,
  linearDelay,
  noDelay,
  retryAfter,
});

/** axiosRetry as the default export too, as axios-retry exports it: `import axiosRetry from 'stormproof/axios'`. */
export default axiosRetry;
