import { afterEach, describe, expect, it, vi } from 'vitest';
import { classify } from '../src/index.js';

const withCode = (code: string, message = code) => Object.assign(new Error(message), { code });

afterEach(() => {
  vi.restoreAllMocks();
});

describe('classify', () => {
  it('reads the wall clock only for an error with headers, and then turns a Retry-After date into a wait', () => {
    const now = vi.spyOn(Date, 'now');
    expect(classify(Object.assign(new Error('down'), { status: 503 }))).toMatchObject({
      retryable: true,
      kind: 'unavailable',
    });
    expect(now).not.toHaveBeenCalled();
    now.mockReturnValue(Date.parse('Wed, 21 Oct 2026 07:28:00 GMT'));
    const dated = { status: 503, headers: { 'retry-after': 'Wed, 21 Oct 2026 07:28:30 GMT' } };
    expect(classify(dated)).toMatchObject({ retryAfterMs: 30_000 });
    expect(now).toHaveBeenCalled();
  });

  it.each([
    [502, 'unavailable'],
    [503, 'unavailable'],
    [504, 'unavailable'],
    [429, 'throttled'],
    [500, 'internal'],
  ])('retries status %i as %s', (status, kind) => {
    expect(classify({ status })).toEqual({ retryable: true, kind, status });
  });

  it.each([400, 401, 403, 404, 405, 409, 410, 413, 422, 501, 505, 301])(
    'fails status %i at once',
    (status) => {
      expect(classify({ status })).toEqual({ retryable: false, kind: 'permanent', status });
    },
  );

  // Regression (issue 8, defect 8): 408 and a 413 with Retry-After were never retried.
  it('retries 408 Request Timeout (RFC 9110 15.5.9: the client may repeat it)', () => {
    expect(classify({ status: 408 })).toEqual({ retryable: true, kind: 'timeout', status: 408 });
  });

  it('retries a 413 only when it carries a valid Retry-After (RFC 9110 15.5.14)', () => {
    expect(classify({ status: 413, headers: { 'retry-after': '3' } })).toEqual({
      retryable: true,
      kind: 'unavailable',
      status: 413,
      retryAfterMs: 3000,
    });
    expect(classify({ status: 413, retryAfterMs: 500 })).toMatchObject({ retryable: true });
    expect(classify({ status: 413, headers: { 'retry-after': 'soon' } }).retryable).toBe(false);
    expect(classify({ status: 413, headers: { 'retry-after': '' } }).retryable).toBe(false);
  });

  it('reads stormproof-pushback-ms as an exact wait, and ignores a malformed one', () => {
    const busy = (value: string) =>
      classify({ status: 503, headers: { 'stormproof-pushback-ms': value, 'retry-after': '2' } });
    expect(busy('1234')).toEqual({
      retryable: true,
      kind: 'unavailable',
      status: 503,
      pushbackMs: 1234,
    });
    expect(busy('0').pushbackMs).toBe(0);
    for (const bad of ['-1', '1.5', '1e3', '0x10', ' 12x', '', '2147483648', '99999999999']) {
      expect(busy(bad)).toEqual({
        retryable: true,
        kind: 'unavailable',
        status: 503,
        retryAfterMs: 2000,
      });
    }
    // Never makes a failure that cannot pass retryable.
    expect(classify({ status: 404, headers: { 'stormproof-pushback-ms': '10' } }).retryable).toBe(
      false,
    );
  });

  it('reads status, statusCode and response.status', () => {
    expect(classify({ statusCode: 503 }).kind).toBe('unavailable');
    expect(classify({ response: { status: 503 } }).kind).toBe('unavailable');
    expect(classify({ status: '503' }).retryable).toBe(false);
    expect(classify({ status: 99_999 }).retryable).toBe(false);
  });

  it.each(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'EAI_AGAIN', 'UND_ERR_SOCKET'])(
    'retries network error %s',
    (code) => {
      expect(classify(withCode(code))).toEqual({ retryable: true, kind: 'network' });
    },
  );

  it.each([
    'ETIMEDOUT',
    'UND_ERR_CONNECT_TIMEOUT',
    'UND_ERR_HEADERS_TIMEOUT',
    'UND_ERR_BODY_TIMEOUT',
  ])('retries timeout code %s', (code) => {
    expect(classify(withCode(code))).toEqual({ retryable: true, kind: 'timeout' });
  });

  it('retries socket hang up, TimeoutError and timedOut', () => {
    expect(classify(new Error('socket hang up')).kind).toBe('network');
    expect(classify(new DOMException('timed out', 'TimeoutError')).kind).toBe('timeout');
    expect(classify({ timedOut: true }).kind).toBe('timeout');
  });

  it("retries undici's 'fetch failed' only when its cause is transient", () => {
    expect(classify(new TypeError('fetch failed', { cause: withCode('ECONNREFUSED') })).kind).toBe(
      'network',
    );
    expect(
      classify(new TypeError('fetch failed', { cause: withCode('UND_ERR_SOCKET') })).kind,
    ).toBe('network');
    const aggregate = Object.assign(new AggregateError([withCode('ECONNREFUSED')], 'x'));
    expect(classify(new TypeError('fetch failed', { cause: aggregate })).kind).toBe('network');
    expect(
      classify(new TypeError('fetch failed', { cause: new Error('invalid URL') })).retryable,
    ).toBe(false);
  });

  it('does not retry an AbortError, an unknown error, or a thrown primitive', () => {
    expect(classify(new DOMException('aborted', 'AbortError')).retryable).toBe(false);
    expect(classify(new Error('bug')).retryable).toBe(false);
    expect(classify('boom')).toEqual({ retryable: false, kind: 'permanent' });
    expect(classify(undefined).retryable).toBe(false);
  });

  it('reads Retry-After from plain headers and from Headers, retry-after-ms first', () => {
    expect(classify({ status: 503, headers: { 'Retry-After': '2' } }).retryAfterMs).toBe(2000);
    expect(
      classify({
        status: 429,
        headers: new Headers({ 'retry-after': '1', 'retry-after-ms': '250' }),
      }).retryAfterMs,
    ).toBe(250);
    expect(
      classify({
        status: 503,
        response: { status: 503, headers: new Headers({ 'retry-after': '3' }) },
      }).retryAfterMs,
    ).toBe(3000);
    expect(classify({ status: 503, headers: { 'retry-after': 'later' } })).toEqual({
      retryable: true,
      kind: 'unavailable',
      status: 503,
    });
  });

  it('reads the rate-limit pause headers on a 429 or 503 without Retry-After, only there', () => {
    const now = 1_700_000_000_000;
    const limited = { ratelimit: '"default";r=0;t=5', 'x-ratelimit-reset': '1700000009' };
    expect(classify({ status: 429, headers: limited }, now).retryAfterMs).toBe(5000);
    expect(classify({ status: 503, headers: { 'x-amz-retry-after': '750' } }, now)).toEqual({
      retryable: true,
      kind: 'unavailable',
      status: 503,
      retryAfterMs: 750,
    });
    expect(
      classify({ status: 429, headers: { 'x-ratelimit-reset': '1700000009' } }, now).retryAfterMs,
    ).toBe(9000);
    // Retry-After stays the server's word when it is there.
    expect(
      classify({ status: 429, headers: { ...limited, 'retry-after': '1' } }, now).retryAfterMs,
    ).toBe(1000);
    // Other statuses: a rate limiter's counters on a 502 or 500 are not a request to pause.
    for (const status of [500, 502, 504]) {
      expect(classify({ status, headers: limited }, now), String(status)).not.toHaveProperty(
        'retryAfterMs',
      );
    }
  });

  it('turns a Retry-After date into a wait from now', () => {
    const now = Date.parse('2026-12-03T06:00:00Z');
    expect(
      classify({ status: 503, headers: { 'retry-after': 'Thu, 03 Dec 2026 06:00:05 GMT' } }, now)
        .retryAfterMs,
    ).toBe(5000);
  });

  it("honours the servers' don't-retry signals", () => {
    for (const headers of [
      { 'x-envoy-overloaded': 'true' },
      { 'stormproof-overloaded': '1' },
      { 'Stripe-Should-Retry': 'false' },
    ]) {
      expect(classify({ status: 503, headers })).toEqual({
        retryable: false,
        kind: 'do-not-retry',
        status: 503,
      });
    }
    expect(classify({ status: 409, headers: { 'stripe-should-retry': 'true' } }).retryable).toBe(
      true,
    );
  });
});
