// stormproof/fetch against a real node:http server on 127.0.0.1 (port 0), through the real
// global fetch (undici): real sockets, real timers, real Retry-After. Every wait is kept short,
// and the suite ends by checking that it left no socket, server or timer behind.
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AttemptTimeoutError } from '../src/core/errors.js';
import {
  type CreateFetchOptions,
  createFetch,
  type FetchRetryEvent,
  getRetryReport,
} from '../src/fetch/index.js';

/** One request as the server received it. */
interface Received {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
  /** performance.now() when the request (and its body) had arrived. */
  readonly at: number;
  /** The server side of the connection it came on. */
  readonly socket: Socket;
}

/** What the server does with request number `n` (from 1) of the current test. */
type Handler = (n: number, req: IncomingMessage, res: ServerResponse) => void;

let server: Server;
let base: string;
let handler: Handler;
let received: Received[] = [];
let resourcesBefore: string[] = [];

/** Counts of each resource type in `after` beyond those in `before`. */
function leftover(before: readonly string[], after: readonly string[]): Record<string, number> {
  const count = (list: readonly string[]) => {
    const counts = new Map<string, number>();
    for (const type of list) counts.set(type, (counts.get(type) ?? 0) + 1);
    return counts;
  };
  const was = count(before);
  const extra: Record<string, number> = {};
  for (const [type, n] of count(after)) {
    const more = n - (was.get(type) ?? 0);
    if (more > 0) extra[type] = more;
  }
  return extra;
}

async function closeServer(): Promise<void> {
  if (!server.listening) return;
  const closed = new Promise((resolve) => server.close(resolve));
  server.closeAllConnections();
  await closed;
}

beforeAll(async () => {
  resourcesBefore = process.getActiveResourcesInfo();
  server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    try {
      for await (const chunk of req) chunks.push(chunk as Buffer);
    } catch {
      return; // The client went away while sending.
    }
    received.push({
      method: req.method ?? '',
      path: req.url ?? '',
      headers: req.headers,
      body: Buffer.concat(chunks).toString('utf8'),
      at: performance.now(),
      socket: req.socket,
    });
    handler(received.length, req, res);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

beforeEach(() => {
  received = [];
  handler = (_, __, res) => res.end('ok');
});

afterAll(closeServer);

/** Statuses in turn (the last repeats), with optional headers per status. */
function answer(...steps: Array<number | [number, Record<string, string>]>): Handler {
  return (n, _req, res) => {
    const step = steps[Math.min(n, steps.length) - 1] ?? 200;
    const [status, headers] = typeof step === 'number' ? [step, {}] : step;
    res.writeHead(status, { 'content-type': 'text/plain', ...headers });
    res.end(`answer ${n}`);
  };
}

/** A createFetch with short waits, so the suite stays fast. */
function retrying(options: CreateFetchOptions = {}) {
  return createFetch({ baseDelayMs: 20, ...options });
}

describe('stormproof/fetch over real HTTP', () => {
  it('retries 503, 503, then resolves with the 200', async () => {
    handler = answer(503, 503, 200);
    const res = await retrying()(`${base}/items`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('answer 3');
    expect(received.map((r) => r.path)).toEqual(['/items', '/items', '/items']);
  });

  it('resolves with a 404 at once, without a retry', async () => {
    handler = answer(404, 200);
    const res = await retrying()(`${base}/missing`);
    expect(res.status).toBe(404);
    expect(await res.text()).toBe('answer 1');
    expect(received).toHaveLength(1);
    expect(getRetryReport(res)).toMatchObject({ reason: 'not-retryable', attempts: 1 });
  });

  it('sends a POST once, and says why it was not retried', async () => {
    handler = answer(503, 201);
    const res = await retrying()(`${base}/orders`, { method: 'POST', body: '{"sku":1}' });
    expect(res.status).toBe(503);
    expect(received.map((r) => [r.method, r.body])).toEqual([['POST', '{"sku":1}']]);
    expect(getRetryReport(res)).toMatchObject({ reason: 'not-idempotent', attempts: 1 });
  });

  it('retries a POST that has an Idempotency-Key, with the same key and body', async () => {
    handler = answer(503, 201);
    const res = await retrying()(`${base}/orders`, {
      method: 'POST',
      headers: { 'Idempotency-Key': '"order-42"', 'content-type': 'application/json' },
      body: '{"sku":1}',
    });
    expect(res.status).toBe(201);
    expect(received.map((r) => [r.method, r.headers['idempotency-key'], r.body])).toEqual([
      ['POST', '"order-42"', '{"sku":1}'],
      ['POST', '"order-42"', '{"sku":1}'],
    ]);
  });

  it("retries a POST under idempotencyKey: 'auto', with one generated key", async () => {
    handler = answer(502, 201);
    const res = await retrying({ idempotencyKey: 'auto' })(`${base}/orders`, {
      method: 'POST',
      body: 'x',
    });
    expect(res.status).toBe(201);
    const [first, second] = received.map((r) => r.headers['idempotency-key']);
    expect(first).toMatch(/^"[0-9a-f-]{36}"$/);
    expect(second).toBe(first);
  });

  it('retries after the server destroys the socket mid-response', async () => {
    handler = (n, req, res) => {
      if (n === 1) {
        // Half a status line and header, then the connection is gone.
        req.socket.write('HTTP/1.1 200 OK\r\nContent-Type: text/pl');
        req.socket.destroy();
        return;
      }
      res.end('whole');
    };
    const retries: FetchRetryEvent[] = [];
    const res = await retrying({ onRetry: (e) => retries.push(e) })(`${base}/flaky`);
    expect(await res.text()).toBe('whole');
    expect(received).toHaveLength(2);
    expect(retries[0]?.verdict.kind).toBe('network');
  });

  it('cancels the body of a response it retries, so its connection is not left hanging', async () => {
    // A 503 with a body too large to sit in buffers: unread, it would hold its socket open.
    handler = (n, _req, res) => {
      if (n > 1) return void res.end('small');
      res.writeHead(503, { 'content-type': 'application/octet-stream' });
      res.end(Buffer.alloc(8 * 1024 * 1024));
    };
    const res = await retrying()(`${base}/big`);
    expect(await res.text()).toBe('small');
    // Its connection is closed, or free again and reused; never stuck under an unread body.
    const released = () => {
      const [first, second] = received;
      return first?.socket.destroyed === true || first?.socket === second?.socket;
    };
    const deadline = performance.now() + 2000;
    while (!released() && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(released()).toBe(true);
  });

  it('ends an attempt that stalls past attemptTimeoutMs, and retries', async () => {
    handler = (n, _req, res) => {
      if (n > 1) res.end('in time');
      // The first request is never answered.
    };
    const retries: FetchRetryEvent[] = [];
    const started = performance.now();
    const res = await retrying({ attemptTimeoutMs: 150, onRetry: (e) => retries.push(e) })(
      `${base}/slow`,
    );
    expect(await res.text()).toBe('in time');
    expect(performance.now() - started).toBeGreaterThanOrEqual(149);
    expect(received).toHaveLength(2);
    expect(retries[0]?.error).toBeInstanceOf(AttemptTimeoutError);
  });

  it('waits Retry-After seconds (plus jitter) before the retry', async () => {
    handler = answer([503, { 'retry-after': '1' }], 200);
    const retries: FetchRetryEvent[] = [];
    const res = await retrying({ random: () => 0, onRetry: (e) => retries.push(e) })(
      `${base}/busy`,
    );
    expect(res.status).toBe(200);
    expect(retries.map((e) => e.delayMs)).toEqual([1000]);
    const [first, second] = received;
    expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(990);
  });

  it('waits until a Retry-After HTTP date', async () => {
    handler = (n, _req, res) => {
      if (n > 1) return void res.end('later');
      const at = new Date(Date.now() + 2000).toUTCString(); // whole seconds: 1 to 2 s away
      res.writeHead(503, { 'retry-after': at }).end();
    };
    const retries: FetchRetryEvent[] = [];
    const res = await retrying({ random: () => 0, onRetry: (e) => retries.push(e) })(
      `${base}/busy`,
    );
    expect(await res.text()).toBe('later');
    const delay = retries[0]?.delayMs ?? 0;
    expect(delay).toBeGreaterThan(900);
    expect(delay).toBeLessThanOrEqual(2000);
    const [first, second] = received;
    expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(delay - 10);
  });

  it('gives up at once on a Retry-After of 3600 s, with the response', async () => {
    handler = answer([503, { 'retry-after': '3600' }], 200);
    const started = performance.now();
    const res = await retrying()(`${base}/maintenance`);
    expect(performance.now() - started).toBeLessThan(500);
    expect(res.status).toBe(503);
    expect(received).toHaveLength(1);
    expect(getRetryReport(res)).toMatchObject({ reason: 'retry-after-beyond-deadline' });
  });

  it('never resends a streamed PUT body', async () => {
    handler = answer(503, 200);
    const encoder = new TextEncoder();
    const parts = ['chunk-1 ', 'chunk-2'];
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        const part = parts.shift();
        if (part === undefined) controller.close();
        else controller.enqueue(encoder.encode(part));
      },
    });
    const res = await retrying()(`${base}/upload`, {
      method: 'PUT',
      body,
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(503);
    expect(received.map((r) => [r.method, r.body])).toEqual([['PUT', 'chunk-1 chunk-2']]);
    expect(getRetryReport(res)).toMatchObject({ reason: 'body-not-replayable', attempts: 1 });
  });

  it('resends a Request body whole on each attempt', async () => {
    handler = answer(503, 200);
    const request = new Request(`${base}/doc`, { method: 'PUT', body: 'the document' });
    const res = await retrying()(request);
    expect(res.status).toBe(200);
    expect(received.map((r) => r.body)).toEqual(['the document', 'the document']);
  });

  it("rejects within 50 ms with the caller's reason when it aborts during a backoff wait", async () => {
    handler = answer([503, { 'retry-after': '2' }], 200);
    const controller = new AbortController();
    const reason = new Error('the user navigated away');
    let abortedAt = 0;
    const fetch = retrying({
      onRetry: () => {
        setTimeout(() => {
          abortedAt = performance.now();
          controller.abort(reason);
        }, 100);
      },
    });
    const error = await fetch(`${base}/busy`, { signal: controller.signal }).catch(
      (e: unknown) => e,
    );
    const took = performance.now() - abortedAt;
    expect(error).toBe(reason);
    expect(abortedAt).toBeGreaterThan(0);
    expect(took).toBeLessThan(50);
    expect(received).toHaveLength(1);
    // The report says what happened: one attempt, and about 100 ms of the 2 s wait.
    const report = getRetryReport(reason);
    expect(report).toMatchObject({ reason: 'aborted', attempts: 1 });
    expect(report?.totalDelayMs).toBeGreaterThanOrEqual(90);
    expect(report?.totalDelayMs).toBeLessThan(1000);
  });

  it('sends the attempt number on the second attempt, and not on the first', async () => {
    handler = answer(503, 200);
    await retrying()(`${base}/items`, { headers: { authorization: 'Bearer t' } });
    expect(received.map((r) => r.headers['stormproof-attempt'])).toEqual([undefined, '2']);
    expect(received.map((r) => r.headers.authorization)).toEqual(['Bearer t', 'Bearer t']);
  });

  it('leaves no open handle behind: no socket, no server, no timer', async () => {
    await closeServer();
    const deadline = performance.now() + 3000;
    let extra = leftover(resourcesBefore, process.getActiveResourcesInfo());
    while (Object.keys(extra).length > 0 && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      // The polling timer itself is not counted: it has fired when the list is read.
      extra = leftover(resourcesBefore, process.getActiveResourcesInfo());
    }
    expect(extra).toEqual({});
  });
});
