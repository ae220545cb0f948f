import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  getHeader,
  type HeadersLike,
  parseRateLimit,
  parseRateLimitReset,
  parseRetryAfter,
  parseRetryAfterMs,
  readRateLimitPauseMs,
  readRetryAfterMs,
} from '../src/core/retry-after.js';

const SECOND = 1000;
const DAY = 86_400 * SECOND;
/** The example date of RFC 9110 section 5.6.7: Sun, 06 Nov 1994 08:49:37 GMT. */
const RFC_EXAMPLE = Date.UTC(1994, 10, 6, 8, 49, 37);
const IMF = 'Sun, 06 Nov 1994 08:49:37 GMT';
const RFC850 = 'Sunday, 06-Nov-94 08:49:37 GMT';
const ASCTIME = 'Sun Nov  6 08:49:37 1994';
const NOW_2026 = Date.UTC(2026, 0, 1);

const LONG_DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const pad2 = (n: number) => String(n).padStart(2, '0');
const clock = (d: Date) =>
  `${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}:${pad2(d.getUTCSeconds())}`;

/** Formats epoch ms in the obsolete RFC 850 form, e.g. `Sunday, 06-Nov-94 08:49:37 GMT`. */
function toRfc850(ms: number): string {
  const d = new Date(ms);
  const yy = pad2(d.getUTCFullYear() % 100);
  const date = `${pad2(d.getUTCDate())}-${MONTHS[d.getUTCMonth()]}-${yy}`;
  return `${LONG_DAYS[d.getUTCDay()]}, ${date} ${clock(d)} GMT`;
}

/** Formats epoch ms in the asctime form, e.g. `Sun Nov  6 08:49:37 1994`. */
function toAsctime(ms: number): string {
  const d = new Date(ms);
  const day = String(d.getUTCDate()).padStart(2, ' ');
  const weekday = d.toUTCString().slice(0, 3);
  const year = String(d.getUTCFullYear()).padStart(4, '0');
  return `${weekday} ${MONTHS[d.getUTCMonth()]} ${day} ${clock(d)} ${year}`;
}

describe('parseRetryAfter: delay-seconds (RFC 9110 10.2.3)', () => {
  it.each([
    ['120', 120_000],
    ['0', 0],
    ['1', 1000],
    ['007', 7000],
    ['3600', 3_600_000],
  ])('reads %j as %i ms', (value, ms) => {
    expect(parseRetryAfter(value)).toBe(ms);
  });

  it.each([' 5', '5 ', '\t5', '5\t', ' \t 5 \t '])('trims spaces and tabs around %j', (value) => {
    expect(parseRetryAfter(value)).toBe(5000);
  });

  it('returns any finite number of ms, however large, and undefined past that', () => {
    expect(parseRetryAfter('9'.repeat(20))).toBe(1e20 * 1000);
    expect(parseRetryAfter('1'.padEnd(301, '0'))).toBe(1e303);
    expect(Number.isFinite(parseRetryAfter('1'.padEnd(306, '0')))).toBe(true); // 1e305 s, 1e308 ms
  });

  it('is undefined when the digits or their ms overflow to Infinity', () => {
    expect(parseRetryAfter('9'.repeat(306))).toBeUndefined(); // ~1e306 s, ~1e309 ms
    expect(parseRetryAfter('9'.repeat(400))).toBeUndefined(); // the digits alone are Infinity
  });

  it('ignores nowMs for delay-seconds', () => {
    expect(parseRetryAfter('2', Number.NaN)).toBe(2000);
    expect(parseRetryAfter('2', 0)).toBe(2000);
  });
});

describe('parseRetryAfter: HTTP-date (RFC 9110 5.6.7)', () => {
  it.each([
    ['IMF-fixdate', IMF],
    ['RFC 850', RFC850],
    ['asctime', ASCTIME],
  ])('reads the RFC example in %s form: a future date is the exact ms until it', (_, value) => {
    expect(parseRetryAfter(value, RFC_EXAMPLE - 30_000)).toBe(30_000);
    expect(parseRetryAfter(value, RFC_EXAMPLE - 1)).toBe(1);
    expect(parseRetryAfter(value, RFC_EXAMPLE - 2 * DAY)).toBe(2 * DAY);
  });

  it.each([
    ['IMF-fixdate', IMF],
    ['RFC 850', RFC850],
    ['asctime', ASCTIME],
  ])('reads the RFC example in %s form: now or in the past is 0', (_, value) => {
    expect(parseRetryAfter(value, RFC_EXAMPLE)).toBe(0);
    expect(parseRetryAfter(value, RFC_EXAMPLE + 1)).toBe(0);
    expect(parseRetryAfter(value, NOW_2026)).toBe(0);
  });

  it('keeps the fraction of a millisecond-precise nowMs', () => {
    expect(parseRetryAfter(IMF, RFC_EXAMPLE - 1500.5)).toBe(1500.5);
  });

  it('reads asctime with a single-digit day (SP DIGIT) and with 2DIGIT', () => {
    const at = Date.UTC(2026, 0, 1, 0, 0, 5);
    expect(parseRetryAfter('Thu Jan  1 00:00:05 2026', NOW_2026)).toBe(5000);
    expect(parseRetryAfter('Thu Jan 01 00:00:05 2026', NOW_2026)).toBe(5000);
    expect(parseRetryAfter('Sat Jan 31 00:00:00 2026', NOW_2026)).toBe(30 * DAY);
    expect(toAsctime(at)).toBe('Thu Jan  1 00:00:05 2026');
  });

  it('trims spaces and tabs around a date', () => {
    expect(parseRetryAfter(` \t${IMF}\t `, RFC_EXAMPLE - 1000)).toBe(1000);
    expect(parseRetryAfter(` ${ASCTIME} `, RFC_EXAMPLE - 1000)).toBe(1000);
  });

  it('uses Date.now() when nowMs is omitted', () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(RFC_EXAMPLE - 4000);
      expect(parseRetryAfter(IMF)).toBe(4000);
      expect(readRetryAfterMs({ 'retry-after': RFC850 })).toBe(4000);
    } finally {
      vi.useRealTimers();
    }
  });

  it('is undefined for a date when nowMs is not a finite number', () => {
    expect(parseRetryAfter(IMF, Number.NaN)).toBeUndefined();
    expect(parseRetryAfter(IMF, Number.POSITIVE_INFINITY)).toBeUndefined();
  });

  it('accepts leap days and rejects days that do not exist', () => {
    expect(parseRetryAfter('Thu, 29 Feb 2024 00:00:00 GMT', Date.UTC(2024, 1, 28))).toBe(DAY);
    expect(parseRetryAfter('Tue, 29 Feb 2000 00:00:00 GMT', 0)).toBe(Date.UTC(2000, 1, 29));
    // 1 Mar 2026 and 1 Mar 1900 are Sundays and Thursdays, so only the day check rejects these.
    expect(parseRetryAfter('Sun, 29 Feb 2026 00:00:00 GMT', 0)).toBeUndefined();
    expect(parseRetryAfter('Thu, 29 Feb 1900 00:00:00 GMT', 0)).toBeUndefined();
    expect(parseRetryAfter('Sun, 31 Nov 1994 08:49:37 GMT', 0)).toBeUndefined();
    expect(parseRetryAfter('Sun, 00 Nov 1994 08:49:37 GMT', 0)).toBeUndefined();
    expect(parseRetryAfter('Sun, 32 Nov 1994 08:49:37 GMT', 0)).toBeUndefined();
  });

  it('rejects impossible times', () => {
    for (const time of ['24:00:00', '08:60:37', '08:49:60', '23:58:60', '23:59:61', '99:99:99']) {
      expect(parseRetryAfter(`Sun, 06 Nov 1994 ${time} GMT`, 0), time).toBeUndefined();
    }
    expect(parseRetryAfter('Sun, 06 Nov 1994 23:59:59 GMT', 0)).toBe(
      Date.UTC(1994, 10, 6, 23, 59, 59),
    );
  });

  it('accepts the leap second 23:59:60 as the following midnight', () => {
    const now = Date.UTC(2016, 11, 31, 23, 59, 0);
    expect(parseRetryAfter('Sat, 31 Dec 2016 23:59:60 GMT', now)).toBe(60_000);
    expect(parseRetryAfter('Saturday, 31-Dec-16 23:59:60 GMT', now)).toBe(60_000);
    expect(parseRetryAfter('Sat Dec 31 23:59:60 2016', now)).toBe(60_000);
  });

  it('rejects a weekday that does not match the date', () => {
    expect(parseRetryAfter('Mon, 06 Nov 1994 08:49:37 GMT', 0)).toBeUndefined();
    expect(parseRetryAfter('Monday, 06-Nov-94 08:49:37 GMT', 0)).toBeUndefined();
    expect(parseRetryAfter('Mon Nov  6 08:49:37 1994', 0)).toBeUndefined();
  });

  it('reads four-digit years below 100 literally, not as 19xx', () => {
    const year99 = new Date('0099-01-01T00:00:00Z').getTime();
    expect(parseRetryAfter('Thu, 01 Jan 0099 00:00:00 GMT', year99 - 1000)).toBe(1000);
    const year0 = new Date('0000-01-01T00:00:00Z').getTime();
    expect(parseRetryAfter('Sat, 01 Jan 0000 00:00:00 GMT', year0 - 1000)).toBe(1000);
  });
});

describe('parseRetryAfter: the RFC 850 two-digit year (RFC 9110 5.6.7)', () => {
  // Now is 1 Jan 2026, so the years read lie in 1977..2076.
  it('reads a year within 50 years ahead in this century', () => {
    expect(parseRetryAfter('Tuesday, 01-Jan-30 00:00:00 GMT', NOW_2026)).toBe(
      Date.UTC(2030, 0, 1) - NOW_2026,
    );
    expect(parseRetryAfter('Thursday, 01-Jan-26 00:00:10 GMT', NOW_2026)).toBe(10_000);
  });

  it('reads exactly 50 years ahead (76) as 2076', () => {
    expect(parseRetryAfter('Wednesday, 01-Jan-76 00:00:00 GMT', NOW_2026)).toBe(
      Date.UTC(2076, 0, 1) - NOW_2026,
    );
  });

  // Regression (issue 8, defect 7): the rule was applied to the year alone, so any date in 2076
  // counted as "50 years ahead", and the weekday was checked against that wrong century.
  it('RFC 850: a timestamp more than 50 years ahead is the past century, decided per timestamp', () => {
    // 2076-01-01T00:00:01 is 50 years and one second after now: 1976, which is in the past.
    expect(parseRetryAfter('Thursday, 01-Jan-76 00:00:01 GMT', NOW_2026)).toBe(0);
    expect(parseRetryAfter('Wednesday, 01-Jan-76 00:00:01 GMT', NOW_2026)).toBeUndefined();
    // The last second of 1976 (a Friday), not of 2076 (a Thursday).
    expect(parseRetryAfter('Friday, 31-Dec-76 23:59:59 GMT', NOW_2026)).toBe(0);
    expect(parseRetryAfter('Thursday, 31-Dec-76 23:59:59 GMT', NOW_2026)).toBeUndefined();
    // One second before now + 50 years is still read ahead.
    const now = Date.UTC(2026, 0, 1, 0, 0, 2);
    expect(parseRetryAfter('Wednesday, 01-Jan-76 00:00:01 GMT', now)).toBe(
      Date.UTC(2076, 0, 1, 0, 0, 1) - now,
    );
  });

  it('reads 51 years ahead (77) as the past year 1977', () => {
    // 1 Jan 1977 was a Saturday and 1 Jan 2077 is a Friday: the weekday shows which year was read.
    expect(parseRetryAfter('Saturday, 01-Jan-77 00:00:00 GMT', NOW_2026)).toBe(0);
    expect(parseRetryAfter('Friday, 01-Jan-77 00:00:00 GMT', NOW_2026)).toBeUndefined();
  });

  it('reads the RFC example 94 as 1994 in 2026 and in 1994', () => {
    expect(parseRetryAfter(RFC850, NOW_2026)).toBe(0);
    expect(parseRetryAfter(RFC850, RFC_EXAMPLE - 5000)).toBe(5000);
  });

  it('judges the window from the year of nowMs, not a fixed pivot', () => {
    const now2027 = Date.UTC(2027, 0, 1);
    expect(parseRetryAfter('Friday, 01-Jan-77 00:00:00 GMT', now2027)).toBe(
      Date.UTC(2077, 0, 1) - now2027,
    );
    expect(parseRetryAfter('Saturday, 01-Jan-77 00:00:00 GMT', now2027)).toBeUndefined();
    // In 2080, "10" is 2110 (30 years ahead), not 2010.
    const now2080 = Date.UTC(2080, 0, 1);
    expect(parseRetryAfter(toRfc850(Date.UTC(2110, 0, 1)), now2080)).toBe(
      Date.UTC(2110, 0, 1) - now2080,
    );
  });
});

describe('parseRetryAfter: malformed values', () => {
  it.each([
    '',
    ' ',
    '\t',
    '-1',
    '-0',
    '+5',
    '1.5',
    '1.',
    '.5',
    '1e3',
    '0x10',
    '1_000',
    '1,000',
    '1 2',
    '5s',
    'Infinity',
    'NaN',
    'soon',
    'null',
    '\u0661', // ARABIC-INDIC DIGIT ONE
    '\uff15', // FULLWIDTH DIGIT FIVE
    '\n5',
    '5\r\n',
    '\u00a05', // no-break space is not OWS
    // IMF-fixdate variants
    'sun, 06 nov 1994 08:49:37 gmt',
    'SUN, 06 NOV 1994 08:49:37 GMT',
    'Sun, 06 Nov 1994 08:49:37 gmt',
    'Sun, 06 nov 1994 08:49:37 GMT',
    'Sun, 6 Nov 1994 08:49:37 GMT',
    'Sun,  06 Nov 1994 08:49:37 GMT',
    'Sun 06 Nov 1994 08:49:37 GMT',
    'Sun, 06 Nov 94 08:49:37 GMT',
    'Sun, 06 Nov 1994 8:49:37 GMT',
    'Sun, 06 Nov 1994 08:49 GMT',
    'Sun, 06 Nov 1994 08:49:37',
    'Sun, 06 Nov 1994 08:49:37 UTC',
    'Sun, 06 Nov 1994 08:49:37 +0000',
    'Sun, 06 Nov 1994 08:49:37 GMT, 5',
    'Sun, 06 Nov 1994 08:49:37 GMTx',
    'Sunday, 06 Nov 1994 08:49:37 GMT',
    'Sux, 06 Nov 1994 08:49:37 GMT',
    'Sun, 06 Nox 1994 08:49:37 GMT',
    'Sun, 06 November 1994 08:49:37 GMT',
    'Sun, 06 Nov 1994 08:49:37.5 GMT',
    // RFC 850 variants
    'sunday, 06-Nov-94 08:49:37 GMT',
    'Sun, 06-Nov-94 08:49:37 GMT',
    'Sundae, 06-Nov-94 08:49:37 GMT',
    'Sunday, 06-Nov-1994 08:49:37 GMT',
    'Sunday, 6-Nov-94 08:49:37 GMT',
    'Sunday, 06-nov-94 08:49:37 GMT',
    'Sunday, 06 Nov 94 08:49:37 GMT',
    // asctime variants
    'Sun Nov 6 08:49:37 1994',
    'Sun Nov   6 08:49:37 1994',
    'Sun Nov 06 08:49:37 94',
    'Sun Nov  6 08:49:37 1994 GMT',
    'sun nov  6 08:49:37 1994',
    'Sunday Nov  6 08:49:37 1994',
    // other date formats
    '1994-11-06T08:49:37Z',
    '1994-11-06',
    'Sun, 06 Nov 1994 08:49:37 GMT\n', // a newline is not OWS
  ])('%j is undefined', (value) => {
    expect(parseRetryAfter(value, RFC_EXAMPLE)).toBeUndefined();
  });

  it('is undefined for a value that is not a string at all', () => {
    for (const value of [undefined, null, 5, {}, ['5'], Symbol('5')]) {
      expect(parseRetryAfter(value as unknown as string)).toBeUndefined();
    }
  });
});

describe('parseRetryAfterMs', () => {
  it.each([
    ['1500', 1500],
    ['250.5', 250.5],
    ['0', 0],
    ['0.0', 0],
    ['007', 7],
    [' 100\t', 100],
    ['1'.padEnd(300, '0'), 1e299],
  ])('reads %j as %d', (value, ms) => {
    expect(parseRetryAfterMs(value)).toBe(ms);
  });

  it.each([
    '',
    ' ',
    '-1',
    '-0',
    '+5',
    '.5',
    '5.',
    '1e3',
    '1.5.5',
    '0x10',
    'Infinity',
    'NaN',
    '1,5',
    '5ms',
    '\n5',
    '9'.repeat(400),
  ])('%j is undefined', (value) => {
    expect(parseRetryAfterMs(value)).toBeUndefined();
  });

  it('is undefined for a value that is not a string', () => {
    expect(parseRetryAfterMs(5 as unknown as string)).toBeUndefined();
    expect(parseRetryAfterMs(null as unknown as string)).toBeUndefined();
  });
});

describe('getHeader', () => {
  it('reads a web Headers, whatever case the name was set in', () => {
    const headers = new Headers({ 'Retry-After': '2' });
    expect(getHeader(headers, 'retry-after')).toBe('2');
    expect(getHeader(headers, 'retry-after-ms')).toBeUndefined();
  });

  it('reads a plain object with keys in any case', () => {
    const headers = { 'Retry-After': '2', 'RETRY-AFTER-MS': '250', 'x-other': 'y' };
    expect(getHeader(headers, 'retry-after')).toBe('2');
    expect(getHeader(headers, 'retry-after-ms')).toBe('250');
    expect(getHeader(headers, 'x-other')).toBe('y');
    expect(getHeader(headers, 'missing')).toBeUndefined();
  });

  it('prefers an exact lower-case key when several keys match', () => {
    expect(getHeader({ 'Retry-After': '1', 'retry-after': '2' }, 'retry-after')).toBe('2');
  });

  it('takes the first element of an array value', () => {
    expect(getHeader({ 'retry-after': ['7', '8'] }, 'retry-after')).toBe('7');
    expect(getHeader({ 'Retry-After': ['7'] }, 'retry-after')).toBe('7');
    expect(getHeader({ 'retry-after': [] }, 'retry-after')).toBeUndefined();
    expect(getHeader({ 'retry-after': [7] }, 'retry-after')).toBeUndefined();
  });

  it('ignores values that are not strings', () => {
    expect(getHeader({ 'retry-after': 5 }, 'retry-after')).toBeUndefined();
    expect(getHeader({ 'retry-after': undefined }, 'retry-after')).toBeUndefined();
    expect(getHeader({ 'retry-after': null }, 'retry-after')).toBeUndefined();
    expect(getHeader({ get: () => 5 }, 'retry-after')).toBeUndefined();
    expect(getHeader({ get: () => null }, 'retry-after')).toBeUndefined();
  });

  it('uses any object with a get method, such as a Map', () => {
    expect(getHeader(new Map([['retry-after', '3']]), 'retry-after')).toBe('3');
    expect(getHeader({ get: (name: string) => `value of ${name}` }, 'retry-after')).toBe(
      'value of retry-after',
    );
  });

  it('reads a plain header literally named "get"', () => {
    expect(getHeader({ get: 'x', 'retry-after': '4' }, 'retry-after')).toBe('4');
  });

  it('does not read inherited properties', () => {
    expect(getHeader({}, 'constructor')).toBeUndefined();
    expect(getHeader({}, 'tostring')).toBeUndefined();
    expect(getHeader(Object.create({ 'retry-after': '1' }), 'retry-after')).toBeUndefined();
  });

  it.each([null, undefined, 0, 42, Number.NaN, 'retry-after: 5', true, Symbol('h'), () => '5'])(
    'is undefined for %s',
    (headers) => {
      expect(getHeader(headers, 'retry-after')).toBeUndefined();
    },
  );

  it('never throws on hostile objects', () => {
    const throwingGet = {
      get() {
        throw new Error('boom');
      },
    };
    const throwingGetter = Object.defineProperty({}, 'Retry-After', {
      enumerable: true,
      get() {
        throw new Error('boom');
      },
    });
    const throwingKeys = new Proxy(
      {},
      {
        ownKeys() {
          throw new Error('boom');
        },
      },
    );
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    for (const headers of [throwingGet, throwingGetter, throwingKeys, proxy]) {
      expect(getHeader(headers, 'retry-after')).toBeUndefined();
      expect(readRetryAfterMs(headers)).toBeUndefined();
    }
  });

  it('accepts HeadersLike values', () => {
    const web: HeadersLike = new Headers({ 'retry-after': '1' });
    const node: HeadersLike = { 'retry-after': '1', 'set-cookie': ['a=1'], absent: undefined };
    expect(getHeader(web, 'retry-after')).toBe(getHeader(node, 'retry-after'));
  });
});

describe('readRetryAfterMs', () => {
  it('prefers a valid retry-after-ms over retry-after', () => {
    expect(readRetryAfterMs({ 'retry-after': '2', 'retry-after-ms': '250' })).toBe(250);
    expect(readRetryAfterMs(new Headers({ 'Retry-After': '2', 'Retry-After-Ms': '1500' }))).toBe(
      1500,
    );
    expect(readRetryAfterMs({ 'retry-after': '2', 'retry-after-ms': '0' })).toBe(0);
    expect(readRetryAfterMs({ 'Retry-After': IMF, 'retry-after-ms': '9.5' }, 0)).toBe(9.5);
  });

  it('falls back to retry-after when retry-after-ms is malformed or absent', () => {
    expect(readRetryAfterMs({ 'Retry-After': '2', 'retry-after-ms': 'soon' })).toBe(2000);
    expect(readRetryAfterMs({ 'retry-after': '2', 'retry-after-ms': '-1' })).toBe(2000);
    expect(readRetryAfterMs({ 'retry-after': '2', 'retry-after-ms': '' })).toBe(2000);
    expect(readRetryAfterMs({ 'retry-after': '2' })).toBe(2000);
    expect(readRetryAfterMs(new Headers({ 'retry-after': '3' }))).toBe(3000);
  });

  it('reads a Retry-After date against nowMs', () => {
    expect(readRetryAfterMs({ 'retry-after': IMF }, RFC_EXAMPLE - 7000)).toBe(7000);
    expect(readRetryAfterMs(new Headers({ 'retry-after': ASCTIME }), RFC_EXAMPLE + 1)).toBe(0);
  });

  it('reads retry-after-ms alone', () => {
    expect(readRetryAfterMs({ 'retry-after-ms': '42' })).toBe(42);
  });

  it('is undefined when neither header is usable', () => {
    expect(readRetryAfterMs({})).toBeUndefined();
    expect(readRetryAfterMs(new Headers())).toBeUndefined();
    expect(readRetryAfterMs({ 'retry-after': 'later', 'retry-after-ms': 'soon' })).toBeUndefined();
    expect(readRetryAfterMs({ 'retry-after': '1.5' })).toBeUndefined();
    expect(readRetryAfterMs(null)).toBeUndefined();
    expect(readRetryAfterMs(undefined)).toBeUndefined();
    expect(readRetryAfterMs('retry-after: 5')).toBeUndefined();
  });

  it('is undefined when a web Headers joins repeated Retry-After values', () => {
    const headers = new Headers([
      ['retry-after', '1'],
      ['retry-after', '2'],
    ]);
    expect(headers.get('retry-after')).toBe('1, 2');
    expect(readRetryAfterMs(headers)).toBeUndefined();
  });
});

describe('properties', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  /** Epoch ms from 0000-01-01 to 9999-12-31, the years a 4DIGIT year can spell. */
  const fourDigitYearMs = fc.integer({ min: -62_167_219_200_000, max: 253_402_300_799_999 });

  it('parseRetryAfter never throws and gives undefined or a finite number >= 0', () => {
    const nearMiss = fc.stringMatching(
      /^[ \t]?[A-Za-z]{3,9},? [ \d]?\d[ -][A-Za-z]{3}[ -]\d{2,4} \d{1,2}:\d\d:\d\d( GMT| \d{4})?$/,
    );
    const value = fc.oneof(
      fc.string(),
      fc.string({ unit: 'binary' }),
      fc.stringMatching(/^[ \t]*[-+.\de]*[ \t]*$/),
      nearMiss,
    );
    const nowMs = fc.oneof(fc.double(), fc.integer(), fourDigitYearMs);
    fc.assert(
      fc.property(value, nowMs, (text, now) => {
        for (const result of [parseRetryAfter(text, now), parseRetryAfter(text)]) {
          if (result !== undefined) {
            expect(Number.isFinite(result)).toBe(true);
            expect(result).toBeGreaterThanOrEqual(0);
          }
        }
        const ms = parseRetryAfterMs(text);
        if (ms !== undefined) expect(Number.isFinite(ms) && ms >= 0).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('reads String(n) as n seconds for any integer n in [0, 1e9]', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1e9 }), (n) => {
        expect(parseRetryAfter(String(n))).toBe(n * 1000);
      }),
    );
  });

  it('reads back any IMF-fixdate from toUTCString, to the second', () => {
    const offset = fc.integer({ min: -1e12, max: 1e12 });
    fc.assert(
      fc.property(fourDigitYearMs, offset, (t, d) => {
        const shown = Math.floor(t / 1000) * 1000; // toUTCString drops the milliseconds
        const expected = Math.max(0, shown - (t - d));
        expect(parseRetryAfter(new Date(t).toUTCString(), t - d)).toBe(expected);
      }),
      { numRuns: 1000 },
    );
  });

  it('reads back any asctime date, to the second', () => {
    const offset = fc.integer({ min: -1e12, max: 1e12 });
    fc.assert(
      fc.property(fourDigitYearMs, offset, (t, d) => {
        const expected = Math.max(0, Math.floor(t / 1000) * 1000 - (t - d));
        expect(parseRetryAfter(toAsctime(t), t - d)).toBe(expected);
      }),
    );
  });

  it('reads back an RFC 850 timestamp that lies at most 50 years ahead and less than 50 years behind', () => {
    const args = fc.record({
      nowSeconds: fc.integer({
        min: Date.UTC(1900, 0, 1) / SECOND,
        max: Date.UTC(2300, 0, 1) / SECOND,
      }),
      share: fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }),
    });
    fc.assert(
      fc.property(args, ({ nowSeconds, share }) => {
        const nowMs = nowSeconds * SECOND;
        const shifted = (years: number) => {
          const d = new Date(nowMs);
          d.setUTCFullYear(d.getUTCFullYear() + years);
          return d.getTime();
        };
        // (now + 50 years - 100 years, now + 50 years], in whole seconds.
        const latest = shifted(50);
        const span = (latest - shifted(-50)) / SECOND;
        const t = latest - Math.floor(share * span) * SECOND;
        expect(parseRetryAfter(toRfc850(t), nowMs)).toBe(Math.max(0, t - nowMs));
      }),
      { numRuns: 1000 },
    );
  });
});

describe('parseRateLimitReset: delay seconds or a Unix time', () => {
  const NOW = 1_700_000_000_000;

  it('reads a run of digits below 10^9 as delay seconds', () => {
    expect(parseRateLimitReset('30', NOW)).toBe(30_000);
    expect(parseRateLimitReset('0', NOW)).toBe(0);
    expect(parseRateLimitReset('000012', NOW)).toBe(12_000);
    expect(parseRateLimitReset('999999999', NOW)).toBe(999_999_999_000);
  });

  it('reads 10^9 and above as a Unix time in seconds: the wait until then, 0 once passed', () => {
    expect(parseRateLimitReset('1700000060', NOW)).toBe(60_000);
    expect(parseRateLimitReset(' 1700000001\t', NOW)).toBe(1000);
    // A reset in the past (a November 2023 time read in 2026) is no wait, never a 54-year one.
    expect(parseRateLimitReset('1700000000', NOW_2026)).toBe(0);
    expect(parseRateLimitReset('1000000000', NOW)).toBe(0);
  });

  it('reads an HTTP-date as Retry-After does', () => {
    expect(parseRateLimitReset(IMF, RFC_EXAMPLE - 30 * SECOND)).toBe(30 * SECOND);
  });

  it('ignores an empty or malformed value', () => {
    for (const value of ['', '  ', '-1', '+1', '1.5', '1e3', '0x10', '10s', '1 0', '１２']) {
      expect(parseRateLimitReset(value, NOW), JSON.stringify(value)).toBeUndefined();
    }
    expect(parseRateLimitReset('1700000060', Number.NaN)).toBeUndefined();
  });
});

describe('parseRateLimit: the IETF RateLimit field', () => {
  it('reads the t parameter of one policy, in seconds', () => {
    expect(parseRateLimit('"default";r=0;t=30')).toBe(30_000);
    expect(parseRateLimit('"default";t=0;r=0')).toBe(0);
    expect(parseRateLimit('default; r=0; t=7')).toBe(7000);
  });

  it('waits for the longest exhausted policy, or the longest of all when none is exhausted', () => {
    expect(parseRateLimit('"burst";r=0;t=2, "day";r=10;t=3600')).toBe(2000);
    expect(parseRateLimit('"a";r=0;t=2, "b";r=0;t=9, "c";r=5;t=60')).toBe(9000);
    expect(parseRateLimit('"a";r=3;t=2, "b";r=1;t=9')).toBe(9000);
  });

  it('keeps a quoted partition key with commas and semicolons in one piece', () => {
    expect(parseRateLimit('"default";pk="a,b;t=99";r=0;t=4')).toBe(4000);
  });

  it('ignores a field with no valid t, or a malformed one', () => {
    for (const value of [
      '',
      '"default";r=0',
      '"default";r=0;t=-1',
      '"default";r=0;t=1.5',
      '"default";r=0;t=abc',
      '"default";r=0;t=1234567890123456',
      '"open;r=0;t=5',
    ]) {
      expect(parseRateLimit(value), JSON.stringify(value)).toBeUndefined();
    }
  });
});

describe('readRateLimitPauseMs: the other pause headers, in order', () => {
  const NOW = 1_700_000_000_000;

  it('reads x-amz-retry-after in milliseconds first', () => {
    const headers = new Headers({ 'x-amz-retry-after': '1500', ratelimit: '"d";r=0;t=9' });
    expect(readRateLimitPauseMs(headers, NOW)).toBe(1500);
  });

  it('then RateLimit, RateLimit-Reset, X-RateLimit-Retry-After, X-RateLimit-Reset', () => {
    const all = {
      RateLimit: '"d";r=0;t=1',
      'RateLimit-Reset': '2',
      'X-RateLimit-Retry-After': '3',
      'X-RateLimit-Reset': '4',
    };
    expect(readRateLimitPauseMs(all, NOW)).toBe(1000);
    const { RateLimit: _a, ...noField } = all;
    expect(readRateLimitPauseMs(noField, NOW)).toBe(2000);
    const { 'RateLimit-Reset': _b, ...noReset } = noField;
    expect(readRateLimitPauseMs(noReset, NOW)).toBe(3000);
    const { 'X-RateLimit-Retry-After': _c, ...onlyX } = noReset;
    expect(readRateLimitPauseMs(onlyX, NOW)).toBe(4000);
  });

  it('reads a Unix time in X-RateLimit-Reset (GitHub) and X-RateLimit-Retry-After (Symfony)', () => {
    expect(readRateLimitPauseMs({ 'x-ratelimit-reset': '1700000042' }, NOW)).toBe(42_000);
    expect(readRateLimitPauseMs({ 'x-ratelimit-retry-after': '1700000005' }, NOW)).toBe(5000);
  });

  it('skips an empty or malformed value and reads the next header', () => {
    const headers = new Headers({
      'x-amz-retry-after': '',
      ratelimit: '"d";r=0',
      'ratelimit-reset': 'soon',
      'x-ratelimit-retry-after': '',
      'x-ratelimit-reset': '6',
    });
    expect(readRateLimitPauseMs(headers, NOW)).toBe(6000);
    expect(readRateLimitPauseMs(new Headers({ 'ratelimit-reset': '' }), NOW)).toBeUndefined();
    expect(readRateLimitPauseMs(new Headers(), NOW)).toBeUndefined();
    expect(readRateLimitPauseMs(null, NOW)).toBeUndefined();
  });
});
