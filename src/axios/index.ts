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
import { axiosRetry } from './interceptor.js';

export type { Budget } from '../core/budgets/budget.js';
export type { HedgeOptions } from '../core/hedge.js';
export type { GiveUpReason, RetryEvent, RetryReport } from '../core/options.js';
export { getRetryReport } from '../core/report.js';
export type { BudgetFactory } from '../fetch/budgets.js';
export { DEFAULT_RETRY_METHODS, HEDGE_HEADER, IDEMPOTENCY_KEY_HEADER } from '../fetch/request.js';
export { DEFAULT_ATTEMPT_HEADER } from '../http/checks.js';
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
  axiosRetry,
  type OnMaxRetryTimesExceeded,
  type OnRetry,
  type RetryCondition,
  type RetryDelay,
} from './interceptor.js';

/** axiosRetry as the default export too, as axios-retry exports it: `import axiosRetry from 'stormproof/axios'`. */
export default axiosRetry;
