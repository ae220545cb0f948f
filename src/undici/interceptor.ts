// The interceptor: each request dispatched through it runs through the stormproof engine, one
// attempt per dispatch to the next dispatcher. An attempt counts as done when its response head
// arrives (or it fails before one): the head is held (a success's controller paused, a failure's
// body read ahead up to DRAIN_LIMIT bytes) while the engine decides. A success, or the last failed response
// when the call gives up, is then forwarded to the caller's handler, body and all, through one
// controller that stays the same across attempts. A failed response that is retried is drained
// (up to DRAIN_LIMIT bytes, so its connection is kept) and never reaches the caller. An error
// reaches the caller only when the call gives up, as the engine's error itself. A GET's body that
// breaks after its head was forwarded is resumed, when its response allows it (resume.ts), by a
// second engine call counted as the same request's retry: its range request's 206 feeds the
// same handler through the same controller.
//
// What is decided where: the engine (src/core) classifies, waits, keeps the deadline and asks
// the budget and the breaker; the HTTP rules shared with stormproof/fetch (src/http/checks.ts,
// src/fetch/request.ts, src/fetch/budgets.ts) decide which requests are safe to repeat. This
// folder only adapts undici's handler API to the engine: options.ts checks the options once,
// exchange.ts carries each request, attempt.ts each dispatch of it, judge.ts what fails and why.
import { show } from '../core/validate.js';
import { Exchange } from './exchange.js';
import { type InterceptorOptions, OWNER, resolveSettings } from './options.js';
import type { UndiciDispatch, UndiciInterceptor } from './types.js';

export {
  DEFAULT_MAX_REPLAY_BODY_BYTES,
  INTERCEPTOR_DEADLINE_MS,
  INTERCEPTOR_MAX_ORIGINS,
  INTERCEPTOR_OPTION_KEYS,
  type InterceptorOptions,
  type UndiciEventContext,
  type UndiciGiveUpEvent,
  type UndiciRetryEvent,
  type UndiciSuccessEvent,
} from './options.js';

/**
 * Makes the interceptor: pass it to undici's `Dispatcher.compose` (undici 7 and later). Every
 * option is checked here, once: a bad value (`null` included) throws a TypeError or RangeError
 * that names it. One policy and one budget per origin are shared by every request dispatched
 * through it.
 *
 * - Retried: network errors, timeouts (`UND_ERR_HEADERS_TIMEOUT`, `UND_ERR_INFO` timeouts, ...),
 *   502, 503, 504, 429 (more slowly), a 500 once; never a response that says not to retry.
 * - Only when safe: GET, HEAD, OPTIONS, TRACE, PUT, DELETE, QUERY (`retryMethods`) or a request
 *   with an `Idempotency-Key`, and a body that can be sent again; never a request that is a
 *   layer above's retry (an SDK's attempt header).
 * - When the retries end on a response, that response is passed on, body and all: a status
 *   never becomes an exception. When they end on an error, the caller's handler gets that error.
 *
 * @example
 * ```ts
 * import { Agent } from 'undici';
 * import { interceptor } from 'stormproof/undici';
 *
 * const agent = new Agent().compose(interceptor({ deadlineMs: 10_000 }));
 * const res = await agent.request({ origin: 'https://api.example.com', path: '/items', method: 'GET' });
 * ```
 */
export function interceptor(options?: InterceptorOptions): UndiciInterceptor {
  const settings = resolveSettings(options);
  return (next) => {
    const dispatch = next as unknown as UndiciDispatch;
    if (typeof dispatch !== 'function') {
      throw new TypeError(
        `stormproof: ${OWNER} must be given the next dispatch function by Dispatcher.compose, got ${show(dispatch)}`,
      );
    }
    return function stormproofDispatch(opts, handler) {
      const method = String(opts.method ?? 'GET').toUpperCase();
      // A CONNECT or an upgrade (WebSocket) hands over a socket, not a response: not retried.
      if (opts.upgrade != null && opts.upgrade !== false) return dispatch(opts, handler);
      if (method === 'CONNECT') return dispatch(opts, handler);
      new Exchange(settings, dispatch, opts, method, handler).start();
      return true;
    };
  };
}
