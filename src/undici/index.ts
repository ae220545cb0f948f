/**
 * stormproof/undici: every request through undici, retried by the stormproof engine.
 *
 * `interceptor(options?)` is an interceptor for undici's `Dispatcher.compose` (undici 7 and
 * later, the current handler API); `installGlobal({ undici })` composes it onto the global
 * dispatcher, so that Node's built-in `fetch` and every library built on it (SDKs for payment,
 * AI and cloud APIs) retry with full jitter, a total deadline, a budget and a breaker per
 * origin, Retry-After and the rate-limit headers, the idempotency rules and the attempt header,
 * at one retry layer. No runtime dependency on undici: you pass yours.
 *
 * @example
 * ```ts
 * import * as undici from 'undici';
 * import { installGlobal } from 'stormproof/undici';
 *
 * installGlobal({ undici });
 * ```
 *
 * @module
 */
export type { Budget } from '../core/budgets/budget.js';
export type { HedgeOptions } from '../core/hedge.js';
export type { GiveUpReason, RetryReport } from '../core/options.js';
export { getRetryReport } from '../core/report.js';
export type { BudgetFactory } from '../fetch/budgets.js';
export { DEFAULT_RETRY_METHODS, HEDGE_HEADER, IDEMPOTENCY_KEY_HEADER } from '../fetch/request.js';
export { DEFAULT_ATTEMPT_HEADER } from '../http/checks.js';
export { type InstallGlobalOptions, installGlobal, type UndiciModule } from './global.js';
export { isRetryFromAbove, SDK_ATTEMPT_HEADERS } from './headers.js';
export {
  DEFAULT_MAX_REPLAY_BODY_BYTES,
  INTERCEPTOR_DEADLINE_MS,
  INTERCEPTOR_MAX_ORIGINS,
  type InterceptorOptions,
  interceptor,
  type UndiciEventContext,
  type UndiciGiveUpEvent,
  type UndiciRetryEvent,
  type UndiciSuccessEvent,
} from './interceptor.js';
export { BodyResumeError } from './resume.js';
export type {
  UndiciController,
  UndiciDispatch,
  UndiciDispatchArgs,
  UndiciHandler,
  UndiciHeaders,
  UndiciInterceptor,
  UndiciNextDispatch,
} from './types.js';
