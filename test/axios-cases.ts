// axios-retry's own test cases (spec/index.spec.ts of softonic/axios-retry 4.5.0), ported by
// behaviour into one table that runs twice: in Node through axios' http adapter
// (test/axios.test.ts) and in headless Chromium through axios' XHR adapter
// (test/axios.browser.test.ts), each time against a loopback server that plays the case's steps.
// A case names what it ports (`from`); where stormproof differs on purpose its title says
// 'Difference:' and it pins stormproof's behaviour (docs/axios.md lists each). A case that cannot
// run under XHR says why in `browser`, and the browser suite lists it as skipped with that reason.
//
// This module is loaded by the page too (transpiled, not bundled): it imports no runtime code but
// the virtual clock; axios and stormproof/axios come in through the kit.
import type { AxiosError, AxiosInstance, AxiosResponse, AxiosStatic } from 'axios';
import type * as StormproofAxios from '../src/axios/index.js';
import { type InstantClock, instantClock } from './helpers/clocks.js';

/** What the server does with one request: a status, a drop ('reset'), or an answer in detail. */
export type Step =
  | number
  | 'reset'
  | {
      readonly status?: number;
      readonly headers?: Readonly<Record<string, string>>;
      readonly body?: string;
      /** Wait this long first. */
      readonly delayMs?: number;
      /** Drop the connection instead of answering. */
      readonly reset?: boolean;
    };

/** What a case runs with: the side's axios and stormproof/axios, and its own endpoint. */
export interface Kit {
  readonly axios: AxiosStatic;
  readonly sp: typeof StormproofAxios;
  /** The absolute URL of this case's endpoint on the loopback server. */
  readonly url: string;
  readonly adapter: 'http' | 'xhr';
  /** Node only: a fresh `http.Agent`. */
  readonly httpAgent?: () => object;
}

/** One ported case: the server's steps, what the run resolves with, and the requests seen. */
export interface PortedCase {
  readonly name: string;
  /** The axios-retry spec case this ports (its `describe` and `it` titles, shortened). */
  readonly from: string;
  /** The server's steps for this case's path; none: the case sends no request. */
  readonly steps?: readonly Step[];
  /** How many requests the server must receive (0 when `steps` is absent). */
  readonly requests?: number;
  /** The request bodies the server must receive, in order. */
  readonly bodies?: readonly string[];
  /** The `stormproof-attempt` header of each request, in order. */
  readonly attemptHeaders?: ReadonlyArray<string | undefined>;
  /** The client must have cut its last request before the server answered it. */
  readonly cutInFlight?: boolean;
  /** Why this case cannot run through axios' XHR adapter in a browser; absent: it runs in both. */
  readonly browser?: string;
  /** What `run` must resolve with (a JSON value). */
  readonly expected: unknown;
  run(kit: Kit): Promise<unknown>;
}

type Options = Parameters<typeof StormproofAxios.axiosRetry>[1];

/** A fresh axios instance with stormproof installed, waiting on an instant clock unless told. */
function client(kit: Kit, options: Options = {}, clock: InstantClock = instantClock()) {
  const instance = kit.axios.create({ adapter: kit.adapter });
  kit.sp.axiosRetry(instance, {
    getAdapter: kit.axios.getAdapter,
    clock,
    random: () => 0.5,
    ...options,
  });
  return instance;
}

/** A request's end as a JSON value the two sides can compare, whatever the adapter. */
async function settle(kit: Kit, request: Promise<AxiosResponse>): Promise<Record<string, unknown>> {
  try {
    const res = await request;
    return { status: res.status, data: res.data };
  } catch (error) {
    return failure(kit, error);
  }
}

function failure(kit: Kit, error: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (kit.axios.isCancel(error)) out.canceled = true;
  else if (kit.axios.isAxiosError(error)) {
    if (error.response) out.status = error.response.status;
    // ECONNRESET through the http adapter, ERR_NETWORK through XHR: both are network errors.
    else out.network = kit.sp.isNetworkError(error);
  } else {
    out.thrown = (error as { message?: unknown } | null)?.message;
    const code = (error as { code?: unknown } | null)?.code;
    if (code !== undefined) out.code = code;
  }
  const report = kit.sp.getRetryReport(error);
  if (report !== undefined) {
    out.reason = report.reason;
    out.attempts = report.attempts;
  }
  return out;
}

/** An AxiosError built as axios-retry's spec builds its fixtures. */
function axiosError(
  kit: Kit,
  { code, method, status }: { code?: string; method?: string; status?: number },
): AxiosError {
  const error = new kit.axios.AxiosError('Error response', code);
  if (method !== undefined) error.config = { method } as NonNullable<AxiosError['config']>;
  if (status !== undefined) error.response = { status } as NonNullable<AxiosError['response']>;
  return error;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A 200 response whose body decides; for validateResponse. */
const okBody = (r: AxiosResponse) => r.status === 200 && r.data === 'ok!';

const cases: PortedCase[] = [];
const add = (c: PortedCase) => cases.push(c);

// ---- axiosRetry(axios, { retries, retryCondition }) ----

add({
  name: 'resolves a success as it is',
  from: 'when the response is successful: should resolve with it',
  steps: [200],
  requests: 1,
  expected: { status: 200, data: 'answer 1' },
  run: (kit) => settle(kit, client(kit, { retries: 0 }).get(kit.url)),
});

add({
  name: 'asks retryCondition with the error itself',
  from: 'when the response is an error: should check if it satisfies the retryCondition',
  steps: ['reset', 200],
  requests: 1,
  expected: { asked: 1, same: true, network: true },
  run: async (kit) => {
    const seen: unknown[] = [];
    const instance = client(kit, {
      retries: 1,
      retryCondition: (e) => {
        seen.push(e);
        return false;
      },
    });
    const error = await instance.get(kit.url).catch((e: unknown) => e);
    return { asked: seen.length, same: seen[0] === error, network: kit.sp.isNetworkError(error) };
  },
});

add({
  name: 'resolves with a successful retry after a dropped connection',
  from: 'satisfies the retry condition: should resolve with a successful retry',
  steps: ['reset', 200],
  requests: 2,
  attemptHeaders: [undefined, '2'],
  expected: { status: 200, data: 'answer 2' },
  run: (kit) => settle(kit, client(kit, { retries: 1, retryCondition: () => true }).get(kit.url)),
});

add({
  name: 'Difference: does not run transformRequest twice, on a POST with an Idempotency-Key',
  from: 'satisfies the retry condition: should not run transformRequest twice',
  // axios-retry retries the POST because retryCondition says yes; here a POST is sent again
  // only with an Idempotency-Key (or POST in retryMethods), whatever retryCondition says.
  steps: ['reset', 200],
  requests: 2,
  bodies: ['{"a":"b"}', '{"a":"b"}'],
  expected: { status: 200, data: 'answer 2' },
  run: (kit) => {
    const instance = kit.axios.create({
      adapter: kit.adapter,
      transformRequest: [(data) => JSON.stringify(data)],
    });
    kit.sp.axiosRetry(instance, {
      getAdapter: kit.axios.getAdapter,
      clock: instantClock(),
      retries: 1,
    });
    return settle(
      kit,
      instance.post(
        kit.url,
        { a: 'b' },
        { headers: { 'Idempotency-Key': '"k1"', 'content-type': 'application/json' } },
      ),
    );
  },
});

add({
  name: 'rejects with the error when retries is 0',
  from: 'satisfies the retry condition: should reject with a request error if retries <= 0',
  steps: ['reset', 200],
  requests: 1,
  expected: { network: true, reason: 'max-attempts', attempts: 1 },
  run: (kit) => settle(kit, client(kit, { retries: 0 }).get(kit.url)),
});

add({
  name: 'rejects with the last error when there are more failures than retries',
  from: 'satisfies the retry condition: should reject with a request error if there are more errors than retries',
  steps: [503, 502, 200],
  requests: 2,
  expected: { status: 502, reason: 'max-attempts', attempts: 2 },
  run: (kit) => settle(kit, client(kit, { retries: 1 }).get(kit.url)),
});

add({
  name: 'Difference: shouldResetTimeout: false makes axios timeout the whole request, ending with the engine TimeoutError',
  from: 'satisfies the retry condition: should honor the original timeout across retries',
  // axios-retry ends with axios' ECONNABORTED; here the whole-request timeout is the call's
  // deadline, so the request ends with the engine's TimeoutError (STORMPROOF_DEADLINE_EXCEEDED).
  // The first attempt drops at 50 ms, well before the deadline (a drop near it races the deadline's
  // timer on a busy machine, and either may win); the second would answer 'late' after 1 s, so
  // the deadline at 400 ms cuts it.
  steps: [
    { delayMs: 50, reset: true },
    { delayMs: 1000, body: 'late' },
  ],
  requests: 2,
  cutInFlight: true,
  expected: { code: 'STORMPROOF_DEADLINE_EXCEEDED', notBefore: true },
  run: async (kit) => {
    const instance = kit.axios.create({ adapter: kit.adapter });
    kit.sp.axiosRetry(instance, { getAdapter: kit.axios.getAdapter, baseDelayMs: 1, retries: 3 });
    const t0 = performance.now();
    const error = await instance
      .get(kit.url, { timeout: 400, stormproof: { shouldResetTimeout: false } })
      .catch((e: unknown) => e);
    return {
      code: (error as { code?: unknown } | null)?.code,
      notBefore: performance.now() - t0 >= 395,
    };
  },
});

add({
  name: 'does not start a retry whose wait ends past the whole-request timeout',
  from: 'satisfies the retry condition: should not make a retry attempt if the whole request lifecycle takes more than timeout',
  steps: ['reset', 'reset', 200],
  requests: 2,
  // 300 ms after the first failure; 600 ms after the second is past 500 ms, so not made.
  expected: { sleeps: [300], network: true, reason: 'pushback-beyond-deadline', attempts: 2 },
  run: async (kit) => {
    const clock = instantClock();
    const instance = client(kit, { retries: 2, retryDelay: () => 300 }, clock);
    const result = await settle(
      kit,
      instance.get(kit.url, { timeout: 500, stormproof: { shouldResetTimeout: false } }),
    );
    return { sleeps: clock.sleeps, ...result };
  },
});

add({
  name: 'resets the timeout between attempts (the default here, opt-in in axios-retry)',
  from: 'satisfies the retry condition: should reset the original timeout between requests',
  // Two attempts cut at 400 ms each; the third has 400 ms again (not 400 - 800) for its answer.
  steps: [{ delayMs: 2000, body: 'slow' }, { delayMs: 2000, body: 'slow' }, { body: 'fast' }],
  requests: 3,
  expected: { status: 200, data: 'fast' },
  run: (kit) => settle(kit, client(kit, { retries: 3 }).get(kit.url, { timeout: 400 })),
});

add({
  name: 'Difference: an error a response interceptor throws is the outcome, never retried',
  from: 'satisfies the retry condition: should reject with errors without a config property without retrying',
  // axios-retry's interceptor turns the dropped connection into a plain error; here attempts are
  // made below the interceptors, so the plain error comes from a response interceptor after the
  // one attempt: it is the request's outcome, never retried.
  steps: [200],
  requests: 1,
  expected: { same: true },
  run: async (kit) => {
    const instance = kit.axios.create({ adapter: kit.adapter });
    const plain = new Error('plain');
    kit.sp.axiosRetry(instance, {
      getAdapter: kit.axios.getAdapter,
      retries: 1,
      retryCondition: () => true,
      clock: instantClock(),
    });
    instance.interceptors.response.use(
      () => Promise.reject(plain),
      () => Promise.reject(plain),
    );
    const error = await instance.get(kit.url).catch((e: unknown) => e);
    return { same: error === plain };
  },
});

/** axios-retry's circular agent: an agent whose socket table refers to itself. */
function circularAgent(kit: Kit): object {
  const agent = (kit.httpAgent as () => object)() as { sockets: Record<string, unknown[]> };
  const fake: Record<string, unknown> = { foo: 'foo' };
  fake.socket = fake;
  agent.sockets['elsewhere.example:80:'] = [fake];
  return agent;
}

const NO_AGENT = "axios' XHR adapter has no agent: the browser owns its connections";

add({
  name: 'works with a custom agent configuration (a circular structure)',
  from: 'satisfies the retry condition: should work with a custom agent configuration',
  steps: ['reset', { body: 'It worked!' }],
  requests: 2,
  browser: NO_AGENT,
  expected: { status: 200, data: 'It worked!' },
  run: (kit) => {
    const instance = kit.axios.create({ adapter: kit.adapter, agent: circularAgent(kit) } as never);
    kit.sp.axiosRetry(instance, {
      getAdapter: kit.axios.getAdapter,
      clock: instantClock(),
      retries: 1,
      retryCondition: () => true,
    });
    return settle(kit, instance.get(kit.url));
  },
});

add({
  name: 'works with a custom httpAgent configuration (a circular structure)',
  from: 'satisfies the retry condition: should work with a custom httpAgent configuration',
  steps: ['reset', { body: 'It worked!' }],
  requests: 2,
  browser: NO_AGENT,
  expected: { status: 200, data: 'It worked!' },
  run: (kit) => {
    const instance = kit.axios.create({
      adapter: kit.adapter,
      httpAgent: circularAgent(kit),
    });
    kit.sp.axiosRetry(instance, {
      getAdapter: kit.axios.getAdapter,
      clock: instantClock(),
      retries: 1,
      retryCondition: () => true,
    });
    return settle(kit, instance.get(kit.url));
  },
});

add({
  name: 'retryCondition answering with a promise of true retries as usual',
  from: 'retry condition is returning a promise: should resolve with a successful retry as usual',
  steps: ['reset', { body: 'It worked!' }],
  requests: 2,
  expected: { status: 200, data: 'It worked!' },
  run: (kit) =>
    settle(kit, client(kit, { retries: 1, retryCondition: async () => true }).get(kit.url)),
});

add({
  name: 'retryCondition answering with a promise of false does not retry',
  from: 'retry condition is returning a promise: should reject when promise result is false',
  steps: ['reset', 200],
  requests: 1,
  expected: { network: true, reason: 'not-retryable', attempts: 1 },
  run: (kit) =>
    settle(kit, client(kit, { retries: 1, retryCondition: async () => false }).get(kit.url)),
});

add({
  name: 'an abort during a wait ends the request at once with a CanceledError',
  from: 'when request is aborted: should clear timeout if started',
  steps: [429],
  requests: 1,
  expected: { canceled: true, fast: true },
  run: async (kit) => {
    const instance = kit.axios.create({ adapter: kit.adapter });
    kit.sp.axiosRetry(instance, {
      getAdapter: kit.axios.getAdapter,
      retries: 1,
      retryDelay: () => 10_000,
      deadlineMs: 60_000,
    });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const t0 = performance.now();
    const result = await settle(kit, instance.get(kit.url, { signal: controller.signal }));
    return { ...result, fast: performance.now() - t0 < 5000 };
  },
});

add({
  name: 'an abort while onRetry runs ends the request before the retry is sent',
  from: 'when request is aborted: should not start a timeout if not started yet',
  steps: [429],
  requests: 1,
  expected: { canceled: true, fast: true },
  run: async (kit) => {
    const instance = kit.axios.create({ adapter: kit.adapter });
    kit.sp.axiosRetry(instance, {
      getAdapter: kit.axios.getAdapter,
      retries: 1,
      retryDelay: () => 10_000,
      deadlineMs: 60_000,
      onRetry: () => sleep(100),
    });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const t0 = performance.now();
    const result = await settle(kit, instance.get(kit.url, { signal: controller.signal }));
    return { ...result, fast: performance.now() - t0 < 5000 };
  },
});

add({
  name: 'an abort cancels the attempt in flight',
  from: 'when request is aborted: should cancel old requests',
  // The server would answer 429 after 5 s; the abort comes at 400 ms, during the first attempt,
  // and the server sees that attempt's connection go before it answers.
  steps: [{ status: 429, delayMs: 5000 }],
  requests: 1,
  cutInFlight: true,
  expected: { canceled: true },
  run: async (kit) => {
    const instance = client(kit, { retries: 2, retryDelay: () => 0 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 400);
    return settle(kit, instance.get(kit.url, { signal: controller.signal }));
  },
});

add({
  name: 'a CancelToken cancelled during a wait ends the request at once, as a signal does',
  from: '(stormproof) when request is aborted, through the deprecated CancelToken',
  steps: [429],
  requests: 1,
  expected: { canceled: true, message: 'user left', fast: true },
  run: async (kit) => {
    const instance = kit.axios.create({ adapter: kit.adapter });
    kit.sp.axiosRetry(instance, {
      getAdapter: kit.axios.getAdapter,
      retries: 1,
      retryDelay: () => 10_000,
      deadlineMs: 60_000,
    });
    const source = kit.axios.CancelToken.source();
    setTimeout(() => source.cancel('user left'), 100);
    const t0 = performance.now();
    const error = await instance.get(kit.url, { cancelToken: source.token }).catch((e) => e);
    return {
      canceled: kit.axios.isCancel(error),
      message: (error as { message?: unknown }).message,
      fast: performance.now() - t0 < 5000,
    };
  },
});

add({
  name: 'a CancelToken cancelled before the request sends nothing, and a finished one keeps no listener',
  from: '(stormproof) the deprecated CancelToken, before and after a request',
  steps: [200],
  requests: 1,
  expected: { first: 200, listeners: 0, canceled: true },
  run: async (kit) => {
    const instance = client(kit, { retries: 2 });
    const done = kit.axios.CancelToken.source();
    const first = (await instance.get(kit.url, { cancelToken: done.token })).status;
    // axios keeps a token's subscribers here: the request let go of its own when it ended.
    const listeners = (done.token as unknown as { _listeners?: unknown[] })._listeners ?? [];
    const early = kit.axios.CancelToken.source();
    early.cancel('never mind');
    const error = await instance.get(kit.url, { cancelToken: early.token }).catch((e) => e);
    return { first, listeners: listeners.length, canceled: kit.axios.isCancel(error) };
  },
});

add({
  name: 'does not retry when retryCondition says no',
  from: 'when it does NOT satisfy the retry condition: should reject with the error',
  steps: ['reset', 200],
  requests: 1,
  expected: { network: true, reason: 'not-retryable', attempts: 1 },
  run: (kit) => settle(kit, client(kit, { retries: 1, retryCondition: () => false }).get(kit.url)),
});

add({
  name: 'does not retry when the promise of retryCondition rejects',
  from: 'when it does NOT satisfy the retry condition, given as promise: should reject with the error',
  steps: ['reset', 200],
  requests: 1,
  expected: { network: true, reason: 'not-retryable', attempts: 1 },
  run: (kit) =>
    settle(
      kit,
      client(kit, { retries: 1, retryCondition: () => Promise.reject(new Error('no')) }).get(
        kit.url,
      ),
    ),
});

add({
  name: "reads a request's own options from config['axios-retry'], as axios-retry does",
  from: 'should use request-specific configuration',
  steps: ['reset', 'reset', 200],
  requests: 3,
  expected: { status: 200, data: 'answer 3' },
  run: (kit) =>
    settle(kit, client(kit, { retries: 0 }).get(kit.url, { 'axios-retry': { retries: 2 } })),
});

add({
  name: "a request's own options under config.stormproof win over the instance ones",
  from: '(should use request-specific configuration, under the stormproof key)',
  steps: ['reset', 'reset', 200],
  requests: 3,
  expected: { status: 200, data: 'answer 3' },
  run: (kit) =>
    settle(kit, client(kit, { retries: 0 }).get(kit.url, { stormproof: { retries: 2 } })),
});

add({
  name: "config['axios-retry'] { retries: 0 } sends the request once",
  from: '(should use request-specific configuration, turning retries off)',
  steps: [503, 200],
  requests: 1,
  expected: { status: 503, reason: 'max-attempts', attempts: 1 },
  run: (kit) => settle(kit, client(kit).get(kit.url, { 'axios-retry': { retries: 0 } })),
});

add({
  name: "config['axios-retry'] in an instance's defaults applies to its requests",
  from: "(should use request-specific configuration, from axios.create's defaults)",
  steps: [503, 200],
  requests: 1,
  expected: { status: 503, reason: 'max-attempts', attempts: 1 },
  run: (kit) => {
    const instance = kit.axios.create({ adapter: kit.adapter, 'axios-retry': { retries: 0 } });
    kit.sp.axiosRetry(instance, { getAdapter: kit.axios.getAdapter, clock: instantClock() });
    return settle(kit, instance.get(kit.url));
  },
});

add({
  name: 'stormproof: false sends the request once',
  from: '(stormproof) a request that opts out',
  steps: [503, 200],
  requests: 1,
  expected: { status: 503 },
  run: (kit) => settle(kit, client(kit).get(kit.url, { stormproof: false })),
});

// ---- axiosRetry(axios, { validateResponse }) ----

add({
  name: 'validateResponse turns a 200 into a failed attempt, rejected as an AxiosError',
  from: 'validateResponse as default option: should be able to produce an AxiosError with status code of 200',
  steps: [200],
  requests: 1,
  expected: { axiosError: true, status: 200 },
  run: async (kit) => {
    const instance = client(kit, { retries: 0, validateResponse: (r) => r.status !== 200 });
    const error = await instance.get(kit.url).catch((e: unknown) => e);
    return {
      axiosError: kit.axios.isAxiosError(error),
      status: (error as AxiosError).response?.status,
    };
  },
});

add({
  name: 'validateResponse: retried by its logic until a response passes',
  from: 'validateResponse as default option: should retry based on supplied logic',
  steps: [{ body: 'should retry!' }, 'reset', { body: 'should retry!' }, { body: 'ok!' }],
  requests: 4,
  expected: { delays: 3, status: 200, data: 'ok!' },
  run: async (kit) => {
    let delays = 0;
    const instance = client(kit, {
      retries: 4,
      retryCondition: () => true,
      retryDelay: () => {
        delays++;
        return 0;
      },
      validateResponse: okBody,
    });
    const result = await settle(kit, instance.get(kit.url));
    return { delays, ...result };
  },
});

add({
  name: 'validateResponse: a request may set its own instead',
  from: 'validateResponse as request-specific configuration: should use request-specific configuration instead',
  steps: [{ body: 'no' }, 'reset', { body: 'ok!' }],
  requests: 3,
  expected: { status: 200, data: 'ok!' },
  run: (kit) =>
    settle(
      kit,
      client(kit, { validateResponse: (r) => r.status === 200 }).get(kit.url, {
        'axios-retry': { retryCondition: () => true, validateResponse: okBody },
      }),
    ),
});

add({
  name: 'validateResponse: null on a request turns a default one off',
  from: 'validateResponse as request-specific configuration: should be able to disable default validateResponse passed',
  steps: [{ body: 'no' }, { body: 'ok!' }],
  requests: 1,
  expected: { status: 200, data: 'no' },
  run: (kit) =>
    settle(
      kit,
      client(kit, { validateResponse: okBody }).get(kit.url, {
        stormproof: { validateResponse: null },
      }),
    ),
});

// ---- axiosRetry(axios, { retries, retryDelay }) ----

add({
  name: 'retryDelay is asked once per retry and its value is waited exactly',
  from: 'when custom retryDelay function is supplied: should execute for each retry',
  steps: ['reset', 'reset', 'reset', 200],
  requests: 4,
  expected: { asked: 3, sleeps: [7, 14, 21], status: 200 },
  run: async (kit) => {
    const clock = instantClock();
    let asked = 0;
    const instance = client(
      kit,
      {
        retries: 4,
        retryCondition: () => true,
        retryDelay: (n) => {
          asked++;
          return n * 7;
        },
      },
      clock,
    );
    const { status } = await settle(kit, instance.get(kit.url));
    return { asked, sleeps: clock.sleeps, status };
  },
});

for (const [factor, waits] of [
  [undefined, [100, 200, 300]],
  [50, [50, 100, 150]],
] as const) {
  add({
    name: `linearDelay(${factor ?? ''}) waits ${waits.join(', ')} ms before retries 1 to 3`,
    from: `when linearDelay is supplied: should take more than ${factor === undefined ? 600 : 300} milliseconds with ${factor === undefined ? 'default' : '50ms'} delay and 4 retries`,
    steps: ['reset', 'reset', 'reset', 200],
    requests: 4,
    expected: { sleeps: waits, status: 200 },
    run: async (kit) => {
      const clock = instantClock();
      const delay = factor === undefined ? kit.sp.linearDelay() : kit.sp.linearDelay(factor);
      const { status } = await settle(
        kit,
        client(kit, { retries: 4, retryDelay: delay }, clock).get(kit.url),
      );
      return { sleeps: clock.sleeps, status };
    },
  });
}

add({
  name: 'Difference: exponentialDelay as retryDelay means the engine backoff (full jitter, doubling, Retry-After added)',
  from: '(exponentialDelay passed as retryDelay)',
  // axios-retry's exponentialDelay is 2^n x 100 ms plus 0-20 %, uncapped, and the larger of that
  // and Retry-After; here it is a draw from [0, ceiling] with Retry-After added.
  steps: [503, 503, { status: 503, headers: { 'retry-after': '1' } }, 200],
  requests: 4,
  expected: { sleeps: [50, 100, 1200], status: 200 },
  run: async (kit) => {
    const clock = instantClock();
    const instance = client(kit, { retryDelay: kit.sp.exponentialDelay, baseDelayMs: 100 }, clock);
    const { status } = await settle(kit, instance.get(kit.url));
    return { sleeps: clock.sleeps, status };
  },
});

add({
  name: 'Difference: the default wait is the engine backoff, not 0 ms',
  from: '(the default retryDelay, noDelay in axios-retry)',
  steps: [503, 503, 200],
  requests: 3,
  expected: { sleeps: [100, 200], status: 200 }, // 0.5 x 200, 0.5 x 400
  run: async (kit) => {
    const clock = instantClock();
    const { status } = await settle(kit, client(kit, {}, clock).get(kit.url));
    return { sleeps: clock.sleeps, status };
  },
});

// ---- axiosRetry(axios, { retries, onRetry }) ----

add({
  name: 'onRetry is called before each retry with the count, the error and the config',
  from: 'when the onRetry is handled: should resolve with correct number of retries',
  steps: [503],
  requests: 3,
  expected: {
    calls: [
      [1, true, true],
      [2, true, true],
    ],
  },
  run: async (kit) => {
    const calls: unknown[] = [];
    await client(kit, {
      retries: 2,
      onRetry: (n, e, config) =>
        calls.push([n, kit.axios.isAxiosError(e), typeof config.url === 'string']),
    })
      .get(kit.url)
      .catch(() => {});
    return { calls };
  },
});

add({
  name: 'onRetry set on the request is used',
  from: 'when the onRetry is handled: should use onRetry set on request',
  steps: [503],
  requests: 3,
  expected: { instance: 0, request: 2 },
  run: async (kit) => {
    const counts = { instance: 0, request: 0 };
    await client(kit, { retries: 2, onRetry: () => counts.instance++ })
      .get(kit.url, { 'axios-retry': { onRetry: () => counts.request++ } })
      .catch(() => {});
    return counts;
  },
});

add({
  name: 'Difference: a 500 is retried once by default',
  from: '(the default retryCondition: a 5xx on an idempotent request, retried `retries` times)',
  // axios-retry retries any 5xx `retries` times; here a 500 (more often a bug than overload)
  // is retried once (maxInternalErrorRetries).
  steps: [500],
  requests: 2,
  expected: { calls: 1, status: 500 },
  run: async (kit) => {
    let calls = 0;
    const { status } = await settle(
      kit,
      client(kit, { retries: 2, onRetry: () => calls++ }).get(kit.url),
    );
    return { calls, status };
  },
});

add({
  name: 'a retry waits for the promise onRetry returns',
  from: 'when the onRetry is returning a promise: should resolve with correct number of retries',
  steps: [503],
  requests: 3,
  expected: { done: 2, status: 503 },
  run: async (kit) => {
    let done = 0;
    const onRetry = async () => {
      await sleep(20);
      done++;
    };
    const { status } = await settle(kit, client(kit, { retries: 2, onRetry }).get(kit.url));
    return { done, status };
  },
});

add({
  name: 'onRetry rejecting ends the request with its reason',
  from: 'when the onRetry is returning a promise: should reject with the error',
  steps: [503],
  requests: 1,
  expected: { calls: 1, message: 'onRetry error' },
  run: async (kit) => {
    let calls = 0;
    const error = await client(kit, {
      retries: 2,
      retryCondition: () => true,
      onRetry: async () => {
        calls++;
        throw new Error('onRetry error');
      },
    })
      .get(kit.url)
      .catch((e: unknown) => e);
    return { calls, message: (error as Error).message };
  },
});

add({
  name: 'a promise-returning onRetry set on the request is used and waited for',
  from: 'when the onRetry is returning a promise: should use onRetry set on request',
  steps: [503],
  requests: 3,
  expected: { done: 2, status: 503 },
  run: async (kit) => {
    let done = 0;
    const { status } = await settle(
      kit,
      client(kit, { retries: 2 }).get(kit.url, {
        stormproof: {
          onRetry: async () => {
            await sleep(20);
            done++;
          },
        },
      }),
    );
    return { done, status };
  },
});

// ---- axiosRetry(axios, { onMaxRetryTimesExceeded }) ----

add({
  name: 'onMaxRetryTimesExceeded set on the request is called once with the last error and the retry count',
  from: 'when the onMaxRetryTimesExceeded is handled: should use onMaxRetryTimesExceeded set on request',
  steps: [503],
  requests: 3,
  expected: { calls: [[2, 503]] },
  run: async (kit) => {
    const calls: unknown[] = [];
    await client(kit, { retries: 2, onMaxRetryTimesExceeded: () => calls.push('instance') })
      .get(kit.url, {
        'axios-retry': {
          onMaxRetryTimesExceeded: (e, n) => calls.push([n, e.response?.status]),
        },
      })
      .catch(() => {});
    return { calls };
  },
});

add({
  name: 'what onMaxRetryTimesExceeded throws replaces the error',
  from: 'when the onMaxRetryTimesExceeded is handled: should reject with the custom error',
  steps: [503],
  requests: 3,
  expected: { same: true },
  run: async (kit) => {
    const custom = new Error('CustomErrorAfterMaxRetryTimesExceeded');
    const error = await client(kit, {
      retries: 2,
      onMaxRetryTimesExceeded: () => {
        throw custom;
      },
    })
      .get(kit.url)
      .catch((e: unknown) => e);
    return { same: error === custom };
  },
});

add({
  name: 'a promise-returning onMaxRetryTimesExceeded set on the request is awaited',
  from: 'when the onMaxRetryTimesExceeded is returning a promise: should use onMaxRetryTimesExceeded set on request',
  steps: [503],
  requests: 3,
  expected: { calls: [[2, 503]], status: 503 },
  run: async (kit) => {
    const calls: unknown[] = [];
    const { status } = await settle(
      kit,
      client(kit, { retries: 2 }).get(kit.url, {
        stormproof: {
          onMaxRetryTimesExceeded: async (e, n) => {
            await sleep(10);
            calls.push([n, e.response?.status]);
          },
        },
      }),
    );
    return { calls, status };
  },
});

add({
  name: 'the rejection of a promise-returning onMaxRetryTimesExceeded replaces the error',
  from: 'when the onMaxRetryTimesExceeded is returning a promise: should reject with the custom error',
  steps: [503],
  requests: 3,
  expected: { same: true },
  run: async (kit) => {
    const custom = new Error('CustomErrorAfterMaxRetryTimesExceeded');
    const error = await client(kit, {
      retries: 2,
      onMaxRetryTimesExceeded: async () => {
        await sleep(10);
        throw custom;
      },
    })
      .get(kit.url)
      .catch((e: unknown) => e);
    return { same: error === custom };
  },
});

// ---- the helpers: isNetworkError, isSafeRequestError, isIdempotentRequestError, ... ----

/** A case of a pure helper: no request; `run` computes the value. */
function pure(name: string, from: string, expected: unknown, run: (kit: Kit) => unknown): void {
  add({ name, from, requests: 0, expected, run: async (kit) => run(kit) });
}

pure(
  'isNetworkError is true for a refused connection',
  'isNetworkError: should be true for network errors like connection refused',
  true,
  (kit) => kit.sp.isNetworkError(axiosError(kit, { code: 'ECONNREFUSED' })),
);
pure(
  'isNetworkError is false for a timeout',
  'isNetworkError: should be false for timeout errors',
  false,
  (kit) => kit.sp.isNetworkError(axiosError(kit, { code: 'ECONNABORTED' })),
);
pure(
  'isNetworkError is false for an error with a response',
  'isNetworkError: should be false for errors with a response',
  false,
  (kit) => kit.sp.isNetworkError(axiosError(kit, { status: 500 })),
);
pure(
  'isNetworkError is false for another error',
  'isNetworkError: should be false for other errors',
  false,
  (kit) => kit.sp.isNetworkError(new Error()),
);
pure(
  'isNetworkError is false for a name that does not resolve and a bad certificate, true for XHR Network Error',
  '(is-retry-allowed, which axios-retry asks)',
  [false, false, true],
  (kit) =>
    ['ENOTFOUND', 'CERT_HAS_EXPIRED', 'ERR_NETWORK'].map((code) =>
      kit.sp.isNetworkError(axiosError(kit, { code })),
    ),
);

for (const [helper, yes, no] of [
  ['isSafeRequestError', ['get', 'head', 'options'], ['post', 'put', 'patch', 'delete']],
  ['isIdempotentRequestError', ['get', 'head', 'options', 'put', 'delete'], ['post', 'patch']],
] as const) {
  const judge = (kit: Kit, error: unknown) => kit.sp[helper](error);
  for (const method of yes) {
    pure(
      `${helper} is true for ${method} with a 5xx response`,
      `${helper}: should be true for "${method}" requests with a 5xx response`,
      true,
      (kit) => judge(kit, axiosError(kit, { method, status: 500 })),
    );
    pure(
      `${helper} is true for ${method} without a response`,
      `${helper}: should be true for "${method}" requests without a response`,
      true,
      (kit) => judge(kit, axiosError(kit, { method })),
    );
  }
  for (const method of no) {
    pure(
      `${helper} is false for ${method} with a 5xx response`,
      `${helper}: should be false for "${method}" requests with a 5xx response`,
      false,
      (kit) => judge(kit, axiosError(kit, { method, status: 500 })),
    );
    pure(
      `${helper} is false for ${method} without a response`,
      `${helper}: should be false for "${method}" requests without a response`,
      false,
      (kit) => judge(kit, axiosError(kit, { method })),
    );
  }
  pure(
    `${helper} is false for an error without a config`,
    `${helper}: should be false for errors without a config`,
    false,
    (kit) => judge(kit, axiosError(kit, { status: 500 })),
  );
  pure(
    `${helper} is false for a response that is not 5xx`,
    `${helper}: should be false for non-5xx responses`,
    false,
    (kit) => judge(kit, axiosError(kit, { method: 'get', status: 404 })),
  );
  pure(
    `${helper} is false for an aborted request`,
    `${helper}: should be false for aborted requests`,
    false,
    (kit) => judge(kit, axiosError(kit, { method: 'get', code: 'ECONNABORTED' })),
  );
}

pure(
  'isNetworkOrIdempotentRequestError: a dropped POST, a 503 PUT; not a 503 POST nor a 404 GET',
  "(axios-retry's default retryCondition)",
  [true, true, false, false],
  (kit) =>
    [
      { method: 'post', code: 'ECONNRESET' },
      { method: 'put', status: 503 },
      { method: 'post', status: 503 },
      { method: 'get', status: 404 },
    ].map((e) => kit.sp.isNetworkOrIdempotentRequestError(axiosError(kit, e))),
);

pure(
  'isRetryableError is false for an aborted request',
  'isRetryableError: should be false for aborted requests',
  false,
  (kit) => kit.sp.isRetryableError(axiosError(kit, { code: 'ECONNABORTED' })),
);
pure(
  'isRetryableError is true for a dropped connection',
  'isRetryableError: should be true for timeouts',
  true,
  (kit) => kit.sp.isRetryableError(axiosError(kit, { code: 'ECONNRESET' })),
);
pure(
  'isRetryableError is true for a 5xx response',
  'isRetryableError: should be true for a 5xx response',
  true,
  (kit) => kit.sp.isRetryableError(axiosError(kit, { code: 'ECONNRESET', status: 500 })),
);
pure(
  'isRetryableError is false for a response that is not 5xx (nor 429)',
  'isRetryableError: should be false for a response !== 5xx',
  [false, true],
  (kit) =>
    [400, 429].map((status) =>
      kit.sp.isRetryableError(axiosError(kit, { code: 'ECONNRESET', status })),
    ),
);

pure(
  'the helpers hang on the default export as axios-retry hangs them',
  "(axios-retry's CommonJS compatibility: axiosRetry.isNetworkError, ...)",
  true,
  (kit) => {
    const fn = kit.sp.default;
    return (
      fn === kit.sp.axiosRetry &&
      fn.isNetworkError === kit.sp.isNetworkError &&
      fn.isRetryableError === kit.sp.isRetryableError &&
      fn.isSafeRequestError === kit.sp.isSafeRequestError &&
      fn.isIdempotentRequestError === kit.sp.isIdempotentRequestError &&
      fn.isNetworkOrIdempotentRequestError === kit.sp.isNetworkOrIdempotentRequestError &&
      fn.exponentialDelay === kit.sp.exponentialDelay &&
      fn.linearDelay === kit.sp.linearDelay &&
      fn.noDelay === kit.sp.noDelay &&
      fn.retryAfter === kit.sp.retryAfter &&
      kit.sp.namespace === 'axios-retry'
    );
  },
);

// ---- the delay functions called directly ----

pure(
  'Difference: exponentialDelay called directly is a full-jitter draw under min(2^n x 100, 5000) ms',
  'exponentialDelay: should return exponential retry delay',
  // axios-retry's is at least 2^n x 100 ms (plus up to 20 %), uncapped.
  [],
  (kit) => {
    const bad: unknown[] = [];
    for (let n = 1; n <= 10; n++) {
      const d = kit.sp.exponentialDelay(n);
      if (!(d >= 0 && d <= Math.min(2 ** n * 100, 5000))) bad.push([n, d]);
    }
    return bad;
  },
);
pure(
  'Difference: exponentialDelay with a factor of 1000 draws under min(2^n x 1000, 5000) ms',
  'exponentialDelay: should change delay time when specifying delay factor',
  [],
  (kit) => {
    const bad: unknown[] = [];
    for (let n = 1; n <= 10; n++) {
      const d = kit.sp.exponentialDelay(n, undefined, 1000);
      if (!(d >= 0 && d <= Math.min(2 ** n * 1000, 5000))) bad.push([n, d]);
    }
    return bad;
  },
);
pure(
  'linearDelay() is 100 ms per retry',
  'linearDelay: should return liner retry delay',
  [100, 200, 300, 400, 500, 600, 700, 800, 900, 1000],
  (kit) => [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((n) => kit.sp.linearDelay()(n)),
);
pure(
  'linearDelay(300) is 300 ms per retry',
  'linearDelay: should change delay time when specifying delay factor',
  [300, 600, 900, 1200, 1500, 1800, 2100, 2400, 2700, 3000],
  (kit) => [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((n) => kit.sp.linearDelay(300)(n)),
);

/** An error whose 429 response carries `retry-after: value`. */
const after = (kit: Kit, value: string) => {
  const error = axiosError(kit, { status: 429 });
  (error.response as { headers?: unknown }).headers = { 'retry-after': value };
  return error;
};

pure(
  'retryAfter reads delay seconds',
  'retryAfter: should understand a numeric Retry-After header',
  10_000,
  (kit) => kit.sp.retryAfter(after(kit, '10')),
);
pure(
  'retryAfter ignores a negative number',
  'retryAfter: should ignore a negative numeric Retry-After header',
  0,
  (kit) => kit.sp.retryAfter(after(kit, '-10')),
);
pure(
  'retryAfter reads an HTTP date',
  'retryAfter: should understand a date Retry-After header',
  true,
  (kit) => {
    const ms = kit.sp.retryAfter(after(kit, new Date(Date.now() + 10_000).toUTCString()));
    return ms >= 8000 && ms <= 10_000;
  },
);
pure(
  'retryAfter ignores a date in the past',
  'retryAfter: should ignore a past Retry-After header',
  0,
  (kit) => kit.sp.retryAfter(after(kit, new Date(Date.now() - 10_000).toUTCString())),
);
pure(
  'retryAfter ignores a value it cannot read',
  'retryAfter: should ignore an invalid Retry-After header',
  0,
  (kit) => kit.sp.retryAfter(after(kit, 'a couple minutes')),
);

pure(
  'noDelay and linearDelay wait for a longer Retry-After',
  '(axios-retry: noDelay and linearDelay take the larger of their delay and Retry-After)',
  [2000, 1000, 300],
  (kit) => [
    kit.sp.noDelay(1, after(kit, '2')),
    kit.sp.linearDelay(100)(2, after(kit, '1')),
    kit.sp.linearDelay(100)(3, after(kit, '0')),
  ],
);

// ---- interceptors, and the time of each attempt ----

add({
  name: 'after eject, requests are sent once',
  from: '(axiosRetry interceptors: a request after eject)',
  steps: [503, 200],
  requests: 1,
  expected: { id: 'number', status: 503 },
  run: async (kit) => {
    const instance = kit.axios.create({ adapter: kit.adapter });
    const handle = kit.sp.axiosRetry(instance, {
      getAdapter: kit.axios.getAdapter,
      clock: instantClock(),
    });
    handle.eject();
    const result = await settle(kit, instance.get(kit.url));
    return { id: typeof handle.requestInterceptorId, ...result };
  },
});

pure(
  'Difference: one request interceptor, removed by eject (no response interceptor)',
  'axiosRetry interceptors: should be able to successfully eject interceptors added by axiosRetry',
  { before: [0, 0], added: [1, 0], ejected: [0, 0] },
  (kit) => {
    const instance: AxiosInstance = kit.axios.create({ adapter: kit.adapter });
    // axios keeps them in `handlers`; an ejected one becomes null, or is trimmed (1.21).
    const live = () =>
      [instance.interceptors.request, instance.interceptors.response].map(
        (m) => ((m as unknown as { handlers?: unknown[] }).handlers ?? []).filter(Boolean).length,
      );
    const before = live();
    const handle = kit.sp.axiosRetry(instance, { getAdapter: kit.axios.getAdapter });
    const added = live();
    handle.eject();
    return { before, added, ejected: live() };
  },
);

add({
  name: "Difference: the attempts' times are in onRetry's event (elapsedMs), not in config['axios-retry'].lastRequestTime",
  from: 'when requests are made: should be that lastRequestTime is accurate',
  // axios-retry writes its state (retryCount, lastRequestTime) into config['axios-retry'];
  // stormproof writes nothing into the config: onRetry's fourth argument says when each failed
  // attempt ended (elapsedMs) and the wait before the next (delayMs), on the injected clock.
  steps: ['reset', 'reset', 'reset', { body: 'It worked!' }],
  requests: 4,
  expected: {
    elapsed: [0, 500, 1000],
    delays: [500, 500, 500],
    state: [false, false, false],
    status: 200,
  },
  run: async (kit) => {
    const elapsed: number[] = [];
    const delays: number[] = [];
    const state: boolean[] = [];
    const instance = client(kit, {
      retries: 3,
      retryDelay: () => 500,
      onRetry: (_n, error, _config, event) => {
        elapsed.push(event.elapsedMs);
        delays.push(event.delayMs);
        state.push(error.config?.['axios-retry'] !== undefined);
      },
    });
    const { status } = await settle(kit, instance.get(kit.url));
    return { elapsed, delays, state, status };
  },
});

/** Every ported case, in the order of axios-retry's spec. */
export const CASES: readonly PortedCase[] = cases;
