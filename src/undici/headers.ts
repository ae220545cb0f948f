// Reading and adding request headers in every shape undici's dispatch options take them (an
// object, as undici's fetch passes them; a flat array; an iterable of pairs), and the attempt
// markers that SDKs retrying by themselves put on their requests.
import { getHeader } from '../core/retry-after.js';
import type { UndiciHeaders } from './types.js';

function decode(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value instanceof Uint8Array) return new TextDecoder('latin1').decode(value);
  if (Array.isArray(value)) return decode(value[0]);
  return undefined;
}

/** One request header (`name` in lower case), whatever the shape; undefined when absent. */
export function readHeader(headers: unknown, name: string): string | undefined {
  if (headers == null || typeof headers !== 'object') return undefined;
  if (Array.isArray(headers)) {
    // A flat array [name, value, name, value, ...], or (rarely) an array of pairs.
    if (headers.length > 0 && Array.isArray(headers[0])) return readPairs(headers, name);
    for (let i = 0; i + 1 < headers.length; i += 2) {
      if (decode(headers[i])?.toLowerCase() === name) return decode(headers[i + 1]);
    }
    return undefined;
  }
  if (typeof (headers as { [Symbol.iterator]?: unknown })[Symbol.iterator] === 'function') {
    if (typeof (headers as { get?: unknown }).get === 'function') return getHeader(headers, name);
    return readPairs(headers as Iterable<unknown>, name);
  }
  return getHeader(headers, name);
}

function readPairs(pairs: Iterable<unknown>, name: string): string | undefined {
  for (const pair of pairs) {
    if (Array.isArray(pair) && decode(pair[0])?.toLowerCase() === name) return decode(pair[1]);
  }
  return undefined;
}

/**
 * A copy of `headers` with `name` (lower case) set to `value`, in the shape undici accepts: an
 * object stays an object (other spellings of the name dropped), a flat array stays a flat array,
 * an iterable of pairs becomes an array of pairs. The caller's headers are never changed.
 */
export function withHeader(headers: unknown, name: string, value: string): UndiciHeaders {
  if (headers == null) return { [name]: value };
  if (Array.isArray(headers)) {
    if (headers.length > 0 && Array.isArray(headers[0])) return withPair(headers, name, value);
    const flat: (string | Uint8Array)[] = [];
    for (let i = 0; i + 1 < headers.length; i += 2) {
      if (decode(headers[i])?.toLowerCase() !== name) flat.push(headers[i], headers[i + 1]);
    }
    flat.push(name, value);
    return flat;
  }
  if (typeof (headers as { [Symbol.iterator]?: unknown })[Symbol.iterator] === 'function') {
    return withPair(headers as Iterable<unknown>, name, value);
  }
  const copy: Record<string, string | readonly string[] | undefined> = {};
  for (const [key, v] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (key.toLowerCase() !== name) copy[key] = v;
  }
  copy[name] = value;
  return copy;
}

function withPair(pairs: Iterable<unknown>, name: string, value: string): [string, string][] {
  const out: [string, string][] = [];
  for (const pair of pairs) {
    if (Array.isArray(pair) && decode(pair[0])?.toLowerCase() !== name) {
      out.push(pair as [string, string]);
    }
  }
  out.push([name, value]);
  return out;
}

/** `amz-sdk-request: attempt=2; max=3`: the attempt number, or undefined. */
const AMZ_ATTEMPT = /(?:^|;)\s*attempt\s*=\s*(\d{1,6})\s*(?:;|$)/i;

/**
 * The SDK attempt markers read by default: the header, and how to read from its value that a
 * request is the SDK's own retry rather than its first attempt.
 *
 * - `x-stainless-retry-count`: every Stainless-generated SDK (OpenAI, Anthropic, Cloudflare, ...)
 *   sends it, `0` on the first attempt, `1` and up on its retries.
 * - `amz-sdk-request`: the AWS SDKs (smithy), `attempt=1; max=3` on the first attempt.
 */
export const SDK_ATTEMPT_HEADERS: readonly string[] = Object.freeze([
  'x-stainless-retry-count',
  'amz-sdk-request',
]);

/**
 * Whether a request's headers say that it is already a retry made by a layer above: an SDK's
 * (`x-stainless-retry-count` > 0, `amz-sdk-request: attempt=2`) or a stormproof client's
 * (`attemptHeader` >= 2, e.g. `stormproof-attempt: 2` from stormproof/fetch). Such a request is
 * sent once: the layer above retries, this one does not retry its retry (RFC 9110 section
 * 9.2.2: "A client SHOULD NOT automatically retry a failed automatic retry").
 *
 * @example
 * ```ts
 * isRetryFromAbove({ 'x-stainless-retry-count': '1' }, 'stormproof-attempt'); // true
 * isRetryFromAbove({ 'amz-sdk-request': 'attempt=1; max=3' }, 'stormproof-attempt'); // false
 * ```
 */
export function isRetryFromAbove(headers: unknown, attemptHeader: string | undefined): boolean {
  const stainless = readHeader(headers, 'x-stainless-retry-count');
  if (stainless !== undefined && /^\s*\d+\s*$/.test(stainless) && Number(stainless) > 0) {
    return true;
  }
  const amz = readHeader(headers, 'amz-sdk-request');
  const attempt = amz === undefined ? undefined : AMZ_ATTEMPT.exec(amz)?.[1];
  if (attempt !== undefined && Number(attempt) > 1) return true;
  const own = readHeader(headers, attemptHeader ?? 'stormproof-attempt');
  return own !== undefined && /^\s*\d+\s*$/.test(own) && Number(own) > 1;
}
