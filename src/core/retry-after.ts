// Reads how long a server asked us to wait: the standard Retry-After header (RFC 9110 section
// 10.2.3), which is delay-seconds or an HTTP-date (section 5.6.7), and the non-standard
// `retry-after-ms`. Runtime-agnostic: no Node imports or globals. Nothing here throws: a value
// we cannot read is ignored (undefined), so the retry falls back to its own jittered backoff.

/** `1*DIGIT` (RFC 9110 section 10.2.3). `\d` is ASCII 0-9 only, so no other scripts' digits. */
const DELAY_SECONDS = /^\d+$/;
/** `retry-after-ms`: no spec, so the plainest decimal: digits with an optional fraction. */
const DECIMAL_MS = /^\d+(?:\.\d+)?$/;

// The three HTTP-date forms (RFC 9110 section 5.6.7). The name groups match any letters; the
// tables below then accept only the exact, case-sensitive names of the grammar.
/** IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`. */
const IMF_FIXDATE = /^([A-Za-z]{3}), (\d\d) ([A-Za-z]{3}) (\d{4}) (\d\d):(\d\d):(\d\d) GMT$/;
/** Obsolete RFC 850 form: `Sunday, 06-Nov-94 08:49:37 GMT`. */
const RFC850_DATE = /^([A-Za-z]{6,9}), (\d\d)-([A-Za-z]{3})-(\d\d) (\d\d):(\d\d):(\d\d) GMT$/;
/** asctime form: `Sun Nov  6 08:49:37 1994`; the day is 2DIGIT or SP DIGIT. */
const ASCTIME_DATE = /^([A-Za-z]{3}) ([A-Za-z]{3}) (\d\d| \d) (\d\d):(\d\d):(\d\d) (\d{4})$/;

// Indexed like Date#getUTCDay and Date#getUTCMonth.
const DAY_NAMES: readonly string[] = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const LONG_DAY_NAMES: readonly string[] = [
  'Sunday',
  'Monday',
  'Tuesday',
  'Wednesday',
  'Thursday',
  'Friday',
  'Saturday',
];
const MONTH_NAMES: readonly string[] = [
  'Jan',
  'Feb',
  'Mar',
  'Apr',
  'May',
  'Jun',
  'Jul',
  'Aug',
  'Sep',
  'Oct',
  'Nov',
  'Dec',
];

/**
 * Strips optional whitespace (OWS: spaces and tabs, RFC 9110 section 5.6.3) from both ends. A
 * loop rather than a regex, so a long run of spaces cannot make the match backtrack for ages.
 */
function trimOws(text: string): string {
  const isOws = (code: number) => code === 0x20 || code === 0x09;
  let start = 0;
  let end = text.length;
  while (start < end && isOws(text.charCodeAt(start))) start++;
  while (end > start && isOws(text.charCodeAt(end - 1))) end--;
  return text.slice(start, end);
}

/**
 * The year of an RFC 850 date with a two-digit year (RFC 9110 section 5.6.7): "a timestamp that
 * appears to be more than 50 years in the future" is read as "the most recent year in the past
 * that had the same last two digits". The rule is about the whole timestamp, not the year alone:
 * with now = 2026-01-01, `01-Jan-76 00:00:01` is 50 years and one second ahead, so it is 1976.
 * The result is the latest year with those digits whose timestamp is at most 50 years ahead.
 */
function rfc850Year(
  twoDigits: number,
  nowMs: number,
  month: number,
  day: number,
  hour: number,
  minute: number,
  second: number,
): number | undefined {
  const limit = new Date(nowMs);
  limit.setUTCFullYear(limit.getUTCFullYear() + 50);
  const limitYear = limit.getUTCFullYear();
  const year = limitYear - ((((limitYear - twoDigits) % 100) + 100) % 100);
  const at = toEpochMs(undefined, year, month, day, hour, minute, second);
  if (at === undefined) return undefined;
  return at > limit.getTime() ? year - 100 : year;
}

/**
 * The epoch ms of a UTC date and time, or undefined if no such instant exists: Feb 30, hour 24,
 * minute 60, or a weekday name that does not match the date (the name is redundant, so a
 * mismatch means the value is garbled and not worth pausing for).
 *
 * Second 60 is accepted only as 23:59:60: RFC 9110 section 5.6.7 gives time-of-day the range
 * "00:00:00 - 23:59:60 (leap second)", and UTC inserts leap seconds only as the last second of
 * a day. JS time has no leap seconds, so it is read as the following midnight.
 */
function toEpochMs(
  weekday: number | undefined,
  year: number,
  month: number,
  day: number,
  hour: number,
  minute: number,
  second: number,
): number | undefined {
  if ((weekday !== undefined && weekday < 0) || month < 0 || hour > 23 || minute > 59) {
    return undefined;
  }
  if (second > 59 && !(second === 60 && hour === 23 && minute === 59)) return undefined;
  const date = new Date(0);
  // setUTCFullYear, not Date.UTC: Date.UTC reads years 0-99 as 1900-1999.
  date.setUTCFullYear(year, month, day);
  // An impossible day (Feb 30, day 00) rolls into another month.
  if (date.getUTCMonth() !== month || date.getUTCDate() !== day) return undefined;
  if (weekday !== undefined && date.getUTCDay() !== weekday) return undefined;
  return date.getTime() + ((hour * 60 + minute) * 60 + second) * 1000;
}

/** Parses an HTTP-date in any of its three forms (RFC 9110 section 5.6.7) to epoch ms. */
function parseHttpDate(text: string, nowMs: number): number | undefined {
  const imf = IMF_FIXDATE.exec(text);
  if (imf) {
    const [, wd = '', dd, mon = '', yyyy, hh, mi, ss] = imf;
    return toEpochMs(
      DAY_NAMES.indexOf(wd),
      Number(yyyy),
      MONTH_NAMES.indexOf(mon),
      Number(dd),
      Number(hh),
      Number(mi),
      Number(ss),
    );
  }
  const rfc850 = RFC850_DATE.exec(text);
  if (rfc850) {
    const [, wd = '', dd, mon = '', yy, hh, mi, ss] = rfc850;
    const fields = [
      MONTH_NAMES.indexOf(mon),
      Number(dd),
      Number(hh),
      Number(mi),
      Number(ss),
    ] as const;
    const year = rfc850Year(Number(yy), nowMs, ...fields);
    // The weekday is checked against the century the rule chose.
    return year === undefined ? undefined : toEpochMs(LONG_DAY_NAMES.indexOf(wd), year, ...fields);
  }
  const asctime = ASCTIME_DATE.exec(text);
  if (asctime) {
    const [, wd = '', mon = '', dd, hh, mi, ss, yyyy] = asctime;
    return toEpochMs(
      DAY_NAMES.indexOf(wd),
      Number(yyyy),
      MONTH_NAMES.indexOf(mon),
      Number(dd), // Number(' 6') is 6: JS ignores the leading space of SP DIGIT.
      Number(hh),
      Number(mi),
      Number(ss),
    );
  }
  return undefined;
}

/**
 * Parses a `Retry-After` header value (RFC 9110 section 10.2.3) into the milliseconds to wait.
 *
 * - delay-seconds, `1*DIGIT`: a non-negative decimal integer of seconds; `"0"` is 0 (no pause).
 *   A value so large that its milliseconds are not a finite number is undefined; any finite
 *   value is returned as is (the retry deadline bounds it).
 * - HTTP-date (section 5.6.7), all three forms a recipient must accept: IMF-fixdate
 *   (`Sun, 06 Nov 1994 08:49:37 GMT`), the obsolete RFC 850 form
 *   (`Sunday, 06-Nov-94 08:49:37 GMT`, whose two-digit year is read against `nowMs`: a
 *   timestamp more than 50 years ahead means the previous century) and asctime
 *   (`Sun Nov  6 08:49:37 1994`). The result is the date minus `nowMs`; a date now or in the
 *   past gives 0.
 *
 * The date is case-sensitive and has exactly the spaces of the grammar (section 5.6.7). It is
 * rejected when impossible (Feb 30, hour 24, minute 60) or when its weekday does not match its
 * date; second 60 is accepted only as the leap second 23:59:60. Spaces and tabs around the
 * whole value are ignored (OWS, section 5.6.3).
 *
 * @param value - The header value.
 * @param nowMs - The current wall-clock time in epoch ms (HTTP dates are wall time); defaults to
 *   `Date.now()`. Used only for dates.
 * @returns Milliseconds to wait (finite, >= 0), or undefined for anything malformed (negative,
 *   `1.5`, `+5`, empty, garbage). Never throws.
 *
 * @example
 * ```ts
 * parseRetryAfter('120'); // 120000
 * parseRetryAfter('0'); // 0
 * const now = Date.UTC(1994, 10, 6, 8, 49, 7);
 * parseRetryAfter('Sun, 06 Nov 1994 08:49:37 GMT', now); // 30000
 * parseRetryAfter('soon'); // undefined
 * ```
 */
export function parseRetryAfter(value: string, nowMs: number = Date.now()): number | undefined {
  if (typeof value !== 'string') return undefined;
  const text = trimOws(value);
  if (DELAY_SECONDS.test(text)) {
    const ms = Number(text) * 1000;
    return Number.isFinite(ms) ? ms : undefined;
  }
  if (!Number.isFinite(nowMs)) return undefined;
  const at = parseHttpDate(text, nowMs);
  return at === undefined ? undefined : Math.max(0, at - nowMs);
}

/**
 * Parses the non-standard `retry-after-ms` header (milliseconds, sent by some large public APIs
 * alongside `Retry-After` for a finer-grained pause).
 *
 * @param value - The header value: a non-negative decimal number, with or without a fractional
 *   part (`"1500"`, `"250.5"`); spaces and tabs around it are ignored.
 * @returns The milliseconds (finite, >= 0), or undefined for anything else (negative, `"1e3"`,
 *   `".5"`, empty, garbage). Never throws.
 *
 * @example
 * ```ts
 * parseRetryAfterMs('250.5'); // 250.5
 * parseRetryAfterMs('-1'); // undefined
 * ```
 */
export function parseRetryAfterMs(value: string): number | undefined {
  if (typeof value !== 'string') return undefined;
  const text = trimOws(value);
  if (!DECIMAL_MS.test(text)) return undefined;
  const ms = Number(text);
  return Number.isFinite(ms) ? ms : undefined;
}

/**
 * The response headers {@link getHeader} understands: a web `Headers` (anything with a `get`
 * method), or a plain object with keys in any case, as Node's `IncomingHttpHeaders`.
 *
 * @example
 * ```ts
 * const web: HeadersLike = new Headers({ 'retry-after': '2' });
 * const node: HeadersLike = { 'Retry-After': '2', 'set-cookie': ['a=1', 'b=2'] };
 * ```
 */
export type HeadersLike =
  | { get(name: string): string | null }
  | Record<string, string | readonly string[] | undefined>;

/**
 * Reads one header from a web `Headers` (or anything with a `get` method) or a plain object.
 *
 * Field names are case-insensitive (RFC 9110 section 5.1), so a plain object's keys match in any
 * case; an exact lower-case key is preferred when several match. An array value gives its first
 * element. A value that is not a string is ignored.
 *
 * @param headers - The headers; anything else (null, a number, ...) gives undefined.
 * @param name - The header name, in lower case.
 * @returns The value, or undefined when absent or unreadable. Never throws, even when `get` or a
 *   property getter does.
 *
 * @example
 * ```ts
 * getHeader(new Headers({ 'Retry-After': '2' }), 'retry-after'); // '2'
 * getHeader({ 'Retry-After': ['2', '3'] }, 'retry-after'); // '2'
 * getHeader(null, 'retry-after'); // undefined
 * ```
 */
export function getHeader(headers: unknown, name: string): string | undefined {
  if (typeof headers !== 'object' || headers === null) return undefined;
  try {
    const key = name.toLowerCase();
    const { get } = headers as { get?: unknown };
    if (typeof get === 'function') {
      const value: unknown = get.call(headers, key);
      return typeof value === 'string' ? value : undefined;
    }
    const record = headers as Record<string, unknown>;
    if (Object.hasOwn(record, key)) return firstString(record[key]);
    for (const own of Object.keys(record)) {
      if (own.toLowerCase() === key) return firstString(record[own]);
    }
    return undefined;
  } catch {
    // A hostile or broken headers object (throwing getter, revoked proxy) is just unreadable.
    return undefined;
  }
}

/** A header value as a string: itself, or an array's first element. */
function firstString(value: unknown): string | undefined {
  const first: unknown = Array.isArray(value) ? value[0] : value;
  return typeof first === 'string' ? first : undefined;
}

/**
 * Reads the server's requested pause from response headers, in milliseconds.
 *
 * `retry-after-ms` wins when it is present and valid (it is the more precise of the two);
 * otherwise `Retry-After` (RFC 9110 section 10.2.3) is used. A malformed value is ignored, so a
 * malformed `retry-after-ms` falls back to a valid `Retry-After`.
 *
 * @param headers - A web `Headers` or a plain object (see {@link HeadersLike}); anything else
 *   gives undefined.
 * @param nowMs - The current wall-clock time in epoch ms, for a Retry-After date; defaults to
 *   `Date.now()`.
 * @returns Milliseconds to wait (finite, >= 0), or undefined when neither header is usable.
 *   Never throws.
 *
 * @example
 * ```ts
 * readRetryAfterMs(new Headers({ 'retry-after': '2', 'retry-after-ms': '1500' })); // 1500
 * readRetryAfterMs({ 'Retry-After': '2', 'retry-after-ms': 'soon' }); // 2000
 * ```
 */
export function readRetryAfterMs(headers: unknown, nowMs: number = Date.now()): number | undefined {
  const precise = getHeader(headers, 'retry-after-ms');
  const ms = precise === undefined ? undefined : parseRetryAfterMs(precise);
  if (ms !== undefined) return ms;
  const standard = getHeader(headers, 'retry-after');
  return standard === undefined ? undefined : parseRetryAfter(standard, nowMs);
}

// The server's other pause headers, read only when a 429 or 503 carries no usable Retry-After.
// None is standard HTTP; each is read as its senders use it, and a value we cannot read is
// ignored, so the next header (or the plain jittered backoff) decides.

/**
 * A reset header value of at least this many seconds is a Unix time, not a delay: 10^9 seconds
 * is 2001-09-09, and a delay of 31 years is never meant. A fixed number rather than "now", so it
 * cannot go stale and misread a recent reset time as a 56-year delay.
 */
const EPOCH_SECONDS_FROM = 1_000_000_000;

/**
 * Parses a rate-limit reset header (`RateLimit-Reset`, `X-RateLimit-Reset`,
 * `X-RateLimit-Retry-After`) into the milliseconds to wait.
 *
 * Senders disagree on the unit: GitHub's `X-RateLimit-Reset` and Symfony's
 * `X-RateLimit-Retry-After` are Unix times in seconds, the IETF draft's `RateLimit-Reset` and
 * most others are delay seconds. A run of digits below 10^9 is delay seconds; from 10^9 on it is
 * a Unix time, and the wait is that time minus `nowMs` (0 when it has passed). An HTTP-date is
 * read as in {@link parseRetryAfter}.
 *
 * @param value - The header value; spaces and tabs around it are ignored.
 * @param nowMs - The current wall-clock time in epoch ms; defaults to `Date.now()`.
 * @returns Milliseconds to wait (finite, >= 0), or undefined for an empty or malformed value
 *   (`''`, `-1`, `1.5`, `1e3`). Never throws.
 *
 * @example
 * ```ts
 * parseRateLimitReset('30'); // 30000
 * parseRateLimitReset('1700000060', 1_700_000_000_000); // 60000
 * parseRateLimitReset(''); // undefined
 * ```
 */
export function parseRateLimitReset(value: string, nowMs: number = Date.now()): number | undefined {
  if (typeof value !== 'string') return undefined;
  const text = trimOws(value);
  if (DELAY_SECONDS.test(text) && Number(text) >= EPOCH_SECONDS_FROM) {
    return Number.isFinite(nowMs) ? Math.max(0, Number(text) * 1000 - nowMs) : undefined;
  }
  return parseRetryAfter(text, nowMs);
}

/** A Structured Field integer that is not negative (RFC 9651 section 3.3.1: at most 15 digits). */
const SF_NON_NEGATIVE_INTEGER = /^\d{1,15}$/;

/**
 * Splits a Structured Field on `separator` outside quoted strings (RFC 9651 section 3.3.3), so a
 * partition key such as `pk="a,b;c"` stays in one piece. Returns undefined when a quote is left
 * open (the field is malformed).
 */
function splitOutsideQuotes(text: string, separator: string): string[] | undefined {
  const parts: string[] = [];
  let quoted = false;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (quoted && char === '\\') i++;
    else if (char === '"') quoted = !quoted;
    else if (!quoted && char === separator) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  if (quoted) return undefined;
  parts.push(text.slice(start));
  return parts;
}

/**
 * Parses the IETF `RateLimit` field (draft-ietf-httpapi-ratelimit-headers) into the milliseconds
 * to wait: the `t` parameter, the seconds until a quota resets.
 *
 * The field is a Structured Field List of quota policies, each with parameters, for example
 * `"default";r=0;t=30, "daily";r=950;t=40000`. The wait is the largest `t` among the policies
 * with no requests left (`r=0`), or among all of them when none says so: the client waits until
 * the quota that turned it away has room again.
 *
 * @param value - The field value.
 * @returns Milliseconds to wait, or undefined when no policy carries a valid `t` (a non-negative
 *   integer) or the field is malformed. Never throws.
 *
 * @example
 * ```ts
 * parseRateLimit('"default";r=0;t=30'); // 30000
 * parseRateLimit('"burst";r=0;t=2, "day";r=10;t=3600'); // 2000
 * parseRateLimit('"default";r=0'); // undefined
 * ```
 */
export function parseRateLimit(value: string): number | undefined {
  if (typeof value !== 'string') return undefined;
  const members = splitOutsideQuotes(value, ',');
  if (members === undefined) return undefined;
  let exhausted: number | undefined;
  let any: number | undefined;
  for (const member of members) {
    const parts = splitOutsideQuotes(member, ';');
    if (parts === undefined) return undefined;
    let t: number | undefined;
    let r: string | undefined;
    for (const param of parts.slice(1)) {
      const eq = param.indexOf('=');
      const key = trimOws(eq === -1 ? param : param.slice(0, eq));
      const raw = eq === -1 ? '' : trimOws(param.slice(eq + 1));
      if (key === 't' && SF_NON_NEGATIVE_INTEGER.test(raw)) t = Number(raw) * 1000;
      else if (key === 'r') r = raw;
    }
    if (t === undefined) continue;
    any = Math.max(any ?? 0, t);
    if (r === '0') exhausted = Math.max(exhausted ?? 0, t);
  }
  return exhausted ?? any;
}

/** The reset headers, in the order they are read. */
const RESET_HEADERS: readonly string[] = [
  'ratelimit-reset',
  'x-ratelimit-retry-after',
  'x-ratelimit-reset',
];

/**
 * Reads the pause a 429 or 503 asks for when it carries no usable Retry-After, in milliseconds,
 * from the first of these headers that holds a readable value:
 *
 * 1. `x-amz-retry-after` (AWS): milliseconds, as {@link parseRetryAfterMs} reads them.
 * 2. `RateLimit` (IETF draft): its `t` parameter, see {@link parseRateLimit}.
 * 3. `RateLimit-Reset`, 4. `X-RateLimit-Retry-After`, 5. `X-RateLimit-Reset`: delay seconds or a
 *    Unix time, see {@link parseRateLimitReset}.
 *
 * An empty or malformed value is skipped, so a later header still counts.
 *
 * @param headers - A web `Headers` or a plain object (see {@link HeadersLike}).
 * @param nowMs - The current wall-clock time in epoch ms; defaults to `Date.now()`.
 * @returns Milliseconds to wait, or undefined when no header is usable. Never throws.
 *
 * @example
 * ```ts
 * readRateLimitPauseMs(new Headers({ 'ratelimit': '"default";r=0;t=5' })); // 5000
 * readRateLimitPauseMs({ 'X-RateLimit-Reset': '', 'RateLimit-Reset': '3' }); // 3000
 * ```
 */
export function readRateLimitPauseMs(
  headers: unknown,
  nowMs: number = Date.now(),
): number | undefined {
  const amz = getHeader(headers, 'x-amz-retry-after');
  const amzMs = amz === undefined ? undefined : parseRetryAfterMs(amz);
  if (amzMs !== undefined) return amzMs;
  const field = getHeader(headers, 'ratelimit');
  const fieldMs = field === undefined ? undefined : parseRateLimit(field);
  if (fieldMs !== undefined) return fieldMs;
  for (const name of RESET_HEADERS) {
    const value = getHeader(headers, name);
    const ms = value === undefined ? undefined : parseRateLimitReset(value, nowMs);
    if (ms !== undefined) return ms;
  }
  return undefined;
}
