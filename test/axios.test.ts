// stormproof/axios against a real node:http server on 127.0.0.1 (port 0), through axios' own http
// adapter. The cases of axios-retry's suite (spec/index.spec.ts, softonic/axios-retry) are ported
// here by behaviour, in our own code: where stormproof deliberately differs, the test says so in
// a "Differs:" comment and pins stormproof's behaviour. Waits are short or on an injected clock,
// and the suite ends by checking that it left no socket, server or timer behind.
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import axios, { AxiosError, CanceledError, isAxiosError } from 'axios';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  type AxiosRetryOptions,
  axiosRetry,
  exponentialDelay,
  getRetryReport,
  linearDelay,
  noDelay,
  retryAfter,
} from '../src/axios/index.js';
import { RetryBudget } from '../src/index.js';
import { type InstantClock, instantClock } from './helpers/clocks.js';

interface Received {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
}

/** What the server does with request `n` (from 1) of the current test. */
type Handler = (n: number, req: IncomingMessage, res: ServerResponse) => void;

let server: Server;
let base: string;
let handler: Handler;
let received: Received[] = [];
let resourcesBefore: string[] = [];

beforeAll(async () => {
  resourcesBefore = process.getActiveResourcesInfo();
  server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    try {
      for await (const chunk of req) chunks.push(chunk as Buffer);
    } catch {
      return;
    }
    received.push({
      method: req.method ?? '',
      path: req.url ?? '',
      headers: req.headers,
      body: Buffer.concat(chunks).toString('utf8'),
    });
    handler(received.length, req, res);
  });
  server.keepAliveTimeout = 100;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

beforeEach(() => {
  received = [];
  handler = (_, __, res) => res.end('ok');
});

afterAll(async () => {
  const closed = new Promise((resolve) => server.close(resolve));
  server.closeAllConnections();
  await closed;
  // Let sockets finish closing, then nothing of ours may be left running.
  await new Promise((resolve) => setTimeout(resolve, 50));
  const after = process.getActiveResourcesInfo();
  const extra = after.filter((type) => type === 'TCPSocketWrap' || type === 'TCPServerWrap');
  const before = resourcesBefore.filter(
    (type) => type === 'TCPSocketWrap' || type === 'TCPServerWrap',
  );
  expect(extra.length).toBeLessThanOrEqual(before.length);
});

/** Steps in turn (the last repeats): a status, a status with headers and body, or 'reset'. */
type Step = number | 'reset' | { status: number; headers?: Record<string, string>; body?: string };

function answer(...steps: Step[]): Handler {
  return (n, req, res) => {
    const step = steps[Math.min(n, steps.length) - 1] ?? 200;
    if (step === 'reset') {
      req.socket.destroy(); // the connection drops: ECONNRESET / socket hang up at the client
      return;
    }
    const {
      status,
      headers = {},
      body = `answer ${n}`,
    } = typeof step === 'number' ? { status: step } : step;
    res.writeHead(status, { 'content-type': 'text/plain', ...headers });
    res.end(body);
  };
}

/** A fresh axios instance with stormproof installed; waits on an instant clock unless said. */
function client(options: AxiosRetryOptions = {}, clock: InstantClock = instantClock()) {
  const instance = axios.create({ baseURL: base });
  axiosRetry(instance, { getAdapter: axios.getAdapter, clock, random: () => 0.5, ...options });
  return instance;
}

describe('axiosRetry: axios-retry behaviours, ported', () => {
  it('resolves a success as it is', async () => {
    handler = answer(200);
    const res = await client({ retries: 0 }).get('/test');
    expect(res.status).toBe(200);
    expect(res.data).toBe('answer 1');
  });

  it('asks retryCondition with the error itself', async () => {
    handler = answer('reset', 200);
    const seen: unknown[] = [];
    const error = await client({
      retries: 1,
      retryCondition: (e) => {
        seen.push(e);
        return false;
      },
    })
      .get('/test')
      .catch((e: unknown) => e);
    expect(seen).toEqual([error]);
    expect(isAxiosError(error)).toBe(true);
    expect(received).toHaveLength(1);
  });

  it('resolves with a successful retry after a dropped connection', async () => {
    handler = answer('reset', 200);
    const res = await client({ retries: 1, retryCondition: () => true }).get('/test');
    expect(res.status).toBe(200);
    expect(res.data).toBe('answer 2');
    expect(received).toHaveLength(2);
  });

  it('does not run transformRequest twice (a keyed POST, retried)', async () => {
    // Differs: axios-retry retries this POST because retryCondition says yes; stormproof sends a
    // POST again only with an Idempotency-Key (or with POST in retryMethods).
    handler = answer('reset', 200);
    const instance = axios.create({
      baseURL: base,
      transformRequest: [(data) => JSON.stringify(data)],
    });
    axiosRetry(instance, { getAdapter: axios.getAdapter, clock: instantClock(), retries: 1 });
    const res = await instance.post(
      '/test',
      { a: 'b' },
      { headers: { 'Idempotency-Key': '"k1"', 'content-type': 'application/json' } },
    );
    expect(res.status).toBe(200);
    expect(received.map((r) => JSON.parse(r.body))).toEqual([{ a: 'b' }, { a: 'b' }]);
  });

  it('rejects with the error when retries is 0', async () => {
    handler = answer('reset', 200);
    const error = await client({ retries: 0 })
      .get('/test')
      .catch((e: unknown) => e);
    expect((error as AxiosError).code).toMatch(/ECONNRESET|ERR_BAD_RESPONSE/);
    expect(received).toHaveLength(1);
    expect(getRetryReport(error)).toMatchObject({ reason: 'max-attempts', attempts: 1 });
  });

  it('rejects with the last error when there are more failures than retries', async () => {
    handler = answer(503, 502, 200);
    const error = await client({ retries: 1 })
      .get('/test')
      .catch((e: unknown) => e);
    expect((error as AxiosError).response?.status).toBe(502);
    expect(received).toHaveLength(2);
  });

  it('shouldResetTimeout: false makes axios timeout the whole request', async () => {
    // Differs: stormproof's default is the opposite (timeout per attempt, deadlineMs for the
    // whole); with false, the request ends at the timeout with the engine's TimeoutError (code
    // STORMPROOF_DEADLINE_EXCEEDED) rather than axios' ECONNABORTED.
    handler = (n, _req, res) => {
      if (n < 3) setTimeout(() => res.destroy(), 75);
      else res.end('late');
    };
    const instance = axios.create({ baseURL: base });
    axiosRetry(instance, { getAdapter: axios.getAdapter, baseDelayMs: 1, retries: 3 });
    const t0 = performance.now();
    const failed = await instance
      .get('/test', { timeout: 100, stormproof: { shouldResetTimeout: false } })
      .catch((e: unknown) => e);
    const took = performance.now() - t0;
    expect((failed as { code?: string }).code).toBe('STORMPROOF_DEADLINE_EXCEEDED');
    expect(took).toBeGreaterThanOrEqual(95);
    expect(took).toBeLessThan(400);
  });

  it('does not start a retry whose wait ends past the whole-request timeout', async () => {
    handler = answer('reset', 'reset', 200);
    const clock = instantClock();
    const instance = client({ retries: 2, retryDelay: () => 300 }, clock);
    const error = await instance
      .get('/test', { timeout: 500, stormproof: { shouldResetTimeout: false } })
      .catch((e: unknown) => e);
    // 300 ms after the first failure, 600 ms after the second: past 500 ms, so not made.
    expect(clock.sleeps).toEqual([300]);
    expect(received).toHaveLength(2);
    expect(getRetryReport(error)?.reason).toBe('pushback-beyond-deadline');
  });

  it('resets the timeout between attempts (stormproof default, axios-retry opt-in)', async () => {
    handler = (n, _req, res) => {
      if (n < 3) setTimeout(() => res.end('slow'), 300);
      else res.end('fast');
    };
    const res = await client({ retries: 3 }).get('/test', { timeout: 100 });
    expect(res.data).toBe('fast');
    expect(received).toHaveLength(3);
  });

  it('rejects errors that are not axios errors without retrying', async () => {
    handler = answer(200);
    const instance = axios.create({ baseURL: base });
    const plain = new Error('plain');
    axiosRetry(instance, {
      getAdapter: axios.getAdapter,
      retries: 1,
      retryCondition: () => true,
      clock: instantClock(),
    });
    instance.interceptors.response.use(null, () => Promise.reject(plain));
    instance.interceptors.response.use(() => Promise.reject(plain));
    await expect(instance.get('/test')).rejects.toBe(plain);
    expect(received).toHaveLength(1);
  });

  it('retryCondition may answer with a promise: true retries, false and rejection do not', async () => {
    handler = answer('reset', 200);
    const yes = await client({ retries: 1, retryCondition: async () => true }).get('/test');
    expect(yes.status).toBe(200);
    received = [];
    handler = answer('reset', 200);
    await expect(
      client({ retries: 1, retryCondition: async () => false }).get('/test'),
    ).rejects.toBeInstanceOf(AxiosError);
    expect(received).toHaveLength(1);
    received = [];
    handler = answer('reset', 200);
    await expect(
      client({ retries: 1, retryCondition: () => Promise.reject(new Error('no')) }).get('/test'),
    ).rejects.toBeInstanceOf(AxiosError);
    expect(received).toHaveLength(1);
  });

  it('an abort during a wait ends the request at once with a CanceledError', async () => {
    handler = answer(429);
    const instance = axios.create({ baseURL: base });
    axiosRetry(instance, {
      getAdapter: axios.getAdapter,
      retries: 1,
      retryDelay: () => 10_000,
      deadlineMs: 60_000,
    });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const t0 = performance.now();
    const error = await instance.get('/test', { signal: controller.signal }).catch((e) => e);
    expect(error).toBeInstanceOf(CanceledError);
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(received).toHaveLength(1);
  });

  it('a CancelToken cancelled during a wait ends the request at once, as a signal does', async () => {
    handler = answer(429);
    const instance = axios.create({ baseURL: base });
    axiosRetry(instance, {
      getAdapter: axios.getAdapter,
      retries: 1,
      retryDelay: () => 10_000,
      deadlineMs: 60_000,
    });
    const source = axios.CancelToken.source();
    setTimeout(() => source.cancel('user left'), 100);
    const t0 = performance.now();
    const error = await instance.get('/test', { cancelToken: source.token }).catch((e) => e);
    expect(axios.isCancel(error)).toBe(true);
    expect((error as { message?: string }).message).toBe('user left');
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(received).toHaveLength(1);
  });

  it('a CancelToken cancelled before the request sends nothing, and a finished one keeps no listener', async () => {
    handler = answer(200);
    const instance = client({ retries: 2 });
    const done = axios.CancelToken.source();
    expect((await instance.get('/test', { cancelToken: done.token })).status).toBe(200);
    // axios keeps a token's subscribers here: the request let go of its own when it ended.
    const listeners = (done.token as unknown as { _listeners?: unknown[] })._listeners;
    expect(listeners ?? []).toHaveLength(0);
    received = [];
    const early = axios.CancelToken.source();
    early.cancel('never mind');
    const error = await instance.get('/test', { cancelToken: early.token }).catch((e) => e);
    expect(axios.isCancel(error)).toBe(true);
    expect(received).toHaveLength(0);
  });

  it('an abort while onRetry runs ends the request before the retry is sent', async () => {
    handler = answer(429);
    const instance = axios.create({ baseURL: base });
    axiosRetry(instance, {
      getAdapter: axios.getAdapter,
      retries: 1,
      retryDelay: () => 10_000,
      deadlineMs: 60_000,
      onRetry: () => new Promise((resolve) => setTimeout(resolve, 100)),
    });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const error = await instance.get('/test', { signal: controller.signal }).catch((e) => e);
    expect(error).toBeInstanceOf(CanceledError);
    expect(received).toHaveLength(1);
  });

  it('an abort cancels the attempt in flight', async () => {
    handler = (_n, _req, res) => setTimeout(() => res.writeHead(429).end(), 100);
    const instance = client({ retries: 2, retryDelay: () => 0 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 150);
    const t0 = performance.now();
    const error = await instance.get('/test', { signal: controller.signal }).catch((e) => e);
    expect(error).toBeInstanceOf(CanceledError);
    expect(performance.now() - t0).toBeLessThan(300);
    expect(received).toHaveLength(2);
  });

  it('per-request options win over the instance ones', async () => {
    handler = answer('reset', 'reset', 200);
    const res = await client({ retries: 0 }).get('/test', { stormproof: { retries: 2 } });
    expect(res.status).toBe(200);
    expect(received).toHaveLength(3);
  });

  it('stormproof: false sends the request once', async () => {
    handler = answer(503, 200);
    const error = await client()
      .get('/test', { stormproof: false })
      .catch((e) => e);
    expect((error as AxiosError).response?.status).toBe(503);
    expect(received).toHaveLength(1);
  });
});

describe('validateResponse', () => {
  it('turns a 200 into a failed attempt, and the request rejects with an AxiosError', async () => {
    handler = answer(200);
    const error = await client({ retries: 0, validateResponse: (r) => r.status !== 200 })
      .get('/test')
      .catch((e) => e);
    expect(isAxiosError(error)).toBe(true);
    expect((error as AxiosError).response?.status).toBe(200);
  });

  it('retries by its logic until a response passes', async () => {
    handler = (n, req, res) =>
      n === 2 ? req.socket.destroy() : res.end(n === 4 ? 'ok!' : 'should retry!');
    let delays = 0;
    const res = await client({
      retries: 4,
      retryCondition: () => true,
      retryDelay: () => {
        delays++;
        return 0;
      },
      validateResponse: (r) => r.status >= 200 && r.status < 300 && r.data === 'ok!',
    }).get('/test');
    expect(delays).toBe(3);
    expect(res.data).toBe('ok!');
  });

  it('a request may set its own, or turn a default one off with null', async () => {
    handler = (n, req, res) => (n === 2 ? req.socket.destroy() : res.end(n === 3 ? 'ok!' : 'no'));
    const instance = client({ validateResponse: (r) => r.status === 200 });
    const res = await instance.get('/test', {
      stormproof: { retryCondition: () => true, validateResponse: (r) => r.data === 'ok!' },
    });
    expect(res.data).toBe('ok!');
    received = [];
    const strict = client({ validateResponse: (r) => r.data === 'ok!' });
    const first = await strict.get('/test', { stormproof: { validateResponse: null } });
    expect(first.data).toBe('no');
    expect(received).toHaveLength(1);
  });
});

describe('retryDelay', () => {
  it('is asked once per retry and its value is waited exactly', async () => {
    handler = answer('reset', 'reset', 'reset', 200);
    const clock = instantClock();
    let asked = 0;
    await client(
      {
        retries: 4,
        retryCondition: () => true,
        retryDelay: (n) => {
          asked++;
          return n * 7;
        },
      },
      clock,
    ).get('/test');
    expect(asked).toBe(3);
    expect(clock.sleeps).toEqual([7, 14, 21]);
  });

  it('linearDelay: 100, 200, 300 ms by default, 50, 100, 150 with 50', async () => {
    for (const [delay, expected] of [
      [linearDelay(), [100, 200, 300]],
      [linearDelay(50), [50, 100, 150]],
    ] as const) {
      received = [];
      handler = answer('reset', 'reset', 'reset', 200);
      const clock = instantClock();
      await client({ retries: 4, retryDelay: delay }, clock).get('/test');
      expect(clock.sleeps).toEqual(expected);
    }
  });

  it('exponentialDelay means the engine backoff: full jitter, doubling, Retry-After added', async () => {
    // Differs: axios-retry's exponentialDelay is 2^n x 100 ms plus 0-20 %, uncapped, and takes
    // the larger of it and Retry-After; stormproof draws from [0, ceiling] and adds Retry-After.
    handler = answer(503, 503, { status: 503, headers: { 'retry-after': '1' } }, 200);
    const clock = instantClock();
    await client({ retryDelay: exponentialDelay, random: () => 0.5, baseDelayMs: 100 }, clock).get(
      '/test',
    );
    expect(clock.sleeps).toEqual([50, 100, 200 + 1000]);
  });

  it('the default is the engine backoff, not axios-retry 0 ms', async () => {
    // Differs: axios-retry's default retryDelay is noDelay (0 ms, a herd-maker).
    handler = answer(503, 503, 200);
    const clock = instantClock();
    await client({}, clock).get('/test');
    expect(clock.sleeps).toEqual([100, 200]); // 0.5 x 200, 0.5 x 400
  });

  it('the delay helpers read Retry-After as axios-retry does, and clamp nothing below 0', () => {
    const headers = (h: Record<string, string>) => ({ response: { headers: h } });
    expect(retryAfter(headers({ 'retry-after': '3' }))).toBe(3000);
    expect(retryAfter(headers({ 'retry-after': '-3' }))).toBe(0);
    expect(retryAfter(headers({ 'retry-after': 'soon' }))).toBe(0);
    const future = new Date(Date.now() + 60_000).toUTCString();
    expect(retryAfter(headers({ 'retry-after': future }))).toBeGreaterThan(58_000);
    const past = new Date(Date.now() - 60_000).toUTCString();
    expect(retryAfter(headers({ 'retry-after': past }))).toBe(0);
    expect(noDelay(1, headers({ 'retry-after': '2' }))).toBe(2000);
    expect(linearDelay(100)(2, headers({ 'retry-after': '1' }))).toBe(1000);
    for (let n = 1; n <= 4; n++) {
      const d = exponentialDelay(n);
      expect(d).toBeGreaterThanOrEqual(0);
      expect(d).toBeLessThanOrEqual(2 ** n * 100);
    }
    expect(exponentialDelay(20)).toBeLessThanOrEqual(5000);
  });
});

describe('onRetry and onMaxRetryTimesExceeded', () => {
  it('onRetry is called before each retry with the count, the error and the config', async () => {
    handler = answer(503);
    const calls: Array<[number, boolean, boolean]> = [];
    await client({
      retries: 2,
      onRetry: (n, e, config) => calls.push([n, isAxiosError(e), typeof config.url === 'string']),
    })
      .get('/test')
      .catch(() => {});
    expect(calls).toEqual([
      [1, true, true],
      [2, true, true],
    ]);
  });

  it('a 500 is retried once by default', async () => {
    // Differs: axios-retry retries a 5xx on an idempotent request `retries` times; stormproof
    // retries a 500 (a bug, more likely than overload) once (maxInternalErrorRetries).
    handler = answer(500);
    let calls = 0;
    await client({ retries: 2, onRetry: () => calls++ })
      .get('/test')
      .catch(() => {});
    expect(calls).toBe(1);
    expect(received).toHaveLength(2);
  });

  it('a retry waits for the promise onRetry returns; per-request onRetry is used', async () => {
    handler = answer(503);
    let done = 0;
    await client({ retries: 2 })
      .get('/test', {
        stormproof: {
          onRetry: () =>
            new Promise<void>((resolve) =>
              setTimeout(() => {
                done++;
                resolve();
              }, 20),
            ),
        },
      })
      .catch(() => {});
    expect(done).toBe(2);
    expect(received).toHaveLength(3);
  });

  it('onRetry rejecting ends the request with its reason', async () => {
    handler = answer(503);
    let calls = 0;
    const error = await client({
      retries: 2,
      retryCondition: () => true,
      onRetry: async () => {
        calls++;
        throw new Error('onRetry error');
      },
    })
      .get('/test')
      .catch((e) => e);
    expect((error as Error).message).toBe('onRetry error');
    expect(calls).toBe(1);
    expect(received).toHaveLength(1);
  });

  it('onMaxRetryTimesExceeded is called once with the last error and the retry count', async () => {
    handler = answer(503);
    const calls: Array<[number, number | undefined]> = [];
    await client({
      retries: 2,
      onMaxRetryTimesExceeded: async (e, n) => {
        await new Promise((resolve) => setTimeout(resolve, 10));
        calls.push([n, e.response?.status]);
      },
    })
      .get('/test')
      .catch(() => {});
    expect(calls).toEqual([[2, 503]]);
  });

  it('what onMaxRetryTimesExceeded throws replaces the error', async () => {
    handler = answer(503);
    const custom = new Error('CustomErrorAfterMaxRetryTimesExceeded');
    await expect(
      client({
        retries: 2,
        onMaxRetryTimesExceeded: () => {
          throw custom;
        },
      }).get('/test'),
    ).rejects.toBe(custom);
  });

  it('eject removes the interceptor: later requests are sent once', async () => {
    handler = answer(503, 200);
    const instance = axios.create({ baseURL: base });
    const handle = axiosRetry(instance, { getAdapter: axios.getAdapter, clock: instantClock() });
    expect(typeof handle.requestInterceptorId).toBe('number');
    handle.eject();
    await expect(instance.get('/test')).rejects.toBeInstanceOf(AxiosError);
    expect(received).toHaveLength(1);
  });
});

describe("stormproof/fetch's rules, through axios", () => {
  it('sends a POST without a key once, and says why', async () => {
    handler = answer(503, 201);
    const error = await client()
      .post('/orders', { sku: 1 })
      .catch((e) => e);
    expect((error as AxiosError).response?.status).toBe(503);
    expect(received).toHaveLength(1);
    expect(getRetryReport(error)).toMatchObject({ reason: 'not-idempotent', attempts: 1 });
  });

  it("idempotencyKey: 'auto' keys a POST, the same key on each attempt; 409 on it is final", async () => {
    handler = answer(503, 409, 201);
    const error = await client({ idempotencyKey: 'auto' })
      .post('/orders', { sku: 1 })
      .catch((e) => e);
    expect((error as AxiosError).response?.status).toBe(409);
    const keys = received.map((r) => r.headers['idempotency-key']);
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(/^"[0-9a-f-]{36}"$/);
    expect(keys[1]).toBe(keys[0]);
  });

  it('sends the attempt header on retries only', async () => {
    handler = answer(503, 503, 200);
    await client().get('/test');
    expect(received.map((r) => r.headers['stormproof-attempt'])).toEqual([undefined, '2', '3']);
  });

  it('a stream body is sent once', async () => {
    const { Readable } = await import('node:stream');
    handler = answer(503, 200);
    const error = await client({ retryMethods: ['PUT'] })
      .put('/upload', Readable.from(['a', 'b']))
      .catch((e) => e);
    expect((error as AxiosError).response?.status).toBe(503);
    expect(getRetryReport(error)?.reason).toBe('body-not-replayable');
  });

  it('a response that says not to retry is final, whatever retryCondition says', async () => {
    handler = answer({ status: 503, headers: { 'stormproof-overloaded': '1' } }, 200);
    await expect(client({ retryCondition: () => true }).get('/test')).rejects.toBeInstanceOf(
      AxiosError,
    );
    expect(received).toHaveLength(1);
  });

  it('Retry-After is added to the jittered wait; x-amz-retry-after is read on a 503', async () => {
    handler = answer(
      { status: 429, headers: { 'retry-after': '2' } },
      { status: 503, headers: { 'x-amz-retry-after': '1500' } },
      200,
    );
    const clock = instantClock();
    await client({}, clock).get('/test');
    // 429: 0.5 x min(200 x 5, 5000) = 500, + 2000; then 503: 0.5 x 400 = 200, + 1500.
    expect(clock.sleeps).toEqual([2500, 1700]);
  });

  it('x-amz-retry-after is added to the backoff, bounded by the deadline, not by backoff + 5 s', async () => {
    // Differs from the AWS SDK 2026 rule (aws-sdk-js-v3 #8037): AWS waits
    // clamp(x-amz-retry-after, backoff, backoff + 5 s); stormproof waits backoff + the value, so
    // a small value never undercuts the jittered backoff (as AWS's lower bound), and a large one
    // is bounded by the deadline: past it, the request ends at once instead of sleeping.
    handler = answer({ status: 503, headers: { 'x-amz-retry-after': '9000' } }, 200);
    const clock = instantClock();
    await client({}, clock).get('/test');
    expect(clock.sleeps).toEqual([100 + 9000]); // AWS: min(9000, 100 + 5000) = 5100
    received = [];
    handler = answer({ status: 503, headers: { 'x-amz-retry-after': '40000' } }, 200);
    const error = await client({}, instantClock())
      .get('/test')
      .catch((e) => e);
    expect(getRetryReport(error)?.reason).toBe('retry-after-beyond-deadline');
  });

  it('a Retry-After past the deadline ends the request at once', async () => {
    handler = answer({ status: 503, headers: { 'retry-after': '3600' } }, 200);
    const clock = instantClock();
    const error = await client({}, clock)
      .get('/test')
      .catch((e) => e);
    expect(clock.sleeps).toEqual([]);
    expect(getRetryReport(error)?.reason).toBe('retry-after-beyond-deadline');
  });

  it('a clock that fires late: the deadline is checked first, not blamed on the server', async () => {
    handler = answer(503, 503, 200);
    // Each wait returns 400 ms late, as timers do on a busy machine.
    const late = instantClock();
    const sleep = late.sleep;
    late.sleep = (ms, signal) => sleep(ms + 400, signal);
    const error = await client({ deadlineMs: 600 }, late)
      .get('/test')
      .catch((e) => e);
    expect(late.sleeps).toEqual([500]); // 100 ms asked, 500 ms passed: past the 600 ms deadline
    expect(received).toHaveLength(2);
    expect(getRetryReport(error)?.reason).toBe('deadline');
  });

  it('budgets are per origin: each origin gets its own budget, which is asked', async () => {
    handler = answer(503);
    const origins: string[] = [];
    const refusing = {
      recordRequest() {},
      recordSuccess() {},
      recordFailure() {},
      tryRetry: () => false,
    };
    const instance = client({
      retries: 1,
      budget: (origin) => {
        origins.push(origin);
        return origin === base ? refusing : new RetryBudget();
      },
    });
    const error = await instance.get('/test').catch((e) => e);
    expect(getRetryReport(error)?.reason).toBe('budget');
    expect(origins).toEqual([base]);
  });

  it('a breaker per origin opens and refuses at once', async () => {
    handler = answer(503);
    const instance = client({ retries: 0, breaker: { consecutiveFailures: 2 } });
    await instance.get('/test').catch(() => {});
    await instance.get('/test').catch(() => {});
    const error = await instance.get('/test').catch((e) => e);
    expect((error as { name?: string }).name).toBe('BreakerOpenError');
    expect(received).toHaveLength(2);
  });

  it('onGiveUp and onSuccess get the method, the redacted URL and the status', async () => {
    handler = answer(503, 200);
    const events: unknown[] = [];
    const instance = client({
      retries: 0,
      onGiveUp: (e) => events.push(['giveUp', e.method, e.url, e.status, e.reason]),
      onSuccess: (e) => events.push(['success', e.method, e.url, e.status, e.attempts]),
    });
    await instance.get('/test?token=secret').catch(() => {});
    await instance.get('/test');
    expect(events).toEqual([
      ['giveUp', 'GET', `${base}/test?token=REDACTED`, 503, 'max-attempts'],
      ['success', 'GET', `${base}/test`, 200, 1],
    ]);
  });
});

describe('bad options throw at construction, naming the option', () => {
  const make = (options: unknown) =>
    axiosRetry(axios.create(), { getAdapter: axios.getAdapter, ...(options as object) });
  it.each([
    [{ retries: -1 }, /retries must be >= 0/],
    [{ retries: 1.5 }, /retries must be an integer/],
    [{ retries: null }, /retries must not be null/],
    [{ retryCondition: 'yes' }, /retryCondition must be a function/],
    [{ retryDelay: 5 }, /retryDelay must be a function/],
    [{ shouldResetTimeout: 'no' }, /shouldResetTimeout must be a boolean/],
    [{ onRetry: {} }, /onRetry must be a function/],
    [{ onMaxRetryTimesExceeded: 1 }, /onMaxRetryTimesExceeded must be a function/],
    [{ validateResponse: true }, /validateResponse must be a function/],
    [{ deadlineMs: 0 }, /deadlineMs must be > 0/],
    [{ deadlineMs: null }, /deadlineMs must not be null/],
    [{ attemptHeader: 'bad header' }, /attemptHeader must be a header name/],
    [{ retryMethods: 'GET' }, /retryMethods must be an array/],
    [{ idempotencyKey: true }, /idempotencyKey must be 'auto' or false/],
    [{ maxOrigins: 0 }, /maxOrigins must be >= 1/],
    [{ retries: 1, maxAttempts: 2 }, /retries or maxAttempts, not both/],
    [{ retrys: 1 }, /has no option "retrys" \(did you mean retries\?\)/],
    [{ getAdapter: 'http' }, /getAdapter must be a function/],
  ])('%j', (options, message) => {
    expect(() => make(options)).toThrow(message);
  });

  it('names a missing getAdapter for an instance from axios.create()', () => {
    expect(() => axiosRetry(axios.create())).toThrow(/getAdapter is needed/);
    axiosRetry(axios).eject(); // the default export has getAdapter
  });

  it('refuses something that is not axios', () => {
    expect(() => axiosRetry(null as never)).toThrow(/axios must be axios/);
    expect(() => axiosRetry({} as never)).toThrow(/axios must be axios/);
  });

  it('a bad per-request option rejects the request, naming it', async () => {
    handler = answer(200);
    await expect(client().get('/test', { stormproof: { retries: -2 } })).rejects.toThrow(
      /stormproof retries must be >= 0/,
    );
    expect(received).toHaveLength(0);
  });
});
