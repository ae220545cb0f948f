// Regression (issue 20): gRFC A6 pays hedges and retries from the same throttle per server, but
// a client that retried some methods and hedged others on one server had two: A6 gives a method a
// retry policy or a hedging policy, so it takes two interceptors, and each made its own token
// buckets. A `createThrottle()` given to both is one throttle per channel target. Real grpc-js
// servers on 127.0.0.1, port 0; retry waits on an injected clock.
import type { Interceptor } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import type { SuccessEvent } from '../src/core/options.js';
import {
  createRetryInterceptor,
  createThrottle,
  getRetryReport,
  type RetryInterceptorOptions,
  type Throttle,
  type ThrottlingOptions,
} from '../src/grpc/index.js';
import { instantClock } from './helpers/clocks.js';
import { call, closedAfterEach, connect, type ScriptedServer } from './helpers/grpc.js';

const UNAVAILABLE = 14;

const { clients, server } = closedAfterEach();

/**
 * One client whose `Unary` method is retried (at most 2 attempts) and whose `ServerStream` method
 * is hedged (2 attempts at once, A6's default delay of 0), each interceptor given `throttling`.
 */
function mixedClient(to: ScriptedServer, throttling: ThrottlingOptions | Throttle) {
  const hedgeEvents: SuccessEvent[] = [];
  const retries = createRetryInterceptor({ maxAttempts: 2, throttling, clock: instantClock() });
  const hedges = createRetryInterceptor({
    hedging: { maxAttempts: 2, nonFatalStatusCodes: ['UNAVAILABLE'] },
    throttling,
    onSuccess: (event) => hedgeEvents.push(event),
  });
  const interceptor: Interceptor = (options, next) =>
    options.method_definition.path.endsWith('/ServerStream')
      ? hedges(options, next)
      : retries(options, next);
  const client = connect(to.address, { interceptor });
  clients.push(client);
  return { client, hedgeEvents };
}

/** Attempts the server saw of `method` during `work`. */
async function attempts(s: ScriptedServer, method: string, work: () => Promise<unknown>) {
  const before = s.attempts(method).length;
  await work();
  return s.attempts(method).length - before;
}

// maxTokens 4: hedges and retries go while tokens > 2. The hedged calls' answers wait 30 ms, so
// both attempts are out before either ends (the hedge goes at once, from a timer of 0 ms).
const TOKENS = { maxTokens: 4, tokenRatio: 0.1 };
const SLOW_OK = { delayMs: 30 };

describe('one throttle for the retries and the hedges of a server (createThrottle)', () => {
  it('retry failures drain the tokens: the hedged method then sends no hedge (refused: budget)', async () => {
    const s = await server();
    const { client, hedgeEvents } = mixedClient(s, createThrottle(TOKENS));
    // Tokens full: the hedged call sends its hedge.
    s.script(SLOW_OK, SLOW_OK);
    expect(await attempts(s, 'ServerStream', () => call(client, 'ServerStream'))).toBe(2);
    expect(hedgeEvents.at(-1)?.hedges?.sent).toBe(1);
    // A retried call whose two attempts fail: 4 -> 3 -> 2 tokens.
    s.script({ code: UNAVAILABLE }, { code: UNAVAILABLE });
    const failed = await call(client, 'Unary');
    expect(failed.code).toBe(UNAVAILABLE);
    expect(s.attempts('Unary')).toHaveLength(2);
    // 2 tokens of 4: the hedged method's next call sends its first attempt only.
    s.script(SLOW_OK, SLOW_OK);
    expect(await attempts(s, 'ServerStream', () => call(client, 'ServerStream'))).toBe(1);
    expect(hedgeEvents.at(-1)?.hedges).toEqual({
      sent: 0,
      won: 0,
      cancelled: 0,
      refused: { budget: 1 },
    });
  });

  it('hedge failures drain the tokens: the retried method then is not retried', async () => {
    const s = await server();
    const { client } = mixedClient(s, createThrottle(TOKENS));
    // Both attempts of a hedged call fail (non-fatal): 4 -> 3 -> 2 tokens.
    s.script({ code: UNAVAILABLE, delayMs: 30 }, { code: UNAVAILABLE, delayMs: 30 });
    expect((await call(client, 'ServerStream')).code).toBe(UNAVAILABLE);
    expect(s.attempts('ServerStream')).toHaveLength(2);
    s.script({ code: UNAVAILABLE });
    const out = await call(client, 'Unary');
    expect(out.code).toBe(UNAVAILABLE);
    expect(s.attempts('Unary')).toHaveLength(1); // throttled: no retry
  });

  it('shares a throttle made by another installed copy of stormproof (the built package)', async () => {
    // dist/ is built before the suite (test/setup/build.ts): a second copy of the module.
    const url = new URL('../dist/grpc/index.js', import.meta.url).href;
    const other = (await import(url)) as typeof import('../src/grpc/index.js');
    expect(other.createThrottle).not.toBe(createThrottle);
    const s = await server();
    const { client, hedgeEvents } = mixedClient(s, other.createThrottle(TOKENS));
    s.script({ code: UNAVAILABLE }, { code: UNAVAILABLE });
    expect((await call(client, 'Unary')).code).toBe(UNAVAILABLE);
    s.script(SLOW_OK, SLOW_OK);
    expect(await attempts(s, 'ServerStream', () => call(client, 'ServerStream'))).toBe(1);
    expect(hedgeEvents.at(-1)?.hedges?.refused).toEqual({ budget: 1 });
  });

  it('keeps one bucket per channel target: failures at A leave B hedging', async () => {
    const throttle = createThrottle(TOKENS);
    const a = await server();
    const b = await server();
    const atA = mixedClient(a, throttle);
    const atB = mixedClient(b, throttle);
    a.script({ code: UNAVAILABLE }, { code: UNAVAILABLE });
    expect((await call(atA.client, 'Unary')).code).toBe(UNAVAILABLE);
    b.script(SLOW_OK, SLOW_OK);
    expect(await attempts(b, 'ServerStream', () => call(atB.client, 'ServerStream'))).toBe(2);
    a.script(SLOW_OK, SLOW_OK);
    expect(await attempts(a, 'ServerStream', () => call(atA.client, 'ServerStream'))).toBe(1);
  });

  it('plain { maxTokens, tokenRatio } options still give each interceptor a throttle of its own', async () => {
    // The case the shared throttle is for: here the retries' failures leave the hedges' tokens
    // whole, and the hedge still goes.
    const s = await server();
    const { client, hedgeEvents } = mixedClient(s, TOKENS);
    s.script({ code: UNAVAILABLE }, { code: UNAVAILABLE });
    expect((await call(client, 'Unary')).code).toBe(UNAVAILABLE);
    s.script(SLOW_OK, SLOW_OK);
    expect(await attempts(s, 'ServerStream', () => call(client, 'ServerStream'))).toBe(2);
    expect(hedgeEvents.at(-1)?.hedges?.sent).toBe(1);
  });

  it('a retried call refused by the shared throttle says budget', async () => {
    const s = await server();
    const throttle = createThrottle({ maxTokens: 2, tokenRatio: 0.1 });
    const { client } = mixedClient(s, throttle);
    s.script({ code: UNAVAILABLE });
    let error: unknown;
    await new Promise<void>((resolve) => {
      client.makeUnaryRequest(
        '/stormproof.test.Echo/Unary',
        (v: object) => Buffer.from(JSON.stringify(v)),
        (b: Buffer) => b,
        {},
        (e) => {
          error = e;
          resolve();
        },
      );
    });
    expect(getRetryReport(error)?.reason).toBe('budget'); // 2 -> 1 <= 1: no retry
    expect(s.attempts('Unary')).toHaveLength(1);
  });
});

describe('createThrottle', () => {
  it('has A6 example defaults, and truncates tokenRatio to three decimals', () => {
    expect(createThrottle()).toMatchObject({ maxTokens: 10, tokenRatio: 0.1 });
    expect(createThrottle({ maxTokens: 100, tokenRatio: 0.5466 })).toMatchObject({
      maxTokens: 100,
      tokenRatio: 0.546,
    });
  });

  it('remembers at most maxTargets targets: the least recently used starts again full', () => {
    const throttle = createThrottle({ maxTokens: 4, maxTargets: 1 });
    throttle.bucketOf('a').recordFailure(0, true);
    expect(throttle.bucketOf('a').tokens).toBe(3);
    expect(throttle.bucketOf('b').tokens).toBe(4);
    expect(throttle.bucketOf('a').tokens).toBe(4); // forgotten, made again
  });

  it('rejects bad options at construction, naming them', () => {
    expect(() => createThrottle(null as never)).toThrow(/createThrottle/);
    expect(() => createThrottle('10' as never)).toThrow(/createThrottle/);
    expect(() => createThrottle({ maxTokens: null } as never)).toThrow(/maxTokens/);
    expect(() => createThrottle({ maxTokens: '10' } as never)).toThrow(/maxTokens/);
    expect(() => createThrottle({ maxTokens: 10.5 })).toThrow(/maxTokens/);
    expect(() => createThrottle({ maxTokens: 1001 })).toThrow(/maxTokens/);
    expect(() => createThrottle({ tokenRatio: 0.0001 })).toThrow(/tokenRatio/);
    expect(() => createThrottle({ maxTargets: 0 })).toThrow(/maxTargets/);
    expect(() => createThrottle({ maxToken: 10 } as never)).toThrow(/maxToken/);
  });

  it('is refused beside budget, and a look-alike object is refused by the interceptor, naming throttling', () => {
    const throttling = createThrottle();
    const both: RetryInterceptorOptions = { throttling, budget: false };
    expect(() => createRetryInterceptor(both)).toThrow(/throttling or budget/);
    expect(() => createRetryInterceptor({ hedging: { maxAttempts: 2 }, ...both })).toThrow(
      /throttling or budget/,
    );
    // Only a throttle made by createThrottle (of any installed copy: a Symbol.for brand) is
    // shared; an object that merely looks like one is read as options.
    const fake = { maxTokens: 10, tokenRatio: 0.1, bucketOf: () => undefined };
    expect(() => createRetryInterceptor({ throttling: fake as never })).toThrow(/throttling/);
    expect(() => createRetryInterceptor({ throttling: null as never })).toThrow(/throttling/);
    expect(() => createRetryInterceptor({ throttling: 3 as never })).toThrow(/throttling/);
  });
});
