// gRPC status codes by number and by name, and the `retryableStatusCodes` check that the
// interceptor and the service config share. The table is the fixed list of the gRPC spec
// (doc/statuscodes.md), so the service config needs no import of @grpc/grpc-js.
import type { FailureKind } from '../core/classify.js';
import { show } from '../core/validate.js';

/** The gRPC status names, indexed by code (0 to 16). */
const NAMES = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
] as const;

/** A gRPC status name in upper case, as the spec writes it. */
export type StatusName = (typeof NAMES)[number];

/** A status code as a number (14) or a name in any case (`'UNAVAILABLE'`, `'unavailable'`). */
export type StatusCodeLike = number | StatusName | Lowercase<StatusName> | (string & {});

export const CODE = {
  OK: 0,
  CANCELLED: 1,
  DEADLINE_EXCEEDED: 4,
  RESOURCE_EXHAUSTED: 8,
  UNAVAILABLE: 14,
} as const;

/** The engine's kind of failure for a retryable (or non-fatal) status: it decides the backoff's base. */
export function failureKindOf(code: number): FailureKind {
  if (code === CODE.RESOURCE_EXHAUSTED) return 'throttled';
  if (code === CODE.DEADLINE_EXCEEDED) return 'timeout';
  return 'unavailable';
}

/** The upper-case name of `code`. */
export function statusName(code: number): StatusName | undefined {
  return NAMES[code];
}

/**
 * Checks a `retryableStatusCodes` list (or, named `name`, A6's `nonFatalStatusCodes`, which may
 * be empty): non-empty (gRFC A6), each entry a code in [0, 16] or a name in any case, OK
 * excluded (a success is never retried). Returns the codes, deduplicated.
 */
export function resolveStatusCodes(
  owner: string,
  value: unknown,
  name = 'retryableStatusCodes',
  allowEmpty = false,
): ReadonlySet<number> {
  if (!Array.isArray(value)) {
    throw new TypeError(
      `stormproof: ${owner} ${name} must be an array of status codes or names, got ${show(value)}`,
    );
  }
  if (value.length === 0 && !allowEmpty) {
    throw new RangeError(
      `stormproof: ${owner} retryableStatusCodes must not be empty (gRFC A6); to never retry, set maxAttempts: 1`,
    );
  }
  const codes = new Set<number>();
  for (const [index, entry] of value.entries()) {
    const code =
      typeof entry === 'number'
        ? Number.isInteger(entry) && entry >= 0 && entry < NAMES.length
          ? entry
          : undefined
        : typeof entry === 'string'
          ? NAMES.indexOf(entry.toUpperCase() as StatusName)
          : undefined;
    if (code === undefined || code < 0) {
      throw new RangeError(
        `stormproof: ${owner} ${name}[${index}] must be a gRPC status code (0 to 16) or its name, got ${show(entry)}`,
      );
    }
    if (code === CODE.OK) {
      throw new RangeError(
        `stormproof: ${owner} ${name}[${index}] must not be OK: a success is never retried`,
      );
    }
    codes.add(code);
  }
  return codes;
}
