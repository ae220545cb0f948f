// Shared checks for option validation. Every message names the option and the value at fault,
// so a bad config fails at construction with a sentence the user can act on.

/** Renders a value for an error message: strings quoted, everything else as JavaScript would print it. */
export function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'function') return 'a function';
  if (value === null || typeof value !== 'object') return String(value);
  try {
    return JSON.stringify(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/**
 * An option's value, or `fallback` when it was left out. Only `undefined` means "use the default":
 * `null` is passed on, so the option's own check rejects it with the option's name.
 */
export function given<T>(value: unknown, fallback: T): unknown {
  return value === undefined ? fallback : value;
}

/** A finite number within [min, max]; `integer` also demands a whole number. */
export function checkNumber(
  owner: string,
  name: string,
  value: unknown,
  { min = -Infinity, max = Infinity, integer = false, minExclusive = false } = {},
): number {
  const what = integer ? 'an integer' : 'a finite number';
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new TypeError(`stormproof: ${owner} ${name} must be ${what}, got ${show(value)}`);
  }
  if (integer && !Number.isInteger(value)) {
    throw new RangeError(`stormproof: ${owner} ${name} must be ${what}, got ${show(value)}`);
  }
  const tooSmall = minExclusive ? value <= min : value < min;
  if (tooSmall || value > max) {
    const low = Number.isFinite(min) ? `${minExclusive ? '>' : '>='} ${min}` : '';
    const high = Number.isFinite(max) ? `<= ${max}` : '';
    const range = [low, high].filter(Boolean).join(' and ');
    throw new RangeError(`stormproof: ${owner} ${name} must be ${range}, got ${show(value)}`);
  }
  return value;
}

/** Edit distance between two short names (Levenshtein), for "did you mean". */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]!;
      row[j] = Math.min(above + 1, row[j - 1]! + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length]!;
}

/**
 * The candidate nearest to a mistyped `name` (case ignored), or undefined when none is close
 * enough to be what was meant.
 */
export function closest(name: string, candidates: readonly string[]): string | undefined {
  const wanted = name.toLowerCase();
  let best: string | undefined;
  let bestScore = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    const score = distance(wanted, candidate.toLowerCase());
    if (score < bestScore) {
      bestScore = score;
      best = candidate;
    }
  }
  return bestScore <= Math.max(2, Math.floor(wanted.length / 3)) ? best : undefined;
}

/** Throws on keys the options type does not have, so a typo is an error, not a silent default. */
export function checkKnownKeys(owner: string, options: object, known: readonly string[]): void {
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) {
      const near = closest(key, known);
      const hint = near ? ` (did you mean ${near}?)` : '';
      throw new TypeError(`stormproof: ${owner} has no option ${show(key)}${hint}`);
    }
  }
}

/**
 * Throws a TypeError naming the first option set to `null`: only `undefined` means "use the
 * default", so a `null` (from JSON, say) is a mistake to report, never a default.
 */
export function refuseNulls(owner: string, options: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(options)) {
    if (value === null) {
      throw new TypeError(
        `stormproof: ${owner} ${key} must not be null (leave it out for the default)`,
      );
    }
  }
}

/** Options must be a plain object (or absent). */
export function checkOptionsObject(owner: string, options: unknown): Record<string, unknown> {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(`stormproof: ${owner} options must be an object, got ${show(options)}`);
  }
  return options as Record<string, unknown>;
}

/** Whether `value` is a promise or any other thenable (an object or function with `then`). */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
