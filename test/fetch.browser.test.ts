// stormproof/fetch in a real browser: headless Chromium (playwright-core) loads a page from a
// node:http server on 127.0.0.1 (port 0), imports the built dist/fetch/index.js as an ES module
// and runs createFetch against endpoints of the same origin (so no CORS and no preflight, even
// for the attempt header). Only the browser's own fetch, AbortController and timers are used.
// Where Debian's chromium is not installed, one test fails and says so.

import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import {
  createServer,
  type IncomingMessage,
  request,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

const CHROMIUM = '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
const NO_CHROMIUM = `${CHROMIUM} is not installed (Debian: apt-get install chromium): stormproof/fetch cannot be tested in a browser`;

const DIST = fileURLToPath(new URL('../dist/', import.meta.url));
/** Where the page imports the module from: the built file, as a browser would load it. */
const MODULE = '/dist/fetch/index.js';
/** Each test's own bound: far above what it needs, far below the suite's 20 s test timeout. */
const TEST_TIMEOUT = 15_000;

/** What the page imported, on its global object (typed from the source; the page loads dist). */
interface InPage {
  readonly stormproofFetch: typeof import('../src/fetch/index.js');
}

/** One request as the server received it. */
interface Received {
  readonly method: string;
  readonly path: string;
  /** The attempt header, absent on a first attempt. */
  readonly attempt: string | undefined;
}

let server: Server | undefined;
let origin = '';
let browser: Browser | undefined;
let context: BrowserContext | undefined;
let page: Page;
let received: Received[] = [];
/** How many requests to /reset are reset before it answers. */
const RESETS = 12;
/** A loopback port with nothing listening on it: connections to it are refused. */
let refusedPort = 0;
const counts = new Map<string, number>();
/** Responses to /stall, never answered: ended in afterAll. */
const pending: ServerResponse[] = [];

const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>stormproof/fetch in a browser</title></head>
<body><p>stormproof/fetch in a browser</p></body></html>
`;

function reply(
  res: ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, {
    'content-type': 'text/plain; charset=utf-8',
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(body);
}

/** Serves a regular file under dist/ only: no other directory, no path traversal. */
async function serveDist(pathname: string, res: ServerResponse): Promise<void> {
  let relative: string;
  try {
    relative = decodeURIComponent(pathname.slice('/dist/'.length));
  } catch {
    reply(res, 400, 'bad path');
    return;
  }
  const file = resolve(DIST, relative);
  // DIST ends with a separator: a sibling such as dist-other/ does not pass either.
  if (relative.includes('\0') || !file.startsWith(DIST)) {
    reply(res, 403, 'forbidden');
    return;
  }
  const type = extname(file) === '.js' ? 'text/javascript; charset=utf-8' : 'text/plain';
  try {
    if (!(await stat(file)).isFile()) throw new Error('not a file');
    const body = await readFile(file);
    res.writeHead(200, { 'content-type': type, 'cache-control': 'no-store' });
    res.end(body);
  } catch {
    reply(res, 404, 'not found');
  }
}

/** The test endpoints: what request number `n` to `path` gets. */
function endpoint(path: string, n: number, res: ServerResponse): void {
  switch (path) {
    case '/flaky':
      if (n <= 2) reply(res, 503, `busy ${n}`, { 'retry-after': '0' });
      else {
        reply(res, 200, JSON.stringify({ ok: true, n }), { 'content-type': 'application/json' });
      }
      break;
    case '/missing':
      reply(res, 404, 'missing');
      break;
    case '/post':
      reply(res, 503, `busy ${n}`);
      break;
    case '/slow':
      reply(res, 503, `busy ${n}`, { 'retry-after': '2' });
      break;
    case '/reset':
      // The first RESETS requests are reset (TCP RST) before any answer, then it answers.
      if (n <= RESETS) res.socket?.resetAndDestroy();
      else reply(res, 200, `ok ${n}`);
      break;
    case '/stall':
      pending.push(res); // Never answered; ended in afterAll.
      break;
    default:
      reply(res, 404, 'no such endpoint');
  }
}

function handle(req: IncomingMessage, res: ServerResponse): void {
  // The path as sent, not normalised: a `..` must reach the dist check and be refused.
  const pathname = (req.url ?? '/').split('?')[0] ?? '/';
  if (pathname === '/') {
    reply(res, 200, PAGE, { 'content-type': 'text/html; charset=utf-8' });
  } else if (pathname.startsWith('/dist/')) {
    void serveDist(pathname, res);
  } else {
    const attempt = req.headers['stormproof-attempt'];
    received.push({
      method: req.method ?? '',
      path: pathname,
      attempt: Array.isArray(attempt) ? attempt.join(',') : attempt,
    });
    const n = (counts.get(pathname) ?? 0) + 1;
    counts.set(pathname, n);
    endpoint(pathname, n, res);
  }
}

const TITLE = 'stormproof/fetch in headless Chromium';

/** A GET of `path` exactly as written, with node:http (no URL normalisation). */
async function rawGet(path: string): Promise<{ status: number; type: string; body: string }> {
  const { port } = server!.address() as AddressInfo;
  const req = request({ host: '127.0.0.1', port, path, method: 'GET', timeout: 5000 });
  req.on('timeout', () => req.destroy(new Error(`GET ${path} timed out`)));
  req.end();
  const [res] = (await once(req, 'response')) as [IncomingMessage];
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  return {
    status: res.statusCode ?? 0,
    type: String(res.headers['content-type']),
    body: Buffer.concat(chunks).toString('utf8'),
  };
}

describe(TITLE, () => {
  beforeAll(async () => {
    // A missing browser fails the suite, never skips it: .ci/run installs Debian's chromium.
    if (!hasChromium) throw new Error(NO_CHROMIUM);
    const srv = createServer(handle);
    server = srv;
    srv.listen(0, '127.0.0.1');
    await once(srv, 'listening');
    origin = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
    const closed = createServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    refusedPort = (closed.address() as AddressInfo).port;
    await new Promise((done) => closed.close(done));

    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
      timeout: 15_000,
    });
    context = await browser.newContext();
    context.setDefaultTimeout(10_000);
    page = await context.newPage();
    await page.goto(`${origin}/`, { timeout: 10_000 });
    // Imported by a string the page evaluates: vitest rewrites an `import()` in the functions of
    // this file (to __vite_ssr_dynamic_import__), which would not exist in the page.
    const exported = await page.evaluate(
      `import(${JSON.stringify(MODULE)}).then((m) => { globalThis.stormproofFetch = m; return Object.keys(m).sort(); })`,
    );
    expect(exported).toEqual(expect.arrayContaining(['createFetch', 'getRetryReport']));
  }, 30_000);

  afterAll(async () => {
    for (const res of pending.splice(0)) res.end();
    await context?.close().catch(() => {});
    await browser?.close().catch(() => {});
    const srv = server;
    if (srv?.listening) {
      const closed = new Promise((done) => srv.close(done));
      srv.closeAllConnections();
      await closed;
    }
  }, 20_000);

  beforeEach(() => {
    received = [];
    counts.clear();
  });

  it(
    'serves only files under dist/, JavaScript as text/javascript',
    async () => {
      const js = await rawGet(MODULE);
      expect(js.status).toBe(200);
      expect(js.type).toMatch(/^text\/javascript/);
      expect(js.body).toContain('export function createFetch');
      // Sent as written (a URL parser would remove the dots before the server saw them).
      for (const path of [
        '/dist/../package.json',
        '/dist/%2e%2e/package.json',
        '/dist/..%2fpackage.json',
        '/dist/%2e%2e%2f%2e%2e%2fetc%2fpasswd',
      ]) {
        const res = await rawGet(path);
        expect(res.status, path).toBe(403);
        expect(res.body, path).not.toContain('"name"');
      }
      expect((await rawGet('/dist/fetch/')).status).toBe(404);
      expect((await rawGet('/dist/nothing.js')).status).toBe(404);
    },
    TEST_TIMEOUT,
  );

  it(
    'retries 503, 503 on a GET and resolves with the 200, the attempt header on retries only',
    async () => {
      const result = await page.evaluate(async () => {
        const { createFetch, getRetryReport } = (globalThis as unknown as InPage).stormproofFetch;
        let attempts = 0;
        const res = await createFetch({
          baseDelayMs: 10,
          onSuccess: (event) => {
            attempts = event.attempts;
          },
        })('/flaky');
        return {
          status: res.status,
          attempts,
          body: (await res.json()) as unknown,
          report: getRetryReport(res) ?? null,
        };
      });
      expect(result.status).toBe(200);
      expect(result.attempts).toBe(3);
      expect(result.body).toEqual({ ok: true, n: 3 });
      // A success carries no report.
      expect(result.report).toBeNull();
      expect(received).toEqual([
        { method: 'GET', path: '/flaky', attempt: undefined },
        { method: 'GET', path: '/flaky', attempt: '2' },
        { method: 'GET', path: '/flaky', attempt: '3' },
      ]);
    },
    TEST_TIMEOUT,
  );

  it(
    'resolves with a 404 after one attempt',
    async () => {
      const result = await page.evaluate(async () => {
        const { createFetch, getRetryReport } = (globalThis as unknown as InPage).stormproofFetch;
        const res = await createFetch({ baseDelayMs: 10 })('/missing');
        const report = getRetryReport(res);
        return {
          status: res.status,
          body: await res.text(),
          reason: report?.reason,
          attempts: report?.attempts,
        };
      });
      expect(result).toEqual({
        status: 404,
        body: 'missing',
        reason: 'not-retryable',
        attempts: 1,
      });
      expect(received).toEqual([{ method: 'GET', path: '/missing', attempt: undefined }]);
    },
    TEST_TIMEOUT,
  );

  it(
    'sends a POST once, resolves with its 503, and reports not-idempotent',
    async () => {
      const result = await page.evaluate(async () => {
        const { createFetch, getRetryReport } = (globalThis as unknown as InPage).stormproofFetch;
        const res = await createFetch({ baseDelayMs: 10 })('/post', {
          method: 'POST',
          body: '{"sku":1}',
        });
        const report = getRetryReport(res);
        return { status: res.status, reason: report?.reason, attempts: report?.attempts };
      });
      expect(result).toEqual({ status: 503, reason: 'not-idempotent', attempts: 1 });
      expect(counts.get('/post')).toBe(1);
      expect(received).toEqual([{ method: 'POST', path: '/post', attempt: undefined }]);
    },
    TEST_TIMEOUT,
  );

  it(
    'rejects a request that never gets an answer within its deadline',
    async () => {
      const result = await page.evaluate(async () => {
        const { createFetch, getRetryReport } = (globalThis as unknown as InPage).stormproofFetch;
        const fetch = createFetch({ baseDelayMs: 10, attemptTimeoutMs: 200, deadlineMs: 1000 });
        const start = performance.now();
        try {
          const res = await fetch('/stall');
          return { resolved: res.status, elapsed: performance.now() - start };
        } catch (error) {
          return {
            name: error instanceof Error ? error.name : String(error),
            reason: getRetryReport(error)?.reason,
            elapsed: performance.now() - start,
          };
        }
      });
      expect(result).not.toHaveProperty('resolved');
      expect(
        result.name === 'TimeoutError' || result.reason === 'deadline',
        JSON.stringify(result),
      ).toBe(true);
      expect(result.elapsed).toBeLessThan(2000);
      // Each attempt that timed out was retried, with the attempt header.
      expect(counts.get('/stall')).toBeGreaterThanOrEqual(2);
      expect(received[1]).toEqual({ method: 'GET', path: '/stall', attempt: '2' });
    },
    TEST_TIMEOUT,
  );

  it(
    'rejects with the abort reason when aborted during a Retry-After wait',
    async () => {
      const result = await page.evaluate(async () => {
        const { createFetch } = (globalThis as unknown as InPage).stormproofFetch;
        const controller = new AbortController();
        const reason = new Error('the user left');
        reason.name = 'UserLeft';
        // The wait after the 503 is Retry-After: 2 s plus the jitter: abort 50 ms into it.
        let waitMs = -1;
        const fetch = createFetch({
          baseDelayMs: 10,
          onRetry: (event) => {
            waitMs = event.delayMs;
            setTimeout(() => controller.abort(reason), 50);
          },
        });
        const start = performance.now();
        try {
          const res = await fetch('/slow', { signal: controller.signal });
          return { resolved: res.status, elapsed: performance.now() - start };
        } catch (error) {
          return {
            isReason: error === reason,
            name: error instanceof Error ? error.name : String(error),
            waitMs,
            elapsed: performance.now() - start,
          };
        }
      });
      expect(result).toMatchObject({ isReason: true, name: 'UserLeft' });
      // The wait it cut short was the long one: Retry-After's 2 s at least.
      expect(result.waitMs).toBeGreaterThanOrEqual(2000);
      expect(result.elapsed).toBeLessThan(1000);
      expect(received).toEqual([{ method: 'GET', path: '/slow', attempt: undefined }]);
    },
    TEST_TIMEOUT,
  );
  it(
    "retries a refused connection (the browser's bare TypeError) and rejects with it after the last attempt",
    async () => {
      const result = await page.evaluate(async (url) => {
        const { createFetch, getRetryReport } = (globalThis as unknown as InPage).stormproofFetch;
        const kinds: string[] = [];
        const fetch = createFetch({
          baseDelayMs: 10,
          attemptHeader: false,
          onRetry: (event) => {
            kinds.push(event.verdict.kind);
          },
        });
        try {
          const res = await fetch(url);
          return { resolved: res.status };
        } catch (error) {
          const report = getRetryReport(error);
          return {
            name: error instanceof Error ? error.name : String(error),
            message: error instanceof Error ? error.message : '',
            reason: report?.reason,
            attempts: report?.attempts,
            kinds,
          };
        }
      }, `http://127.0.0.1:${refusedPort}/nothing`);
      expect(result).toEqual({
        name: 'TypeError',
        message: 'Failed to fetch',
        reason: 'max-attempts',
        attempts: 4,
        kinds: ['network', 'network', 'network'],
      });
    },
    TEST_TIMEOUT,
  );

  it(
    'retries a connection reset before the answer, and resolves with the answer',
    async () => {
      const result = await page.evaluate(async () => {
        const { createFetch } = (globalThis as unknown as InPage).stormproofFetch;
        const kinds: string[] = [];
        const res = await createFetch({
          baseDelayMs: 10,
          maxAttempts: 13,
          budget: false,
          onRetry: (event) => {
            kinds.push(event.verdict.kind);
          },
        })('/reset');
        return { status: res.status, body: await res.text(), kinds };
      });
      expect(result.status).toBe(200);
      expect(result.body).toBe(`ok ${RESETS + 1}`);
      // Chromium itself resends a request once when its connection is reset (the twelve resets
      // reached the page as six failures here): each failure that reaches the page is retried
      // as a network error.
      expect(result.kinds.length).toBeGreaterThanOrEqual(1);
      expect(new Set(result.kinds)).toEqual(new Set(['network']));
      expect(counts.get('/reset')).toBe(RESETS + 1);
    },
    TEST_TIMEOUT,
  );

  it(
    'never retries the TypeError fetch throws for a bad argument',
    async () => {
      const result = await page.evaluate(async () => {
        const { createFetch, getRetryReport } = (globalThis as unknown as InPage).stormproofFetch;
        try {
          await createFetch({ baseDelayMs: 10 })('/flaky', { method: 'BAD METHOD' });
          return { resolved: true };
        } catch (error) {
          return {
            name: error instanceof Error ? error.name : String(error),
            reason: getRetryReport(error)?.reason,
            attempts: getRetryReport(error)?.attempts,
          };
        }
      });
      expect(result).toEqual({ name: 'TypeError', reason: 'not-retryable', attempts: 1 });
      expect(counts.get('/flaky')).toBeUndefined();
    },
    TEST_TIMEOUT,
  );
});
