// What one `interceptor()` decides once, when it is made: its options, checked and filled, and
// the settings every request through it shares.
import type { BreakerRegistry, BreakerRegistryOptions } from '../core/breaker/registry.js';
import type { Budget } from '../core/budgets/budget.js';
import { unrefSystemClock } from '../core/clock.js';
import type { HedgeOptions } from '../core/hedge.js';
import {
  type GiveUpEvent,
  RETRY_OPTION_KEYS,
  type ResolvedPolicy,
  type RetryEvent,
  resolvePolicy,
  type SuccessEvent,
} from '../core/options.js';
import type { ResultCheck } from '../core/retry.js';
import { checkKnownKeys, checkNumber, checkOptionsObject, show } from '../core/validate.js';
import { type BudgetFactory, DEFAULT_MAX_ORIGINS } from '../fetch/budgets.js';
import {
  type ClientSettings,
  checkAttemptHeader,
  checkBreakers,
  checkBudgetFactory,
  checkIdempotencyKey,
  checkRetryMethods,
  type HttpPolicyOptions,
  withDefault,
} from '../http/checks.js';
import { checkHedge, originPolicies } from '../http/hedging.js';
import type { Attempt } from './attempt.js';
import { attemptCheck, makeShouldRetry } from './judge.js';

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

export const OWNER = 'interceptor';
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
export interface Settings extends ClientSettings {
  readonly maxReplayBodyBytes: number;
  /** Resume a GET's body that broke after its head, with a range request. */
  readonly resumeBody: boolean;
  readonly hooks: Hooks;
  /** The failed responses of keyed requests: a 409 or 422 on them is final. */
  readonly keyed: WeakSet<object>;
  /** How the engine judges an attempt's response (and a hedged copy's 409). */
  readonly check: ResultCheck<Attempt>;
}

function checkBoolean(name: string, value: unknown): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') {
    throw new TypeError(`stormproof: ${OWNER} ${name} must be a boolean, got ${show(value)}`);
  }
  return value;
}

/** Checks `options` (a bad value, `null` included, throws naming it) and fills the settings. */
export function resolveSettings(options: InterceptorOptions | undefined): Settings {
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
      ...(unrefTimers ? { clock: unrefSystemClock } : {}),
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
  return {
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
}
