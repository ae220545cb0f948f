// interceptor({ hedge }): the same rule and the same per-origin state as createFetch's hedge.
// First on a virtual clock (exact and late) with a next dispatch that answers on that clock:
// which requests are hedged, what each dispatch carries, the budget, pushback and the deadline.
// Then through undici 7's Agent and Node's built-in fetch against a real loopback server: the
// first head wins, the loser's dispatch is aborted (the server sees it go), no hedge for a POST
// without a key, none while the server sheds.
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import * as undici from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DeadlineExceededError } from '../src/core/errors.js';
import { type Budget, HedgeLostError, RetryBudget } from '../src/index.js';
import { readHeader } from '../src/undici/headers.js';
import {
  DEFAULT_ATTEMPT_HEADER,
  HEDGE_HEADER,
  type InterceptorOptions,
  installGlobal,
  interceptor,
  type UndiciController,
  type UndiciDispatch,
  type UndiciDispatchArgs,
  type UndiciSuccessEvent,
} from '../src/undici/index.js';
import { ManualClock } from './helpers/clocks.js';

const A = 'https://a.example.com';
const B = 'https://b.example.com';

/** What the next dispatch saw of one dispatch. */
interface Sent {
  readonly origin: string;
  readonly method: string;
  readonly headers: unknown;
  readonly body: unknown;
  /** The reason its controller was aborted with, when it was. */
  aborted?: Error;
}

/** How the next dispatch answers one dispatch: after `ms` on the clock, or never. */
interface Answer {
  readonly ms?: number;
  readonly status?: number;
  readonly headers?: Record<string, string>;
}

/** A next dispatch on the virtual clock: `plan(sent, index)` says how to answer each dispatch. */
function clockDispatch(clock: ManualClock, plan: (sent: Sent, index: number) => Answer) {
  const sent: Sent[] = [];
  const dispatch: UndiciDispatch = (opts, handler) => {
    const entry: Sent = {
      origin: String(opts.origin),
      method: opts.method,
      headers: opts.headers,
      body: opts.body,
    };
    const index = sent.length;
    const answer = plan(entry, index);
    sent.push(entry);
    let cancel: (() => void) | undefined;
    const controller: UndiciController & { aborted: boolean; reason: Error | null } = {
      aborted: false,
      paused: false,
      reason: null,
      abort(reason) {
        if (controller.aborted) return;
        controller.aborted = true;
        controller.reason = reason;
        entry.aborted = reason;
        cancel?.();
        handler.onResponseError?.(controller, reason);
      },
      pause() {},
      resume() {},
    };
    handler.onRequestStart?.(controller, {});
    if (answer.ms !== undefined) {
      cancel = clock.setTimer(answer.ms, () => {
        handler.onResponseStart?.(controller, answer.status ?? 200, answer.headers ?? {}, '');
        handler.onResponseData?.(controller, new TextEncoder().encode(`body ${index}`));
        handler.onResponseEnd?.(controller, {});
      });
    }
    return true;
  };
  return Object.assign(dispatch, { sent });
}

interface Outcome {
  status?: number;
  body?: string;
  error?: Error;
}

/** Dispatches through `d` with a handler that collects the response the caller gets. */
function request(d: UndiciDispatch, args: Partial<UndiciDispatchArgs> = {}): Promise<Outcome> {
  return new Promise((resolve) => {
    const outcome: Outcome = {};
    let body = '';
    d(
      { origin: A, path: '/items', method: 'GET', ...args },
      {
        onResponseStart: (_c, status) => {
          outcome.status = status;
        },
        onResponseData: (_c, chunk) => {
          body += new TextDecoder().decode(chunk);
        },
        onResponseEnd: () => resolve({ ...outcome, body }),
        onResponseError: (_c, error) => resolve({ ...outcome, error }),
      },
    );
  });
}

/** Runs `promise` to its end on the clock; returns its outcome and when it came. */
async function settle(clock: ManualClock, promise: Promise<Outcome>) {
  let done: (Outcome & { at: number }) | undefined;
  promise.then((outcome) => {
    done = { ...outcome, at: clock.t };
  });
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

const isHedge = (s: Sent) => readHeader(s.headers, HEDGE_HEADER) !== undefined;

for (const lateMs of [0, 3]) {
  describe(`interceptor hedge on a virtual clock (${lateMs} ms late)`, () => {
    /** An interceptor on `clock` whose first dispatch of each request never answers by itself. */
    const setup = (options: InterceptorOptions = {}, plan?: (s: Sent, i: number) => Answer) => {
      const clock = new ManualClock({ lateMs });
      const events: UndiciSuccessEvent[] = [];
      const next = clockDispatch(clock, plan ?? ((s) => (isHedge(s) ? { ms: 5 } : {})));
      const d = interceptor({
        clock,
        random: () => 0.5,
        hedge: { delayMs: 50 },
        onSuccess: (e) => events.push(e),
        ...options,
      })(next);
      return { clock, next, d, events };
    };

    it('a GET: the dispatch after 50 ms answers first, the slow one is aborted, each marked', async () => {
      const { clock, next, d, events } = setup();
      const result = await settle(clock, request(d));
      expect(result.status).toBe(200);
      expect(result.body).toBe('body 1');
      expect(result.at).toBe(50 + 5 + 2 * lateMs);
      expect(next.sent).toHaveLength(2);
      const [first, hedge] = next.sent;
      expect(readHeader(first!.headers, DEFAULT_ATTEMPT_HEADER)).toBeUndefined();
      expect(readHeader(first!.headers, HEDGE_HEADER)).toBeUndefined();
      expect(readHeader(hedge!.headers, DEFAULT_ATTEMPT_HEADER)).toBe('2');
      expect(readHeader(hedge!.headers, HEDGE_HEADER)).toBe('1');
      expect(first!.aborted).toBeInstanceOf(HedgeLostError);
      expect(hedge!.aborted).toBeUndefined();
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

    it('a loser whose head comes later never delays the answer; its body is not passed on', async () => {
      const { clock, next, d } = setup({}, (s) => (isHedge(s) ? { ms: 5 } : { ms: 60 }));
      const result = await settle(clock, request(d));
      expect(result.at).toBe(50 + 5 + 2 * lateMs);
      expect(result.body).toBe('body 1');
      await clock.advance(100);
      // Aborted before its head came: nothing of it reached the caller.
      expect(next.sent[0]!.aborted).toBeInstanceOf(HedgeLostError);
    });

    it('hedges GET, HEAD and keyed requests; never POST without a key, PUT, DELETE, a stream or a retry from above', async () => {
      const key = { 'idempotency-key': '"k1"' };
      const cases: Array<[Partial<UndiciDispatchArgs>, number, InterceptorOptions?]> = [
        [{ method: 'GET' }, 2],
        [{ method: 'HEAD' }, 2],
        [{ method: 'POST', body: 'x', headers: key }, 2],
        [{ method: 'POST', body: 'x' }, 2, { idempotencyKey: 'auto' }],
        [{ method: 'PATCH', body: new Uint8Array([1, 2]), headers: key }, 2],
        [{ method: 'POST', body: 'x' }, 1],
        [{ method: 'PATCH', body: 'x' }, 1],
        [{ method: 'PUT', body: 'x' }, 1],
        [{ method: 'DELETE' }, 1],
        [{ method: 'OPTIONS' }, 1],
        // A GET the user does not let be retried is not hedged either.
        [{ method: 'GET' }, 1, { retryMethods: ['HEAD'] }],
        // A streamed body (as undici's fetch sends every body) is not sent twice at once.
        [{ method: 'POST', body: Readable.from(['x']), headers: key }, 1],
        // A stormproof client above already retried it: sent once, so never hedged here.
        [{ method: 'GET', headers: { [DEFAULT_ATTEMPT_HEADER]: '2' } }, 1],
      ];
      for (const [args, sends, options] of cases) {
        const label = `${args.method} ${JSON.stringify(args.headers)} ${JSON.stringify(options)}`;
        // Every first dispatch answers after 200 ms: a hedge is due at 50 ms for those that hedge.
        const { clock, next, d } = setup(options, (s) => (isHedge(s) ? { ms: 5 } : { ms: 200 }));
        const result = await settle(clock, request(d, args));
        expect(result.status, label).toBe(200);
        expect(next.sent.length, label).toBe(sends);
        if (sends === 2) {
          // A keyed request's copies carry the same key, and the same body.
          expect(readHeader(next.sent[1]!.headers, 'idempotency-key')).toBe(
            readHeader(next.sent[0]!.headers, 'idempotency-key'),
          );
          expect(next.sent[1]!.body).toBe(next.sent[0]!.body);
        }
      }
    });

    it("a hedge that fails does not end the attempt: the first dispatch's later answer wins", async () => {
      const { clock, next, d, events } = setup({}, (s) =>
        isHedge(s) ? { ms: 5, status: 502 } : { ms: 100 },
      );
      const result = await settle(clock, request(d));
      expect(result.status).toBe(200);
      expect(result.body).toBe('body 0');
      expect(result.at).toBe(100 + lateMs);
      expect(next.sent).toHaveLength(2);
      expect(next.sent.every((s) => s.aborted === undefined)).toBe(true);
      expect(events.at(-1)).toMatchObject({
        attempts: 1,
        hedges: { sent: 1, won: 0, cancelled: 0 },
      });
    });

    it("a keyed request: the hedge's 409 (a copy already in progress) does not end it when the first copy's 503 came before", async () => {
      // The first copy fails with 503 at 60 ms; its hedge, dispatched at 50 ms while the first was
      // in progress, is told 409 at 80 ms. The attempt's failure is the 503: retried, then 200.
      const { clock, next, d } = setup({ baseDelayMs: 100 }, (_s, i) =>
        i === 0 ? { ms: 60, status: 503 } : i === 1 ? { ms: 30, status: 409 } : { ms: 1 },
      );
      const args = { method: 'POST', body: 'x', headers: { 'idempotency-key': '"k9"' } };
      const result = await settle(clock, request(d, args));
      expect(result.status).toBe(200);
      expect(result.body).toBe('body 2');
      expect(next.sent).toHaveLength(3);
      // A 409 of the first copy itself is final for a keyed request, as without hedging.
      const own = setup({ baseDelayMs: 100 }, () => ({ ms: 30, status: 409 }));
      const conflict = await settle(own.clock, request(own.d, args));
      expect(conflict.status).toBe(409);
      expect(own.next.sent).toHaveLength(1);
    });

    it('numbers every dispatch of a request: a retry after a hedged attempt is the third', async () => {
      const { clock, next, d } = setup({ baseDelayMs: 100 }, (_s, i) =>
        i < 2 ? { ms: i === 0 ? 60 : 20, status: 502 } : { ms: 1 },
      );
      const result = await settle(clock, request(d));
      expect(result.status).toBe(200);
      expect(
        next.sent.map((s) => [
          readHeader(s.headers, DEFAULT_ATTEMPT_HEADER),
          readHeader(s.headers, HEDGE_HEADER),
        ]),
      ).toEqual([
        [undefined, undefined],
        ['2', '1'],
        ['3', undefined],
      ]);
    });

    it('attemptHeader: false sends neither header on a hedge', async () => {
      const { clock, next, d } = setup({ attemptHeader: false }, (_s, i) =>
        i === 0 ? {} : { ms: 5 },
      );
      await settle(clock, request(d, { headers: { accept: 'text/plain' } }));
      expect(next.sent).toHaveLength(2);
      expect(next.sent[1]!.headers).toEqual({ accept: 'text/plain' });
    });

    it('the deadline covers both dispatches', async () => {
      const { clock, next, d } = setup({ deadlineMs: 200 }, () => ({}));
      const result = await settle(clock, request(d));
      expect(result.error).toBeInstanceOf(DeadlineExceededError);
      expect(result.at).toBe(200 + lateMs);
      expect(next.sent).toHaveLength(2);
      expect(next.sent.every((s) => s.aborted !== undefined)).toBe(true);
      expect(clock.pending).toEqual({ timers: 0, listeners: 0 });
    });

    it('learns the delay per origin: a busy origin hedges, a new one is still learning', async () => {
      const { clock, next, d, events } = setup({ hedge: {} }, (s) =>
        s.method === 'HEAD' && !isHedge(s) ? { ms: 500 } : { ms: 2 },
      );
      // 20 answers of 2 ms teach origin A its delay: the 10 ms floor.
      for (let i = 0; i < 20; i++) await settle(clock, request(d));
      expect(next.sent).toHaveLength(20);
      const start = clock.t;
      const a = await settle(clock, request(d, { method: 'HEAD' }));
      expect(a.at - start).toBe(10 + 2 + 2 * lateMs);
      expect(events.at(-1)?.hedges).toEqual({ sent: 1, won: 1, cancelled: 1, refused: {} });
      const b = await settle(clock, request(d, { origin: B, method: 'HEAD' }));
      expect(b.status).toBe(200);
      expect(events.at(-1)?.hedges).toEqual({
        sent: 0,
        won: 0,
        cancelled: 0,
        refused: { learning: 1 },
      });
      expect(next.sent).toHaveLength(23);
    });

    it("pays each hedge from the origin's retry budget; another origin has its own", async () => {
      const { clock, next, d, events } = setup(
        // One retry's worth of credits per origin.
        { budget: () => new RetryBudget({ maxCredits: 10, cost: 10 }) },
        (s) => (isHedge(s) ? { ms: 5 } : { ms: 200 }),
      );
      await settle(clock, request(d)); // its hedge spends A's credits
      expect(events.at(-1)?.hedges).toMatchObject({ sent: 1 });
      await settle(clock, request(d)); // none left for another hedge
      expect(events.at(-1)?.hedges?.refused).toEqual({ budget: 1 });
      await settle(clock, request(d, { origin: B }));
      expect(events.at(-1)?.hedges).toMatchObject({ sent: 1, refused: {} });
      expect(next.sent.filter(isHedge)).toHaveLength(2);
    });

    it('a refusing budget sends no hedge and never fails the request', async () => {
      const { clock, next, d, events } = setup({ budget: refusing }, (s) =>
        isHedge(s) ? { ms: 5 } : { ms: 200 },
      );
      const result = await settle(clock, request(d));
      expect(result.status).toBe(200);
      expect(result.at).toBe(200 + lateMs);
      expect(next.sent).toHaveLength(1);
      expect(events.at(-1)?.hedges?.refused).toEqual({ budget: 1 });
    });

    it('no hedge while the origin pushes back (503 with Retry-After); another origin still hedges', async () => {
      let shedding = true;
      const { clock, next, d, events } = setup({ maxAttempts: 1 }, (s) => {
        if (shedding && s.origin === A) {
          shedding = false;
          return { ms: 1, status: 503, headers: { 'retry-after': '2' } };
        }
        return isHedge(s) ? { ms: 5 } : { ms: 200 };
      });
      expect((await settle(clock, request(d))).status).toBe(503);
      await settle(clock, request(d));
      expect(events.at(-1)?.hedges?.refused).toEqual({ pushback: 1 });
      await settle(clock, request(d, { origin: B }));
      expect(events.at(-1)?.hedges).toMatchObject({ sent: 1, refused: {} });
      await clock.advance(2000);
      await settle(clock, request(d));
      expect(events.at(-1)?.hedges).toMatchObject({ sent: 1, refused: {} });
      expect(next.sent.filter(isHedge)).toHaveLength(2);
    });

    it("no hedge while the origin's breaker is not closed", async () => {
      let failing = true;
      const { clock, next, d, events } = setup(
        { maxAttempts: 1, breaker: { consecutiveFailures: 1, openMs: 100 } },
        (s) => (failing ? { ms: 1, status: 500 } : isHedge(s) ? { ms: 5 } : { ms: 200 }),
      );
      await settle(clock, request(d));
      failing = false;
      await clock.advance(1000);
      const probe = await settle(clock, request(d));
      expect(probe.status).toBe(200);
      expect(events.at(-1)?.hedges?.refused).toEqual({ breaker: 1 });
      expect(next.sent.filter(isHedge)).toHaveLength(0);
    });
  });
}

describe('interceptor hedge option', () => {
  it('is checked at construction, null included, with an error naming it', () => {
    expect(() => interceptor({ hedge: null as never })).toThrow(/interceptor hedge/);
    expect(() => interceptor({ hedge: 5 as never })).toThrow(/interceptor hedge/);
    expect(() => interceptor({ hedge: { maxHedges: 0 } })).toThrow(/hedge\.maxHedges/);
    expect(() => interceptor({ hedge: { delay: 5 } as never })).toThrow(/interceptor hedge.*delay/);
    expect(() => installGlobal({ undici, hedge: { minDelayMs: -1 } })).toThrow(
      /interceptor hedge\.minDelayMs/,
    );
    expect(() => interceptor({ hedge: false })).not.toThrow();
    expect(() => interceptor({ hedge: {} })).not.toThrow();
  });
});

describe('interceptor hedge against a real loopback server', () => {
  /** One request the server saw: its headers, and whether the client went before the answer. */
  interface Seen {
    readonly method: string;
    readonly headers: IncomingMessage['headers'];
    readonly body: string;
    gone: boolean;
  }
  let server: Server;
  let base = '';
  const seen = new Map<string, Seen[]>();
  const timers = new Set<NodeJS.Timeout>();
  const agents: { close(): Promise<unknown> }[] = [];
  /** What the first request to `/shed` gets; the others are slow. */
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
          method: req.method ?? '',
          headers: req.headers,
          body: Buffer.concat(chunks).toString(),
          gone: false,
        };
        const list = seen.get(path) ?? [];
        list.push(entry);
        seen.set(path, list);
        const hedge = req.headers[HEDGE_HEADER] !== undefined;
        if (path.startsWith('/race')) {
          // The first copy never answers; the hedge at once.
          answerAfter(res, entry, hedge ? 0 : undefined, 'hedge');
        } else if (path.startsWith('/slow')) {
          answerAfter(res, entry, hedge ? 0 : 300, hedge ? 'hedge' : 'first');
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

  afterEach(async () => {
    await Promise.all(agents.splice(0).map((a) => a.close()));
  });

  afterAll(async () => {
    for (const timer of timers) clearTimeout(timer);
    server.closeAllConnections();
    server.close();
    await once(server, 'close');
  });

  const agentWith = (options: InterceptorOptions) => {
    const agent = new undici.Agent();
    agents.push(agent);
    return agent.compose(interceptor(options));
  };

  /** Waits (at most 2 s) until the server saw the request at `index` of `path` go. */
  async function gone(path: string, index: number): Promise<boolean> {
    for (let i = 0; i < 200 && !seen.get(path)?.[index]?.gone; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return seen.get(path)?.[index]?.gone ?? false;
  }

  it('the first answer wins; the loser is aborted (the server sees it go); headers counted', async () => {
    const events: UndiciSuccessEvent[] = [];
    const agent = agentWith({ hedge: { delayMs: 50 }, onSuccess: (e) => events.push(e) });
    const res = await agent.request({ origin: base, path: '/race/1', method: 'GET' });
    expect(res.statusCode).toBe(200);
    expect(await res.body.text()).toBe('hedge');
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
    const agent = agentWith({ hedge: { delayMs: 50 } });
    const plain = await agent.request({
      origin: base,
      path: '/slow/post',
      method: 'POST',
      body: 'x',
    });
    expect(await plain.body.text()).toBe('first');
    expect(seen.get('/slow/post')).toHaveLength(1);

    const keyed = await agent.request({
      origin: base,
      path: '/slow/keyed',
      method: 'POST',
      body: 'x',
      headers: { 'idempotency-key': '"k1"' },
    });
    expect(await keyed.body.text()).toBe('hedge');
    const list = seen.get('/slow/keyed')!;
    expect(list.map((s) => [s.headers['idempotency-key'], s.body])).toEqual([
      ['"k1"', 'x'],
      ['"k1"', 'x'],
    ]);
    expect(await gone('/slow/keyed', 0)).toBe(true);
  });

  it('no hedge while the server sheds (503, Retry-After: 5): each due hedge refused for pushback', async () => {
    const events: UndiciSuccessEvent[] = [];
    const agent = agentWith({
      hedge: { delayMs: 50 },
      // A Retry-After past it ends the request at once with the 503.
      deadlineMs: 3000,
      onSuccess: (e) => events.push(e),
    });
    const shed = await agent.request({ origin: base, path: '/shed/0', method: 'GET' });
    expect(shed.statusCode).toBe(503);
    await shed.body.text();
    for (let i = 1; i <= 3; i++) {
      const res = await agent.request({ origin: base, path: `/shed/${i}`, method: 'GET' });
      expect(await res.body.text()).toBe('first');
      expect(seen.get(`/shed/${i}`)).toHaveLength(1);
    }
    expect(events).toHaveLength(3);
    for (const e of events) expect(e.hedges).toMatchObject({ sent: 0, refused: { pushback: 1 } });
  });

  it("installGlobal({ undici, hedge }): Node's built-in fetch is hedged, its loser aborted", async () => {
    const uninstall = installGlobal({ undici, hedge: { delayMs: 50 } });
    try {
      const res = await globalThis.fetch(`${base}/race/global`);
      expect(await res.text()).toBe('hedge');
      expect(seen.get('/race/global')).toHaveLength(2);
      expect(seen.get('/race/global')![1]!.headers[HEDGE_HEADER]).toBe('1');
      expect(await gone('/race/global', 0)).toBe(true);
    } finally {
      uninstall();
    }
  });
});
