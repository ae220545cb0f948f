import type { BreakerRegistry, BreakerRegistryOptions } from '../core/breaker/registry.js';
import type { Budget } from '../core/budgets/budget.js';
import { NETWORK_VERDICT, OVERLOADED_HEADER } from '../core/classify.js';
import type { HedgeOptions } from '../core/hedge.js';
import {
  type GiveUpEvent,
  type GiveUpReason,
  RETRY_OPTION_KEYS,
  type RetryDecisionContext,
  type RetryEvent,
  type RetryReport,
  resolvePolicy,
  type SuccessEvent,
} from '../core/options.js';
import { getRetryReport as getReport } from '../core/retry.js';
import { checkKnownKeys, checkNumber, checkOptionsObject, show } from '../core/validate.js';
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
import { checkHedge, type OriginPolicies, originPolicies } from '../http/hedging.js';
import { type BudgetFactory, DEFAULT_MAX_ORIGINS, type OriginBudgets } from './budgets.js';
import { type Settings, send } from './call.js';
import { watchKeepAliveRace } from './keep-alive-race.js';
import { FETCH_ATTEMPT_TIMEOUT_MS, FETCH_DEADLINE_MS } from './request.js';

export { REDACTED, redactUrl } from './redact.js';
export { DEFAULT_RETRY_METHODS, HEDGE_HEADER, IDEMPOTENCY_KEY_HEADER } from './request.js';
export type { BudgetFactory, GiveUpReason, HedgeOptions, RetryReport };
export { OVERLOADED_HEADER };

/** The report of a createFetch call: the engine's, and whether a transparent retry was made. */
export interface FetchRetryReport extends RetryReport {
  /**
   * `1` when the call re-sent a request lost to the keep-alive race, without charging the budget
   * or counting an attempt (docs/fetch.md, "Transparent retries"). Absent otherwise.
   */
  readonly transparentRetries?: number;
}

/**
 * The engine's `getRetryReport`, typed for createFetch's calls: the report of a failed call's
 * response or error (why it stopped, attempts, waits, `transparentRetries`), or undefined.
 *
 * @example
 * ```ts
 * const res = await createFetch()('https://api.example.com/items');
 * if (!res.ok) console.warn(res.status, getRetryReport(res)?.reason);
 * ```
 */
export const getRetryReport: (error: unknown) => FetchRetryReport | undefined = getReport;

/** Present on a fetch event when its call made a transparent retry: `transparentRetries: 1`. */
export interface TransparentRetries {
  /**
   * `1` when the call re-sent a request lost to the keep-alive race (a reused connection closed
   * before any of the answer came), without charging the budget or counting an attempt. Absent
   * when it made none. At most one per call.
   */
  readonly transparentRetries?: number;
}

export { DEFAULT_ATTEMPT_HEADER } from '../http/checks.js';

/**
 * The signature of the global `fetch`. Spelled `string | URL | Request` rather than the DOM
 * library's `RequestInfo`, so the types also hold in a project without `lib: ["dom"]`.
 */
export type FetchFunction = (
  input: string | URL | Request,
  init?: RequestInit,
) => Promise<Response>;

export { DEFAULT_MAX_ORIGINS } from './budgets.js';
export { FETCH_ATTEMPT_TIMEOUT_MS, FETCH_DEADLINE_MS } from './request.js';

/** What every fetch event says about its request. Never a header, never a body. */
export interface FetchEventContext {
  /** The request method, in upper case (`'GET'`, `'POST'`). */
  readonly method: string;
  /**
   * The request URL without user name, password, query values and fragment (see `redactUrl`):
   * `https://api.example.com/items?page=REDACTED`.
   */
  readonly url: string;
  /**
   * The status of the response the attempt ended with. Absent when it ended without one (a
   * network error, a timeout, an abort): then `error` says what happened.
   */
  readonly status?: number;
}

/** Sent to `onRetry` just before the wait for a retry. */
export interface FetchRetryEvent
  extends Omit<RetryEvent, 'error'>,
    FetchEventContext,
    TransparentRetries {
  /**
   * What the attempt threw: a network error or a timeout. Absent when the attempt ended with a
   * response (see `status`): events never carry a Response, whose headers may hold secrets.
   */
  readonly error?: unknown;
}

/** Sent to `onGiveUp` once, when a call stops retrying and fails. */
export interface FetchGiveUpEvent
  extends Omit<GiveUpEvent, 'error'>,
    FetchEventContext,
    TransparentRetries {
  /**
   * What the call rejects with: the last network error, a timeout, or the caller's abort reason.
   * Absent when the call resolves with a failed response (see `status`).
   */
  readonly error?: unknown;
}

/** Sent to `onSuccess` once, when an attempt gets a response with a status below 400. */
export interface FetchSuccessEvent extends SuccessEvent, FetchEventContext, TransparentRetries {}

/**
 * The options of `createFetch`: the engine's policy options (each with its default, see
 * docs/retry.md), the hooks with fetch-shaped events, and the options of fetch itself.
 */
export interface CreateFetchOptions extends HttpPolicyOptions {
  /**
   * The total time of one call, in ms, from its start, waits included. A retry whose wait would
   * end past it is not made. Longer than the engine's 3 s: a drop-in `fetch` must not fail a
   * slow endpoint that plain fetch serves (docs/fetch.md, "Defaults").
   * @default 30000
   * @example
   * ```ts
   * createFetch({ deadlineMs: 3000 }); // an interactive screen: give up after 3 s
   * ```
   */
  deadlineMs?: number | undefined;
  /**
   * The time limit of each attempt, in ms, so a hung endpoint cannot hold a call: the attempt is
   * aborted and retried while the deadline allows. Above ky's 10 s request timeout, so an
   * endpoint that answers within 10 s is never cut off. Set it to `deadlineMs` to let one
   * attempt take the whole deadline.
   * @default 15000
   * @example
   * ```ts
   * createFetch({ attemptTimeoutMs: 2000, deadlineMs: 5000 });
   * ```
   */
  attemptTimeoutMs?: number | undefined;
  /**
   * The retry budget. By default each origin (`https://api.example.com`) gets its own
   * `RetryBudget`, so a host that is down cannot spend the retries of a healthy one. A function
   * makes the budget of each origin; a `Budget` object is shared by every origin; `false`
   * turns budgets off.
   * @default a new RetryBudget() per origin
   * @example
   * ```ts
   * createFetch({ budget: () => new RetryBudget({ maxCredits: 50 }) }); // per origin, smaller
   * createFetch({ budget: new RetryBudget() }); // one budget for every origin
   * ```
   */
  budget?: Budget | BudgetFactory | false | undefined;
  /**
   * Hedge slow GET and HEAD requests, and requests with an `Idempotency-Key`: when a request has
   * run longer than nearly all recent ones to its origin (the p96 by default, learned per origin
   * after 20 answers), a copy goes out and the first answer wins, the other copy aborted through
   * its signal. Each copy is paid from the origin's retry budget (none sent when it refuses), and
   * none goes out while the origin pushes back (a 429 or 503, Retry-After), while its breaker is
   * not closed, or while copies stop winning. A copy carries the attempt header (the number of
   * sends of the call so far, gRPC A6's way) and `stormproof-hedge: 1`. Never a request that is
   * not retried (a POST without a key, a stream body), nor PUT or DELETE (two at once may race).
   * See docs/hedging.md.
   * @default undefined (no hedging)
   * @example
   * ```ts
   * createFetch({ hedge: {} }); // one copy after the p96 of the origin's recent requests
   * createFetch({ hedge: { delayMs: 50 } }); // a copy after a fixed 50 ms
   * ```
   */
  hedge?: HedgeOptions | false | undefined;
  /**
   * How many origins' budgets (and, with `hedge`, learned hedge delays) are remembered when they
   * are per origin. Past it, the origin used least recently is forgotten and starts again fresh.
   * @default 1000
   * @example
   * ```ts
   * createFetch({ maxOrigins: 50 });
   * ```
   */
  maxOrigins?: number | undefined;
  /**
   * Circuit breakers, one per origin, for outages that last minutes: while an origin's breaker
   * is open its requests fail at once with a `BreakerOpenError` (`retryAfterMs` until the next
   * probe) and are not retried; other origins are not affected. `true` uses the
   * defaults (open after 5 failures in a row, for 5 s growing to 300 s between failed probes),
   * an object sets a `BreakerRegistry`'s options, and a `BreakerRegistry` is used as given (to
   * share breakers, or their store, with other clients).
   * @default undefined (no breaker)
   * @example
   * ```ts
   * createFetch({ breaker: true });
   * createFetch({ breaker: { consecutiveFailures: 10, openMs: 30_000 } });
   * ```
   */
  breaker?: boolean | BreakerRegistryOptions | BreakerRegistry | undefined;
  /**
   * The fetch implementation each attempt calls: undici's, a framework's, a test double. Unset,
   * `globalThis.fetch` is looked up at each call, so a fetch patched later (a mock server) is used.
   * @default globalThis.fetch
   * @example
   * ```ts
   * import { fetch as undiciFetch } from 'undici';
   * createFetch({ fetch: undiciFetch });
   * ```
   */
  fetch?: FetchFunction | undefined;
  /**
   * `'auto'` adds a fresh `Idempotency-Key` (a UUID as a Structured Field String,
   * `"8e03978e-40d5-43e8-bc93-6894a57f9324"`) to every POST and PATCH that has none, and sends
   * the same key on each of its attempts, so those requests become safe to retry. Only for
   * servers that honour the header; a key you set yourself is always kept.
   * @default false
   * @example
   * ```ts
   * createFetch({ idempotencyKey: 'auto' });
   * ```
   */
  idempotencyKey?: 'auto' | false | undefined;
  /**
   * The request header that carries the attempt number on retries (`2`, `3`, ...), so the layer
   * below can see that a request is already a retry and must not retry it again. With `hedge`,
   * it counts every send of the call, hedged copies included (gRPC A6's
   * `grpc-previous-rpc-attempts` + 1), and a hedged copy also carries `stormproof-hedge`. `false`
   * sends neither. In a browser a header outside the CORS safelist makes a cross-origin retry send a
   * preflight, and the server must list the header in `Access-Control-Allow-Headers`; otherwise
   * the retry fails. Use `false` for cross-origin APIs that do not allow it.
   * @default 'stormproof-attempt'
   * @example
   * ```ts
   * createFetch({ attemptHeader: 'x-retry-attempt' });
   * createFetch({ attemptHeader: false });
   * ```
   */
  attemptHeader?: string | false | undefined;
  /**
   * The methods retried without an `Idempotency-Key` (case-insensitive). Add a method only when
   * you know its requests are idempotent on your server: a POST retried blindly can charge a card
   * twice. A request with an `Idempotency-Key` is retried whatever its method.
   * @default ['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE', 'QUERY']
   * @example
   * ```ts
   * createFetch({ retryMethods: ['GET', 'HEAD'] }); // reads only
   * ```
   */
  retryMethods?: readonly string[] | undefined;
  /**
   * Called before each wait for a retry, with the engine's event plus the request's method,
   * redacted URL and status. A hook that throws or rejects is ignored.
   * @default undefined
   * @example
   * ```ts
   * onRetry: (e) => log.warn(`${e.method} ${e.url} got ${e.status ?? e.verdict.kind}; retry in ${Math.round(e.delayMs)} ms`)
   * ```
   */
  onRetry?: ((event: FetchRetryEvent) => unknown) | undefined;
  /**
   * Called once when a call fails for good, with why (`reason`: `'not-idempotent'`,
   * `'body-not-replayable'`, `'max-attempts'`, `'deadline'`, ...), the method, redacted URL and
   * status. A hook that throws or rejects is ignored.
   * @default undefined
   * @example
   * ```ts
   * onGiveUp: (e) => metrics.increment('http.give_up', { method: e.method, reason: e.reason })
   * ```
   */
  onGiveUp?: ((event: FetchGiveUpEvent) => unknown) | undefined;
  /**
   * Called once when an attempt gets a response with a status below 400. A hook that throws or
   * rejects is ignored.
   * @default undefined
   * @example
   * ```ts
   * onSuccess: (e) => metrics.histogram('http.attempts', e.attempts, { method: e.method })
   * ```
   */
  onSuccess?: ((event: FetchSuccessEvent) => unknown) | undefined;
}

const OWNER = 'createFetch';
const FETCH_KEYS = [
  'fetch',
  'hedge',
  'idempotencyKey',
  'attemptHeader',
  'retryMethods',
  'maxOrigins',
  'breaker',
];
const KNOWN_KEYS: readonly string[] = [
  ...RETRY_OPTION_KEYS.filter((key) => key !== 'signal'),
  ...FETCH_KEYS,
];

function checkFetch(value: unknown): FetchFunction | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') {
    throw new TypeError(`stormproof: ${OWNER} fetch must be a fetch function, got ${show(value)}`);
  }
  return value as FetchFunction;
}

/**
 * Makes a retrying `fetch`. Every option is checked here, once: a bad value throws a TypeError or
 * RangeError that names it. The policy is made once and shared by every call of the returned
 * function; each origin the calls reach gets its own retry budget (see `budget`).
 *
 * The returned function behaves as `fetch`: it resolves with the last Response whatever its
 * status, and rejects with the last network error (or timeout, or the caller's abort reason).
 * `getRetryReport(responseOrError)` tells why a failed call stopped: `'not-retryable'`,
 * `'not-idempotent'`, `'body-not-replayable'`, `'max-attempts'`, `'deadline'`,
 * `'retry-after-beyond-deadline'`, `'budget'` or `'aborted'`.
 *
 * - Retried: network errors, timeouts, 502, 503, 504, 429 (more slowly) and a 500 once, as the
 *   engine classifies them; never a response that says not to retry (`x-envoy-overloaded`,
 *   `stormproof-overloaded`, `Stripe-Should-Retry: false`).
 * - Only when safe: GET, HEAD, OPTIONS, TRACE, PUT, DELETE, QUERY (`retryMethods`), or any
 *   request with an `Idempotency-Key`; never a body that cannot be sent twice (a stream).
 * - Retry-After is added to the jittered wait; one that reaches past the deadline ends the call
 *   at once with the last response.
 * - Each attempt is bounded by `attemptTimeoutMs` and the call's `deadlineMs`; the caller's
 *   `signal` aborts at once, also during a wait, and rejects with its reason.
 *
 * @example
 * ```ts
 * const fetch = createFetch({ idempotencyKey: 'auto', attemptTimeoutMs: 2000 });
 * const res = await fetch('https://api.example.com/orders', { method: 'POST', body });
 * if (!res.ok) console.warn(res.status, getRetryReport(res)?.reason);
 * ```
 */
export function createFetch(options?: CreateFetchOptions): FetchFunction {
  const o = checkOptionsObject(OWNER, options);
  checkKnownKeys(OWNER, o, KNOWN_KEYS);
  const {
    fetch,
    idempotencyKey,
    attemptHeader,
    retryMethods,
    maxOrigins,
    budget,
    breaker,
    hedge,
    ...rest
  } = o;
  const makeBudget = checkBudgetFactory(budget);
  const hedgeOptions = checkHedge(OWNER, hedge);
  const resolved = resolvePolicy(
    OWNER,
    {
      ...rest,
      deadlineMs: withDefault(rest, 'deadlineMs', FETCH_DEADLINE_MS),
      attemptTimeoutMs: withDefault(rest, 'attemptTimeoutMs', FETCH_ATTEMPT_TIMEOUT_MS),
      // Per origin: each origin's policy gets its own budget below.
      budget: makeBudget === undefined ? budget : false,
    },
    { defaultBudget: false, allowCallKeys: false },
  );
  const originLimit = checkNumber(
    OWNER,
    'maxOrigins',
    maxOrigins === undefined ? DEFAULT_MAX_ORIGINS : maxOrigins,
    {
      min: 1,
      integer: true,
    },
  );
  const keyed = new WeakSet<object>();
  const networkErrors = new WeakSet<object>();
  const userShouldRetry = resolved.shouldRetry;
  const settings: Settings = {
    fetch: checkFetch(fetch),
    autoKey: checkIdempotencyKey(OWNER, idempotencyKey),
    attemptHeader: checkAttemptHeader(OWNER, attemptHeader),
    retryMethods: checkRetryMethods(OWNER, retryMethods),
    // The hooks were checked by resolvePolicy; they take fetch events, sent per call below.
    hooks: {
      onRetry: resolved.onRetry as Settings['hooks']['onRetry'],
      onGiveUp: resolved.onGiveUp as Settings['hooks']['onGiveUp'],
      onSuccess: resolved.onSuccess as Settings['hooks']['onSuccess'],
    },
    policy: Object.freeze({
      ...resolved,
      onRetry: undefined,
      onGiveUp: undefined,
      onSuccess: undefined,
      shouldRetry: (given: RetryDecisionContext) => {
        if (isKeyConflict(given, keyed)) return { ...given.verdict, retryable: false };
        const context =
          given.verdict.kind === 'permanent' &&
          typeof given.error === 'object' &&
          given.error !== null &&
          networkErrors.has(given.error)
            ? { ...given, verdict: NETWORK_VERDICT }
            : given;
        return userShouldRetry === undefined ? context.verdict : userShouldRetry(context);
      },
    }),
    hedging: hedgeOptions !== undefined,
    origins: undefined as OriginBudgets<OriginPolicies> | undefined,
    breakers: checkBreakers(OWNER, breaker, resolved.clock, resolved.random),
    keyed,
    networkErrors,
  };
  (settings as { origins: Settings['origins'] }).origins = originPolicies(
    OWNER,
    originLimit,
    settings.policy,
    makeBudget,
    hedgeOptions,
  );
  // Node's fetch shows, through undici's diagnostics channels, which failures are the keep-alive
  // race; elsewhere nothing is recognised and every failure is charged as before.
  watchKeepAliveRace();
  return (input, init) => send(settings, input, init);
}
