// axiosRetry: one request interceptor that puts a retrying adapter in front of the request's own.
// axios calls an adapter once per request, after the request interceptors and transformRequest
// and before transformResponse and the response interceptors; wrapping it means each attempt
// sends the same, already transformed request, and the interceptors and transforms run once per
// request, whatever the number of attempts. The engine (src/core) classifies, waits, keeps the
// deadline and asks the budget and the breaker; the HTTP rules shared with stormproof/fetch and
// stormproof/undici (src/http/checks.ts, src/fetch/request.ts, src/fetch/budgets.ts) decide which
// requests are safe to repeat. This file only adapts axios to the engine.
//
// No runtime import of axios: the instance comes from the user, the types through `import type`.
import type {
  AxiosAdapter,
  AxiosError,
  AxiosInstance,
  AxiosResponse,
  getAdapter as axiosGetAdapter,
  InternalAxiosRequestConfig,
} from 'axios';
import type { BreakerRegistry, BreakerRegistryOptions } from '../core/breaker/registry.js';
import type { Budget } from '../core/budgets/budget.js';
import { NETWORK_VERDICT, type Verdict } from '../core/classify.js';
import { HedgeLostError, type HedgeOptions } from '../core/hedge.js';
import {
  type AttemptContext,
  type CallOptions,
  type GiveUpEvent,
  RETRY_OPTION_KEYS,
  type ResolvedPolicy,
  type RetryDecisionContext,
  type RetryEvent,
  resolvePolicy,
  type SuccessEvent,
  type UnrepeatableReason,
} from '../core/options.js';
import { getRetryReport } from '../core/report.js';
import { execute, type ResultCheck } from '../core/retry.js';
import {
  checkKnownKeys,
  checkNumber,
  checkOptionsObject,
  isThenable,
  show,
} from '../core/validate.js';
import { type BudgetFactory, DEFAULT_MAX_ORIGINS, originOf } from '../fetch/budgets.js';
import { redactUrl } from '../fetch/redact.js';
import {
  AUTO_KEY_METHODS,
  FETCH_ATTEMPT_TIMEOUT_MS,
  FETCH_DEADLINE_MS,
  HEDGE_HEADER,
  IDEMPOTENCY_KEY_HEADER,
  isReplayableBody,
  newIdempotencyKey,
} from '../fetch/request.js';
import {
  type ClientSettings,
  checkAttemptHeader,
  checkBreakers,
  checkBudgetFactory,
  checkIdempotencyKey,
  checkRetryMethods,
  type HttpPolicyOptions,
  isKeyConflict,
  withDefault,
} from '../http/checks.js';
import { checkHedge, isHedgeable, originPolicies, policyFor } from '../http/hedging.js';
import { exponentialDelay } from './delays.js';

/** The total time of one axios request, in ms, attempts and waits included: stormproof/fetch's. */
export const AXIOS_DEADLINE_MS = FETCH_DEADLINE_MS;

/** The time limit of one attempt, in ms: stormproof/fetch's (above ky's 10 s). */
export const AXIOS_ATTEMPT_TIMEOUT_MS = FETCH_ATTEMPT_TIMEOUT_MS;

/** How many origins' retry budgets one axiosRetry remembers by default. */
export const AXIOS_MAX_ORIGINS = DEFAULT_MAX_ORIGINS;

/** What every axios event says about its request. Never a header, never a body. */
export interface AxiosEventContext {
  /** The request method, in upper case. */
  readonly method: string;
  /** The request URL (baseURL joined), without user, password, query values and fragment. */
  readonly url: string;
  /** The status of the response the last attempt ended with, when it had one. */
  readonly status?: number;
}

/** Sent to `onGiveUp` once, when a request stops retrying and fails. */
export interface AxiosGiveUpEvent extends GiveUpEvent, AxiosEventContext {}

/** Sent to `onSuccess` once, when an attempt succeeds. */
export interface AxiosSuccessEvent extends SuccessEvent, AxiosEventContext {}

/** axios-retry's `retryCondition`: may this failure be retried? */
export type RetryCondition = (error: AxiosError) => boolean | Promise<boolean>;

/** axios-retry's `retryDelay`: the wait before retry `retryCount` (from 1), in ms. */
export type RetryDelay = (retryCount: number, error: AxiosError) => number;

/** axios-retry's `onRetry`, plus the engine's event (the wait, the verdict) as a fourth argument. */
export type OnRetry = (
  retryCount: number,
  error: AxiosError,
  requestConfig: InternalAxiosRequestConfig,
  event: RetryEvent,
) => unknown;

/** axios-retry's `onMaxRetryTimesExceeded`. */
export type OnMaxRetryTimesExceeded = (error: AxiosError, retryCount: number) => unknown;

/**
 * The options a single request may set for itself, in its config under `stormproof` or under
 * axios-retry's key `'axios-retry'` (one or the other). `stormproof: false` sends the request once.
 */
export interface AxiosRetryRequestOptions {
  /**
   * How many times to retry after the first attempt: `retries: 3` is up to 4 attempts.
   * @default 3
   * @example
   * ```ts
   * client.get('/items', { stormproof: { retries: 1 } });
   * ```
   */
  retries?: number | undefined;
  /**
   * Decides whether a failure may be retried, replacing stormproof's classification (a promise
   * that rejects means no). It cannot make a POST or PATCH without an `Idempotency-Key`
   * repeatable (see `retryMethods`), nor retry a response that says not to retry.
   * @default stormproof's classification: network errors, timeouts, 408, 429, 502, 503, 504, a 500 once
   * @example
   * ```ts
   * { retryCondition: (error) => error.response?.status === 503 }
   * ```
   */
  retryCondition?: RetryCondition | undefined;
  /**
   * The wait before each retry, in ms, used exactly (no jitter added; still bounded by the
   * deadline). `exponentialDelay` means the engine's own backoff.
   * @default exponentialDelay (full jitter, 200 ms doubling to 5 s, Retry-After added)
   * @example
   * ```ts
   * { retryDelay: linearDelay(100) }
   * ```
   */
  retryDelay?: RetryDelay | undefined;
  /**
   * `true`: axios' `timeout` bounds each attempt. `false`: it bounds the whole request, waits
   * included (axios-retry's default), so it becomes the request's deadline.
   * @default true
   * @example
   * ```ts
   * client.get('/items', { timeout: 2000, stormproof: { shouldResetTimeout: false } });
   * ```
   */
  shouldResetTimeout?: boolean | undefined;
  /**
   * Called before each wait for a retry with axios-retry's arguments and the engine's event; the
   * retry waits for a promise it returns, and a rejection ends the request with its reason.
   * @default undefined
   * @example
   * ```ts
   * { onRetry: (n, error) => console.warn(`retry ${n}: ${error.message}`) }
   * ```
   */
  onRetry?: OnRetry | undefined;
  /**
   * Called once when the last allowed attempt failed, before the request rejects; what it throws
   * replaces the error.
   * @default undefined
   * @example
   * ```ts
   * { onMaxRetryTimesExceeded: (error, n) => console.error(`gave up after ${n} retries`) }
   * ```
   */
  onMaxRetryTimesExceeded?: OnMaxRetryTimesExceeded | undefined;
  /**
   * Decides which responses succeed, instead of axios' `validateStatus`: `false` makes the
   * response a failed attempt (retried by `retryCondition`). `null` turns off a default one.
   * @default null (axios' validateStatus decides)
   * @example
   * ```ts
   * { validateResponse: (response) => response.data?.ready === true }
   * ```
   */
  validateResponse?: ((response: AxiosResponse) => boolean) | null | undefined;
  /**
   * This request's deadline, in ms, instead of `deadlineMs`.
   * @default the instance's deadlineMs
   * @example
   * ```ts
   * client.get('/search', { stormproof: { deadlineMs: 2000 } });
   * ```
   */
  deadlineMs?: number | undefined;
}

declare module 'axios' {
  interface AxiosRequestConfig {
    /** stormproof/axios: this request's retry options, or `false` to send it once. */
    stormproof?: AxiosRetryRequestOptions | false | undefined;
    /** axios-retry's key for a request's own options: read by stormproof/axios as `stormproof`. */
    'axios-retry'?: AxiosRetryRequestOptions | undefined;
  }
}

/** The options of `axiosRetry`: axios-retry's, the engine's policy options and the HTTP rules. */
export interface AxiosRetryOptions
  extends Omit<HttpPolicyOptions, 'shouldRetry'>,
    Omit<AxiosRetryRequestOptions, 'deadlineMs'> {
  /**
   * The total time of one request, in ms, waits included. A retry whose wait would end past it
   * is not made.
   * @default 30000
   * @example
   * ```ts
   * axiosRetry(axios, { deadlineMs: 3000 }); // an interactive screen
   * ```
   */
  deadlineMs?: number | undefined;
  /**
   * The time limit of each attempt, in ms (axios' own `timeout` applies too).
   * @default 15000
   * @example
   * ```ts
   * axiosRetry(axios, { attemptTimeoutMs: 2000 });
   * ```
   */
  attemptTimeoutMs?: number | undefined;
  /**
   * The retry budget: by default a `RetryBudget` per origin; a function makes each origin's; a
   * `Budget` is shared by all; `false` turns budgets off.
   * @default a new RetryBudget() per origin
   * @example
   * ```ts
   * axiosRetry(axios, { budget: () => new RetryBudget({ maxCredits: 50 }) });
   * ```
   */
  budget?: Budget | BudgetFactory | false | undefined;
  /**
   * Hedge slow GET and HEAD requests, and requests with an `Idempotency-Key`, as stormproof/fetch
   * does: when a request has run longer than nearly all recent ones to its origin (the p96 by
   * default, learned per origin after 20 answers), the adapter is called again with the same
   * request and the first answer wins; the other copy is cancelled through its `signal`. Each
   * copy is paid from the origin's retry budget (none sent when it refuses), and none goes out
   * while the origin pushes back (a 429 or 503, Retry-After), while its breaker is not closed,
   * or while copies stop winning. A copy carries the attempt header (the number of sends of the
   * request so far, gRPC A6's way) and `stormproof-hedge: 1`. Never a request that is not
   * retried (a POST without a key, a stream body, `stormproof: false`), nor PUT or DELETE (two
   * at once may race). See docs/hedging.md.
   * @default undefined (no hedging)
   * @example
   * ```ts
   * axiosRetry(axios, { hedge: {} }); // one copy after the p96 of the origin's recent requests
   * axiosRetry(axios, { hedge: { delayMs: 50 } }); // a copy after a fixed 50 ms
   * ```
   */
  hedge?: HedgeOptions | false | undefined;
  /**
   * How many origins' budgets (and, with `hedge`, learned hedge delays) are remembered; past it
   * the least recently used is forgotten.
   * @default 1000
   * @example
   * ```ts
   * axiosRetry(axios, { maxOrigins: 50 });
   * ```
   */
  maxOrigins?: number | undefined;
  /**
   * Circuit breakers, one per origin: `true` for the defaults, a `BreakerRegistry`'s options, or
   * a `BreakerRegistry` to share.
   * @default undefined (no breaker)
   * @example
   * ```ts
   * axiosRetry(axios, { breaker: { consecutiveFailures: 10 } });
   * ```
   */
  breaker?: boolean | BreakerRegistryOptions | BreakerRegistry | undefined;
  /**
   * `'auto'` adds a fresh `Idempotency-Key` to every POST and PATCH without one, the same on each
   * of its attempts, so they become safe to retry. Only for servers that honour the header.
   * @default false
   * @example
   * ```ts
   * axiosRetry(axios, { idempotencyKey: 'auto' });
   * ```
   */
  idempotencyKey?: 'auto' | false | undefined;
  /**
   * The request header carrying the attempt number on retries (`2`, `3`, ...); with `hedge` it
   * counts every send, hedged copies included, and a hedged copy also carries `stormproof-hedge`.
   * `false` sends neither. A cross-origin retry from a browser then needs the header in `Access-Control-Allow-Headers`.
   * @default 'stormproof-attempt'
   * @example
   * ```ts
   * axiosRetry(axios, { attemptHeader: false });
   * ```
   */
  attemptHeader?: string | false | undefined;
  /**
   * The methods retried without an `Idempotency-Key`.
   * @default ['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE', 'QUERY']
   * @example
   * ```ts
   * axiosRetry(axios, { retryMethods: ['GET', 'HEAD'] });
   * ```
   */
  retryMethods?: readonly string[] | undefined;
  /**
   * Called once when a request fails for good, with why (`reason`), the method, redacted URL and
   * status. A hook that throws is ignored.
   * @default undefined
   * @example
   * ```ts
   * axiosRetry(axios, { onGiveUp: (e) => metrics.increment('http.give_up', { reason: e.reason }) });
   * ```
   */
  onGiveUp?: ((event: AxiosGiveUpEvent) => unknown) | undefined;
  /**
   * Called once when an attempt succeeds. A hook that throws is ignored.
   * @default undefined
   * @example
   * ```ts
   * axiosRetry(axios, { onSuccess: (e) => metrics.histogram('http.attempts', e.attempts) });
   * ```
   */
  onSuccess?: ((event: AxiosSuccessEvent) => unknown) | undefined;
  /**
   * Resolves adapter names (`'xhr'`, `'http'`, `'fetch'`) to adapters. Taken from the axios you
   * pass when it is the default export; an instance made by `axios.create()` has none, so pass
   * `axios.getAdapter` with it.
   * @default the given axios' getAdapter
   * @example
   * ```ts
   * axiosRetry(axios.create({ baseURL }), { getAdapter: axios.getAdapter });
   * ```
   */
  getAdapter?: typeof axiosGetAdapter | undefined;
}

/** What `axiosRetry` returns: the id of its request interceptor, and a way to remove it. */
export interface AxiosRetryHandle {
  /** The id of the request interceptor, for `axios.interceptors.request.eject(id)`. */
  readonly requestInterceptorId: number;
  /** Removes the interceptor: later requests are sent once, as without stormproof. */
  eject(): void;
}

/** The parts of an axios instance axiosRetry uses. */
export type AxiosLike = Pick<AxiosInstance, 'interceptors' | 'defaults'> & {
  readonly getAdapter?: typeof axiosGetAdapter;
};

const OWNER = 'axiosRetry';
const AXIOS_RETRY_KEYS = [
  'retries',
  'retryCondition',
  'retryDelay',
  'shouldResetTimeout',
  'onRetry',
  'onMaxRetryTimesExceeded',
  'validateResponse',
] as const;
const REQUEST_KEYS: readonly string[] = [...AXIOS_RETRY_KEYS, 'deadlineMs'];
const OWN_KEYS = [
  'hedge',
  'idempotencyKey',
  'attemptHeader',
  'retryMethods',
  'maxOrigins',
  'breaker',
  'getAdapter',
  ...AXIOS_RETRY_KEYS,
];
const KNOWN_KEYS: readonly string[] = [
  ...RETRY_OPTION_KEYS.filter(
    (key) => key !== 'signal' && key !== 'shouldRetry' && key !== 'hedge' && key !== 'onRetry',
  ),
  ...OWN_KEYS,
];

/** The browsers' adapters and Node's, in axios' own order: what `adapter` means when unset. */
const DEFAULT_ADAPTERS = ['xhr', 'http', 'fetch'];

/** Marks the adapters axiosRetry made, so a request is never wrapped twice. */
const WRAPPED = Symbol.for('stormproof.axios.adapter');

/** The axios-retry options, checked, after the per-request ones are laid over. */
interface RequestRules {
  readonly maxAttempts: number;
  readonly retryCondition: RetryCondition | undefined;
  readonly retryDelay: RetryDelay | undefined;
  readonly shouldResetTimeout: boolean;
  readonly onRetry: OnRetry | undefined;
  readonly onMaxRetryTimesExceeded: OnMaxRetryTimesExceeded | undefined;
  readonly validateResponse: ((response: AxiosResponse) => boolean) | undefined;
  readonly deadlineMs: number | undefined;
}

/** Everything an axiosRetry decided once, shared by all its requests. */
interface Settings extends ClientSettings {
  readonly getAdapter: typeof axiosGetAdapter | undefined;
  readonly rules: RequestRules;
  readonly onGiveUp: ((event: AxiosGiveUpEvent) => unknown) | undefined;
  readonly onSuccess: ((event: AxiosSuccessEvent) => unknown) | undefined;
}

function checkFunction<F>(owner: string, name: string, value: unknown): F | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') {
    throw new TypeError(`stormproof: ${owner} ${name} must be a function, got ${show(value)}`);
  }
  return value as F;
}

function checkBoolean(owner: string, name: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') {
    throw new TypeError(`stormproof: ${owner} ${name} must be a boolean, got ${show(value)}`);
  }
  return value;
}

/** Lays `o` (axios-retry's options, checked here) over `base`. */
function checkRules(owner: string, o: Record<string, unknown>, base: RequestRules): RequestRules {
  const validate = o.validateResponse;
  return {
    maxAttempts:
      o.retries === undefined
        ? base.maxAttempts
        : checkNumber(owner, 'retries', o.retries, { min: 0, integer: true }) + 1,
    retryCondition:
      checkFunction<RetryCondition>(owner, 'retryCondition', o.retryCondition) ??
      base.retryCondition,
    retryDelay: checkFunction<RetryDelay>(owner, 'retryDelay', o.retryDelay) ?? base.retryDelay,
    shouldResetTimeout: checkBoolean(
      owner,
      'shouldResetTimeout',
      o.shouldResetTimeout,
      base.shouldResetTimeout,
    ),
    onRetry: checkFunction<OnRetry>(owner, 'onRetry', o.onRetry) ?? base.onRetry,
    onMaxRetryTimesExceeded:
      checkFunction<OnMaxRetryTimesExceeded>(
        owner,
        'onMaxRetryTimesExceeded',
        o.onMaxRetryTimesExceeded,
      ) ?? base.onMaxRetryTimesExceeded,
    // `null` is axios-retry's "no validateResponse": it turns a default one off.
    validateResponse:
      validate === null
        ? undefined
        : (checkFunction<(r: AxiosResponse) => boolean>(owner, 'validateResponse', validate) ??
          base.validateResponse),
    deadlineMs:
      o.deadlineMs === undefined
        ? base.deadlineMs
        : checkNumber(owner, 'deadlineMs', o.deadlineMs, { min: 0, minExclusive: true }),
  };
}

function checkAxios(axios: unknown): AxiosLike {
  const a = axios as Partial<AxiosLike> | null;
  if (
    (typeof a !== 'object' && typeof a !== 'function') ||
    a === null ||
    typeof a.interceptors?.request?.use !== 'function' ||
    typeof a.defaults !== 'object'
  ) {
    throw new TypeError(
      `stormproof: ${OWNER} axios must be axios or an instance from axios.create(), got ${show(axios)}`,
    );
  }
  return a as AxiosLike;
}

/** Whether an adapter setting can be called without resolving names. */
function isResolved(spec: unknown): boolean {
  return typeof spec === 'function';
}

/**
 * Runs every request of `axios` (the default export or an instance from `axios.create()`)
 * through the stormproof engine: retries only what can pass and is safe to repeat, with full
 * jitter, Retry-After, a deadline and a budget per origin. A drop-in for axios-retry: its options
 * mean the same here where they can (docs/axios.md lists each difference).
 *
 * @example
 * ```ts
 * import axios from 'axios';
 * import { axiosRetry } from 'stormproof/axios';
 *
 * axiosRetry(axios);
 * const { data } = await axios.get('https://api.example.com/user/42');
 * ```
 */
export function axiosRetry(axios: AxiosLike, options?: AxiosRetryOptions): AxiosRetryHandle {
  const instance = checkAxios(axios);
  const o = checkOptionsObject(OWNER, options);
  checkKnownKeys(OWNER, o, KNOWN_KEYS);
  for (const [key, value] of Object.entries(o)) {
    if (value === null && key !== 'validateResponse') {
      throw new TypeError(
        `stormproof: ${OWNER} ${key} must not be null (leave it out for the default)`,
      );
    }
  }
  if (o.retries !== undefined && o.maxAttempts !== undefined) {
    throw new TypeError(
      `stormproof: ${OWNER} takes retries or maxAttempts, not both (retries: ${show(o.retries)}, maxAttempts: ${show(o.maxAttempts)})`,
    );
  }
  const {
    idempotencyKey,
    attemptHeader,
    retryMethods,
    maxOrigins,
    budget,
    breaker,
    getAdapter,
    retries,
    retryCondition,
    retryDelay,
    shouldResetTimeout,
    onRetry,
    onMaxRetryTimesExceeded,
    validateResponse,
    onGiveUp,
    onSuccess,
    hedge,
    ...rest
  } = o;
  const makeBudget = checkBudgetFactory(budget);
  const hedgeOptions = checkHedge(OWNER, hedge);
  const policy = resolvePolicy(
    OWNER,
    {
      ...rest,
      deadlineMs: withDefault(rest, 'deadlineMs', AXIOS_DEADLINE_MS),
      attemptTimeoutMs: withDefault(rest, 'attemptTimeoutMs', AXIOS_ATTEMPT_TIMEOUT_MS),
      budget: makeBudget === undefined ? budget : false,
      onGiveUp,
      onSuccess,
    },
    { defaultBudget: false, allowCallKeys: false },
  );
  const rules = checkRules(
    OWNER,
    {
      retries,
      retryCondition,
      retryDelay,
      shouldResetTimeout,
      onRetry,
      onMaxRetryTimesExceeded,
      validateResponse,
    },
    {
      maxAttempts: policy.maxAttempts,
      retryCondition: undefined,
      retryDelay: undefined,
      shouldResetTimeout: true,
      onRetry: undefined,
      onMaxRetryTimesExceeded: undefined,
      validateResponse: undefined,
      deadlineMs: undefined,
    },
  );
  const originLimit = checkNumber(
    OWNER,
    'maxOrigins',
    maxOrigins === undefined ? AXIOS_MAX_ORIGINS : maxOrigins,
    { min: 1, integer: true },
  );
  const resolver =
    checkFunction<typeof axiosGetAdapter>(OWNER, 'getAdapter', getAdapter) ??
    (typeof instance.getAdapter === 'function' ? instance.getAdapter : undefined);
  const configured = instance.defaults.adapter ?? DEFAULT_ADAPTERS;
  const specs = Array.isArray(configured) ? configured : [configured];
  if (resolver === undefined && !specs.every(isResolved)) {
    throw new TypeError(
      `stormproof: ${OWNER} getAdapter is needed to resolve the adapter ${show(configured)} of an instance made by axios.create(): pass { getAdapter: axios.getAdapter }`,
    );
  }
  const shared: ResolvedPolicy = Object.freeze({
    ...policy,
    maxAttempts: rules.maxAttempts,
    onRetry: undefined,
    onGiveUp: undefined,
    onSuccess: undefined,
  });
  const settings: Settings = {
    getAdapter: resolver,
    autoKey: checkIdempotencyKey(OWNER, idempotencyKey),
    attemptHeader: checkAttemptHeader(OWNER, attemptHeader),
    retryMethods: checkRetryMethods(OWNER, retryMethods),
    policy: shared,
    hedging: hedgeOptions !== undefined,
    origins: originPolicies(OWNER, originLimit, shared, makeBudget, hedgeOptions),
    breakers: checkBreakers(OWNER, breaker, policy.clock, policy.random),
    rules,
    onGiveUp: policy.onGiveUp as Settings['onGiveUp'],
    onSuccess: policy.onSuccess as Settings['onSuccess'],
  };
  const requests = instance.interceptors.request;
  const id = requests.use(
    (config) => {
      const spec = config.adapter;
      // `stormproof: false` beside 'axios-retry' options still goes to send(), which refuses both.
      const once = config.stormproof === false && config['axios-retry'] === undefined;
      if (once || (spec as { [WRAPPED]?: true })?.[WRAPPED]) return config;
      const wrapped = ((attemptConfig: InternalAxiosRequestConfig) =>
        send(settings, spec ?? DEFAULT_ADAPTERS, attemptConfig)) as AxiosAdapter & {
        [WRAPPED]?: true;
      };
      wrapped[WRAPPED] = true;
      config.adapter = wrapped;
      return config;
    },
    undefined,
    { synchronous: true },
  );
  return Object.freeze({ requestInterceptorId: id, eject: () => requests.eject(id) });
}

/** The adapter function for a request: its own, or the first its names resolve to. */
function adapterFor(
  settings: Settings,
  spec: NonNullable<InternalAxiosRequestConfig['adapter']>,
  config: InternalAxiosRequestConfig,
): AxiosAdapter {
  if (typeof spec === 'function') return spec;
  if (settings.getAdapter === undefined) {
    throw new TypeError(
      `stormproof: ${OWNER} getAdapter is needed to resolve the adapter ${show(spec)}: pass { getAdapter: axios.getAdapter }`,
    );
  }
  return settings.getAdapter(spec, config);
}

/** The request's absolute URL: `url` joined to `baseURL` as axios joins them. */
function fullUrl(config: InternalAxiosRequestConfig): string {
  const url = config.url ?? '';
  const base = config.baseURL;
  if (base === undefined || /^([a-z][a-z\d+\-.]*:)?\/\//i.test(url)) return url;
  return url === '' ? base : `${base.replace(/\/?\/$/, '')}/${url.replace(/^\/+/, '')}`;
}

/** A header of an axios request (an AxiosHeaders or a plain object), case-insensitively. */
function hasHeader(headers: unknown, name: string): boolean {
  if (typeof headers !== 'object' || headers === null) return false;
  const h = headers as { has?: (name: string) => boolean };
  if (typeof h.has === 'function') return h.has(name);
  const wanted = name.toLowerCase();
  return Object.keys(headers).some((key) => key.toLowerCase() === wanted);
}

/** A copy of an attempt's headers with `name: value` set, the original left as it was. */
function withHeader(headers: unknown, name: string, value: string): unknown {
  if (typeof headers === 'object' && headers !== null) {
    const h = headers as {
      constructor?: new (from: unknown) => { set(n: string, v: string): void };
    };
    if (typeof (headers as { set?: unknown }).set === 'function' && h.constructor !== undefined) {
      const copy = new h.constructor(headers);
      copy.set(name, value);
      return copy;
    }
    return { ...(headers as object), [name]: value };
  }
  return { [name]: value };
}

function setHeader(config: InternalAxiosRequestConfig, name: string, value: string): void {
  const headers = config.headers as unknown as { set?: (n: string, v: string) => void } | undefined;
  if (typeof headers?.set === 'function') headers.set(name, value);
  else config.headers = { ...(config.headers ?? {}), [name]: value } as typeof config.headers;
}

/** An axios network error with no code of the platform's: the XHR and fetch adapters' `ERR_NETWORK`. */
function isAxiosNetworkError(error: unknown): boolean {
  const e = error as { code?: unknown; response?: unknown } | null;
  return typeof e === 'object' && e !== null && e.code === 'ERR_NETWORK' && e.response == null;
}

/** A response body nobody will read (a stream, with `responseType: 'stream'`), closed. */
function discardBody(error: unknown): void {
  try {
    const data = (
      error as { response?: { data?: { destroy?: () => void; cancel?: () => unknown } } }
    )?.response?.data;
    if (typeof data?.destroy === 'function') data.destroy();
    else if (typeof data?.cancel === 'function') Promise.resolve(data.cancel()).catch(noop);
  } catch {
    // A body that cannot be closed is left to the collector.
  }
}

const noop = () => {};

/**
 * How the engine treats a hedged request's copies: a failed copy throws (axios' own way), so no
 * value is a failure; a copy that answered after another won has its body closed.
 */
const COPIES: ResultCheck<AxiosResponse> = {
  isFailure: () => false,
  discard: (response) => discardBody({ response }),
};

/**
 * A keyed request's copies: a hedge told 409 met its own first copy in progress, which says
 * nothing of the request, so another copy's failure decides the attempt.
 */
const KEYED_COPIES: ResultCheck<AxiosResponse> = {
  ...COPIES,
  isCopyConflict: (failure) =>
    (failure as { response?: { status?: unknown } } | null)?.response?.status === 409,
};

/** The signal a call may watch: an AbortSignal or one shaped like it; axios also allows others. */
function callerSignalOf(config: InternalAxiosRequestConfig): AbortSignal | undefined {
  const s = config.signal as { aborted?: unknown; addEventListener?: unknown } | undefined;
  return typeof s === 'object' &&
    s !== null &&
    typeof s.aborted === 'boolean' &&
    typeof s.addEventListener === 'function'
    ? (s as AbortSignal)
    : undefined;
}

/** axios' deprecated `CancelToken`, as far as the call needs it. */
interface CancelTokenLike {
  readonly reason?: unknown;
  subscribe(listener: (reason: unknown) => void): void;
  unsubscribe(listener: (reason: unknown) => void): void;
}

function isCancelToken(value: unknown): value is CancelTokenLike {
  const t = value as Partial<CancelTokenLike> | null | undefined;
  return (
    typeof t === 'object' &&
    t !== null &&
    typeof t.subscribe === 'function' &&
    typeof t.unsubscribe === 'function'
  );
}

/**
 * What ends the call: the request's signal, and its `cancelToken` if it has one (axios still
 * honours the deprecated token, so a wait must end on it too, not only the attempt in flight).
 * `release` lets go of the token and the signal once the call has ended.
 */
function cancelSignalOf(
  config: InternalAxiosRequestConfig,
  signal: AbortSignal | undefined,
): { signal: AbortSignal | undefined; release: () => void } {
  const token = config.cancelToken as unknown;
  if (!isCancelToken(token)) return { signal, release: noop };
  const controller = new AbortController();
  const fromToken = (reason: unknown) => controller.abort(reason);
  const fromSignal = () => controller.abort(signal?.reason);
  if (signal?.aborted) controller.abort(signal.reason);
  else if (token.reason !== undefined) controller.abort(token.reason);
  else {
    token.subscribe(fromToken);
    signal?.addEventListener('abort', fromSignal, { once: true });
  }
  return {
    signal: controller.signal,
    release: () => {
      token.unsubscribe(fromToken);
      signal?.removeEventListener('abort', fromSignal);
    },
  };
}

/**
 * Fields of axios-retry's per-request key that are its own bookkeeping, not options: it writes
 * them into the config as it retries. stormproof counts attempts itself, so a value given there
 * could not mean what it meant to axios-retry (a head start on the retry count).
 */
const AXIOS_RETRY_STATE_KEYS: readonly string[] = ['retryCount', 'lastRequestTime'];

/**
 * A request's rules: the instance's, with `config.stormproof` laid over, or axios-retry's key
 * `config['axios-retry']`, read the same way (an alias: one or the other, not both).
 */
function requestRules(base: RequestRules, config: InternalAxiosRequestConfig): RequestRules {
  const own = config.stormproof;
  const alias = config['axios-retry'];
  if (alias !== undefined && own !== undefined) {
    throw new TypeError(
      `stormproof: axios request config takes stormproof or 'axios-retry', not both (stormproof: ${show(own)}, 'axios-retry': ${show(alias)})`,
    );
  }
  if (alias === undefined && (own === undefined || own === false)) return base;
  const value = alias ?? own;
  const owner =
    alias !== undefined ? "axios request config 'axios-retry'" : 'axios request config stormproof';
  const given = checkOptionsObject(owner, value);
  if (alias !== undefined) {
    for (const key of AXIOS_RETRY_STATE_KEYS) {
      if (given[key] !== undefined) {
        throw new TypeError(
          `stormproof: ${owner} ${key} is axios-retry's own retry state, which stormproof keeps itself (getRetryReport(error).attempts, onRetry's count): leave it out`,
        );
      }
    }
  }
  checkKnownKeys(owner, given, REQUEST_KEYS);
  return checkRules(owner, given, base);
}

/** One request through the wrapped adapter: its attempts, run by the engine. */
async function send(
  settings: Settings,
  spec: NonNullable<InternalAxiosRequestConfig['adapter']>,
  config: InternalAxiosRequestConfig,
): Promise<AxiosResponse> {
  const rules = requestRules(settings.rules, config);
  const adapter = adapterFor(settings, spec, config);
  const method = String(config.method ?? 'get').toUpperCase();
  if (
    settings.autoKey &&
    AUTO_KEY_METHODS.has(method) &&
    !hasHeader(config.headers, IDEMPOTENCY_KEY_HEADER)
  ) {
    setHeader(config, IDEMPOTENCY_KEY_HEADER, newIdempotencyKey());
  }
  const isKeyed = hasHeader(config.headers, IDEMPOTENCY_KEY_HEADER);
  let unrepeatable: UnrepeatableReason | undefined;
  if (!isKeyed && !settings.retryMethods.has(method)) unrepeatable = 'not-idempotent';
  else if (!isReplayableBody(config.data)) unrepeatable = 'body-not-replayable';
  const hedgeable = settings.hedging && isHedgeable(method, isKeyed, unrepeatable);

  const url = fullUrl(config);
  const origin = originOf(url);
  const timeout = typeof config.timeout === 'number' && config.timeout > 0 ? config.timeout : 0;
  const { validateResponse, retryCondition, retryDelay, onRetry } = rules;

  /** Failures of keyed requests (a 409 or 422 on them is final), and the onRetry hook's throws. */
  const keyedErrors = new WeakSet<object>();
  const hookErrors = new WeakSet<object>();
  /** The promise of the latest onRetry hook: the next attempt waits for it. */
  let pendingHook: Promise<unknown> | undefined;
  let lastStatus: number | undefined;

  /** Sends of this request so far, attempts and hedges. */
  let copies = 0;
  const operation = async ({ signal, hedge }: AttemptContext): Promise<AxiosResponse> => {
    // Without hedging, each attempt is one send and this is its attempt number.
    const sendNumber = ++copies;
    if (pendingHook !== undefined) {
      const hook = pendingHook;
      pendingHook = undefined;
      try {
        await hook;
      } catch (error) {
        if (typeof error === 'object' && error !== null) hookErrors.add(error);
        throw error;
      }
    }
    const attemptConfig: InternalAxiosRequestConfig = { ...config, signal };
    if (sendNumber > 1 && settings.attemptHeader !== undefined) {
      let headers = withHeader(config.headers, settings.attemptHeader, String(sendNumber));
      if (hedge !== undefined && hedge > 0)
        headers = withHeader(headers, HEDGE_HEADER, String(hedge));
      attemptConfig.headers = headers as InternalAxiosRequestConfig['headers'];
    }
    // The whole request's timeout is the call's deadline (below): the engine ends the attempt.
    if (!rules.shouldResetTimeout && timeout > 0) attemptConfig.timeout = 0;
    // Every response reaches validateResponse as axios' own error, so a failed one is an AxiosError.
    if (validateResponse !== undefined) attemptConfig.validateStatus = () => false;
    try {
      const response = await adapter(attemptConfig);
      // A copy that lost the race is not the request's last answer.
      if (!(signal.reason instanceof HedgeLostError)) lastStatus = response.status;
      return response;
    } catch (error) {
      const response = (error as { response?: AxiosResponse } | null)?.response;
      if (!(signal.reason instanceof HedgeLostError)) lastStatus = response?.status;
      if (validateResponse !== undefined && response != null && validateResponse(response)) {
        return response;
      }
      if (isKeyed && typeof error === 'object' && error !== null) keyedErrors.add(error);
      throw error;
    }
  };

  const judge = async (context: RetryDecisionContext): Promise<Verdict | boolean> => {
    const { error } = context;
    if (typeof error === 'object' && error !== null && hookErrors.has(error)) return false;
    let verdict = context.verdict;
    // A response that says not to retry, or a conflict on a keyed request, is final.
    if (verdict.kind === 'do-not-retry' || isKeyConflict(context, keyedErrors)) {
      return { ...verdict, retryable: false };
    }
    if (
      verdict.kind === 'permanent' &&
      verdict.status === undefined &&
      isAxiosNetworkError(error)
    ) {
      verdict = NETWORK_VERDICT;
    }
    if (retryCondition !== undefined) {
      let answer: unknown;
      try {
        const given = retryCondition(error as AxiosError);
        answer = isThenable(given) ? (await given) !== false : Boolean(given);
      } catch {
        answer = false;
      }
      verdict = { ...verdict, retryable: answer === true };
    }
    if (verdict.retryable && retryDelay !== undefined && retryDelay !== exponentialDelay) {
      const ms = retryDelay(context.attempt, error as AxiosError);
      checkNumber(OWNER, 'retryDelay result', ms, { min: 0 });
      verdict = { ...verdict, pushbackMs: ms };
    }
    return verdict;
  };

  const base = policyFor(settings.policy, settings.origins, origin, hedgeable);
  const policy: ResolvedPolicy = {
    ...base,
    maxAttempts: rules.maxAttempts,
    shouldRetry: judge,
  };

  const cancel = cancelSignalOf(config, callerSignalOf(config));
  const call: CallOptions = { signal: cancel.signal };
  let deadlineMs = rules.deadlineMs;
  if (!rules.shouldResetTimeout && timeout > 0) {
    deadlineMs = Math.min(deadlineMs ?? policy.deadlineMs, timeout);
  }
  if (deadlineMs !== undefined) call.deadlineMs = deadlineMs;
  if (settings.breakers !== undefined) call.breaker = settings.breakers.get(origin);
  let about: { method: string; url: string } | undefined;
  const describe = () => {
    about ??= { method, url: redactUrl(url) };
    return about;
  };
  call.onRetry = (event) => {
    discardBody(event.error);
    if (onRetry !== undefined) {
      const run = Promise.resolve().then(() =>
        onRetry(event.attempt, event.error as AxiosError, config, event),
      );
      run.catch(noop);
      pendingHook = run;
    }
  };
  const { onGiveUp, onSuccess } = settings;
  if (onGiveUp !== undefined) {
    call.onGiveUp = (event) =>
      onGiveUp({
        ...event,
        ...describe(),
        ...(lastStatus === undefined ? {} : { status: lastStatus }),
      });
  }
  if (onSuccess !== undefined) {
    call.onSuccess = (event) =>
      onSuccess({
        ...event,
        ...describe(),
        ...(lastStatus === undefined ? {} : { status: lastStatus }),
      });
  }

  try {
    return await execute(
      policy,
      operation,
      call,
      hedgeable ? (isKeyed ? KEYED_COPIES : COPIES) : undefined,
      unrepeatable,
    );
  } catch (error) {
    const hook = rules.onMaxRetryTimesExceeded;
    const report = getRetryReport(error);
    if (hook !== undefined && report?.reason === 'max-attempts') {
      await hook(error as AxiosError, report.attempts - 1);
    }
    throw error;
  } finally {
    cancel.release();
  }
}
