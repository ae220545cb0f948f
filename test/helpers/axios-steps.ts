// The loopback server of the axios suites (Node's test/axios.test.ts and Chromium's
// test/axios.browser.test.ts): each path has its own list of steps (what the server does with
// its 1st, 2nd, ... request; the last repeats), and everything each path received is recorded.
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import type { PortedCase, Step } from '../axios-cases.js';

/** One request as the server received it. */
export interface Received {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
  /** Whether the connection closed before the answer was complete (a 'reset' step's, or the client's). */
  closedEarly: boolean;
}

export interface StepServer {
  readonly server: Server;
  readonly base: string;
  /** The steps of a path; a path without steps answers 404. */
  readonly steps: Map<string, readonly Step[]>;
  /** What each path received, in order. */
  readonly received: Map<string, Received[]>;
  close(): Promise<void>;
}

/** Carries out `step` for the `n`th request (from 1) of its path. */
export function perform(
  step: Step,
  n: number,
  req: IncomingMessage,
  res: ServerResponse,
  extraHeaders: Readonly<Record<string, string>> = {},
): void {
  const s = typeof step === 'number' ? { status: step } : step === 'reset' ? { reset: true } : step;
  const act = () => {
    if (s.reset === true) {
      req.socket.destroy(); // the connection drops: ECONNRESET in Node, Network Error in a browser
      return;
    }
    if (res.destroyed) return;
    res.writeHead(s.status ?? 200, {
      'content-type': 'text/plain',
      'cache-control': 'no-store',
      ...extraHeaders,
      ...s.headers,
    });
    res.end(s.body ?? `answer ${n}`);
  };
  if (s.delayMs === undefined) act();
  else setTimeout(act, s.delayMs);
}

/**
 * Checks what the server received for a case against what the case says it must. The close of
 * a connection the client cut reaches the server a moment later: waited for, up to 5 s.
 */
export async function checkReceived(c: PortedCase, seen: readonly Received[]): Promise<void> {
  if (c.cutInFlight === true) {
    for (let waited = 0; seen.at(-1)?.closedEarly !== true && waited < 5000; waited += 20) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(seen.at(-1)?.closedEarly, 'the last request was cut before its answer').toBe(true);
  }
  if (c.requests !== undefined) expect(seen, 'requests received').toHaveLength(c.requests);
  if (c.bodies !== undefined) expect(seen.map((r) => r.body)).toEqual(c.bodies);
  if (c.attemptHeaders !== undefined) {
    expect(seen.map((r) => r.headers['stormproof-attempt'])).toEqual(c.attemptHeaders);
  }
}

/**
 * A node:http server on 127.0.0.1 (port 0) answering each path by its steps. `other` may answer
 * a request first (the browser suite serves its page and modules); it returns true when it did.
 * `closeEach` closes every connection after its answer: a browser resends a request on its own
 * when a reused keep-alive connection drops, which would add requests no retry made.
 */
export async function startStepServer(
  other?: (req: IncomingMessage, res: ServerResponse, pathname: string) => boolean,
  { closeEach = false }: { closeEach?: boolean } = {},
): Promise<StepServer> {
  const steps = new Map<string, readonly Step[]>();
  const received = new Map<string, Received[]>();
  const server = createServer(async (req, res) => {
    const pathname = (req.url ?? '/').split('?')[0] ?? '/';
    if (other?.(req, res, pathname)) return;
    const chunks: Buffer[] = [];
    try {
      for await (const chunk of req) chunks.push(chunk as Buffer);
    } catch {
      return;
    }
    const list = received.get(pathname) ?? [];
    const entry: Received = {
      method: req.method ?? '',
      path: req.url ?? '',
      headers: req.headers,
      body: Buffer.concat(chunks).toString('utf8'),
      closedEarly: false,
    };
    list.push(entry);
    res.on('close', () => {
      if (!res.writableFinished) entry.closedEarly = true;
    });
    received.set(pathname, list);
    const mine = steps.get(pathname);
    if (mine === undefined || mine.length === 0) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('no such endpoint');
      return;
    }
    const n = list.length;
    perform(
      mine[Math.min(n, mine.length) - 1] as Step,
      n,
      req,
      res,
      closeEach ? { connection: 'close' } : {},
    );
  });
  server.keepAliveTimeout = 100;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    server,
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    steps,
    received,
    close: async () => {
      if (!server.listening) return;
      const closed = new Promise((done) => server.close(done));
      server.closeAllConnections();
      await closed;
    },
  };
}
