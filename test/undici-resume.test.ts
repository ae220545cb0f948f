// stormproof/undici resuming a response body that breaks after its head was passed on, against a
// real loopback server (node:http on 127.0.0.1, port 0) that cuts the body after N bytes: the
// bytes the reader gets equal the whole body, the range request carries Range and If-Match, every
// answer that does not continue the same bytes ends the body with an error, and the resume is a
// retry of the engine (attempts, budget, breaker, deadline, backoff, Retry-After, hooks, report).
import { createHash } from 'node:crypto';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import * as undici from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BreakerRegistry } from '../src/core/breaker/registry.js';
import type { Budget } from '../src/core/budgets/budget.js';
import { DeadlineExceededError } from '../src/core/errors.js';
import {
  BodyResumeError,
  getRetryReport,
  type InterceptorOptions,
  installGlobal,
  interceptor,
  type UndiciController,
  type UndiciDispatch,
  type UndiciGiveUpEvent,
  type UndiciHandler,
  type UndiciRetryEvent,
} from '../src/undici/index.js';
import { ManualClock } from './helpers/clocks.js';

const { Agent } = undici;

/** The representation every path serves: 200,000 bytes of a fixed pseudo-random sequence. */
const BODY = (() => {
  const bytes = Buffer.alloc(200_000);
  let x = 12345;
  for (let i = 0; i < bytes.length; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    bytes[i] = x >>> 24;
  }
  return bytes;
})();
const LAST = BODY.length - 1;
const hash = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const CUT = 70_000;
const ETAG = '"v1"';

type Reply = (req: IncomingMessage, res: ServerResponse) => void;

let server: Server;
let base = '';
const scripts = new Map<string, Reply[]>();
const seen = new Map<string, IncomingMessage['headers'][]>();
const open = new Set<ServerResponse>();

/** The replies a path gives, in order; the last one repeats. */
function script(path: string, ...replies: Reply[]): string {
  scripts.set(path, replies);
  seen.set(path, []);
  return path;
}

/** A 200 (or `status`) with the whole body's length and `headers`, cut after `n` bytes. */
const cut =
  (n: number, headers: Record<string, string> = { etag: ETAG }, afterMs = 20): Reply =>
  (_req, res) => {
    res.writeHead(200, { 'content-length': String(BODY.length), ...headers });
    res.write(BODY.subarray(0, n), () => {
      setTimeout(() => res.destroy(), afterMs);
    });
  };

/** A 206 for the range asked, from the whole body; `headers` override its own. */
const ranged =
  (headers: Record<string, string> = {}, body?: (from: number, to: number) => Buffer): Reply =>
  (req, res) => {
    const match = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    if (match === null) {
      res.writeHead(416).end();
      return;
    }
    const from = Number(match[1]);
    const to = match[2] === '' ? LAST : Number(match[2]);
    const part = body?.(from, to) ?? BODY.subarray(from, to + 1);
    res
      .writeHead(206, {
        'content-range': `bytes ${from}-${to}/${BODY.length}`,
        'content-length': String(part.length),
        etag: ETAG,
        ...headers,
      })
      .end(part);
  };

/** A 206 for the range asked, cut again after `n` more bytes. */
const rangedCut =
  (n: number): Reply =>
  (req, res) => {
    const from = Number(/^bytes=(\d+)-/.exec(req.headers.range ?? '')?.[1]);
    res.writeHead(206, {
      'content-range': `bytes ${from}-${LAST}/${BODY.length}`,
      'content-length': String(BODY.length - from),
      etag: ETAG,
    });
    res.write(BODY.subarray(from, from + n), () => setTimeout(() => res.destroy(), 20));
  };

const status =
  (code: number, headers: Record<string, string> = {}): Reply =>
  (_req, res) =>
    res.writeHead(code, headers).end(String(code));
const stall: Reply = (_req, res) => {
  open.add(res);
};

beforeAll(async () => {
  server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const list = seen.get(path);
    const replies = scripts.get(path);
    req.resume();
    if (list === undefined || replies === undefined) {
      res.writeHead(404).end();
      return;
    }
    list.push(req.headers);
    replies[Math.min(list.length - 1, replies.length - 1)]!(req, res);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

const agents: { close(): Promise<unknown> }[] = [];

afterEach(async () => {
  for (const res of open) res.destroy();
  open.clear();
  await Promise.all(agents.splice(0).map((a) => a.close()));
});

afterAll(async () => {
  server.closeAllConnections();
  server.close();
  await once(server, 'close');
});

/** Fast retries for the tests: waits of a few ms. */
const FAST: InterceptorOptions = { baseDelayMs: 1, maxDelayMs: 5 };

function through(options: InterceptorOptions, agentOptions: undici.Agent.Options = {}) {
  const agent = new Agent(agentOptions);
  agents.push(agent);
  return agent.compose(interceptor(options));
}

/** A GET whose body is read whole: its status and bytes, or the error its reading ended with. */
async function read(dispatcher: undici.Dispatcher, path: string, headers = {}) {
  const res = await dispatcher.request({ origin: base, path, method: 'GET', headers });
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of res.body) chunks.push(chunk as Buffer);
    return { status: res.statusCode, bytes: Buffer.concat(chunks), error: undefined };
  } catch (error) {
    return { status: res.statusCode, bytes: Buffer.concat(chunks), error: error as Error };
  }
}

const ranges = (path: string) => seen.get(path)!.map((h) => [h.range, h['if-match']]);

describe('a broken body is resumed with Range and If-Match', () => {
  it('a 200 cut after N bytes: the reader gets the whole body, byte for byte, from one head', async () => {
    const path = script('/whole', cut(CUT), ranged());
    const retries: UndiciRetryEvent[] = [];
    const heads: number[] = [];
    const agent = new Agent();
    agents.push(agent);
    const d = agent.compose(interceptor({ ...FAST, onRetry: (e) => retries.push(e) }));
    const res = await d.request({ origin: base, path, method: 'GET' });
    heads.push(res.statusCode);
    const bytes = Buffer.from(await res.body.arrayBuffer());
    expect(heads).toEqual([200]);
    expect(bytes.length).toBe(BODY.length);
    expect(hash(bytes)).toBe(hash(BODY));
    expect(ranges(path)).toEqual([
      [undefined, undefined],
      [`bytes=${CUT}-${LAST}`, ETAG],
    ]);
    expect(seen.get(path)!.map((h) => h['stormproof-attempt'])).toEqual([undefined, '2']);
    expect(retries).toHaveLength(1);
    expect(retries[0]).toMatchObject({
      attempt: 1,
      resumeFrom: CUT,
      method: 'GET',
      url: `${base}/whole`,
      verdict: { retryable: true, kind: 'network' },
    });
    expect((retries[0]!.error as { code?: string }).code).toBe('UND_ERR_SOCKET');
  });

  it('through undici.fetch, and a body cut twice is resumed twice', async () => {
    const path = script('/twice', cut(CUT), rangedCut(50_000), ranged());
    const res = await undici.fetch(`${base}${path}`, { dispatcher: through(FAST) });
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(res.status).toBe(200);
    expect(hash(bytes)).toBe(hash(BODY));
    expect(ranges(path)).toEqual([
      [undefined, undefined],
      [`bytes=${CUT}-${LAST}`, ETAG],
      [`bytes=${CUT + 50_000}-${LAST}`, ETAG],
    ]);
    expect(seen.get(path)!.map((h) => h['stormproof-attempt'])).toEqual([undefined, '2', '3']);
  });

  it("through Node's built-in fetch with installGlobal", async () => {
    const path = script('/global', cut(CUT), ranged());
    const uninstall = installGlobal({ undici, ...FAST });
    try {
      const res = await globalThis.fetch(`${base}${path}`);
      expect(hash(Buffer.from(await res.arrayBuffer()))).toBe(hash(BODY));
    } finally {
      uninstall();
    }
    expect(seen.get(path)).toHaveLength(2);
  });

  it("a body timeout (undici's bodyTimeout, UND_ERR_BODY_TIMEOUT) is resumed as a timeout", async () => {
    const path = script(
      '/body-timeout',
      (_req, res) => {
        res.writeHead(200, { 'content-length': String(BODY.length), etag: ETAG });
        res.write(BODY.subarray(0, CUT));
        open.add(res);
      },
      ranged(),
    );
    const kinds: string[] = [];
    const d = through(
      {
        ...FAST,
        onRetry: (e) => kinds.push(`${(e.error as { code?: string }).code} ${e.verdict.kind}`),
      },
      { bodyTimeout: 200 },
    );
    const got = await read(d, path);
    expect(got.error).toBeUndefined();
    expect(hash(got.bytes)).toBe(hash(BODY));
    expect(kinds).toEqual(['UND_ERR_BODY_TIMEOUT timeout']);
  });

  it('a 206 to a range of the caller (bytes=1000-) is resumed inside that range; an unknown size (/*) too', async () => {
    const path = script(
      '/caller-range',
      (_req, res) => {
        res.writeHead(206, {
          'content-range': `bytes 1000-${LAST}/*`,
          'content-length': String(BODY.length - 1000),
          etag: ETAG,
        });
        res.write(BODY.subarray(1000, 1000 + CUT), () => setTimeout(() => res.destroy(), 20));
      },
      ranged(),
    );
    const got = await read(through(FAST), path, { range: 'bytes=1000-' });
    expect(got.status).toBe(206);
    expect(got.error).toBeUndefined();
    expect(hash(got.bytes)).toBe(hash(BODY.subarray(1000)));
    expect(ranges(path)).toEqual([
      ['bytes=1000-', undefined],
      [`bytes=${1000 + CUT}-${LAST}`, ETAG],
    ]);
  });

  it('a slow reader: pausing and resuming reach the range request after the switch', async () => {
    const path = script('/slow', cut(CUT), ranged());
    // Between stormproof and the agent: counts the pauses each dispatch's controller is asked.
    const pauses: number[] = [];
    const spy =
      (dispatch: undici.Dispatcher['dispatch']): undici.Dispatcher['dispatch'] =>
      (opts, handler) => {
        const at = pauses.push(0) - 1;
        const inner = handler as UndiciHandler;
        let wrapped: UndiciController | undefined;
        const wrap = (c: UndiciController) => {
          wrapped ??= {
            pause: () => {
              pauses[at]!++;
              c.pause();
            },
            resume: () => c.resume(),
            abort: (reason) => c.abort(reason),
            get aborted() {
              return c.aborted;
            },
            get paused() {
              return c.paused;
            },
            get reason() {
              return c.reason;
            },
          };
          return wrapped;
        };
        const spied: UndiciHandler = {
          onRequestStart: (c, context) => inner.onRequestStart?.(wrap(c), context),
          onResponseStart: (c, ...rest) => inner.onResponseStart?.(wrap(c), ...rest),
          onResponseData: (c, chunk) => inner.onResponseData?.(wrap(c), chunk),
          onResponseEnd: (c, trailers) => inner.onResponseEnd?.(wrap(c), trailers),
          onResponseError: (c, error) => inner.onResponseError?.(wrap(c), error),
        };
        return dispatch(opts, spied as never);
      };
    const agent = new Agent();
    agents.push(agent);
    const d = agent.compose(spy as never, interceptor(FAST));
    const res = await d.request({ origin: base, path, method: 'GET', highWaterMark: 1024 });
    const chunks: Buffer[] = [];
    for await (const chunk of res.body) {
      chunks.push(chunk as Buffer);
      // Slower than the socket: undici's body pauses the controller, and resumes it as it drains.
      if (chunks.length % 8 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    }
    expect(hash(Buffer.concat(chunks))).toBe(hash(BODY));
    expect(seen.get(path)).toHaveLength(2);
    // Beyond the pause that holds each head while the engine decides, the reader's own.
    expect(pauses[1]).toBeGreaterThan(1);
  });

  it("a gzip body with undici's decompress interceptor outside stormproof: the wire bytes are resumed", async () => {
    const gzipped = gzipSync(BODY);
    const cutAt = Math.floor(gzipped.length / 2);
    const path = script(
      '/gzip',
      (_req, res) => {
        res.writeHead(200, {
          'content-encoding': 'gzip',
          'content-length': String(gzipped.length),
          etag: ETAG,
        });
        res.write(gzipped.subarray(0, cutAt), () => setTimeout(() => res.destroy(), 20));
      },
      (req, res) => {
        const from = Number(/^bytes=(\d+)-/.exec(req.headers.range ?? '')?.[1]);
        res
          .writeHead(206, {
            'content-encoding': 'gzip',
            'content-range': `bytes ${from}-${gzipped.length - 1}/${gzipped.length}`,
            etag: ETAG,
          })
          .end(gzipped.subarray(from));
      },
    );
    const agent = new Agent();
    agents.push(agent);
    // decompress called first (last in the list): stormproof counts the bytes as they came.
    const d = agent.compose(interceptor(FAST), undici.interceptors.decompress());
    const got = await read(d, path);
    expect(got.error).toBeUndefined();
    expect(hash(got.bytes)).toBe(hash(BODY));
    expect(ranges(path)[1]).toEqual([`bytes=${cutAt}-${gzipped.length - 1}`, ETAG]);
  });

  it('a 200 of unknown length (chunked) is resumed open-ended and ends where the 206 says', async () => {
    const path = script(
      '/chunked',
      (_req, res) => {
        res.writeHead(200, { etag: ETAG });
        res.write(BODY.subarray(0, CUT), () => setTimeout(() => res.destroy(), 20));
      },
      ranged(),
    );
    const got = await read(through(FAST), path);
    expect(got.error).toBeUndefined();
    expect(hash(got.bytes)).toBe(hash(BODY));
    expect(ranges(path)[1]).toEqual([`bytes=${CUT}-`, ETAG]);
  });
});

describe('an answer that does not continue the same bytes ends the body with an error', () => {
  const cases: [string, Reply, RegExp][] = [
    [
      'a 200 instead of 206',
      (_q, res) => res.writeHead(200, { etag: ETAG }).end(BODY),
      /answered 200 .* instead of 206/,
    ],
    [
      'another range',
      ranged({ 'content-range': `bytes 0-${LAST}/${BODY.length}` }),
      /Content-Range "bytes 0-/,
    ],
    ['a changed ETag', ranged({ etag: '"v2"' }), /ETag changed from "v1" to "v2"/],
    ['no Content-Range', ranged({ 'content-range': 'bytes bad' }), /Content-Range "bytes bad"/],
  ];
  for (const [name, reply, message] of cases) {
    it(`${name}: BodyResumeError, the reader keeps the first N bytes only`, async () => {
      const path = script(`/bad-${name.replaceAll(' ', '-')}`, cut(CUT), reply);
      const events: UndiciGiveUpEvent[] = [];
      const got = await read(through({ ...FAST, onGiveUp: (e) => events.push(e) }), path);
      expect(got.status).toBe(200);
      expect(got.error).toBeInstanceOf(BodyResumeError);
      expect(got.error!.message).toMatch(message);
      expect((got.error as BodyResumeError).code).toBe('STORMPROOF_BODY_RESUME');
      expect(got.bytes.equals(BODY.subarray(0, CUT))).toBe(true);
      expect(seen.get(path)).toHaveLength(2);
      expect(getRetryReport(got.error)).toMatchObject({ reason: 'not-retryable', attempts: 2 });
      expect(events.map((e) => [e.reason, e.attempts])).toEqual([['not-retryable', 2]]);
    });
  }

  it('a 412 to If-Match (the file changed): BodyResumeError naming the status, not retried', async () => {
    const path = script('/changed', cut(CUT), status(412));
    const got = await read(through(FAST), path);
    expect(got.error).toBeInstanceOf(BodyResumeError);
    expect(got.error!.message).toMatch(/answered 412/);
    expect(getRetryReport(got.error)).toMatchObject({ reason: 'not-retryable', attempts: 2 });
    expect(seen.get(path)).toHaveLength(2);
  });

  it('a resumed part longer than its Content-Range: BodyResumeError, nothing past the end passed on', async () => {
    // Chunked, so that only the interceptor can see the excess (undici checks a Content-Length).
    const path = script('/too-long', cut(CUT), (req, res) => {
      const from = Number(/^bytes=(\d+)-/.exec(req.headers.range ?? '')?.[1]);
      res.writeHead(206, { 'content-range': `bytes ${from}-${LAST}/${BODY.length}`, etag: ETAG });
      res.end(Buffer.concat([BODY.subarray(from), Buffer.from('HTTP/1.1 302 Found\r\n\r\n')]));
    });
    const got = await read(through(FAST), path);
    expect(got.error).toBeInstanceOf(BodyResumeError);
    expect(got.error!.message).toMatch(/ran past the end/);
    expect(got.bytes.length).toBeLessThanOrEqual(BODY.length);
    expect(got.bytes.equals(BODY.subarray(0, got.bytes.length))).toBe(true);
  });

  it('a resumed part that ends before its Content-Range end: BodyResumeError, not a short body', async () => {
    const path = script('/too-short', cut(CUT), (req, res) => {
      const from = Number(/^bytes=(\d+)-/.exec(req.headers.range ?? '')?.[1]);
      res.writeHead(206, { 'content-range': `bytes ${from}-${LAST}/${BODY.length}`, etag: ETAG });
      res.end(BODY.subarray(from, from + 1000));
    });
    const got = await read(through(FAST), path);
    expect(got.error).toBeInstanceOf(BodyResumeError);
    expect(got.error!.message).toMatch(`ended at byte ${CUT + 1000}, before the end`);
    // What the reader got before the error is the body's start (a stream that errors may drop
    // what it had buffered and not yet handed out).
    expect(got.bytes.equals(BODY.subarray(0, got.bytes.length))).toBe(true);
  });

  const never: [string, Record<string, string>][] = [
    ['a weak ETag', { etag: 'W/"v1"' }],
    ['no ETag', {}],
    ['Accept-Ranges: none', { etag: ETAG, 'accept-ranges': 'none' }],
  ];
  for (const [name, headers] of never) {
    it(`${name}: never resumed, the reader gets the body's own error`, async () => {
      const path = script(`/never-${name.replaceAll(/[^a-z]/gi, '')}`, cut(CUT, headers), ranged());
      const got = await read(through(FAST), path);
      expect(got.error).toBeDefined();
      expect(got.error).not.toBeInstanceOf(BodyResumeError);
      expect((got.error as { code?: string }).code).toBe('UND_ERR_SOCKET');
      expect(got.bytes.equals(BODY.subarray(0, CUT))).toBe(true);
      expect(seen.get(path)).toHaveLength(1);
    });
  }

  it('a reader whose handler throws is not resumed: the request ends with its error', async () => {
    const path = script('/throws', cut(CUT), ranged());
    const d = through(FAST);
    let got = 0;
    const ended = await new Promise<Error | undefined>((resolve) => {
      // onRequestStart marks it as a handler of the current API (undici wraps others).
      const handler: UndiciHandler = {
        onRequestStart: () => {},
        // Past the bytes that came with the head: the throw is in a callback from undici.
        onResponseData: (_c, chunk) => {
          got += chunk.byteLength;
          // An error the classifier would retry: only where it came from says not to resume.
          if (got > 20_000) throw Object.assign(new Error('reader broke'), { code: 'ECONNRESET' });
        },
        onResponseEnd: () => resolve(undefined),
        onResponseError: (_c, error) => resolve(error),
      };
      d.dispatch({ origin: base, path, method: 'GET' }, handler as never);
    });
    expect(ended?.message).toBe('reader broke');
    // Past the cut (20 ms after the first bytes): nothing more was asked for.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(seen.get(path)).toHaveLength(1);
  });

  it('resumeBody: false turns it off; a POST (not retried) is never resumed', async () => {
    const path = script('/off', cut(CUT), ranged());
    const got = await read(through({ ...FAST, resumeBody: false }), path);
    expect((got.error as { code?: string }).code).toBe('UND_ERR_SOCKET');
    expect(seen.get(path)).toHaveLength(1);
    const post = script('/post', cut(CUT), ranged());
    const d = through(FAST);
    const res = await d.request({ origin: base, path: post, method: 'POST', body: 'x' });
    await expect(res.body.arrayBuffer()).rejects.toMatchObject({ code: 'UND_ERR_SOCKET' });
    expect(seen.get(post)).toHaveLength(1);
    expect(() => interceptor({ resumeBody: null as never })).toThrow(/interceptor resumeBody/);
  });
});

describe('the resume is a retry of the engine', () => {
  it('a 503 with Retry-After on the range request is waited for and retried, then the 206 resumes', async () => {
    const path = script('/busy', cut(CUT), status(503, { 'retry-after-ms': '100' }), ranged());
    const retries: UndiciRetryEvent[] = [];
    const got = await read(
      through({ ...FAST, jitter: 'none', onRetry: (e) => retries.push(e) }),
      path,
    );
    expect(got.error).toBeUndefined();
    expect(hash(got.bytes)).toBe(hash(BODY));
    expect(retries.map((e) => [e.attempt, e.status, e.resumeFrom])).toEqual([
      [1, undefined, CUT],
      [2, 503, CUT],
    ]);
    // The server's pause added to the backoff (1 ms with jitter 'none').
    expect(retries[1]!.delayMs).toBeGreaterThanOrEqual(100);
    expect(ranges(path).slice(1)).toEqual([
      [`bytes=${CUT}-${LAST}`, ETAG],
      [`bytes=${CUT}-${LAST}`, ETAG],
    ]);
    expect(seen.get(path)!.map((h) => h['stormproof-attempt'])).toEqual([undefined, '2', '3']);
  });

  it('counts against maxAttempts with the attempts before the head: none left, refused', async () => {
    const path = script('/no-attempts-left', status(503), cut(CUT), ranged());
    const events: UndiciGiveUpEvent[] = [];
    const got = await read(
      through({ ...FAST, maxAttempts: 2, onGiveUp: (e) => events.push(e) }),
      path,
    );
    expect((got.error as { code?: string }).code).toBe('UND_ERR_SOCKET');
    expect(getRetryReport(got.error)).toMatchObject({ reason: 'max-attempts', attempts: 2 });
    expect(events.map((e) => [e.reason, e.attempts])).toEqual([['max-attempts', 2]]);
    expect(seen.get(path)).toHaveLength(2);
  });

  it("is paid from the origin's budget: refused, the reader gets the body's error; one request counted", async () => {
    const calls: string[] = [];
    const budget: Budget = {
      recordRequest: () => calls.push('request'),
      recordSuccess: () => calls.push('success'),
      recordFailure: () => calls.push('failure'),
      tryRetry: () => {
        calls.push('try');
        return false;
      },
    };
    const path = script('/budget', cut(CUT), ranged());
    const got = await read(through({ ...FAST, budget }), path);
    expect((got.error as { code?: string }).code).toBe('UND_ERR_SOCKET');
    expect(getRetryReport(got.error)).toMatchObject({ reason: 'budget', attempts: 1 });
    expect(seen.get(path)).toHaveLength(1);
    expect(calls).toEqual(['request', 'success', 'failure', 'try']);
  });

  it('a resume that goes through charges the budget as one retry of the same request', async () => {
    const calls: string[] = [];
    const budget: Budget = {
      recordRequest: () => calls.push('request'),
      recordSuccess: (kind) => calls.push(`success ${kind ?? ''}`),
      recordFailure: () => calls.push('failure'),
      tryRetry: (_now, kind) => {
        calls.push(`try ${kind}`);
        return true;
      },
    };
    const path = script('/budget-ok', cut(CUT), ranged());
    const got = await read(through({ ...FAST, budget }), path);
    expect(hash(got.bytes)).toBe(hash(BODY));
    expect(calls).toEqual(['request', 'success ', 'failure', 'try network', 'success network']);
  });

  it("asks the origin's breaker: an open breaker refuses the resume", async () => {
    const breakers = new BreakerRegistry();
    const path = script('/breaker', cut(CUT, { etag: ETAG }, 150), ranged());
    const d = through({ ...FAST, breaker: breakers });
    const res = await d.request({ origin: base, path, method: 'GET' });
    await breakers.isolate(base);
    const error = await res.body.arrayBuffer().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((error as Error).name).toBe('BreakerOpenError');
    expect(getRetryReport(error)).toMatchObject({ reason: 'breaker-open', attempts: 1 });
    expect(seen.get(path)).toHaveLength(1);
  });

  it("the request's deadline covers the resume: a body that breaks after it is not resumed", async () => {
    const path = script('/late', cut(CUT, { etag: ETAG }, 400), ranged());
    const events: UndiciGiveUpEvent[] = [];
    const got = await read(
      through({ ...FAST, deadlineMs: 200, onGiveUp: (e) => events.push(e) }),
      path,
    );
    expect((got.error as { code?: string }).code).toBe('UND_ERR_SOCKET');
    expect(getRetryReport(got.error)).toMatchObject({ reason: 'deadline', attempts: 1 });
    expect(events.map((e) => e.reason)).toEqual(['deadline']);
    expect(seen.get(path)).toHaveLength(1);
  });

  it('and a range request still waiting at the deadline is aborted then', async () => {
    const path = script('/late-resume', cut(CUT), stall);
    const started = performance.now();
    const got = await read(through({ ...FAST, deadlineMs: 300 }), path);
    expect(got.error).toBeInstanceOf(DeadlineExceededError);
    expect(getRetryReport(got.error)).toMatchObject({ reason: 'deadline', attempts: 2 });
    expect(performance.now() - started).toBeLessThan(3000);
    expect(seen.get(path)).toHaveLength(2);
  });

  it("the caller's abort during the resume's wait ends it at once, and nothing more is sent", async () => {
    const path = script('/abort', cut(CUT), ranged());
    const d = through({ baseDelayMs: 5000, maxDelayMs: 5000, jitter: 'none' });
    const controller = new AbortController();
    const res = await d.request({ origin: base, path, method: 'GET', signal: controller.signal });
    const started = performance.now();
    const reading = res.body.arrayBuffer().then(
      () => undefined,
      (e: unknown) => e,
    );
    setTimeout(() => controller.abort(new Error('stop')), 200);
    const error = await reading;
    expect(error).toBeInstanceOf(Error);
    expect(performance.now() - started).toBeLessThan(3000);
    expect(seen.get(path)).toHaveLength(1);
  });

  it('in the stormproof:call events a resume is a call of its own, whose first attempt is the broken body', async () => {
    const path = script('/events', cut(CUT), ranged());
    const ends: [string, number][] = [];
    const listen = (message: unknown) => {
      const m = message as { type: string; outcome?: string; attempts?: number };
      if (m.type === 'end') ends.push([m.outcome!, m.attempts!]);
    };
    subscribe('stormproof:call', listen);
    try {
      const got = await read(through(FAST), path);
      expect(hash(got.bytes)).toBe(hash(BODY));
    } finally {
      unsubscribe('stormproof:call', listen);
    }
    expect(ends).toEqual([
      ['success', 1],
      ['success', 2],
    ]);
  });

  it('leaves no timer behind: resumed, refused, aborted', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const settle = () => new Promise((resolve) => setTimeout(resolve, 30));
    await settle();
    const before = timers();
    const d = through(FAST);
    const ok = script('/leak-ok', cut(CUT, { etag: ETAG }, 1), ranged());
    const bad = script('/leak-bad', cut(CUT, { etag: ETAG }, 1), ranged({ etag: '"v2"' }));
    const late = script('/leak-late', cut(CUT, { etag: ETAG }, 1), stall);
    expect((await read(d, ok)).error).toBeUndefined();
    expect((await read(d, bad)).error).toBeInstanceOf(BodyResumeError);
    const deadline = through({ ...FAST, deadlineMs: 200 });
    expect((await read(deadline, late)).error).toBeInstanceOf(DeadlineExceededError);
    await settle();
    expect(timers()).toBeLessThanOrEqual(before);
  });
});

// The same engine rules on a virtual clock (exact, and with every timer 3 ms late as real timers
// are on a busy machine), through a next dispatch that answers on that clock: the wait before the
// range request and the deadline left for it are the engine's, read from the injected clock.
for (const lateMs of [0, 3]) {
  describe(`a resume on a virtual clock (${lateMs} ms late)`, () => {
    interface Sent {
      at: number;
      range: string | undefined;
      ifMatch: string | undefined;
      aborted?: Error;
    }

    /**
     * A next dispatch: the first answers a 200 with 'abc' of 'abcdef' at 10 ms and breaks at 50 ms;
     * each range request answers `resumeMs` later with the rest (never when undefined).
     */
    function breaking(clock: ManualClock, resumeMs: number | undefined) {
      const sent: Sent[] = [];
      const dispatch: UndiciDispatch = (opts, handler) => {
        const headers = (opts.headers ?? {}) as Record<string, string>;
        const entry: Sent = { at: clock.t, range: headers.range, ifMatch: headers['if-match'] };
        sent.push(entry);
        const cancels: (() => void)[] = [];
        const controller: UndiciController & { aborted: boolean; reason: Error | null } = {
          aborted: false,
          paused: false,
          reason: null,
          abort(reason) {
            if (controller.aborted) return;
            controller.aborted = true;
            controller.reason = reason;
            entry.aborted = reason;
            for (const cancel of cancels) cancel();
            handler.onResponseError?.(controller, reason);
          },
          pause() {},
          resume() {},
        };
        const bytes = (text: string) => new TextEncoder().encode(text);
        handler.onRequestStart?.(controller, {});
        if (sent.length === 1) {
          cancels.push(
            clock.setTimer(10, () => {
              handler.onResponseStart?.(
                controller,
                200,
                { 'content-length': '6', etag: '"e"' },
                '',
              );
              handler.onResponseData?.(controller, bytes('abc'));
            }),
            clock.setTimer(50, () => {
              const error = Object.assign(new Error('other side closed'), {
                code: 'UND_ERR_SOCKET',
              });
              handler.onResponseError?.(controller, error);
            }),
          );
        } else if (resumeMs !== undefined) {
          cancels.push(
            clock.setTimer(resumeMs, () => {
              handler.onResponseStart?.(
                controller,
                206,
                { 'content-range': 'bytes 3-5/6', 'content-length': '3', etag: '"e"' },
                '',
              );
              handler.onResponseData?.(controller, bytes('def'));
              handler.onResponseEnd?.(controller, {});
            }),
          );
        }
        return true;
      };
      return Object.assign(dispatch, { sent });
    }

    /** One GET through `d`, run on the clock to its end: the body read and how it ended. */
    async function run(clock: ManualClock, d: UndiciDispatch) {
      let done: { body: string; error?: Error; at: number } | undefined;
      let body = '';
      d(
        { origin: 'http://a.test', path: '/file', method: 'GET' },
        {
          onResponseData: (_c, chunk) => {
            body += new TextDecoder().decode(chunk);
          },
          onResponseEnd: () => {
            done = { body, at: clock.t };
          },
          onResponseError: (_c, error) => {
            done = { body, error, at: clock.t };
          },
        },
      );
      for (let i = 0; i < 2000 && done === undefined; i++) await clock.advance(1);
      if (done === undefined) throw new Error('the request did not settle');
      return done;
    }

    const options = (clock: ManualClock, deadlineMs: number): InterceptorOptions => ({
      clock,
      baseDelayMs: 100,
      jitter: 'none',
      deadlineMs,
    });

    it('waits its backoff on the clock, then asks for the rest', async () => {
      const clock = new ManualClock({ lateMs });
      const next = breaking(clock, 10);
      const done = await run(clock, interceptor(options(clock, 1000))(next));
      expect(done.error).toBeUndefined();
      expect(done.body).toBe('abcdef');
      // The break comes at 50 ms (late timers: 10 + late, then 50 + late), the wait is 100 ms.
      expect(next.sent.map((s) => [s.at, s.range, s.ifMatch])).toEqual([
        [0, undefined, undefined],
        [50 + lateMs + 100 + lateMs, 'bytes=3-5', '"e"'],
      ]);
      expect(clock.pending).toEqual({ timers: 0, listeners: 0 });
    });

    it('a wait that would end past the deadline is refused: the reader gets the break', async () => {
      const clock = new ManualClock({ lateMs });
      const next = breaking(clock, 10);
      const done = await run(clock, interceptor(options(clock, 120))(next));
      expect((done.error as { code?: string }).code).toBe('UND_ERR_SOCKET');
      expect(getRetryReport(done.error)).toMatchObject({ reason: 'deadline', attempts: 1 });
      expect(done.at).toBe(50 + lateMs);
      expect(next.sent).toHaveLength(1);
      expect(clock.pending).toEqual({ timers: 0, listeners: 0 });
    });

    it('a range request still waiting at the deadline is aborted then', async () => {
      const clock = new ManualClock({ lateMs });
      const next = breaking(clock, undefined);
      const done = await run(clock, interceptor(options(clock, 300))(next));
      expect(done.error).toBeInstanceOf(DeadlineExceededError);
      expect(getRetryReport(done.error)).toMatchObject({ reason: 'deadline', attempts: 2 });
      // The deadline counts from the request's dispatch, on the clock: 300 ms (its timer late).
      expect(done.at).toBe(300 + lateMs);
      expect(next.sent).toHaveLength(2);
      expect(next.sent[1]!.aborted).toBeInstanceOf(DeadlineExceededError);
      expect(clock.pending).toEqual({ timers: 0, listeners: 0 });
    });
  });
}
