// What createFetch needs to know about a request before its first attempt: is it safe to repeat
// (RFC 9110 section 9.2.2, Idempotency-Key), and can its body be sent twice? Runtime-agnostic: no
// Node imports or globals, only the web platform (Headers, crypto, ReadableStream).

/**
 * createFetch's total time for one call, in ms: two attempts of {@link FETCH_ATTEMPT_TIMEOUT_MS}.
 * See docs/fetch.md for why.
 */
export const FETCH_DEADLINE_MS = 30_000;

/**
 * createFetch's time limit of one attempt, in ms: Envoy's default route timeout, and above ky's
 * 10 s request timeout, so an endpoint that answers within 10 s is never cut off.
 */
export const FETCH_ATTEMPT_TIMEOUT_MS = 15_000;

/**
 * The methods retried by default: the idempotent ones of RFC 9110 section 9.2.2 (PUT, DELETE and
 * the safe GET, HEAD, OPTIONS, TRACE) and QUERY, safe and idempotent by RFC 10008. POST and
 * PATCH are not on the list: repeating them can repeat their effect.
 */
export const DEFAULT_RETRY_METHODS: readonly string[] = Object.freeze([
  'GET',
  'HEAD',
  'OPTIONS',
  'TRACE',
  'PUT',
  'DELETE',
  'QUERY',
]);

/**
 * The request header that makes any method safe to retry (IETF httpapi Idempotency-Key draft):
 * one key per logical operation, the same on every attempt.
 */
export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';

/**
 * The methods createFetch hedges without an `Idempotency-Key`: the reads. PUT and DELETE are
 * retried but not hedged: two copies in flight at once may land in either order.
 */
export const HEDGED_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD']);

/**
 * The request header that marks a hedged copy (its number: `1` for the first hedge of an
 * attempt), so the server can tell it from a retry. Sent with the attempt header, never without.
 */
export const HEDGE_HEADER = 'stormproof-hedge';

/** The methods to which `idempotencyKey: 'auto'` adds a key. */
export const AUTO_KEY_METHODS: ReadonlySet<string> = new Set(['POST', 'PATCH']);

/** An RFC 9110 token (section 5.6.2): what a method or a header name may be made of. */
export const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * A fresh idempotency key as a Structured Field String (RFC 9651): a version 4 UUID in double
 * quotes, `"8e03978e-40d5-43e8-bc93-6894a57f9324"`. Uses `crypto.randomUUID`, or
 * `crypto.getRandomValues` where `randomUUID` is missing (a browser page served over plain http).
 */
export function newIdempotencyKey(): string {
  const crypto = globalThis.crypto;
  if (typeof crypto.randomUUID === 'function') return `"${crypto.randomUUID()}"`;
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x40; // version 4
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80; // variant 10
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  return `"${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}"`;
}

/**
 * Whether a `RequestInit.body` can be sent again, unchanged, on a retry: absent, a string, an
 * ArrayBuffer or a view of one, a Blob, FormData, URLSearchParams can; a ReadableStream or an
 * async iterable (a Node stream, an async generator) cannot, since its first send consumes it.
 * Reading a stream into memory to resend it is deliberately not done.
 */
export function isReplayableBody(body: unknown): boolean {
  if (typeof body !== 'object' || body === null) return true;
  const candidate = body as { getReader?: unknown; [Symbol.asyncIterator]?: unknown };
  return (
    typeof candidate.getReader !== 'function' &&
    typeof candidate[Symbol.asyncIterator] !== 'function'
  );
}

/**
 * Whether `input` is a Request. Duck-typed rather than `instanceof`, so a Request of another
 * fetch implementation (undici's npm package, a polyfill) is recognised too.
 */
export function isRequest(input: unknown): input is Request {
  if (typeof input !== 'object' || input === null) return false;
  const r = input as Partial<Record<keyof Request, unknown>>;
  return typeof r.clone === 'function' && typeof r.url === 'string' && typeof r.method === 'string';
}

const noop = () => {};

/**
 * Cancels a body nobody will read, so its connection is freed instead of waiting for the garbage
 * collector. A body already locked (someone reads it) is left alone. Never throws.
 */
export function cancelBody(message: { readonly body: ReadableStream<Uint8Array> | null }): void {
  try {
    const body = message.body;
    if (body != null && !body.locked) body.cancel().then(noop, noop);
  } catch {
    // A body that cannot be cancelled (a test double, a polyfill) is left to the collector.
  }
}
