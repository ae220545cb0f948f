// Long-lived caller signals: many applications pass one shutdown signal to every call. It must
// gain at most one listener however many calls share it (Node warns past 10), and keep nothing
// per call once the call and the response it returned are gone.
import { getEventListeners, once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { watcherCount } from '../src/core/abort-watch.js';
import { createFetch } from '../src/fetch/index.js';
import { createRetryPolicy, retry } from '../src/index.js';
import { httpError } from './helpers/clocks.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Warnings Node prints while `body` runs. */
async function warningsDuring(body: () => Promise<void>): Promise<string[]> {
  const seen: string[] = [];
  const listen = (warning: Error) => seen.push(`${warning.name}: ${warning.message}`);
  process.on('warning', listen);
  try {
    await body();
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('warning', listen);
  }
  return seen;
}

let server: Server;
let base: string;

beforeAll(async () => {
  let n = 0;
  server = createServer((req, res) => {
    n++;
    if (req.url === '/flaky' && n % 2 === 1) {
      res.writeHead(503).end();
      return;
    }
    if (req.url === '/slow-body') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first part;');
      setTimeout(() => res.end('second part'), 2000).unref();
      return;
    }
    res.writeHead(200).end('ok');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  const closed = new Promise((resolve) => server.close(resolve));
  server.closeAllConnections();
  await closed;
});

describe('one caller signal shared by many calls', () => {
  it('retry(): 30 concurrent calls add one listener, no warning, and none is left', async () => {
    const controller = new AbortController();
    const policy = createRetryPolicy({ baseDelayMs: 1, maxDelayMs: 1, budget: false });
    let peak = 0;
    const warnings = await warningsDuring(async () => {
      const calls = Array.from({ length: 30 }, (_, i) =>
        policy.retry(
          async ({ attempt }) => {
            peak = Math.max(peak, getEventListeners(controller.signal, 'abort').length);
            await new Promise((resolve) => setTimeout(resolve, 5));
            if (attempt === 1 && i % 2 === 0) throw httpError(503);
            return i;
          },
          { signal: controller.signal },
        ),
      );
      await Promise.all(calls);
    });
    expect(warnings).toEqual([]);
    expect(peak).toBe(1);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    expect(watcherCount(controller.signal)).toBe(0);
  });

  it('retry(): an abort still reaches every call that shares the signal', async () => {
    const controller = new AbortController();
    const reason = new Error('shutting down');
    const calls = Array.from({ length: 12 }, () =>
      retry(() => new Promise(() => {}), { signal: controller.signal }).catch((e: unknown) => e),
    );
    controller.abort(reason);
    expect(await Promise.all(calls)).toEqual(Array(12).fill(reason));
  });

  it('stormproof/fetch: 30 concurrent requests on one signal print no MaxListenersExceededWarning', async () => {
    const controller = new AbortController();
    const fetch = createFetch({ baseDelayMs: 1, maxDelayMs: 1 });
    const warnings = await warningsDuring(async () => {
      const responses = await Promise.all(
        Array.from({ length: 30 }, () => fetch(`${base}/flaky`, { signal: controller.signal })),
      );
      await Promise.all(responses.map((r) => r.text()));
    });
    expect(warnings).toEqual([]);
    expect(getEventListeners(controller.signal, 'abort').length).toBeLessThanOrEqual(1);
  });

  it("stormproof/fetch: the caller's abort still stops the body of a response already returned", async () => {
    const controller = new AbortController();
    const fetch = createFetch();
    const res = await fetch(`${base}/slow-body`, { signal: controller.signal });
    const reading = res.text().then(
      () => 'read',
      (e: unknown) => (e as Error).name,
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    controller.abort();
    expect(await reading).toBe('AbortError');
  });

  it('stormproof/fetch: what a call keeps on a long-lived signal goes with its response', async () => {
    const signal = new AbortController().signal;
    const fetch = createFetch();
    const settle = async () => {
      for (let i = 0; i < 5; i++) {
        gc();
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    };
    const round = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const res = await fetch(`${base}/ok`, { signal });
        await res.text();
      }
    };
    // AbortSignal.any is what kept about 57 B per call on a long-lived signal in Node 20, for
    // as long as the signal lived: stormproof/fetch must not use it.
    const any = vi.spyOn(AbortSignal, 'any');
    try {
      await round(2000);
      expect(any).not.toHaveBeenCalled();
    } finally {
      any.mockRestore();
    }
    await settle();
    // Every response is unreachable now: its link to the signal is released with it.
    expect(watcherCount(signal)).toBeLessThan(50);
    expect(getEventListeners(signal, 'abort').length).toBeLessThanOrEqual(1);
  });
});
