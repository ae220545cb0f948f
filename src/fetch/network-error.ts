// A browser's fetch says nothing about a failed connection but a bare TypeError: no code, no
// cause. Deno's says `fetch failed`, caused by an Error with no code. The message is the only
// sign, and a TypeError for a bad argument (a malformed URL, a forbidden header) is also a
// TypeError. So such a TypeError counts as a network error only when its message is one these
// runtimes use for a failed connection AND the arguments of the call are valid (a Request can
// be built from them): then nothing but the network was at fault. workerd (Cloudflare Workers)
// throws a plain Error, `Network connection lost.`, which is read the same way. (Node's and
// Bun's errors carry a code, which the engine's classifier reads.) The browsers' messages are
// the engine's list (core/classify.ts), which also retries them under a bare retry().
import { isFetchFailureMessage, markFetchArgumentError } from '../core/classify.js';

/** workerd's whole message for a connection refused or dropped; its error is a plain Error. */
const WORKERD_LOST = 'Network connection lost.';

/** How Deno begins the message of a request that could not be sent (connect, reset, DNS). */
const DENO_SEND_ERROR = 'error sending request for url';

interface ErrorShape {
  readonly name?: unknown;
  readonly message?: unknown;
  readonly code?: unknown;
  readonly cause?: unknown;
}

/** An object with no `code`: the engine's classifier has nothing to read on it. */
function withoutCode(value: unknown): value is ErrorShape {
  return typeof value === 'object' && value !== null && (value as ErrorShape).code === undefined;
}

/** The message of a failed connection, as a browser or Deno words it. */
function saysConnectionFailed(error: ErrorShape): boolean {
  const { message, cause } = error;
  if (typeof message !== 'string') return false;
  if (cause === undefined) {
    // Browsers; and Deno 1, which put its own message on the TypeError itself.
    return isFetchFailureMessage(message) || message.startsWith(DENO_SEND_ERROR);
  }
  // Deno 2: TypeError('fetch failed') caused by `error sending request for url (...): ...`.
  return (
    message === 'fetch failed' &&
    withoutCode(cause) &&
    typeof cause.message === 'string' &&
    cause.message.startsWith(DENO_SEND_ERROR)
  );
}

/**
 * Whether the arguments of a fetch call are valid, as `fetch` itself checks them: a Request can
 * be built from the URL, method and headers. Called only after a failure, so it costs nothing
 * on the path where requests succeed. The body is left out: building a Request from it could
 * consume a stream, and a body fetch would refuse fails before any connection anyway.
 */
function argumentsAreValid(url: string | URL, method: string, headers: RequestInit['headers']) {
  try {
    new Request(url, headers === undefined ? { method } : { method, headers });
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether `error`, thrown by a fetch call made with `url`, `method` and `headers`, is a browser's
 * (or Deno's) report of a failed connection, and so worth another try.
 *
 * @example
 * ```ts
 * isFetchNetworkError(new TypeError('Failed to fetch'), '/api', 'GET', undefined); // true
 * isFetchNetworkError(new TypeError('Failed to fetch'), '/api', 'BAD METHOD', undefined); // false
 * ```
 */
export function isFetchNetworkError(
  error: unknown,
  url: string | URL,
  method: string,
  headers: RequestInit['headers'],
): boolean {
  if (!withoutCode(error)) return false;
  const workerdLost =
    error.name === 'Error' && error.message === WORKERD_LOST && error.cause === undefined;
  if (!workerdLost && (error.name !== 'TypeError' || !saysConnectionFailed(error))) return false;
  if (argumentsAreValid(url, method, headers)) return true;
  // Those words, but fetch refused its own arguments: the engine must not read them as a
  // failed connection either.
  markFetchArgumentError(error);
  return false;
}
