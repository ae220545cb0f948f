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
// file only adapts undici's handler API to the engine.
import type { BreakerRegistry, BreakerRegistryOptions } from '../core/breaker/registry.js';
import type { Budget } from '../core/budgets/budget.js';
import type { FailureKind, Verdict } from '../core/classify.js';
import { type Clock, MAX_TIMER_MS, systemClock } from '../core/clock.js';
import type { HedgeOptions } from '../core/hedge.js';
import {
  type AttemptContext,
  type CallOptions,
  type GiveUpEvent,
  type GiveUpReason,
  RETRY_OPTION_KEYS,
  type ResolvedPolicy,
  type RetryAnswer,
  type RetryDecisionContext,
  type RetryEvent,
  type RetryReport,
  resolvePolicy,
  type SuccessEvent,
  type UnrepeatableReason,
} from '../core/options.js';
import { addReportFinder, getRetryReport, setReport } from '../core/report.js';
import { execute, type ResultCheck } from '../core/retry.js';
import { applyAnswer } from '../core/step.js';
import {
  checkKnownKeys,
  checkNumber,
  checkOptionsObject,
  isThenable,
  show,
} from '../core/validate.js';
import {
  type BudgetFactory,
  DEFAULT_MAX_ORIGINS,
  type OriginBudgets,
  originOf,
} from '../fetch/budgets.js';
import { redactUrl } from '../fetch/redact.js';
import {
  AUTO_KEY_METHODS,
  HEDGE_HEADER,
  IDEMPOTENCY_KEY_HEADER,
  newIdempotencyKey,
} from '../fetch/request.js';
import {
  checkAttemptHeader,
  checkBreakers,
  checkBudgetFactory,
  checkIdempotencyKey,
  checkRetryMethods,
  type HttpPolicyOptions,
  isKeyConflict,
  withDefault,
} from '../http/checks.js';
import {
  checkHedge,
  isHedgeable,
  type OriginPolicies,
  originPolicies,
  policyFor,
} from '../http/hedging.js';
import { type AttemptBody, attemptBody } from './body.js';
import { isRetryFromAbove, readHeader, withHeader } from './headers.js';
import { BodyResumeError, checkResumed, type ResumePoint, resumePoint } from './resume.js';
import type {
  UndiciController,
  UndiciDispatch,
  UndiciDispatchArgs,
  UndiciHandler,
  UndiciInterceptor,
} from './types.js';

/**
 * The interceptor's total time for one request, in ms, from its dispatch until the response head
 * that is forwarded, waits included: undici's own `headersTimeout` (300 s), so a request plain
 * undici would wait for is never cut short (see docs/undici.md, "Defaults").
 */
export const INTERCEPTOR_DEADLINE_MS = 300_000;

/** How many origins' retry budgets one interceptor remembers by default. */
export const INTERCEPTOR_MAX_ORIGINS = DEFAULT_MAX_ORIGINS;

/** How many bytes of a streamed request body are kept to send it again on a retry, by default. */
export const DEFAULT_MAX_REPLAY_BODY_BYTES = 1_048_576;

/** How much of a retried response's body is read and dropped to keep its connection; past it, the connection is closed. */
const DRAIN_LIMIT = 65_536;

/** What every interceptor event says about its request. Never a header, never a body. */
export interface UndiciEventContext {
  /** The request method, in upper case. */
  readonly method: string;
  /** The origin and path, without user name, password, query values and fragment (`redactUrl`). */
  readonly url: string;
  /** The status of the response the attempt ended with; absent when it ended without one. */
  readonly status?: number;
}

/** Sent to `onRetry` just before the wait for a retry. */
export interface UndiciRetryEvent extends Omit<RetryEvent, 'error'>, UndiciEventContext {
  /** What the attempt threw (a network error, a timeout); absent when it ended with a response. */
  readonly error?: unknown;
  /**
   * Set when the retry resumes a response body that broke after its head was passed on: the
   * byte it asks for (`Range: bytes=<resumeFrom>-`).
   */
  readonly resumeFrom?: number;
}

/** Sent to `onGiveUp` once, when a request stops retrying and fails. */
export interface UndiciGiveUpEvent extends Omit<GiveUpEvent, 'error'>, UndiciEventContext {
  /** The error the caller's handler receives; absent when the last response is passed on. */
  readonly error?: unknown;
}

/** Sent to `onSuccess` once, when an attempt gets a response with a status below 400. */
export interface UndiciSuccessEvent extends SuccessEvent, UndiciEventContext {}

/**
 * The options of `interceptor()` (and of `installGlobal`): the engine's policy options (each with
 * its default, see docs/retry.md), the hooks with request-shaped events, and the HTTP rules it
 * shares with stormproof/fetch.
 */
export interface InterceptorOptions extends HttpPolicyOptions {
  /**
   * The total time of one request, in ms, from its dispatch until the response head it returns,
   * waits included: a retry whose wait would end past it is not made, and an attempt still
   * running then is aborted. The body is not covered (undici's `bodyTimeout` is). As long as
   * undici's own `headersTimeout`: installed globally, the interceptor sits under every fetch
   * in the process, slow model calls included, and must not fail what plain fetch serves.
   * @default 300000
   * @example
   * ```ts
   * interceptor({ deadlineMs: 10_000 }); // an API that answers in seconds or not at all
   * ```
   */
  deadlineMs?: number | undefined;
  /**
   * The time limit of each attempt until its response head, in ms. Unset, an attempt runs until
   * the deadline (and undici's `headersTimeout`).
   * @default undefined
   * @example
   * ```ts
   * interceptor({ attemptTimeoutMs: 5000, deadlineMs: 20_000 });
   * ```
   */
  attemptTimeoutMs?: number | undefined;
  /**
   * The retry budget. By default each origin gets its own `RetryBudget`, so a host that is down
   * cannot spend the retries of a healthy one. A function makes the budget of each origin; a
   * `Budget` is shared by every origin; `false` turns budgets off.
   * @default a new RetryBudget() per origin
   * @example
   * ```ts
   * interceptor({ budget: () => new RetryBudget({ maxCredits: 50 }) });
   * ```
   */
  budget?: Budget | BudgetFactory | false | undefined;
  /**
   * Hedge slow GET and HEAD requests, and requests with an `Idempotency-Key`, as stormproof/fetch
   * does: when a request has waited for its response head longer than nearly all recent ones to
   * its origin (the p96 by default, learned per origin after 20 answers), the same request is
   * dispatched again and the first head wins; the other dispatch is aborted through its
   * controller (a response head already there has its body dropped). Each copy is paid from the
   * origin's retry budget (none sent when it refuses), and none goes out while the origin pushes
   * back (a 429 or 503, Retry-After), while its breaker is not closed, or while copies stop
   * winning. A copy carries the attempt header (the number of dispatches of the request so far,
   * gRPC A6's way) and `stormproof-hedge: 1`. Never a request that is not retried (a POST
   * without a key, a layer above's retry), nor PUT or DELETE (two at once may race), nor one
   * whose body is a stream (every body undici's fetch sends is one): it would have to be sent
   * twice while it is still being read. See docs/hedging.md.
   * @default undefined (no hedging)
   * @example
   * ```ts
   * interceptor({ hedge: {} }); // one copy after the p96 of the origin's recent requests
   * interceptor({ hedge: { delayMs: 50 } }); // a copy after a fixed 50 ms
   * ```
   */
  hedge?: HedgeOptions | false | undefined;
  /**
   * How many origins' budgets (and breakers, and with `hedge` learned hedge delays) are
   * remembered. Past it, the origin used least recently is forgotten and starts again fresh.
   * @default 1000
   * @example
   * ```ts
   * interceptor({ maxOrigins: 50 });
   * ```
   */
  maxOrigins?: number | undefined;
  /**
   * Circuit breakers, one per origin: while an origin's breaker is open its requests fail at
   * once with a `BreakerOpenError` and are not retried. `true` uses the defaults, an object sets
   * a `BreakerRegistry`'s options, a `BreakerRegistry` is used as given.
   * @default undefined (no breaker)
   * @example
   * ```ts
   * interceptor({ breaker: { consecutiveFailures: 10 } });
   * ```
   */
  breaker?: boolean | BreakerRegistryOptions | BreakerRegistry | undefined;
  /**
   * `'auto'` adds a fresh `Idempotency-Key` to every POST and PATCH that has none, the same on
   * each of its attempts, so those requests become safe to retry. Only for servers that honour
   * the header; a key already on the request is always kept.
   * @default false
   * @example
   * ```ts
   * interceptor({ idempotencyKey: 'auto' });
   * ```
   */
  idempotencyKey?: 'auto' | false | undefined;
  /**
   * The request header that carries the attempt number on retries (`2`, `3`, ...); with `hedge`
   * it counts every dispatch of the request, hedged copies included, and a hedged copy also
   * carries `stormproof-hedge`. `false` sends neither. A request that arrives already carrying it with a number of 2 or more (a stormproof
   * client above retried) is sent once.
   * @default 'stormproof-attempt'
   * @example
   * ```ts
   * interceptor({ attemptHeader: 'x-retry-attempt' });
   * ```
   */
  attemptHeader?: string | false | undefined;
  /**
   * The methods retried without an `Idempotency-Key` (case-insensitive). A request with an
   * `Idempotency-Key` is retried whatever its method.
   * @default ['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE', 'QUERY']
   * @example
   * ```ts
   * interceptor({ retryMethods: ['GET', 'HEAD'] });
   * ```
   */
  retryMethods?: readonly string[] | undefined;
  /**
   * How many bytes of a streamed request body (a Node stream, an async iterable, and every body
   * undici's fetch sends) are kept as they are sent, to send the body again on a retry. A body
   * longer than this, or one the failed attempt had not finished sending, is not sent again: the
   * request ends with reason `'body-not-replayable'`. `0` keeps nothing: a streamed body is
   * never sent twice. Strings, bytes, Blobs and FormData are always sent again whole.
   * @default 1048576 (1 MiB)
   * @example
   * ```ts
   * interceptor({ maxReplayBodyBytes: 0 }); // never hold a copy of a streamed upload
   * ```
   */
  maxReplayBodyBytes?: number | undefined;
  /**
   * Resume a GET response's body that breaks after its head was passed on (a dropped connection,
   * undici's body timeout): when the response was a 200 or a single-range 206 with a strong ETag,
   * the rest is asked for with `Range: bytes=<next byte>-` and `If-Match: <ETag>`, and a 206 that
   * continues the same bytes is fed to the same reader, with no second head. The resume is a
   * retry like any other: it counts against `maxAttempts`, waits its backoff (and Retry-After),
   * is paid from the origin's budget, asks its breaker, and must get its head by the request's
   * deadline; when it is refused, or the server answers anything else (a 200, another range, a
   * changed ETag), the body's reader gets the error. A response without an ETag, or with a weak
   * one, is never resumed (RFC 9110 section 15.3.7.3: only parts with the same strong validator
   * may be combined). `false`: a broken body always reaches its reader as an error.
   * @default true
   * @example
   * ```ts
   * interceptor({ resumeBody: false }); // a layer above resumes downloads itself
   * ```
   */
  resumeBody?: boolean | undefined;
  /**
   * `true` lets the process exit while a request waits for its retry: the wait's timer and the
   * deadline's are unreferenced (`timer.unref()`). By default they hold the process open until
   * the retry is made, so a script whose last request is being retried does not exit half way
   * (undici#3975). Not with `clock`.
   * @default false
   * @example
   * ```ts
   * interceptor({ unref: true }); // a CLI that must exit when its work is done
   * ```
   */
  unref?: boolean | undefined;
  /**
   * Called before each wait for a retry, with the engine's event plus the request's method,
   * redacted URL and status. A hook that throws or rejects is ignored.
   * @default undefined
   * @example
   * ```ts
   * interceptor({ onRetry: (e) => log.warn(`${e.method} ${e.url}: ${e.status ?? e.verdict.kind}`) });
   * ```
   */
  onRetry?: ((event: UndiciRetryEvent) => unknown) | undefined;
  /**
   * Called once when a request fails for good, with why (`reason`) and the method, redacted URL
   * and status. A hook that throws or rejects is ignored.
   * @default undefined
   * @example
   * ```ts
   * interceptor({ onGiveUp: (e) => metrics.increment('http.give_up', { reason: e.reason }) });
   * ```
   */
  onGiveUp?: ((event: UndiciGiveUpEvent) => unknown) | undefined;
  /**
   * Called once when an attempt gets a response with a status below 400. A hook that throws or
   * rejects is ignored.
   * @default undefined
   * @example
   * ```ts
   * interceptor({ onSuccess: (e) => metrics.histogram('http.attempts', e.attempts) });
   * ```
   */
  onSuccess?: ((event: UndiciSuccessEvent) => unknown) | undefined;
}

const OWNER = 'interceptor';
const OWN_KEYS = [
  'hedge',
  'idempotencyKey',
  'attemptHeader',
  'retryMethods',
  'maxOrigins',
  'breaker',
  'maxReplayBodyBytes',
  'unref',
  'resumeBody',
];
/** Every option `interceptor()` accepts. */
export const INTERCEPTOR_OPTION_KEYS: readonly string[] = [
  ...RETRY_OPTION_KEYS.filter((key) => key !== 'signal' && key !== 'hedge'),
  ...OWN_KEYS,
];

interface Hooks {
  readonly onRetry: InterceptorOptions['onRetry'];
  readonly onGiveUp: InterceptorOptions['onGiveUp'];
  readonly onSuccess: InterceptorOptions['onSuccess'];
}

/** Everything one `interceptor()` decided once, shared by all its requests. */
interface Settings {
  readonly autoKey: boolean;
  readonly attemptHeader: string | undefined;
  readonly retryMethods: ReadonlySet<string>;
  readonly maxReplayBodyBytes: number;
  /** Resume a GET's body that broke after its head, with a range request. */
  readonly resumeBody: boolean;
  readonly policy: ResolvedPolicy;
  /** Whether `hedge` is set: some requests are sent with the origin's hedging policy. */
  readonly hedging: boolean;
  /** The policies of each origin (budget, hedging); undefined when `policy` serves all. */
  readonly origins: OriginBudgets<OriginPolicies> | undefined;
  readonly breakers: BreakerRegistry | undefined;
  readonly hooks: Hooks;
  /** The failed responses of keyed requests: a 409 or 422 on them is final. */
  readonly keyed: WeakSet<object>;
  /** How the engine judges an attempt's response (and a hedged copy's 409). */
  readonly check: ResultCheck<Attempt>;
}

/** Errors this interceptor handed to a caller's handler, each with the engine's report. */
const delivered = new WeakSet<object>();

// undici's fetch hands the caller `TypeError('fetch failed', { cause })`, with the error this
// interceptor delivered as its cause: `getRetryReport` finds the report through it, and so does
// a stormproof layer above (stormproof/fetch over the global fetch), which then does not retry
// a request that was retried here already: one retry layer.
addReportFinder((error) => {
  const cause = (error as { cause?: unknown }).cause;
  if (typeof cause !== 'object' || cause === null || !delivered.has(cause)) return undefined;
  return getRetryReport(cause);
});

/** A clock whose timers do not hold the process open (`unref: true`). */
const unrefClock: Clock = Object.freeze({
  now: systemClock.now,
  setTimer: (ms: number, callback: () => void) => {
    let timer: ReturnType<typeof setTimeout>;
    const end = systemClock.now() + ms;
    const arm = (left: number) => {
      timer = setTimeout(
        () => {
          const rest = end - systemClock.now();
          if (left > MAX_TIMER_MS && rest > 0) arm(rest);
          else callback();
        },
        Math.min(left, MAX_TIMER_MS),
      );
      (timer as { unref?: () => unknown }).unref?.();
    };
    arm(ms);
    return () => clearTimeout(timer);
  },
  sleep: (ms: number, signal?: AbortSignal) => {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        cancel();
        reject(signal?.reason);
      };
      const cancel = unrefClock.setTimer!(ms, () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  },
});

function checkBoolean(name: string, value: unknown): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') {
    throw new TypeError(`stormproof: ${OWNER} ${name} must be a boolean, got ${show(value)}`);
  }
  return value;
}

/**
 * HTTP/2 stream resets that undici passes on as Node's own error (`ERR_HTTP2_STREAM_ERROR`,
 * "Stream closed with error code NGHTTP2_..."), with how each is retried (RFC 9113 section 7):
 * REFUSED_STREAM says the request was not processed and "can be safely retried" (section 8.7);
 * CANCEL, INTERNAL_ERROR and STREAM_CLOSED end a stream as a reset connection ends a request;
 * ENHANCE_YOUR_CALM says the peer sees too much load, so it is retried as a 429 is, more slowly.
 * The other codes (PROTOCOL_ERROR, FLOW_CONTROL_ERROR, ...) are bugs a retry would repeat.
 */
const H2_RESETS: ReadonlyMap<string, Verdict> = new Map<string, Verdict>([
  ['NGHTTP2_REFUSED_STREAM', { retryable: true, kind: 'network' }],
  ['NGHTTP2_CANCEL', { retryable: true, kind: 'network' }],
  ['NGHTTP2_INTERNAL_ERROR', { retryable: true, kind: 'network' }],
  ['NGHTTP2_STREAM_CLOSED', { retryable: true, kind: 'network' }],
  ['NGHTTP2_ENHANCE_YOUR_CALM', { retryable: true, kind: 'throttled' }],
]);

/**
 * What undici's own errors say that the engine's classifier does not read (undici#5087: its
 * RetryAgent's code list misses them too). undici's `InformationalError` (`UND_ERR_INFO`) says a
 * connection or an HTTP/2 stream ended before the answer: `socket idle timeout`, `reset`,
 * `HTTP/2: "stream timeout after ..."`, `HTTP/2: stream closed before the response was
 * complete`: a dropped connection, or a timeout when it says so; the DNS interceptor's `No DNS
 * entries found` stays final, as ENOTFOUND is. An HTTP/2 reset (`ERR_HTTP2_STREAM_ERROR`) is
 * judged by its code (H2_RESETS).
 */
function undiciVerdict(error: unknown): Verdict | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (typeof message !== 'string') return undefined;
  if (code === 'ERR_HTTP2_STREAM_ERROR') {
    return H2_RESETS.get(/NGHTTP2_[A-Z_]+/.exec(message)?.[0] ?? '');
  }
  if (code !== 'UND_ERR_INFO') return undefined;
  if (message === 'No DNS entries found') return undefined;
  return /timeout/i.test(message)
    ? { retryable: true, kind: 'timeout' }
    : { retryable: true, kind: 'network' };
}

type Judge = (context: RetryDecisionContext) => Verdict | PromiseLike<Verdict>;

/** The shouldRetry of every request: the shared HTTP rules, then the user's answer. */
function makeShouldRetry(keyed: WeakSet<object>, user: ResolvedPolicy['shouldRetry']): Judge {
  return (given) => {
    if (isKeyConflict(given, keyed)) return { ...given.verdict, retryable: false };
    const info = given.verdict.kind === 'permanent' ? undiciVerdict(given.error) : undefined;
    const context = info === undefined ? given : { ...given, verdict: info };
    if (user === undefined) return context.verdict;
    const answer = user(context);
    return isThenable(answer)
      ? Promise.resolve(answer).then((a: RetryAnswer) => applyAnswer(context.verdict, a))
      : applyAnswer(context.verdict, answer);
  };
}

/**
 * The shouldRetry of a request whose streamed body was recorded: whatever the rules answer, a
 * retry is refused when the copy is not whole (the stream was longer than the limit, or the
 * failed attempt had not sent it all), and the request ends with 'body-not-replayable'.
 */
function guardBody(judge: Judge, exchange: Exchange): Judge {
  const check = (verdict: Verdict): Verdict => {
    if (!verdict.retryable || exchange.body.replayable) return verdict;
    exchange.bodyRefused = true;
    return { ...verdict, retryable: false };
  };
  return (context) => {
    const verdict = judge(context);
    return isThenable(verdict) ? Promise.resolve(verdict).then(check) : check(verdict);
  };
}

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
  const o = checkOptionsObject(OWNER, options);
  checkKnownKeys(OWNER, o, INTERCEPTOR_OPTION_KEYS);
  const {
    idempotencyKey,
    attemptHeader,
    retryMethods,
    maxOrigins,
    budget,
    breaker,
    maxReplayBodyBytes,
    unref,
    hedge,
    resumeBody,
    ...rest
  } = o;
  const unrefTimers = checkBoolean('unref', unref);
  if (unrefTimers && rest.clock !== undefined) {
    throw new TypeError(
      `stormproof: ${OWNER} unref cannot be used with clock: make your clock's timers unreferenced instead`,
    );
  }
  const makeBudget = checkBudgetFactory(budget);
  const hedgeOptions = checkHedge(OWNER, hedge);
  const resolved = resolvePolicy(
    OWNER,
    {
      ...rest,
      deadlineMs: withDefault(rest, 'deadlineMs', INTERCEPTOR_DEADLINE_MS),
      budget: makeBudget === undefined ? budget : false,
      ...(unrefTimers ? { clock: unrefClock } : {}),
    },
    { defaultBudget: false, allowCallKeys: false },
  );
  const originLimit = checkNumber(
    OWNER,
    'maxOrigins',
    maxOrigins === undefined ? INTERCEPTOR_MAX_ORIGINS : maxOrigins,
    { min: 1, integer: true },
  );
  const replayLimit = checkNumber(
    OWNER,
    'maxReplayBodyBytes',
    maxReplayBodyBytes === undefined ? DEFAULT_MAX_REPLAY_BODY_BYTES : maxReplayBodyBytes,
    { min: 0, integer: true },
  );
  const keyed = new WeakSet<object>();
  const policy: ResolvedPolicy = Object.freeze({
    ...resolved,
    onRetry: undefined,
    onGiveUp: undefined,
    onSuccess: undefined,
    shouldRetry: makeShouldRetry(keyed, resolved.shouldRetry),
  });
  const settings: Settings = {
    autoKey: checkIdempotencyKey(OWNER, idempotencyKey),
    attemptHeader: checkAttemptHeader(OWNER, attemptHeader),
    retryMethods: checkRetryMethods(OWNER, retryMethods),
    maxReplayBodyBytes: replayLimit,
    resumeBody: resumeBody === undefined ? true : checkBoolean('resumeBody', resumeBody),
    policy,
    hedging: hedgeOptions !== undefined,
    origins: originPolicies(OWNER, originLimit, policy, makeBudget, hedgeOptions),
    breakers: checkBreakers(OWNER, breaker, resolved.clock, resolved.random),
    hooks: {
      onRetry: resolved.onRetry as Hooks['onRetry'],
      onGiveUp: resolved.onGiveUp as Hooks['onGiveUp'],
      onSuccess: resolved.onSuccess as Hooks['onSuccess'],
    },
    keyed,
    check: attemptCheck(keyed),
  };
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

/** An attempt's response head and what came after it, held until the engine decides. */
type AttemptState = 'waiting' | 'held' | 'forwarding' | 'draining' | 'dead';

/**
 * Checks the head of a range request that resumes a body (a status below 400): the error that
 * ends the body when it does not continue the same bytes, or undefined.
 */
type HeadCheck = (
  status: number,
  headers: Record<string, string | string[] | undefined>,
) => Error | undefined;

/** One dispatch to the next dispatcher: one attempt. */
class Attempt implements UndiciHandler {
  controller: UndiciController | undefined;
  state: AttemptState = 'waiting';
  status = 0;
  headers: Record<string, string | string[] | undefined> = {};
  statusMessage: string | undefined;
  private chunks: Uint8Array[] = [];
  private ended = false;
  private trailers: Record<string, string | string[] | undefined> = {};
  private error: Error | undefined;
  private drained = 0;
  private deadReason: unknown;

  constructor(
    private readonly exchange: Exchange,
    private readonly resolve: (attempt: Attempt) => void,
    private readonly reject: (error: unknown) => void,
    /** Set on a range request that resumes a body: its head is checked, never passed on. */
    private readonly checkHead?: HeadCheck,
  ) {}

  onRequestStart(controller: UndiciController): void {
    this.controller = controller;
    if (this.state === 'dead') controller.abort(asError(this.deadReason));
  }

  onResponseStart(
    controller: UndiciController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
    statusMessage?: string,
  ): void {
    this.controller = controller;
    if (this.state !== 'waiting') {
      if (this.state === 'dead') controller.abort(asError(this.deadReason));
      return;
    }
    if (statusCode < 200) {
      // An informational response (103 Early Hints): passed on as it comes; the final one
      // follows. Not once the caller has its final head (a resume).
      if (this.checkHead === undefined) {
        this.exchange.handler.onResponseStart?.(this.exchange, statusCode, headers, statusMessage);
      }
      return;
    }
    if (this.checkHead !== undefined && statusCode < 400) {
      const refusal = this.checkHead(statusCode, headers ?? {});
      if (refusal !== undefined) {
        // Not the rest of the same body: the resume ends here, and the body with this error.
        this.state = 'dead';
        this.deadReason = refusal;
        controller.abort(refusal);
        this.reject(refusal);
        return;
      }
    }
    this.status = statusCode;
    this.headers = headers ?? {};
    this.statusMessage = statusMessage;
    this.state = 'held';
    // A success is not read on until the engine decides that it is the one. A failed response's
    // body is read ahead (up to DRAIN_LIMIT bytes, failures are short) while the engine decides
    // and waits: its connection then goes back to undici's pool during the wait, unreferenced
    // when idle (so `unref: true` lets the process exit), and free for the retry.
    if (statusCode < 400) controller.pause();
    this.resolve(this);
  }

  onResponseData(controller: UndiciController, chunk: Uint8Array): void {
    switch (this.state) {
      case 'held':
        this.chunks.push(chunk);
        this.drained += chunk.byteLength;
        if (this.drained > DRAIN_LIMIT) controller.pause();
        return;
      case 'forwarding':
        this.exchange.forwardData(this, chunk);
        return;
      case 'draining':
        this.drained += chunk.byteLength;
        if (this.drained > DRAIN_LIMIT)
          controller.abort(new Error('stormproof: retried response dropped'));
        return;
      default:
        return;
    }
  }

  onResponseEnd(
    _controller: UndiciController,
    trailers: Record<string, string | string[] | undefined>,
  ): void {
    if (this.state === 'held') {
      this.ended = true;
      this.trailers = trailers ?? {};
    } else if (this.state === 'forwarding') {
      this.exchange.bodyEnded(this, trailers ?? {});
    }
  }

  onResponseError(_controller: UndiciController | undefined, error: Error): void {
    switch (this.state) {
      case 'waiting':
        this.state = 'dead';
        this.reject(error);
        return;
      case 'held':
        this.error = error;
        return;
      case 'forwarding':
        this.exchange.bodyFailed(this, error);
        return;
      default:
        return;
    }
  }

  /** The engine ended this attempt (its timeout, the deadline, the caller's abort). */
  kill(reason: unknown): void {
    if (this.state !== 'waiting') return;
    this.state = 'dead';
    this.deadReason = reason;
    this.controller?.abort(asError(reason));
    this.reject(reason);
  }

  /** Its body is no longer read: nothing more of it reaches the caller; `reason` closes it. */
  stop(reason?: Error): void {
    this.state = 'dead';
    if (reason !== undefined) this.controller?.abort(reason);
  }

  /** Not the response the caller gets: read and drop the rest of its body, or close it. */
  discard(): void {
    if (this.state !== 'held') return;
    this.state = 'draining';
    this.chunks = [];
    if (this.ended || this.error !== undefined) return;
    if (this.drained > DRAIN_LIMIT) {
      this.controller?.abort(new Error('stormproof: retried response dropped'));
    } else {
      this.controller?.resume();
    }
  }

  /** The response the caller gets: its head, what was held, then the rest as it comes. */
  forward(): void {
    const exchange = this.exchange;
    this.state = 'forwarding';
    exchange.target = this.controller;
    exchange.headForwarded(this);
    exchange.handler.onResponseStart?.(exchange, this.status, this.headers, this.statusMessage);
    this.pump();
  }

  /** A resume's 206: its body continues the one the caller is reading, without a second head. */
  continueBody(): void {
    this.state = 'forwarding';
    this.exchange.target = this.controller;
    this.pump();
  }

  /** Passes on what was held while the engine decided, then lets the rest flow. */
  private pump(): void {
    const exchange = this.exchange;
    const chunks = this.chunks;
    this.chunks = [];
    for (const chunk of chunks) {
      if (exchange.done || this.state !== 'forwarding') return;
      exchange.forwardData(this, chunk);
    }
    if (exchange.done || this.state !== 'forwarding') return;
    if (this.error !== undefined) {
      exchange.bodyFailed(this, this.error);
    } else if (this.ended) {
      exchange.bodyEnded(this, this.trailers);
    } else if (exchange.paused) {
      // A failed response read ahead was not paused; the caller's handler has asked to pause.
      this.controller?.pause();
    } else {
      this.controller?.resume();
    }
  }
}

function asError(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error(String(reason));
}

const isFailure = (attempt: Attempt): boolean => attempt.status >= 400;

/** How the engine judges an interceptor's attempts; `keyed` holds the keyed requests' responses. */
function attemptCheck(keyed: WeakSet<object>): ResultCheck<Attempt> {
  return {
    isFailure,
    discard: (attempt) => attempt.discard(),
    // A hedge of a keyed request told 409 met its own first copy in progress: that says nothing
    // of the request, so another copy's failure decides the attempt.
    isCopyConflict: (failure) =>
      failure instanceof Attempt && failure.status === 409 && keyed.has(failure),
  };
}

/**
 * A resume's engine call counted as part of its request: the request's attempts before it (the
 * broken body's attempt is the resume call's first), its waits, and its time.
 */
interface Shift {
  readonly attempts: number;
  readonly delayMs: number;
  readonly elapsedMs: number;
  /** The byte the resume asks for. */
  readonly resumeFrom: number;
}

/** A resume call's report, in the request's numbers. */
function shiftReport<R extends RetryReport>(report: R, shift: Shift | undefined): R {
  if (shift === undefined) return report;
  return {
    ...report,
    // A resume refused before its range request (breaker, abort) still made the broken attempt.
    attempts: shift.attempts + Math.max(1, report.attempts),
    totalDelayMs: shift.delayMs + report.totalDelayMs,
    elapsedMs: shift.elapsedMs + report.elapsedMs,
  };
}

/**
 * The policy of a resume: the origin's, with the attempts its request has left, no hedging, and
 * a budget that is not told of a new request (the request was counted when it started; its
 * resume is one of its retries, paid like any other).
 */
function resumePolicy(base: ResolvedPolicy, maxAttempts: number): ResolvedPolicy {
  const budget = base.budget;
  return Object.freeze({
    ...base,
    maxAttempts,
    hedge: undefined,
    budget:
      budget === undefined
        ? undefined
        : {
            recordRequest: () => {},
            recordSuccess: (retried?: FailureKind) => budget.recordSuccess(retried),
            recordFailure: (nowMs: number, retryable: boolean) =>
              budget.recordFailure(nowMs, retryable),
            tryRetry: (nowMs: number, kind?: FailureKind) => budget.tryRetry(nowMs, kind),
          },
  });
}

/**
 * One request through the interceptor, from dispatch to the caller's last callback. It is also
 * the controller the caller's handler holds: the same object across attempts, forwarding pause,
 * resume and abort to the attempt whose response the caller reads (undici's RetryHandler keeps a
 * stable controller the same way).
 */
class Exchange implements UndiciController {
  target: UndiciController | undefined;
  readonly body: AttemptBody;
  bodyRefused = false;
  /** The caller's handler has had its last callback (end or error). */
  done = false;
  private readonly caller = new AbortController();
  private isPaused = false;
  private abortReason: Error | null = null;
  private readonly headers: unknown;
  private readonly unrepeatable: UnrepeatableReason | undefined;
  private readonly isKeyed: boolean;
  /** Sent with the origin's hedging policy: two copies of it may be in flight at once. */
  private readonly hedgeable: boolean;
  /** A GET whose body may be resumed with a range request if it breaks. */
  private readonly mayResume: boolean;
  private origin = '';
  /** When the request was dispatched, on the policy's clock: its deadline counts from here. */
  private startedAt = 0;
  /** Dispatches of this request so far: attempts, hedges and resumes. */
  private copies = 0;
  /** Attempts made and ms waited, as of the last head that came (the request's numbers). */
  private counts = { attempts: 0, delayMs: 0 };
  /** The response the caller reads, when its body can be resumed. */
  private point: ResumePoint | undefined;
  /** Body bytes passed to the caller. */
  private received = 0;
  /** The body the caller reads was resumed at least once: its length is checked here. */
  private resumed = false;

  constructor(
    private readonly settings: Settings,
    private readonly dispatch: UndiciDispatch,
    private readonly opts: UndiciDispatchArgs,
    private readonly method: string,
    readonly handler: UndiciHandler,
  ) {
    let headers = opts.headers;
    if (
      settings.autoKey &&
      AUTO_KEY_METHODS.has(method) &&
      readHeader(headers, 'idempotency-key') === undefined
    ) {
      headers = withHeader(headers, IDEMPOTENCY_KEY_HEADER.toLowerCase(), newIdempotencyKey());
    }
    this.headers = headers;
    this.isKeyed = readHeader(headers, 'idempotency-key') !== undefined;
    let unrepeatable: UnrepeatableReason | undefined;
    if (isRetryFromAbove(headers, settings.attemptHeader)) unrepeatable = 'already-retried';
    else if (!this.isKeyed && !settings.retryMethods.has(method)) unrepeatable = 'not-idempotent';
    this.unrepeatable = unrepeatable;
    // A request sent once keeps its body as given; others may need to send it again.
    this.body =
      unrepeatable === undefined && settings.policy.maxAttempts > 1
        ? attemptBody(opts.body, settings.maxReplayBodyBytes)
        : attemptBody(opts.body, 0);
    // A streamed body is recorded as its first dispatch sends it: a copy sent meanwhile would
    // have nothing whole to send. Only bodies held whole (or none) are hedged.
    this.hedgeable =
      settings.hedging &&
      isHedgeable(method, this.isKeyed, unrepeatable) &&
      this.body.alwaysReplayable;
    this.mayResume = settings.resumeBody && method === 'GET' && unrepeatable === undefined;
  }

  // The controller the caller's handler holds.
  pause(): void {
    this.isPaused = true;
    this.target?.pause();
  }

  resume(): void {
    this.isPaused = false;
    this.target?.resume();
  }

  abort(reason: Error): void {
    if (this.abortReason !== null) return;
    this.abortReason = reason ?? new Error('aborted');
    this.caller.abort(this.abortReason);
    this.target?.abort(this.abortReason);
  }

  get aborted(): boolean {
    return this.abortReason !== null;
  }

  get paused(): boolean {
    return this.isPaused;
  }

  get reason(): Error | null {
    return this.abortReason;
  }

  finish(): void {
    this.done = true;
  }

  /** Ends the caller's request with `error`, once. */
  fail(error: Error): void {
    if (this.done) return;
    this.done = true;
    this.handler.onResponseError?.(this, error);
  }

  /** The head the caller gets: whether its body can be resumed, and from where. */
  headForwarded(attempt: Attempt): void {
    if (this.mayResume) this.point = resumePoint(attempt.status, attempt.headers);
  }

  /** A chunk of the body the caller reads. */
  forwardData(attempt: Attempt, chunk: Uint8Array): void {
    const point = this.point;
    if (
      this.resumed &&
      point?.end !== undefined &&
      point.start + this.received + chunk.byteLength > point.end + 1
    ) {
      // A resumed part longer than its Content-Range said: not the bytes that were asked for.
      const error = new BodyResumeError(
        `stormproof: the resumed body ran past the end of its Content-Range (byte ${point.end})`,
      );
      attempt.stop(error);
      this.fail(error);
      return;
    }
    this.received += chunk.byteLength;
    try {
      this.handler.onResponseData?.(this, chunk);
    } catch (error) {
      this.callerThrew(attempt, error);
    }
  }

  /**
   * The caller's handler threw: the request is closed and the handler told, as undici does, and
   * its body is never resumed (the break is the reader's, not the connection's).
   */
  callerThrew(attempt: Attempt, thrown: unknown): void {
    const error = asError(thrown);
    attempt.stop(error);
    this.fail(error);
  }

  /** The body the caller reads ended. */
  bodyEnded(attempt: Attempt, trailers: Record<string, string | string[] | undefined>): void {
    if (this.done) return;
    attempt.stop();
    const point = this.point;
    if (this.resumed && point?.end !== undefined && point.start + this.received !== point.end + 1) {
      this.fail(
        new BodyResumeError(
          `stormproof: the resumed body ended at byte ${point.start + this.received}, before the end of its Content-Range (byte ${point.end})`,
        ),
      );
      return;
    }
    this.finish();
    this.handler.onResponseEnd?.(this, trailers);
  }

  /**
   * The body the caller reads broke (a dropped connection, a body timeout). A resumable one is
   * resumed if the engine allows the retry; otherwise the error reaches the body's reader.
   */
  bodyFailed(attempt: Attempt, error: Error): void {
    if (this.done) return;
    attempt.stop();
    if (this.point === undefined || this.aborted || !this.body.replayable) {
      this.fail(error);
      return;
    }
    this.resumeBody(error);
  }

  start(): void {
    const { settings } = this;
    const origin = originOf(String(this.opts.origin ?? ''));
    this.origin = origin;
    this.startedAt = settings.policy.clock.now();
    // Once, before any attempt, so that the caller can abort at once (also during a wait).
    this.handler.onRequestStart?.(this, {});
    const call: CallOptions = { signal: this.caller.signal };
    if (settings.breakers !== undefined) call.breaker = settings.breakers.get(origin);
    /** The latest successful response of a copy still in the race: the one onSuccess describes. */
    let succeeded: Attempt | undefined;
    this.addHooks(call, () => succeeded, undefined);
    const operation = (context: AttemptContext) =>
      this.send(context, this.headers).then((value) => {
        if (!context.signal.aborted && !isFailure(value)) succeeded = value;
        if (this.isKeyed) settings.keyed.add(value);
        return value;
      });
    let policy = policyFor(settings.policy, settings.origins, origin, this.hedgeable);
    if (!this.body.alwaysReplayable && this.unrepeatable === undefined) {
      policy = { ...policy, shouldRetry: guardBody(policy.shouldRetry as Judge, this) };
    }
    execute(policy, operation, call, settings.check, this.unrepeatable).then(
      (attempt) => {
        if (this.bodyRefused) amendReason(attempt, 'body-not-replayable');
        try {
          attempt.forward();
        } catch (error) {
          this.callerThrew(attempt, error);
        }
      },
      (error: unknown) => {
        if (this.bodyRefused) amendReason(error, 'body-not-replayable');
        this.deliver(error);
      },
    );
  }

  /** Ends the request with the engine's error, its report found through it (and fetch's cause). */
  private deliver(error: unknown): void {
    if (typeof error === 'object' && error !== null) delivered.add(error);
    this.fail(asError(error));
  }

  /** One dispatch of the request with `headers`: an attempt, a hedge or a resume. */
  private send({ signal, hedge }: AttemptContext, headers: unknown, checkHead?: HeadCheck) {
    const { settings } = this;
    return new Promise<Attempt>((resolve, reject) => {
      // Without hedging, each dispatch is one attempt and this is its attempt number.
      const sendNumber = ++this.copies;
      const settle = () => signal.removeEventListener('abort', onAbort);
      const done = (value: Attempt) => {
        settle();
        resolve(value);
      };
      const failed = (error: unknown) => {
        settle();
        reject(error);
      };
      const one = new Attempt(this, done, failed, checkHead);
      const onAbort = () => one.kill(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      if (signal.aborted) {
        one.kill(signal.reason);
        return;
      }
      let sent = headers;
      if (sendNumber > 1 && settings.attemptHeader !== undefined) {
        sent = withHeader(sent, settings.attemptHeader, String(sendNumber));
        if (hedge !== undefined && hedge > 0) {
          sent = withHeader(sent, HEDGE_HEADER, String(hedge));
        }
      }
      const attemptOpts: UndiciDispatchArgs = {
        ...this.opts,
        headers: sent,
        body: this.body.forAttempt(sendNumber),
      };
      try {
        this.dispatch(attemptOpts, one);
      } catch (error) {
        one.onResponseError(undefined, error as Error);
      }
    });
  }

  /**
   * Resumes the body that broke with `error`: a retry through the engine like any other (the
   * request's attempts left, its deadline, the origin's budget and breaker, backoff and
   * Retry-After, the hooks), whose first attempt is the broken body and whose next ones ask for
   * the rest with `Range` and `If-Match`. A 206 that continues the same bytes feeds the caller's
   * handler as if nothing happened; anything else ends the body with an error.
   */
  private resumeBody(error: Error): void {
    const { settings } = this;
    const point = this.point!;
    const from = point.start + this.received;
    const base = policyFor(settings.policy, settings.origins, this.origin, false);
    const elapsedMs = base.clock.now() - this.startedAt;
    const shift: Shift = {
      attempts: this.counts.attempts - 1,
      delayMs: this.counts.delayMs,
      elapsedMs,
      resumeFrom: from,
    };
    // The request's deadline, not a new one: what is left of it.
    const leftMs = Math.floor(base.deadlineMs - elapsedMs);
    if (leftMs < 1) {
      // No time left for any retry: the engine would refuse it with 'deadline', and an engine
      // call cannot start with its deadline already behind it.
      this.refuseResume(error, shift, 'deadline');
      return;
    }
    const policy = resumePolicy(base, Math.max(1, base.maxAttempts - shift.attempts));
    const call: CallOptions = { signal: this.caller.signal, deadlineMs: leftMs };
    if (settings.breakers !== undefined) call.breaker = settings.breakers.get(this.origin);
    this.addHooks(call, () => undefined, shift);
    let headers = withHeader(this.headers, 'range', `bytes=${from}-${point.end ?? ''}`);
    headers = withHeader(headers, 'if-match', point.etag);
    let next: ResumePoint | undefined;
    const checkHead: HeadCheck = (status, head) => {
      const checked = checkResumed(point, from, status, head);
      if (checked instanceof BodyResumeError) return checked;
      next = checked;
      return undefined;
    };
    const operation = (context: AttemptContext) =>
      context.attempt === 1 ? Promise.reject(error) : this.send(context, headers, checkHead);
    execute(policy, operation, call, settings.check).then(
      (attempt) => {
        if (this.done) {
          attempt.discard();
          return;
        }
        if (isFailure(attempt)) {
          // The range request failed with a status for good (412: the ETag no longer matches).
          const failure = new BodyResumeError(
            `stormproof: the body broke at byte ${from} and could not be resumed: the server answered ${attempt.status} to "Range: bytes=${from}-${point.end ?? ''}"`,
          );
          const report = getRetryReport(attempt);
          if (report !== undefined) setReport(failure, shiftReport(report, shift));
          attempt.discard();
          this.deliver(failure);
          return;
        }
        this.point = next;
        this.resumed = true;
        try {
          attempt.continueBody();
        } catch (thrown) {
          this.callerThrew(attempt, thrown);
        }
      },
      (refusal: unknown) => {
        const report = getRetryReport(refusal);
        if (report !== undefined) setReport(refusal, shiftReport(report, shift));
        this.deliver(refusal);
      },
    );
  }

  /** Ends the body with its own error, the resume refused for `reason` before any engine call. */
  private refuseResume(error: Error, shift: Shift, reason: GiveUpReason): void {
    const report: RetryReport = {
      reason,
      attempts: shift.attempts + 1,
      totalDelayMs: shift.delayMs,
      elapsedMs: shift.elapsedMs,
    };
    setReport(error, report);
    const onGiveUp = this.settings.hooks.onGiveUp;
    if (onGiveUp !== undefined) {
      try {
        const result = onGiveUp({ ...report, ...this.describe(), error });
        if (isThenable(result)) result.then(undefined, () => {});
      } catch {
        // A broken hook must not change the outcome, as in the engine.
      }
    }
    this.deliver(error);
  }

  /**
   * Request-shaped hooks for one engine call of this request (its first, or a resume's, whose
   * numbers `shift` turns into the request's), and the count of attempts a resume starts from.
   */
  private addHooks(
    call: CallOptions,
    succeeded: () => Attempt | undefined,
    shift: Shift | undefined,
  ): void {
    const { onRetry, onGiveUp, onSuccess } = this.settings.hooks;
    if (this.mayResume) {
      // What a resume counts from: every head that came, the first one's and each resume's.
      const user = shift === undefined ? onSuccess : undefined;
      call.onSuccess = (event) => {
        this.counts = {
          attempts: (shift?.attempts ?? 0) + event.attempts,
          delayMs: (shift?.delayMs ?? 0) + event.totalDelayMs,
        };
        return user === undefined ? undefined : this.successEvent(user, event, succeeded());
      };
    } else if (onSuccess !== undefined) {
      call.onSuccess = (event) => this.successEvent(onSuccess, event, succeeded());
    }
    if (onRetry === undefined && onGiveUp === undefined) return;
    const shape = <E extends { readonly error: unknown }>(event: E) => {
      const { error, ...rest } = event;
      // A failed response is passed on as a status; only errors are described as errors.
      return error instanceof Attempt
        ? { ...rest, ...this.describe(), status: error.status }
        : { ...rest, ...this.describe(), error };
    };
    if (onRetry !== undefined) {
      call.onRetry =
        shift === undefined
          ? (event) => onRetry(shape(event))
          : (event) =>
              onRetry({
                ...shape(event),
                attempt: shift.attempts + event.attempt,
                elapsedMs: shift.elapsedMs + event.elapsedMs,
                resumeFrom: shift.resumeFrom,
              });
    }
    if (onGiveUp !== undefined) {
      call.onGiveUp = (event) =>
        onGiveUp({
          ...shape(shiftReport(event, shift)),
          ...(this.bodyRefused ? { reason: 'body-not-replayable' as GiveUpReason } : {}),
        });
    }
  }

  private successEvent(
    hook: NonNullable<InterceptorOptions['onSuccess']>,
    event: SuccessEvent,
    response: Attempt | undefined,
  ): unknown {
    return hook({
      ...event,
      ...this.describe(),
      ...(response === undefined ? {} : { status: response.status }),
    });
  }

  private described: { method: string; url: string } | undefined;

  /** The method and redacted URL every event carries, made once. */
  private describe(): { method: string; url: string } {
    this.described ??= { method: this.method, url: describeUrl(this.opts) };
    return this.described;
  }
}

/** The engine gave up with 'not-retryable' only because the body could not be sent again. */
function amendReason(value: unknown, reason: GiveUpReason): void {
  const report = getRetryReport(value);
  if (report !== undefined && report.reason === 'not-retryable')
    setReport(value, { ...report, reason });
}

function describeUrl(opts: UndiciDispatchArgs): string {
  try {
    return redactUrl(new URL(opts.path ?? '/', String(opts.origin ?? '')));
  } catch {
    return redactUrl(`${String(opts.origin ?? '')}${opts.path ?? ''}`);
  }
}
