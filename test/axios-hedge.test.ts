// axiosRetry(axios, { hedge }): the same rule and the same per-origin state as createFetch's
// hedge. First on a virtual clock (exact and late) with an adapter that answers on that clock:
// which requests are hedged, what each copy carries, the budget, pushback and the deadline. Then
// through axios' own http adapter against a real loopback server: the first answer wins, the
// loser is cancelled through its signal (the server sees it go), no hedge for a POST without a
// key, none while the server sheds.
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import axios, {
  AxiosError,
  AxiosHeaders,
  type AxiosResponse,
  type InternalAxiosRequestConfig,
} from 'axios';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AxiosRetryOptions,
  type AxiosSuccessEvent,
  axiosRetry,
  DEFAULT_ATTEMPT_HEADER,
  HEDGE_HEADER,
} from '../src/axios/index.js';
import { DeadlineExceededError } from '../src/core/errors.js';
import { type Budget, HedgeLostError, RetryBudget } from '../src/index.js';
import { ManualClock } from './helpers/clocks.js';

const A = 'https://a.example.com';
const B = 'https://b.example.com';

/** What the adapter saw of one copy. */
interface Sent {
  readonly url: string;
  readonly method: string;
  readonly headers: AxiosHeaders;
  readonly data: unknown;
  /** The copy's signal; a request sent without stormproof (`stormproof: false`) has its own. */
  readonly signal: AbortSignal;
}

/** How the adapter answers one copy: after `ms` on the clock, or never. */
interface Answer {
  readonly ms?: number;
  readonly status?: number;
  readonly headers?: Record<string, string>;
}

/**
 * An axios adapter on the virtual clock: `plan(sent, index)` says how to answer each copy. A
 * status of 400 or more rejects with an AxiosError carrying the response, as axios' own adapters
 * do; an aborted signal rejects with a CanceledError-like error.
 */
function clockAdapter(clock: ManualClock, plan: (sent: Sent, index: number) => Answer) {
  const sent: Sent[] = [];
  const adapter = (config: InternalAxiosRequestConfig): Promise<AxiosResponse> => {
    const entry: Sent = {
      url: `${config.baseURL ?? ''}${config.url ?? ''}`,
      method: String(config.method).toUpperCase(),
      headers: new AxiosHeaders(config.headers),
      data: config.data,
      signal: (config.signal as AbortSignal | undefined) ?? new AbortController().signal,
    };
    const index = sent.length;
    const answer = plan(entry, index);
    sent.push(entry);
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        cancel?.();
        reject(new AxiosError('canceled', 'ERR_CANCELED', config));
      };
      entry.signal.addEventListener('abort', onAbort, { once: true });
      const cancel =
        answer.ms === undefined
          ? undefined
          : clock.setTimer(answer.ms, () => {
              entry.signal.removeEventListener('abort', onAbort);
              const status = answer.status ?? 200;
              const response: AxiosResponse = {
                data: `answer ${index}`,
                status,
                statusText: '',
                headers: answer.headers ?? {},
                config,
              };
              if (status < 400) resolve(response);
              else {
                reject(
                  new AxiosError(`status ${status}`, 'ERR_BAD_RESPONSE', config, null, response),
                );
              }
            });
    });
  };
  return Object.assign(adapter, { sent });
}

/** Runs `promise` to its end on the clock; returns its outcome and when it came. */
async function settle(clock: ManualClock, promise: Promise<AxiosResponse>) {
  let done: { value?: AxiosResponse; error?: unknown; at: number } | undefined;
  promise.then(
    (value) => {
      done = { value, at: clock.t };
    },
    (error: unknown) => {
      done = { error, at: clock.t };
    },
  );
  for (let i = 0; i < 4000 && done === undefined; i++) await clock.advance(1);
  if (done === undefined) throw new Error('the request did not settle');
  return done;
}

const refusing = (): Budget => ({
  recordRequest: () => {},
  recordSuccess: () => {},
  recordFailure: () => {},
  tryRetry: () => false,
});

const isHedge = (s: Sent) => s.headers.has(HEDGE_HEADER);

for (const lateMs of [0, 3]) {
  describe(`axiosRetry hedge on a virtual clock (${lateMs} ms late)`, () => {
    /** An axios instance on `clock` whose first copy of each request never answers by itself. */
    const setup = (options: AxiosRetryOptions = {}, plan?: (s: Sent, i: number) => Answer) => {
      const clock = new ManualClock({ lateMs });
      const events: AxiosSuccessEvent[] = [];
      const adapter = clockAdapter(clock, plan ?? ((s) => (isHedge(s) ? { ms: 5 } : {})));
      const instance = axios.create({ baseURL: A, adapter });
      axiosRetry(instance, {
        clock,
        random: () => 0.5,
        hedge: { delayMs: 50 },
        onSuccess: (e) => events.push(e),
        ...options,
      });
      return { clock, adapter, instance, events };
    };

    it('a GET: the copy after 50 ms answers first, the slow one is cancelled, each marked', async () => {
      const { clock, adapter, instance, events } = setup();
      const result = await settle(clock, instance.get('/items'));
      expect(result.value?.data).toBe('answer 1');
      expect(result.at).toBe(50 + 5 + 2 * lateMs);
      expect(adapter.sent).toHaveLength(2);
      const [first, hedge] = adapter.sent;
      expect(first!.headers.has(DEFAULT_ATTEMPT_HEADER)).toBe(false);
      expect(first!.headers.has(HEDGE_HEADER)).toBe(false);
      expect(hedge!.headers.get(DEFAULT_ATTEMPT_HEADER)).toBe('2');
      expect(hedge!.headers.get(HEDGE_HEADER)).toBe('1');
      expect(first!.signal.aborted).toBe(true);
      expect(first!.signal.reason).toBeInstanceOf(HedgeLostError);
      expect(hedge!.signal.aborted).toBe(false);
      expect(events).toEqual([
        expect.objectContaining({
          attempts: 1,
          method: 'GET',
          status: 200,
          hedges: { sent: 1, won: 1, cancelled: 1, refused: {} },
        }),
      ]);
      expect(clock.pending).toEqual({ timers: 0, listeners: 0 });
    });

    it('hedges GET, HEAD and keyed requests; never POST without a key, PUT, DELETE, a stream or stormproof: false', async () => {
      const key = { 'Idempotency-Key': '"k1"' };
      const cases: Array<[Partial<InternalAxiosRequestConfig>, number, AxiosRetryOptions?]> = [
        [{ method: 'get' }, 2],
        [{ method: 'head' }, 2],
        [{ method: 'post', data: 'x', headers: new AxiosHeaders(key) }, 2],
        [{ method: 'post', data: 'x' }, 2, { idempotencyKey: 'auto' }],
        [{ method: 'patch', data: { a: 1 }, headers: new AxiosHeaders(key) }, 2],
        [{ method: 'post', data: 'x' }, 1],
        [{ method: 'patch', data: 'x' }, 1],
        [{ method: 'put', data: 'x' }, 1],
        [{ method: 'delete' }, 1],
        [{ method: 'options' }, 1],
        // A GET the user does not let be retried is not hedged either.
        [{ method: 'get' }, 1, { retryMethods: ['HEAD'] }],
        [{ method: 'post', data: Readable.from(['x']), headers: new AxiosHeaders(key) }, 1],
        [{ method: 'get', stormproof: false }, 1],
      ];
      for (const [config, sends, options] of cases) {
        const label = `${config.method} ${JSON.stringify(config.headers)} ${JSON.stringify(options)}`;
        // Every first copy answers after 200 ms: a hedge is due at 50 ms for those that hedge.
        const { clock, adapter, instance } = setup(options, (s) =>
          isHedge(s) ? { ms: 5 } : { ms: 200 },
        );
        const result = await settle(clock, instance.request({ url: '/items', ...config }));
        expect(result.value?.status, label).toBe(200);
        expect(adapter.sent.length, label).toBe(sends);
        if (sends === 2) {
          // A keyed request's copies carry the same key, and the same body.
          expect(adapter.sent[1]!.headers.get('Idempotency-Key')).toBe(
            adapter.sent[0]!.headers.get('Idempotency-Key'),
          );
          expect(adapter.sent[1]!.data).toBe(adapter.sent[0]!.data);
        }
      }
    });

    it('numbers every send of a request: a retry after a hedged attempt is the third', async () => {
      const { clock, adapter, instance } = setup({ baseDelayMs: 100 }, (_s, i) =>
        i < 2 ? { ms: i === 0 ? 60 : 20, status: 502 } : { ms: 1 },
      );
      const result = await settle(clock, instance.get('/items'));
      expect(result.value?.status).toBe(200);
      expect(
        adapter.sent.map((s) => [
          s.headers.get(DEFAULT_ATTEMPT_HEADER) ?? null,
          s.headers.get(HEDGE_HEADER) ?? null,
        ]),
      ).toEqual([
        [null, null],
        ['2', '1'],
        ['3', null],
      ]);
    });

    it("a keyed request: the hedge's 409 (a copy already in progress) does not end it when the first copy's 503 came before", async () => {
      const { clock, adapter, instance } = setup({ baseDelayMs: 100 }, (_s, i) =>
        i === 0 ? { ms: 60, status: 503 } : i === 1 ? { ms: 30, status: 409 } : { ms: 1 },
      );
      const config = { headers: { 'Idempotency-Key': '"k9"' } };
      const result = await settle(clock, instance.post('/items', 'x', config));
      expect(result.value?.data).toBe('answer 2');
      expect(adapter.sent).toHaveLength(3);
      // A 409 of the first copy itself is final for a keyed request, as without hedging.
      const own = setup({ baseDelayMs: 100 }, () => ({ ms: 30, status: 409 }));
      const conflict = await settle(own.clock, own.instance.post('/items', 'x', config));
      expect((conflict.error as AxiosError).response?.status).toBe(409);
      expect(own.adapter.sent).toHaveLength(1);
    });

    it('the deadline covers both copies', async () => {
      const { clock, adapter, instance } = setup({ deadlineMs: 200 }, () => ({}));
      const result = await settle(clock, instance.get('/items'));
      expect(result.error).toBeInstanceOf(DeadlineExceededError);
      expect(result.at).toBe(200 + lateMs);
      expect(adapter.sent).toHaveLength(2);
      expect(adapter.sent.every((s) => s.signal.aborted)).toBe(true);
      expect(clock.pending).toEqual({ timers: 0, listeners: 0 });
    });

    it('learns the delay per origin: a busy origin hedges, a new one is still learning', async () => {
      const { clock, adapter, instance, events } = setup({ hedge: {} }, (s) =>
        s.url.endsWith('slow') && !isHedge(s) ? { ms: 500 } : { ms: 2 },
      );
      for (let i = 0; i < 20; i++) await settle(clock, instance.get('/items'));
      expect(adapter.sent).toHaveLength(20);
      const start = clock.t;
      const a = await settle(clock, instance.get('/slow'));
      expect(a.at - start).toBe(10 + 2 + 2 * lateMs);
      expect(events.at(-1)?.hedges).toEqual({ sent: 1, won: 1, cancelled: 1, refused: {} });
      const b = await settle(clock, instance.get(`${B}/slow`));
      expect(b.value?.status).toBe(200);
      expect(events.at(-1)?.hedges).toEqual({
        sent: 0,
        won: 0,
        cancelled: 0,
        refused: { learning: 1 },
      });
      expect(adapter.sent).toHaveLength(23);
    });

    it("pays each hedge from the origin's retry budget; another origin has its own", async () => {
      const { clock, adapter, instance, events } = setup(
        { budget: () => new RetryBudget({ maxCredits: 10, cost: 10 }) },
        (s) => (isHedge(s) ? { ms: 5 } : { ms: 200 }),
      );
      await settle(clock, instance.get('/items'));
      expect(events.at(-1)?.hedges).toMatchObject({ sent: 1 });
      await settle(clock, instance.get('/items'));
      expect(events.at(-1)?.hedges?.refused).toEqual({ budget: 1 });
      await settle(clock, instance.get(`${B}/items`));
      expect(events.at(-1)?.hedges).toMatchObject({ sent: 1, refused: {} });
      expect(adapter.sent.filter(isHedge)).toHaveLength(2);
    });

    it('a refusing budget sends no hedge and never fails the request', async () => {
      const { clock, adapter, instance, events } = setup({ budget: refusing }, (s) =>
        isHedge(s) ? { ms: 5 } : { ms: 200 },
      );
      const result = await settle(clock, instance.get('/items'));
      expect(result.value?.status).toBe(200);
      expect(result.at).toBe(200 + lateMs);
      expect(adapter.sent).toHaveLength(1);
      expect(events.at(-1)?.hedges?.refused).toEqual({ budget: 1 });
    });

    it('no hedge while the origin pushes back (503 with Retry-After); another origin still hedges', async () => {
      let shedding = true;
      const { clock, adapter, instance, events } = setup({ retries: 0 }, (s) => {
        if (shedding && s.url.startsWith(A)) {
          shedding = false;
          return { ms: 1, status: 503, headers: { 'retry-after': '2' } };
        }
        return isHedge(s) ? { ms: 5 } : { ms: 200 };
      });
      const shed = await settle(clock, instance.get('/items'));
      expect((shed.error as AxiosError).response?.status).toBe(503);
      await settle(clock, instance.get('/items'));
      expect(events.at(-1)?.hedges?.refused).toEqual({ pushback: 1 });
      await settle(clock, instance.get(`${B}/items`));
      expect(events.at(-1)?.hedges).toMatchObject({ sent: 1, refused: {} });
      await clock.advance(2000);
      await settle(clock, instance.get('/items'));
      expect(events.at(-1)?.hedges).toMatchObject({ sent: 1, refused: {} });
      expect(adapter.sent.filter(isHedge)).toHaveLength(2);
    });

    it("no hedge while the origin's breaker is not closed", async () => {
      let failing = true;
      const { clock, adapter, instance, events } = setup(
        { retries: 0, breaker: { consecutiveFailures: 1, openMs: 100 } },
        (s) => (failing ? { ms: 1, status: 500 } : isHedge(s) ? { ms: 5 } : { ms: 200 }),
      );
      await settle(clock, instance.get('/items'));
      failing = false;
      await clock.advance(1000);
      const probe = await settle(clock, instance.get('/items'));
      expect(probe.value?.status).toBe(200);
      expect(events.at(-1)?.hedges?.refused).toEqual({ breaker: 1 });
      expect(adapter.sent.filter(isHedge)).toHaveLength(0);
    });
  });
}

describe('axiosRetry hedge option', () => {
  it('is checked at construction, null included, with an error naming it', () => {
    const make = (hedge: unknown) =>
      axiosRetry(axios.create(), { getAdapter: axios.getAdapter, hedge: hedge as never });
    expect(() => make(null)).toThrow(/axiosRetry hedge must not be null/);
    expect(() => make(5)).toThrow(/axiosRetry hedge/);
    expect(() => make({ maxHedges: 0 })).toThrow(/hedge\.maxHedges/);
    expect(() => make({ delay: 5 })).toThrow(/axiosRetry hedge.*delay/);
    expect(() => make(false)).not.toThrow();
    expect(() => make({})).not.toThrow();
  });
});

describe('axiosRetry hedge against a real loopback server', () => {
  /** One request the server saw: its headers, and whether the client went before the answer. */
  interface Seen {
    readonly headers: IncomingMessage['headers'];
    readonly body: string;
    gone: boolean;
  }
  let server: Server;
  let base = '';
  const seen = new Map<string, Seen[]>();
  const timers = new Set<NodeJS.Timeout>();
  let shedFirst = true;

  /** Answers after `ms` (never when undefined), unless the client goes first. */
  const answerAfter = (res: ServerResponse, entry: Seen, ms: number | undefined, body: string) => {
    res.on('close', () => {
      if (!res.writableFinished) entry.gone = true;
    });
    if (ms === undefined) return;
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (!res.destroyed) res.writeHead(200, { 'content-type': 'text/plain' }).end(body);
    }, ms);
    timers.add(timer);
    res.on('close', () => {
      clearTimeout(timer);
      timers.delete(timer);
    });
  };

  beforeAll(async () => {
    server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0]!;
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const entry: Seen = {
          headers: req.headers,
          body: Buffer.concat(chunks).toString(),
          gone: false,
        };
        const list = seen.get(path) ?? [];
        list.push(entry);
        seen.set(path, list);
        const hedge = req.headers[HEDGE_HEADER] !== undefined;
        if (path.startsWith('/race')) {
          answerAfter(res, entry, hedge ? 0 : undefined, 'hedge');
        } else if (path.startsWith('/shed') && shedFirst) {
          shedFirst = false;
          res.writeHead(503, { 'retry-after': '5' }).end('shed');
        } else {
          answerAfter(res, entry, hedge ? 0 : 300, hedge ? 'hedge' : 'first');
        }
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    for (const timer of timers) clearTimeout(timer);
    server.closeAllConnections();
    server.close();
    await once(server, 'close');
  });

  const client = (options: AxiosRetryOptions) => {
    const instance = axios.create({ baseURL: base, adapter: 'http' });
    axiosRetry(instance, { getAdapter: axios.getAdapter, ...options });
    return instance;
  };

  /** Waits (at most 2 s) until the server saw the request at `index` of `path` go. */
  async function gone(path: string, index: number): Promise<boolean> {
    for (let i = 0; i < 200 && !seen.get(path)?.[index]?.gone; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return seen.get(path)?.[index]?.gone ?? false;
  }

  it('the first answer wins; the loser is cancelled (the server sees it go); headers counted', async () => {
    const events: AxiosSuccessEvent[] = [];
    const instance = client({ hedge: { delayMs: 50 }, onSuccess: (e) => events.push(e) });
    const res = await instance.get('/race/1');
    expect(res.data).toBe('hedge');
    const list = seen.get('/race/1')!;
    expect(list).toHaveLength(2);
    expect(list[0]!.headers[DEFAULT_ATTEMPT_HEADER]).toBeUndefined();
    expect(list[0]!.headers[HEDGE_HEADER]).toBeUndefined();
    expect(list[1]!.headers[DEFAULT_ATTEMPT_HEADER]).toBe('2');
    expect(list[1]!.headers[HEDGE_HEADER]).toBe('1');
    expect(await gone('/race/1', 0)).toBe(true);
    expect(list[1]!.gone).toBe(false);
    expect(events).toEqual([
      expect.objectContaining({ hedges: { sent: 1, won: 1, cancelled: 1, refused: {} } }),
    ]);
  });

  it('no hedge for a POST without a key; a keyed POST is hedged with the same key and body', async () => {
    const instance = client({ hedge: { delayMs: 50 } });
    expect((await instance.post('/slow/post', 'x')).data).toBe('first');
    expect(seen.get('/slow/post')).toHaveLength(1);
    const keyed = await instance.post('/slow/keyed', 'x', {
      headers: { 'Idempotency-Key': '"k1"' },
    });
    expect(keyed.data).toBe('hedge');
    expect(seen.get('/slow/keyed')!.map((s) => [s.headers['idempotency-key'], s.body])).toEqual([
      ['"k1"', 'x'],
      ['"k1"', 'x'],
    ]);
    expect(await gone('/slow/keyed', 0)).toBe(true);
  });

  it('no hedge while the server sheds (503, Retry-After: 5): each due hedge refused for pushback', async () => {
    const events: AxiosSuccessEvent[] = [];
    const instance = client({
      hedge: { delayMs: 50 },
      // A Retry-After past it ends the request at once with the 503.
      deadlineMs: 3000,
      onSuccess: (e) => events.push(e),
    });
    const shed = await instance.get('/shed/0').catch((e: AxiosError) => e);
    expect((shed as AxiosError).response?.status).toBe(503);
    for (let i = 1; i <= 3; i++) {
      expect((await instance.get(`/shed/${i}`)).data).toBe('first');
      expect(seen.get(`/shed/${i}`)).toHaveLength(1);
    }
    expect(events).toHaveLength(3);
    for (const e of events) expect(e.hedges).toMatchObject({ sent: 0, refused: { pushback: 1 } });
  });
});
