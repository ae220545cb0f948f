// The default answer to "can this failure pass, and how long did the server ask us to wait?".
// It reads the shapes that HTTP clients, Node and undici actually throw, and nothing else: an
// error it does not recognise is not retried (retry only what can pass).
import { getHeader, readRateLimitPauseMs, readRetryAfterMs } from './retry-after.js';

/**
 * What kind of failure an attempt ended with.
 *
 * - `'timeout'`: no answer in time (a `TimeoutError`, `timedOut: true`, `ETIMEDOUT`, undici's
 *   timeout codes, 408 Request Timeout).
 * - `'network'`: the connection failed or dropped (`ECONNRESET`, `socket hang up`, a browser's
 *   `TypeError: Failed to fetch`, ...).
 * - `'unavailable'`: 502, 503 or 504 (and a 413 that carries Retry-After).
 * - `'throttled'`: 429; retried with a larger backoff ceiling.
 * - `'internal'`: 500; retried at most `maxInternalErrorRetries` times per call.
 * - `'do-not-retry'`: the server said not to retry (`x-envoy-overloaded`,
 *   `stormproof-overloaded`, `Stripe-Should-Retry: false`, gRPC's negative pushback).
 * - `'permanent'`: anything else: a 4xx, an unknown error, a thrown non-object.
 */
export type FailureKind =
  | 'timeout'
  | 'network'
  | 'unavailable'
  | 'throttled'
  | 'internal'
  | 'do-not-retry'
  | 'permanent';

/** How one failed attempt was judged. */
export interface Verdict {
  /** Whether this failure may be retried (limits, deadline and budget still apply). */
  readonly retryable: boolean;
  /** What kind of failure it was. */
  readonly kind: FailureKind;
  /** The HTTP status, when the failure carried one. */
  readonly status?: number;
  /** The server's pause (Retry-After), in ms; it is added to the jittered wait. */
  readonly retryAfterMs?: number;
  /**
   * A wait the server chose exactly (gRPC pushback), in ms: it replaces the jittered backoff,
   * and the backoff after it starts again from the base.
   */
  readonly pushbackMs?: number;
}

/**
 * The response header with which a server hands out a wait it has already spread across its
 * clients (stormproof/server does): a non-negative integer of milliseconds. A stormproof client
 * waits exactly that, with no jitter of its own on top, and restarts its backoff from the base,
 * as gRPC clients do with pushback (gRFC A6). A malformed value is ignored (the client falls
 * back to Retry-After plus its own jitter). Other clients read the `Retry-After` sent beside it.
 */
export const PUSHBACK_HEADER = 'stormproof-pushback-ms';

/** `stormproof-pushback-ms`: ASCII digits only, at most 2^31 - 1 (a longer wait is garbled). */
const PUSHBACK_MS = /^\d{1,10}$/;

function readPushbackMs(headers: unknown): number | undefined {
  const value = getHeader(headers, PUSHBACK_HEADER);
  if (value === undefined || !PUSHBACK_MS.test(value)) return undefined;
  const ms = Number(value);
  return ms <= 2_147_483_647 ? ms : undefined;
}

/**
 * The response header with which a stormproof server says "overloaded: do not retry this".
 * Any value counts. Sent by `stormproof/server` when it sheds load.
 */
export const OVERLOADED_HEADER = 'stormproof-overloaded';

/** Error codes of connections that failed or dropped: worth another try. */
const NETWORK_CODES: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'ECONNABORTED',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
]);

/** Error codes of answers that did not come in time. */
const TIMEOUT_CODES: ReadonlySet<string> = new Set([
  'ETIMEDOUT',
  'ESOCKETTIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

/**
 * The whole messages browsers give a fetch whose connection failed, refused or dropped, on a bare
 * `TypeError` with no code and no cause. One list for the engine and stormproof/fetch.
 */
export const FETCH_FAILURE_MESSAGES: ReadonlySet<string> = new Set([
  'Failed to fetch', // Chromium (Chrome, Edge, Opera), Debian's chromium 14x included
  'NetworkError when attempting to fetch resource.', // Firefox
  'Load failed', // Safari (WebKit) 15 and later
]);

/** Chromium and Safari may add the host in parentheses: `Failed to fetch (api.example.com)`. */
const FETCH_FAILURE_WITH_HOST = /^(?:Failed to fetch|Load failed) \([^()]*\)$/;

/** Whether `message` is, whole, a browser's message for a fetch whose connection failed. */
export function isFetchFailureMessage(message: string): boolean {
  return FETCH_FAILURE_MESSAGES.has(message) || FETCH_FAILURE_WITH_HOST.test(message);
}

/**
 * TypeErrors that use those words but that stormproof/fetch saw fetch throw for a bad argument:
 * never a network failure. Held weakly; only stormproof/fetch adds to it.
 */
const argumentErrors = new WeakSet<object>();

/** Marks `error` as fetch's refusal of its own arguments, whatever its message says. */
export function markFetchArgumentError(error: object): void {
  argumentErrors.add(error);
}

/**
 * A browser's report of a failed connection, recognised where nothing else can have thrown it:
 * an instance of TypeError itself (not a subclass), whose whole message is one of the browsers'
 * and which carries no cause and no code. A TypeError for a bad argument has another message.
 */
function isBrowserFetchFailure(error: Bag): boolean {
  return (
    Object.getPrototypeOf(error) === TypeError.prototype &&
    !('cause' in error) &&
    error.code === undefined &&
    typeof error.message === 'string' &&
    isFetchFailureMessage(error.message) &&
    !argumentErrors.has(error)
  );
}

const PERMANENT: Verdict = Object.freeze({ retryable: false, kind: 'permanent' });
const TIMEOUT: Verdict = Object.freeze({ retryable: true, kind: 'timeout' });
/** The verdict on a failed connection; the HTTP adapters give it to a failure they know is one. */
export const NETWORK_VERDICT: Verdict = Object.freeze({ retryable: true, kind: 'network' });

type Bag = Record<string, unknown>;

function isObject(value: unknown): value is Bag {
  return (typeof value === 'object' && value !== null) || typeof value === 'function';
}

function isStatus(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 100 && value <= 599;
}

function readStatus(error: Bag): number | undefined {
  if (isStatus(error.status)) return error.status;
  if (isStatus(error.statusCode)) return error.statusCode;
  const response = error.response;
  if (isObject(response) && isStatus(response.status)) return response.status;
  return undefined;
}

/** The error itself and the errors it wraps (`cause`, the first of an AggregateError), nearest first. */
function* chain(error: Bag): Generator<Bag> {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && isObject(current); depth++) {
    yield current;
    const errors = current.errors;
    if (Array.isArray(errors) && isObject(errors[0])) yield errors[0];
    current = current.cause;
  }
}

function judgeTransport(error: Bag): Verdict | undefined {
  for (const link of chain(error)) {
    if (link.name === 'TimeoutError' || link.timedOut === true) return TIMEOUT;
    const code = link.code;
    if (typeof code === 'string') {
      if (TIMEOUT_CODES.has(code)) return TIMEOUT;
      if (NETWORK_CODES.has(code)) return NETWORK_VERDICT;
    }
    if (link.message === 'socket hang up') return NETWORK_VERDICT;
  }
  return undefined;
}

function statusVerdict(status: number): Verdict {
  if (status === 502 || status === 503 || status === 504) {
    return { retryable: true, kind: 'unavailable', status };
  }
  if (status === 429) return { retryable: true, kind: 'throttled', status };
  if (status === 500) return { retryable: true, kind: 'internal', status };
  // RFC 9110 15.5.9: the server closed a connection it had waited on; the client may repeat.
  if (status === 408) return { retryable: true, kind: 'timeout', status };
  return { retryable: false, kind: 'permanent', status };
}

/** Applies the server's own instructions: don't-retry headers, Stripe-Should-Retry, Retry-After. */
function withServerHints(
  verdict: Verdict,
  headers: unknown,
  error: Bag,
  nowMs: number | undefined,
): Verdict {
  let result = verdict;
  if (headers !== undefined) {
    if (
      getHeader(headers, 'x-envoy-overloaded') !== undefined ||
      getHeader(headers, OVERLOADED_HEADER) !== undefined
    ) {
      return { ...result, retryable: false, kind: 'do-not-retry' };
    }
    const stripe = getHeader(headers, 'stripe-should-retry');
    if (stripe === 'false') return { ...result, retryable: false, kind: 'do-not-retry' };
    if (stripe === 'true' && !result.retryable) result = { ...result, retryable: true };
  }
  if (headers !== undefined && result.retryable) {
    const pushbackMs = readPushbackMs(headers);
    if (pushbackMs !== undefined) return { ...result, pushbackMs };
  }
  const explicit = error.retryAfterMs;
  const retryAfterMs =
    typeof explicit === 'number' && Number.isFinite(explicit) && explicit >= 0
      ? explicit
      : headers === undefined
        ? undefined
        : (readRetryAfterMs(headers, nowMs) ??
          // No Retry-After on a 429 or 503: the rate limiter's own reset headers say how long.
          (result.status === 429 || result.status === 503
            ? readRateLimitPauseMs(headers, nowMs)
            : undefined));
  if (retryAfterMs === undefined) return result;
  // RFC 9110 15.5.14: a 413 for a temporary condition SHOULD carry Retry-After; with one, the
  // request may pass after that pause. Without one, it is too large for good.
  if (result.status === 413) {
    return { retryable: true, kind: 'unavailable', status: 413, retryAfterMs };
  }
  return { ...result, retryAfterMs };
}

/**
 * The default classifier: judges a failed attempt by what the error carries.
 *
 * It reads `status`, `statusCode` or `response.status`; `retryAfterMs`; `headers` (or
 * `response.headers`, a `Headers` or a plain object) for `retry-after`, `retry-after-ms` and the
 * don't-retry signals; `name === 'TimeoutError'` or `timedOut: true`; and `code`, along the
 * `cause` chain, and `stormproof-pushback-ms` (an exact wait chosen by the server). A browser's
 * fetch reports a failed connection only as a bare `TypeError` whose message is fixed
 * (`Failed to fetch`, `NetworkError when attempting to fetch resource.`, `Load failed`): such an
 * error, a TypeError itself with no cause and no code, is a dropped connection too. Retries
 * timeouts, dropped connections, 408, 502, 503, 504, 429 (slower), a 413 that carries Retry-After
 * and 500 (once, by default); fails everything else at once.
 *
 * `nowMs` is the wall-clock time used to turn a Retry-After date into a wait; without it,
 * `Date.now()` is read only when an error carries headers to read (a failure's judgement reads no
 * clock otherwise).
 *
 * @example
 * ```ts
 * classify(Object.assign(new Error('busy'), { status: 503, headers: { 'retry-after': '2' } }));
 * // { retryable: true, kind: 'unavailable', status: 503, retryAfterMs: 2000 }
 * ```
 */
export function classify(error: unknown, nowMs?: number): Verdict {
  if (!isObject(error)) return PERMANENT;
  const status = readStatus(error);
  const response = error.response;
  const headers = error.headers ?? (isObject(response) ? response.headers : undefined);
  if (status !== undefined) return withServerHints(statusVerdict(status), headers, error, nowMs);
  const transport = judgeTransport(error);
  if (transport !== undefined) return withServerHints(transport, headers, error, nowMs);
  // Last: a bare TypeError carries no headers, and this is the rarest shape (browsers only).
  if (isBrowserFetchFailure(error)) return NETWORK_VERDICT;
  return PERMANENT;
}
