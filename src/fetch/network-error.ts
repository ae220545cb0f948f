// A browser's fetch says nothing about a failed connection but a bare TypeError: no code, no
// cause. Its message is the only sign, and a TypeError for a bad argument (a malformed URL, a
// forbidden header) is also a TypeError. So a bare TypeError counts as a network error only
// when its message is one a browser uses for a failed connection AND the arguments of the call
// are valid (a Request can be built from them): then nothing but the network was at fault.

/** The whole messages browsers give a fetch whose connection failed, refused or dropped. */
const NETWORK_MESSAGES: ReadonlySet<string> = new Set([
  'Failed to fetch', // Chromium (Chrome, Edge, Opera), Debian's chromium 14x included
  'NetworkError when attempting to fetch resource.', // Firefox
  'Load failed', // Safari (WebKit) 15 and later
]);

/** Chromium and Safari may add the host in parentheses: `Failed to fetch (api.example.com)`. */
const WITH_HOST = /^(?:Failed to fetch|Load failed) \([^()]*\)$/;

/** A TypeError with nothing but a message: what a browser's fetch rejects with. */
function isBareTypeError(error: unknown): error is TypeError {
  if (typeof error !== 'object' || error === null) return false;
  const e = error as { name?: unknown; message?: unknown; code?: unknown; cause?: unknown };
  return (
    e.name === 'TypeError' &&
    typeof e.message === 'string' &&
    e.code === undefined &&
    e.cause === undefined
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
 * report of a failed connection, and so worth another try.
 *
 * @example
 * ```ts
 * isBrowserNetworkError(new TypeError('Failed to fetch'), '/api', 'GET', undefined); // true
 * isBrowserNetworkError(new TypeError('Failed to fetch'), '/api', 'BAD METHOD', undefined); // false
 * ```
 */
export function isBrowserNetworkError(
  error: unknown,
  url: string | URL,
  method: string,
  headers: RequestInit['headers'],
): boolean {
  if (!isBareTypeError(error)) return false;
  const { message } = error;
  if (!NETWORK_MESSAGES.has(message) && !WITH_HOST.test(message)) return false;
  return argumentsAreValid(url, method, headers);
}
