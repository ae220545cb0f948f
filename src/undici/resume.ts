// Resuming a response body that broke after its head was passed on. The caller already holds the
// response head, so the rest of the body has to come from a range request for the same
// representation: `Range: bytes=<next byte>-<last byte>` with `If-Match: <ETag>`, and only a
// `206 Partial Content` whose Content-Range starts at the next byte, with the same ETag, may be
// spliced on. The rules are RFC 9110's:
//
// - section 14.2 (Range) and 14.4 (Content-Range): one byte range, `bytes first-last/length`;
// - section 15.3.7.3: partial responses may be combined only when they share the same strong
//   validator, so a response without an ETag, or with a weak one (`W/"..."`), is not resumed;
// - section 13.1.1 (If-Match, strong comparison): a changed representation is answered 412;
// - section 14.3: `Accept-Ranges: none` says the server does not take range requests.
//
// undici's RetryHandler (lib/handler/retry-handler.js) resumes the same way but also without an
// ETag or with a weak one (and then sends no If-Match): two versions of a file could then be
// spliced without anyone noticing. Here that is refused, and the reader gets the body's error.

/** Where a resumable response stands: its first byte, its last byte when known, its ETag. */
export interface ResumePoint {
  /** The offset in the representation of the response body's first byte (0 for a 200). */
  readonly start: number;
  /** The offset of its last byte, when the response said (Content-Length or Content-Range). */
  readonly end: number | undefined;
  /** Its strong ETag, sent back as If-Match. */
  readonly etag: string;
}

/**
 * Raised to the reader of a body that could not be resumed because the server's answer to the
 * range request does not continue the same bytes (not a 206, another range, another ETag, a
 * length that does not match), or because the resume request failed with a status. The body's
 * own error (a dropped connection, a body timeout) is what the reader gets when the response
 * was not resumable in the first place or the engine refused the retry.
 */
export class BodyResumeError extends Error {
  override readonly name = 'BodyResumeError';
  /** Stable code for checks that must survive two installed copies of stormproof. */
  readonly code = 'STORMPROOF_BODY_RESUME';
}

type Headers = Record<string, string | string[] | undefined>;

/** One header's value; undefined when absent or sent more than once (which is ambiguous here). */
function one(headers: Headers, name: string): string | undefined {
  const value = headers[name];
  if (Array.isArray(value)) return value.length === 1 ? value[0] : undefined;
  return value;
}

function length(headers: Headers): number | undefined {
  const value = one(headers, 'content-length');
  if (value === undefined || !/^\s*\d{1,15}\s*$/.test(value)) return undefined;
  return Number(value);
}

/** `bytes 3-5/6` or `bytes 3-5/*`: the first and last byte and the full length (if known). */
export function parseContentRange(
  value: string | undefined,
): { first: number; last: number; size: number | undefined } | undefined {
  if (value === undefined) return undefined;
  const match = /^\s*bytes\s+(\d{1,15})-(\d{1,15})\/(\d{1,15}|\*)\s*$/i.exec(value);
  if (match === null) return undefined;
  const first = Number(match[1]);
  const last = Number(match[2]);
  const size = match[3] === '*' ? undefined : Number(match[3]);
  if (last < first || (size !== undefined && last >= size)) return undefined;
  return { first, last, size };
}

function strongEtag(headers: Headers): string | undefined {
  const etag = one(headers, 'etag')?.trim();
  if (etag === undefined || etag === '' || etag.startsWith('W/')) return undefined;
  return etag;
}

/**
 * Whether the body of a response to a GET may be resumed, and from where: a 200 (the whole
 * representation) or a 206 with one byte range, with a strong ETag, and a Content-Length that
 * agrees with its range. Undefined for anything else, which is then never resumed.
 */
export function resumePoint(status: number, headers: Headers): ResumePoint | undefined {
  const etag = strongEtag(headers);
  if (etag === undefined) return undefined;
  if (one(headers, 'accept-ranges')?.trim().toLowerCase() === 'none') return undefined;
  const size = length(headers);
  if (status === 200) {
    if (size === 0) return undefined;
    return { start: 0, end: size === undefined ? undefined : size - 1, etag };
  }
  if (status !== 206) return undefined;
  // A multipart/byteranges 206 has no Content-Range of its own: not resumed.
  const range = parseContentRange(one(headers, 'content-range'));
  if (range === undefined) return undefined;
  if (size !== undefined && size !== range.last - range.first + 1) return undefined;
  return { start: range.first, end: range.last, etag };
}

/** The headers of the request that asks for the rest of the body, from byte `from`. */
export function rangeHeaders(point: ResumePoint, from: number): [string, string][] {
  return [
    ['range', `bytes=${from}-${point.end ?? ''}`],
    ['if-match', point.etag],
  ];
}

/**
 * Checks the head of the answer to a range request that resumes `point` from byte `from`. Returns
 * the point to continue with (its last byte known now), or the error that ends the body.
 */
export function checkResumed(
  point: ResumePoint,
  from: number,
  status: number,
  headers: Headers,
): ResumePoint | BodyResumeError {
  const asked = `Range: bytes=${from}-${point.end ?? ''}`;
  if (status !== 206) {
    return new BodyResumeError(
      `stormproof: the body broke at byte ${from} and could not be resumed: the server answered ${status} to "${asked}" instead of 206 Partial Content`,
    );
  }
  const etag = one(headers, 'etag')?.trim();
  if (etag !== point.etag) {
    return new BodyResumeError(
      `stormproof: the body broke at byte ${from} and could not be resumed: the ETag changed from ${point.etag} to ${etag ?? 'none'}`,
    );
  }
  const raw = one(headers, 'content-range');
  const range = parseContentRange(raw);
  if (
    range === undefined ||
    range.first !== from ||
    (point.end !== undefined && range.last !== point.end)
  ) {
    return new BodyResumeError(
      `stormproof: the body broke at byte ${from} and could not be resumed: the server answered "${asked}" with Content-Range ${raw === undefined ? 'missing' : `"${raw}"`}`,
    );
  }
  const size = length(headers);
  if (size !== undefined && size !== range.last - range.first + 1) {
    return new BodyResumeError(
      `stormproof: the body broke at byte ${from} and could not be resumed: Content-Length ${size} does not match Content-Range "${raw}"`,
    );
  }
  return point.end === undefined ? { ...point, end: range.last } : point;
}
