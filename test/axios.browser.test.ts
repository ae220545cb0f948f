// stormproof/axios in a real browser: headless Chromium (Debian's /usr/bin/chromium through
// playwright-core) loads a page from a node:http server on 127.0.0.1 (port 0), imports axios'
// browser build and the built dist/axios/index.js, and sends requests through axios' XHR adapter
// to the same server. A dropped connection (XHR's `Network Error`, code ERR_NETWORK) and 503s
// are retried, the attempt header is sent on retries, a POST without a key is sent once, and an
// abort during a wait ends the request with axios' CanceledError. Where chromium is missing, the
// suite fails and says so.
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
const AXIOS_ESM = fileURLToPath(
  new URL('../node_modules/axios/dist/esm/axios.js', import.meta.url),
);
const TEST_TIMEOUT = 15_000;

let server: Server | undefined;
let browser: Browser | undefined;
let context: BrowserContext | undefined;
let page: Page;
/** Requests per path, and the attempt header each carried. */
const seen = new Map<string, Array<string | undefined>>();

const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>stormproof/axios in a browser</title></head>
<body><p>axios' XHR adapter through stormproof/axios</p></body></html>
`;

function reply(res: ServerResponse, status: number, type: string, body: string | Buffer): void {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store', connection: 'close' });
  res.end(body);
}

async function serveFile(file: string, res: ServerResponse): Promise<void> {
  try {
    if (!file.endsWith('.js') || !(await stat(file)).isFile()) throw new Error('not served');
    reply(res, 200, 'text/javascript; charset=utf-8', await readFile(file));
  } catch {
    reply(res, 404, 'text/plain', 'not found');
  }
}

function handle(req: IncomingMessage, res: ServerResponse): void {
  const pathname = (req.url ?? '/').split('?')[0] ?? '/';
  if (pathname === '/') {
    reply(res, 200, 'text/html; charset=utf-8', PAGE);
    return;
  }
  if (pathname === '/axios.js' || pathname.startsWith('/dist/')) {
    const file =
      pathname === '/axios.js' ? AXIOS_ESM : resolve(DIST, pathname.slice('/dist/'.length));
    if (file === AXIOS_ESM || file.startsWith(DIST)) void serveFile(file, res);
    else reply(res, 404, 'text/plain', 'not found');
    return;
  }
  const list = seen.get(pathname) ?? [];
  list.push(req.headers['stormproof-attempt'] as string | undefined);
  seen.set(pathname, list);
  const n = list.length;
  if (pathname === '/drop-once') {
    if (n === 1) req.socket.destroy();
    else reply(res, 200, 'text/plain', `answered ${n}`);
  } else if (pathname === '/busy-twice') {
    reply(res, n <= 2 ? 503 : 200, 'text/plain', `answer ${n}`);
  } else if (pathname === '/always-busy') {
    reply(res, 503, 'text/plain', `answer ${n}`);
  } else reply(res, 404, 'text/plain', 'no such endpoint');
}

describe('stormproof/axios with axios XHR adapter in Chromium', () => {
  beforeAll(async () => {
    const srv = createServer(handle);
    server = srv;
    srv.listen(0, '127.0.0.1');
    await once(srv, 'listening');
    const origin = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
    browser = await launchChromium('stormproof/axios with the XHR adapter');
    context = await browser.newContext();
    context.setDefaultTimeout(10_000);
    page = await context.newPage();
    await page.goto(`${origin}/`, { timeout: 10_000 });
    // A string the page evaluates: vitest would rewrite an import() written in this file.
    const ready =
      await page.evaluate(`Promise.all([import('/axios.js'), import('/dist/axios/index.js')])
      .then(([a, s]) => {
        const axios = a.default;
        const client = axios.create({ adapter: 'xhr' });
        s.axiosRetry(client, { getAdapter: axios.getAdapter, baseDelayMs: 10, deadlineMs: 5000 });
        globalThis.client = client;
        globalThis.axios = axios;
        globalThis.sp = s;
        return typeof s.axiosRetry;
      })`);
    expect(ready).toBe('function');
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
    "retries XHR's Network Error after a dropped connection, and resolves",
    async () => {
      const result = await page.evaluate(`(async () => {
        const res = await globalThis.client.get('/drop-once');
        return { status: res.status, data: res.data };
      })()`);
      expect(result).toEqual({ status: 200, data: 'answered 2' });
      expect(seen.get('/drop-once')).toEqual([undefined, '2']);
    },
    TEST_TIMEOUT,
  );

  it(
    'retries 503s with the attempt header, and resolves with the 200',
    async () => {
      const result = await page.evaluate(`(async () => {
        const res = await globalThis.client.get('/busy-twice');
        return { status: res.status, data: res.data };
      })()`);
      expect(result).toEqual({ status: 200, data: 'answer 3' });
      expect(seen.get('/busy-twice')).toEqual([undefined, '2', '3']);
    },
    TEST_TIMEOUT,
  );

  it(
    'sends a POST without an Idempotency-Key once, and says why',
    async () => {
      const result = await page.evaluate(`(async () => {
        try {
          await globalThis.client.post('/always-busy', { sku: 1 });
          return 'resolved';
        } catch (error) {
          return { status: error.response?.status, reason: globalThis.sp.getRetryReport(error)?.reason };
        }
      })()`);
      expect(result).toEqual({ status: 503, reason: 'not-idempotent' });
      expect(seen.get('/always-busy')).toHaveLength(1);
    },
    TEST_TIMEOUT,
  );

  it(
    'an abort during a wait ends the request at once with a CanceledError',
    async () => {
      seen.delete('/always-busy');
      const result = await page.evaluate(`(async () => {
        const axios = globalThis.axios;
        const client = axios.create({ adapter: 'xhr' });
        globalThis.sp.axiosRetry(client, {
          getAdapter: axios.getAdapter, retryDelay: () => 10000, deadlineMs: 60000,
        });
        const controller = new AbortController();
        setTimeout(() => controller.abort(), 100);
        const started = performance.now();
        try {
          await client.get('/always-busy', { signal: controller.signal });
          return 'resolved';
        } catch (error) {
          return { cancel: axios.isCancel(error), fast: performance.now() - started < 2000 };
        }
      })()`);
      expect(result).toEqual({ cancel: true, fast: true });
      expect(seen.get('/always-busy')).toHaveLength(1);
    },
    TEST_TIMEOUT,
  );
});
