// What the server reads from a request's headers before admitting it, and nothing more: is it
// a retry, and how critical is it. Malformed values are ignored (a first attempt, default
// criticality).

/** Reads one request header by lower-case name; missing is `null` or `undefined`. */
export type HeaderReader = (name: string) => string | null | undefined;

/** The attempt header stormproof clients send on retries: 2, 3, ... (absent on the first). */
export const ATTEMPT_HEADER = 'stormproof-attempt';

/**
 * The header a stormproof server sends with a wait it has already spread: a stormproof client
 * waits exactly this many milliseconds, adds no jitter of its own, and restarts its backoff.
 */
export const PUSHBACK_HEADER = 'stormproof-pushback-ms';

/**
 * The Google SRE book's four criticality levels, most important first. A server sheds all
 * requests of a lower level before it rejects any of a higher one.
 */
export const CRITICALITY_LEVELS = [
  'critical_plus',
  'critical',
  'sheddable_plus',
  'sheddable',
] as const;
export type Criticality = (typeof CRITICALITY_LEVELS)[number];

/**
 * The first value of a header that may have been repeated: Node and fetch's `Headers` join the
 * lines of a repeated header with ", " (RFC 9110, section 5.3), so "2, 3" is the first value "2".
 */
function firstValue(value: string | null | undefined): string | undefined {
  if (value == null) return undefined;
  const comma = value.indexOf(',');
  return (comma < 0 ? value : value.slice(0, comma)).trim();
}

/** A whole number made only of digits (a header value), or NaN. */
function digits(value: string | null | undefined): number {
  if (value == null || value.length === 0 || value.length > 9) return Number.NaN;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 48 || c > 57) return Number.NaN;
  }
  return Number(value);
}

/**
 * Whether a request is a retry: `stormproof-attempt` > 1, `grpc-previous-rpc-attempts` >= 1,
 * `x-envoy-attempt-count` > 1, or `amz-sdk-request: attempt=N` with N > 1. A repeated header is
 * read by its first value.
 */
export function isRetry(header: HeaderReader): boolean {
  if (digits(firstValue(header(ATTEMPT_HEADER))) > 1) return true;
  if (digits(firstValue(header('grpc-previous-rpc-attempts'))) >= 1) return true;
  if (digits(firstValue(header('x-envoy-attempt-count'))) > 1) return true;
  const amz = firstValue(header('amz-sdk-request'));
  if (amz) {
    for (const part of amz.split(';')) {
      const [key, value] = part.split('=');
      if (key?.trim().toLowerCase() === 'attempt') return digits(value?.trim()) > 1;
    }
  }
  return false;
}

/**
 * The criticality a header names (case and `-`/`_` ignored; a repeated header by its first
 * value), or `fallback`.
 */
export function readCriticality(value: string | null | undefined, fallback: number): number {
  const first = firstValue(value);
  if (!first) return fallback;
  const level = CRITICALITY_LEVELS.indexOf(first.toLowerCase().replaceAll('-', '_') as Criticality);
  return level < 0 ? fallback : level;
}
