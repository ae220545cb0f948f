// src/undici/judge.ts on its own: what undici's own errors say that the engine's classifier does
// not read (undici#5087), and which of an interceptor's attempts are failures.
import { describe, expect, it } from 'vitest';
import { Attempt } from '../src/undici/attempt.js';
import type { Exchange } from '../src/undici/exchange.js';
import { attemptCheck, undiciVerdict } from '../src/undici/judge.js';

const h2 = (code: string) =>
  Object.assign(new Error(`Stream closed with error code ${code}`), {
    code: 'ERR_HTTP2_STREAM_ERROR',
  });
const info = (message: string) => Object.assign(new Error(message), { code: 'UND_ERR_INFO' });

describe('undiciVerdict', () => {
  it('retries the HTTP/2 resets RFC 9113 allows, ENHANCE_YOUR_CALM as a 429', () => {
    for (const code of [
      'NGHTTP2_REFUSED_STREAM',
      'NGHTTP2_CANCEL',
      'NGHTTP2_INTERNAL_ERROR',
      'NGHTTP2_STREAM_CLOSED',
    ]) {
      expect(undiciVerdict(h2(code))).toEqual({ retryable: true, kind: 'network' });
    }
    expect(undiciVerdict(h2('NGHTTP2_ENHANCE_YOUR_CALM'))).toEqual({
      retryable: true,
      kind: 'throttled',
    });
    // A protocol bug a retry would repeat: left to the engine's classifier.
    expect(undiciVerdict(h2('NGHTTP2_PROTOCOL_ERROR'))).toBeUndefined();
    expect(undiciVerdict(h2('no code at all'))).toBeUndefined();
  });

  it('reads UND_ERR_INFO as a dropped connection, or a timeout when it says so', () => {
    expect(undiciVerdict(info('socket idle timeout'))).toEqual({
      retryable: true,
      kind: 'timeout',
    });
    expect(undiciVerdict(info('HTTP/2: "stream timeout after 1000"'))).toEqual({
      retryable: true,
      kind: 'timeout',
    });
    expect(undiciVerdict(info('reset'))).toEqual({ retryable: true, kind: 'network' });
    // The DNS interceptor's answer stays final, as ENOTFOUND is.
    expect(undiciVerdict(info('No DNS entries found'))).toBeUndefined();
  });

  it('says nothing of anything else, whatever its shape', () => {
    for (const value of [
      undefined,
      null,
      'reset',
      42,
      new Error('reset'),
      { code: 'UND_ERR_INFO' },
      { code: 'UND_ERR_INFO', message: 42 },
      Object.assign(new Error('x'), { code: 'UND_ERR_HEADERS_TIMEOUT' }),
    ]) {
      expect(undiciVerdict(value)).toBeUndefined();
    }
  });
});

describe('attemptCheck', () => {
  const attempt = (status: number) => {
    const a = new Attempt(
      {} as Exchange,
      () => {},
      () => {},
    );
    a.status = status;
    return a;
  };

  it('a response of 400 or more is a failure; below, a success', () => {
    const check = attemptCheck(new WeakSet());
    expect(check.isFailure(attempt(200))).toBe(false);
    expect(check.isFailure(attempt(304))).toBe(false);
    expect(check.isFailure(attempt(400))).toBe(true);
    expect(check.isFailure(attempt(503))).toBe(true);
  });

  it("a hedge's 409 is a copy conflict only on a keyed request", () => {
    const keyed = new WeakSet<object>();
    const check = attemptCheck(keyed);
    const conflict = attempt(409);
    expect(check.isCopyConflict?.(conflict)).toBe(false);
    keyed.add(conflict);
    expect(check.isCopyConflict?.(conflict)).toBe(true);
    const other = attempt(412);
    keyed.add(other);
    expect(check.isCopyConflict?.(other)).toBe(false);
    expect(check.isCopyConflict?.(new Error('409'))).toBe(false);
  });
});
