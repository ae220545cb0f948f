// stormproof/axios against a real node:http server on 127.0.0.1 (port 0), through axios' own http
// adapter. First the table of axios-retry's cases (spec/index.spec.ts, softonic/axios-retry 4.5.0,
// ported by behaviour in test/axios-cases.ts, which the Chromium suite runs too): a case adapted
// where stormproof deliberately differs says 'Difference:' in its title. Then stormproof's own
// rules through axios, and bad options. Waits are short or on an injected clock, and the suite
// ends by checking that it left no socket, server or timer behind.
import { once } from 'node:events';
import {
  Agent,
  createServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import axios, { AxiosError } from 'axios';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import * as stormproofAxios from '../src/axios/index.js';
import { type AxiosRetryOptions, axiosRetry, getRetryReport } from '../src/axios/index.js';
import { RetryBudget } from '../src/index.js';
import { CASES, type Kit } from './axios-cases.js';
import { checkReceived, type StepServer, startStepServer } from './helpers/axios-steps.js';
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

describe("axios-retry's suite, ported (test/axios-cases.ts), through the http adapter", () => {
  let steps: StepServer;
  beforeAll(async () => {
    steps = await startStepServer();
  });
  afterAll(() => steps.close());

  it("holds every case of axios-retry 4.5.0's spec (89) once, and names what cannot run in a browser", () => {
    const ported = CASES.filter((c) => !c.from.startsWith('('));
    expect(ported).toHaveLength(89);
    expect(new Set(ported.map((c) => c.from)).size).toBe(89);
    expect(new Set(CASES.map((c) => c.name)).size).toBe(CASES.length);
    expect(CASES.filter((c) => c.browser !== undefined).map((c) => c.from)).toEqual([
      'satisfies the retry condition: should work with a custom agent configuration',
      'satisfies the retry condition: should work with a custom httpAgent configuration',
    ]);
  });

  it.each(CASES.map((c, i) => [c.name, c, i] as const))('%s', async (_, c, i) => {
    const path = `/case/${i}`;
    if (c.steps !== undefined) steps.steps.set(path, c.steps);
    const kit: Kit = {
      axios,
      sp: stormproofAxios,
      url: `${steps.base}${path}`,
      adapter: 'http',
      httpAgent: () => new Agent(),
    };
    expect(await c.run(kit)).toEqual(c.expected);
    await checkReceived(c, steps.received.get(path) ?? []);
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

  it.each([
    [{ 'axios-retry': { retries: -2 } }, /'axios-retry' retries must be >= 0/],
    [
      { 'axios-retry': { retrys: 1 } },
      /'axios-retry' has no option "retrys" \(did you mean retries\?\)/,
    ],
    [
      { 'axios-retry': { retryCount: 2 } },
      /'axios-retry' retryCount is axios-retry's own retry state/,
    ],
    [
      { 'axios-retry': { lastRequestTime: 1 } },
      /'axios-retry' lastRequestTime is axios-retry's own/,
    ],
    [{ 'axios-retry': 3 }, /'axios-retry' options must be an object/],
    [
      { 'axios-retry': { retries: 1 }, stormproof: { retries: 1 } },
      /stormproof or 'axios-retry', not both/,
    ],
    [{ 'axios-retry': { retries: 1 }, stormproof: false }, /stormproof or 'axios-retry', not both/],
  ])("a bad config['axios-retry'] rejects the request, naming it: %j", async (config, message) => {
    handler = answer(200);
    await expect(client().get('/test', config as never)).rejects.toThrow(message);
    expect(received).toHaveLength(0);
  });
});
