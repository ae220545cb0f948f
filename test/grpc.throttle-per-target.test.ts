// Regression (issue 19): gRPC throttling was per interceptor, not per channel target. gRFC A6
// keeps one token bucket per server name; one interceptor shared by the clients of two servers
// let failures at one throttle the other (a second grpc-js server was refused after 1 attempt).
// Two real grpc-js servers on 127.0.0.1, port 0, one interceptor shared by clients of both;
// waits on an injected clock, so nothing here depends on how fast the machine is.
import type { Client } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { TokenBucket } from '../src/core/budgets/token-bucket.js';
import { createRetryInterceptor, type RetryInterceptorOptions } from '../src/grpc/index.js';
import { instantClock } from './helpers/clocks.js';
import { call, closedAfterEach, connect, type ScriptedServer } from './helpers/grpc.js';

const OK = 0;
const UNAVAILABLE = 14;

const { clients, server } = closedAfterEach();

/** One interceptor, as an application shares it, and a new client (channel) per call to `to`. */
function sharedInterceptor(options: RetryInterceptorOptions) {
  const interceptor = createRetryInterceptor({ clock: instantClock(), ...options });
  return (to: ScriptedServer) => {
    const client = connect(to.address, { interceptor });
    clients.push(client);
    return client;
  };
}

/** How many attempts one call to `s` made, from the server's count before and after it. */
async function attemptsOf(s: ScriptedServer, client: Client): Promise<number> {
  const before = s.seen.length;
  await call(client, 'Unary');
  return s.seen.length - before;
}

const THROTTLING = { maxAttempts: 2, throttling: { maxTokens: 3, tokenRatio: 0.1 } };

describe('gRPC throttling is per interceptor, not per channel target (issue 19)', () => {
  it("failures at server A exhaust A's tokens, and server B's calls still retry", async () => {
    const clientOf = sharedInterceptor(THROTTLING);
    const a = await server();
    const b = await server();
    a.always({ code: UNAVAILABLE });
    expect(await attemptsOf(a, clientOf(a))).toBe(2); // A: 3 -> 2 -> 1
    expect(await attemptsOf(a, clientOf(a))).toBe(1); // A: throttled at 1 <= 3 / 2
    b.script({ code: UNAVAILABLE });
    const outcome = await call(clientOf(b), 'Unary'); // B: 3 -> 2, retried
    expect(outcome.code).toBe(OK);
    expect(b.seen).toHaveLength(2);
    // A is still throttled: B's success refilled only B's tokens.
    expect(await attemptsOf(a, clientOf(a))).toBe(1);
  });

  it('channels to one target share its tokens, as A6 keeps one bucket per server name', async () => {
    const clientOf = sharedInterceptor(THROTTLING);
    const a = await server();
    a.always({ code: UNAVAILABLE });
    expect(await attemptsOf(a, clientOf(a))).toBe(2); // 3 -> 2 -> 1
    // Another channel to the same target: no retry (a bucket of its own would retry).
    expect(await attemptsOf(a, clientOf(a))).toBe(1);
  });

  it("the default retry budget is per target too: A's outage leaves B's budget whole", async () => {
    const clientOf = sharedInterceptor({ maxAttempts: 4 });
    const a = await server();
    const b = await server();
    a.always({ code: UNAVAILABLE });
    // RetryBudget: 100 credits, +1 a call, 10 a retry: 3, 3, 3, 1 retries, then none.
    const made: number[] = [];
    for (let i = 0; i < 5; i++) made.push(await attemptsOf(a, clientOf(a)));
    expect(made).toEqual([4, 4, 4, 2, 1]);
    b.script({ code: UNAVAILABLE }, { code: UNAVAILABLE });
    expect((await call(clientOf(b), 'Unary')).code).toBe(OK);
    expect(b.seen).toHaveLength(3);
  });

  it('a budget given by the user is shared as given, by every target', async () => {
    const budget = new TokenBucket({ maxTokens: 3, tokenRatio: 0.1 });
    const clientOf = sharedInterceptor({ maxAttempts: 2, budget });
    const a = await server();
    const b = await server();
    a.always({ code: UNAVAILABLE });
    expect(await attemptsOf(a, clientOf(a))).toBe(2);
    b.always({ code: UNAVAILABLE });
    expect(await attemptsOf(b, clientOf(b))).toBe(1); // the one bucket is spent
  });

  it('remembers at most maxTargets targets: the least recently used starts again', async () => {
    const clientOf = sharedInterceptor({ ...THROTTLING, maxTargets: 1 });
    const a = await server();
    const b = await server();
    a.always({ code: UNAVAILABLE });
    expect(await attemptsOf(a, clientOf(a))).toBe(2);
    expect(await attemptsOf(a, clientOf(a))).toBe(1); // throttled
    expect(await attemptsOf(b, clientOf(b))).toBe(1); // B succeeds; A is forgotten
    expect(await attemptsOf(a, clientOf(a))).toBe(2); // a fresh bucket for A
  });
});
