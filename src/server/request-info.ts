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
 * `x-envoy-attempt-count` > 1, or `amz-sdk-request: attempt=N` with N > 1.
 */
export function isRetry(header: HeaderReader): boolean {
  if (digits(header(ATTEMPT_HEADER)?.trim()) > 1) return true;
  if (digits(header('grpc-previous-rpc-attempts')?.trim()) >= 1) return true;
  if (digits(header('x-envoy-attempt-count')?.trim()) > 1) return true;
  const amz = header('amz-sdk-request');
  if (amz) {
    for (const part of amz.split(';')) {
      const [key, value] = part.split('=');
      if (key?.trim().toLowerCase() === 'attempt') return digits(value?.trim()) > 1;
    }
  }
  return false;
}

/** The criticality a header names (case and `-`/`_` ignored), or `fallback`. */
export function readCriticality(value: string | null | undefined, fallback: number): number {
  if (!value) return fallback;
  const level = CRITICALITY_LEVELS.indexOf(
    value.trim().toLowerCase().replaceAll('-', '_') as Criticality,
  );
  return level < 0 ? fallback : level;
}
