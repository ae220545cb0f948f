// Regression (issue 19): `retry(() => fetch(url))` in a browser never retried a network failure.
// Headless Chromium (Debian's /usr/bin/chromium through playwright-core) loads a page from a
// node:http server on 127.0.0.1 (port 0), imports the built dist/index.js (the engine, as a
// browser loads it) and wraps its own fetch in retry(). The server drops the first request's
// connection without an answer, then answers: Chromium rejects the first fetch with its bare
// `TypeError: Failed to fetch`, which retry() must retry. Where chromium is missing, the suite
// fails and says so.

import { once } from 'node:events';
import { readFile, stat } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from './helpers/browser.js';

const DIST = fileURLToPath(new URL('../dist/', import.meta.url));
/** Each test's own bound: far above what it needs, far below the suite's 20 s test timeout. */
const TEST_TIMEOUT = 15_000;

/** What the page imported, on its global object (typed from the source; the page loads dist). */
interface InPage {
  readonly stormproof: typeof import('../src/index.js');
}

let server: Server | undefined;
let browser: Browser | undefined;
let context: BrowserContext | undefined;
let page: Page;
/** Requests to /drop-once so far. */
let dropOnceRequests = 0;

const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>retry(fetch) in a browser</title></head>
<body><p>retry(() => fetch(url)) in a browser</p></body></html>
`;

/**
 * Every answer closes its connection, so each fetch opens a fresh one: Chromium resends a request
 * by itself only when a reused keep-alive connection drops, and that would hide the defect.
 */
function reply(res: ServerResponse, status: number, type: string, body: string | Buffer): void {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store', connection: 'close' });
  res.end(body);
}

/** Serves a regular .js file under dist/ only: no other directory, no path traversal. */
async function serveDist(pathname: string, res: ServerResponse): Promise<void> {
  const file = resolve(DIST, pathname.slice('/dist/'.length));
  try {
    if (!file.startsWith(DIST) || !file.endsWith('.js') || !(await stat(file)).isFile()) {
      throw new Error('not served');
    }
    reply(res, 200, 'text/javascript; charset=utf-8', await readFile(file));
  } catch {
    reply(res, 404, 'text/plain', 'not found');
  }
}

function handle(req: IncomingMessage, res: ServerResponse): void {
  const pathname = (req.url ?? '/').split('?')[0] ?? '/';
  if (pathname === '/') reply(res, 200, 'text/html; charset=utf-8', PAGE);
  else if (pathname.startsWith('/dist/')) void serveDist(pathname, res);
  else if (pathname === '/drop-once') {
    dropOnceRequests += 1;
    // The first request's connection is dropped before any byte of an answer.
    if (dropOnceRequests === 1) req.socket.destroy();
    else reply(res, 200, 'text/plain', `answered ${dropOnceRequests}`);
  } else reply(res, 404, 'text/plain', 'no such endpoint');
}

describe('retry(() => fetch(url)) in a browser never retries a network failure (issue 19)', () => {
  beforeAll(async () => {
    const srv = createServer(handle);
    server = srv;
    srv.listen(0, '127.0.0.1');
    await once(srv, 'listening');
    const origin = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
    browser = await launchChromium('retry() around a browser fetch');
    context = await browser.newContext();
    context.setDefaultTimeout(10_000);
    page = await context.newPage();
    await page.goto(`${origin}/`, { timeout: 10_000 });
    // Imported by a string the page evaluates: vitest rewrites an `import()` in the functions of
    // this file, which would not exist in the page.
    const exported = await page.evaluate(
      `import('/dist/index.js').then((m) => { globalThis.stormproof = m; return Object.keys(m); })`,
    );
    expect(exported).toContain('retry');
  }, 30_000);

  afterAll(async () => {
    await context?.close().catch(() => {});
    await browser?.close().catch(() => {});
    const srv = server;
    if (srv?.listening) {
      const closed = new Promise((done) => srv.close(done));
      srv.closeAllConnections();
      await closed;
    }
  }, 20_000);

  it(
    "retries Chromium's TypeError: Failed to fetch once the connection dropped, and resolves",
    async () => {
      const result = await page.evaluate(async () => {
        const { retry } = (globalThis as unknown as InPage).stormproof;
        let calls = 0;
        const failures: { name: string; message: string; kind: string }[] = [];
        const body = await retry(
          async () => {
            calls += 1;
            return (await fetch('/drop-once')).text();
          },
          {
            baseDelayMs: 10,
            onRetry: ({ error, verdict }) => {
              const e = error as Error;
              failures.push({ name: e.constructor.name, message: e.message, kind: verdict.kind });
            },
          },
        );
        return { body, calls, failures };
      });
      // The failure is the browser's own, bare: the shape the engine had to learn.
      expect(result.failures).toEqual([
        { name: 'TypeError', message: 'Failed to fetch', kind: 'network' },
      ]);
      expect(result).toMatchObject({ body: 'answered 2', calls: 2 });
      expect(dropOnceRequests).toBe(2);
    },
    TEST_TIMEOUT,
  );
});
