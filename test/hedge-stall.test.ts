// A hedge is for an answer that is slow, not for one the client has not read yet. When the
// process stalls (a long synchronous task, a GC pause, a busy machine), the hedge's timer and
// the first copy's answer are both ready once it runs again, and Node runs due timers before it
// reads sockets: the hedge went out for an answer already in the socket, and doubled the load
// just when the client was the slow part. Found beside two CPU-bound processes, where stalls made
// hedges due for 5.1 % of 1,000 sequential calls against 2.4 % on a quiet machine
// (test/fetch-hedge.test.ts).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFetch, type FetchSuccessEvent } from '../src/fetch/index.js';
import { createRetryPolicy } from '../src/index.js';

/** Blocks the process for `ms`, as a long synchronous task does. */
function stall(ms: number) {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy
  }
}

let server: Server;
let base = '';
let requests = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    requests++;
    // The answer goes out at once; then the process (client and server alike) stalls past the
    // hedge's delay, with the answer waiting in the client's socket.
    res.end('ok');
    if (req.url === '/stall') stall(200);
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  const closed = new Promise((resolve) => server.close(resolve));
  server.closeAllConnections();
  await closed;
});

describe('a hedge whose timer fired while the process stalled', () => {
  it('is not sent when the answer arrived meanwhile (createFetch)', async () => {
    const events: FetchSuccessEvent[] = [];
    // A delay the request reaches the server within even on a busy machine.
    const hedged = createFetch({ hedge: { delayMs: 100 }, onSuccess: (e) => events.push(e) });
    // A first call without a stall: the connection is open, so the next request leaves at once.
    await (await hedged(`${base}/warm`)).text();
    requests = 0;
    const res = await hedged(`${base}/stall`);
    expect(await res.text()).toBe('ok');
    expect(requests).toBe(1);
    expect(events.at(-1)!.hedges?.sent).toBe(0);
  });

  it('is not sent when the operation settled meanwhile (the engine, on the system clock)', async () => {
    const policy = createRetryPolicy({ hedge: { delayMs: 100 }, budget: false });
    let copies = 0;
    const value = await policy.retry(
      () =>
        new Promise<number>((resolve) => {
          copies++;
          // A timer due before the hedge's stalls the process past the hedge's time, and the
          // answer comes after the timers, as one read from a socket does.
          setTimeout(() => {
            stall(200);
            setImmediate(() => resolve(7));
          }, 1);
        }),
    );
    expect(value).toBe(7);
    expect(copies).toBe(1);
  });

  it('still goes out after its delay when the first copy is slow', async () => {
    const policy = createRetryPolicy({ hedge: { delayMs: 10 }, budget: false });
    let copies = 0;
    const value = await policy.retry(
      ({ signal }) =>
        new Promise<number>((resolve, reject) => {
          const copy = ++copies;
          const timer = setTimeout(() => resolve(copy), copy === 1 ? 500 : 1);
          signal.addEventListener('abort', () => {
            clearTimeout(timer);
            reject(signal.reason);
          });
        }),
    );
    expect(copies).toBe(2);
    expect(value).toBe(2);
  });
});
