// stormproof/axios in a real browser: headless Chromium (Debian's /usr/bin/chromium through
// playwright-core) loads a page from a node:http server on 127.0.0.1 (port 0), imports axios'
// browser build, the built dist/axios/index.js and the table of axios-retry's ported cases
// (test/axios-cases.ts, transpiled as it is served), and sends requests through axios' XHR
// adapter to the same server, which plays each case's steps as in Node (test/axios.test.ts).
// Every case of the table runs here too, except those that cannot run under XHR: each is listed
// as skipped with its reason. Then this suite's own cases: a dropped connection (XHR's
// `Network Error`, code ERR_NETWORK) and 503s are retried, the attempt header is sent on
// retries, a POST without a key is sent once, and an abort during a wait ends the request with
// axios' CanceledError. Where chromium is missing, the suite fails and says so.
import { readFile, stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CASES } from './axios-cases.js';
import { checkReceived, type StepServer, startStepServer } from './helpers/axios-steps.js';
import { launchChromium } from './helpers/browser.js';

const DIST = fileURLToPath(new URL('../dist/', import.meta.url));
const TESTS = fileURLToPath(new URL('./', import.meta.url));
const AXIOS_ESM = fileURLToPath(
  new URL('../node_modules/axios/dist/esm/axios.js', import.meta.url),
);
const TEST_TIMEOUT = 15_000;

let steps: StepServer | undefined;
let browser: Browser | undefined;
let context: BrowserContext | undefined;
let page: Page;

const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>stormproof/axios in a browser</title></head>
<body><p>axios' XHR adapter through stormproof/axios</p></body></html>
`;

function reply(res: ServerResponse, status: number, type: string, body: string | Buffer): void {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store', connection: 'close' });
  res.end(body);
}

/** A built module or axios' browser build as it is; a test module (.ts) transpiled to a module. */
async function serveFile(file: string, res: ServerResponse): Promise<void> {
  try {
    const source = file.startsWith(TESTS) ? file.replace(/\.js$/, '.ts') : file;
    if (!file.endsWith('.js') || !(await stat(source)).isFile()) throw new Error('not served');
    const text = await readFile(source);
    const body =
      source === file
        ? text
        : ts.transpileModule(text.toString('utf8'), {
            compilerOptions: {
              module: ts.ModuleKind.ESNext,
              target: ts.ScriptTarget.ES2022,
              verbatimModuleSyntax: true,
            },
            fileName: source,
          }).outputText;
    reply(res, 200, 'text/javascript; charset=utf-8', body);
  } catch {
    reply(res, 404, 'text/plain', 'not found');
  }
}

/** The page, axios, dist/ and the test modules; everything else is the cases' endpoints. */
function servePage(_req: IncomingMessage, res: ServerResponse, pathname: string): boolean {
  if (pathname === '/') {
    reply(res, 200, 'text/html; charset=utf-8', PAGE);
    return true;
  }
  const roots: Array<[string, string]> = [
    ['/dist/', DIST],
    ['/test/', TESTS],
  ];
  if (pathname === '/axios.js') {
    void serveFile(AXIOS_ESM, res);
    return true;
  }
  for (const [prefix, root] of roots) {
    if (!pathname.startsWith(prefix)) continue;
    const file = resolve(root, pathname.slice(prefix.length));
    if (file.startsWith(root)) void serveFile(file, res);
    else reply(res, 404, 'text/plain', 'not found');
    return true;
  }
  return false;
}

beforeAll(async () => {
  steps = await startStepServer(servePage, { closeEach: true });
  browser = await launchChromium('stormproof/axios with the XHR adapter');
  context = await browser.newContext();
  context.setDefaultTimeout(10_000);
  page = await context.newPage();
  await page.goto(`${steps.base}/`, { timeout: 10_000 });
  // A string the page evaluates: vitest would rewrite an import() written in this file.
  const ready = await page.evaluate(`Promise.all([
      import('/axios.js'), import('/dist/axios/index.js'), import('/test/axios-cases.js'),
    ]).then(([a, s, c]) => {
      const axios = a.default;
      const client = axios.create({ adapter: 'xhr' });
      s.axiosRetry(client, { getAdapter: axios.getAdapter, baseDelayMs: 10, deadlineMs: 5000 });
      globalThis.client = client;
      globalThis.axios = axios;
      globalThis.sp = s;
      globalThis.cases = c.CASES;
      return [typeof s.axiosRetry, c.CASES.length];
    })`);
  expect(ready).toEqual(['function', CASES.length]);
}, 30_000);

afterAll(async () => {
  await context?.close().catch(() => {});
  await browser?.close().catch(() => {});
  await steps?.close();
}, 20_000);

/** What `path` received: the attempt header of each request. */
function attempts(path: string): Array<string | undefined> {
  return (steps?.received.get(path) ?? []).map(
    (r) => r.headers['stormproof-attempt'] as string | undefined,
  );
}

describe("axios-retry's suite, ported (test/axios-cases.ts), through the XHR adapter in Chromium", () => {
  CASES.forEach((c, i) => {
    if (c.browser !== undefined) {
      it.skip(`${c.name} [not in a browser: ${c.browser}]`, () => {});
      return;
    }
    it(
      c.name,
      async () => {
        const path = `/case/${i}`;
        if (c.steps !== undefined) steps?.steps.set(path, c.steps);
        const result = await page.evaluate(`(async () => {
          const kit = {
            axios: globalThis.axios, sp: globalThis.sp, adapter: 'xhr',
            url: location.origin + ${JSON.stringify(path)},
          };
          return globalThis.cases[${i}].run(kit);
        })()`);
        expect(result).toEqual(c.expected);
        await checkReceived(c, steps?.received.get(path) ?? []);
      },
      TEST_TIMEOUT,
    );
  });
});

describe('stormproof/axios with axios XHR adapter in Chromium', () => {
  it(
    "retries XHR's Network Error after a dropped connection, and resolves",
    async () => {
      steps?.steps.set('/drop-once', ['reset', 200]);
      const result = await page.evaluate(`(async () => {
        const res = await globalThis.client.get('/drop-once');
        return { status: res.status, data: res.data };
      })()`);
      expect(result).toEqual({ status: 200, data: 'answer 2' });
      expect(attempts('/drop-once')).toEqual([undefined, '2']);
    },
    TEST_TIMEOUT,
  );

  it(
    'retries 503s with the attempt header, and resolves with the 200',
    async () => {
      steps?.steps.set('/busy-twice', [503, 503, 200]);
      const result = await page.evaluate(`(async () => {
        const res = await globalThis.client.get('/busy-twice');
        return { status: res.status, data: res.data };
      })()`);
      expect(result).toEqual({ status: 200, data: 'answer 3' });
      expect(attempts('/busy-twice')).toEqual([undefined, '2', '3']);
    },
    TEST_TIMEOUT,
  );

  it(
    'sends a POST without an Idempotency-Key once, and says why',
    async () => {
      steps?.steps.set('/always-busy', [503]);
      const result = await page.evaluate(`(async () => {
        try {
          await globalThis.client.post('/always-busy', { sku: 1 });
          return 'resolved';
        } catch (error) {
          return { status: error.response?.status, reason: globalThis.sp.getRetryReport(error)?.reason };
        }
      })()`);
      expect(result).toEqual({ status: 503, reason: 'not-idempotent' });
      expect(attempts('/always-busy')).toHaveLength(1);
    },
    TEST_TIMEOUT,
  );

  it(
    'an abort during a wait ends the request at once with a CanceledError',
    async () => {
      steps?.steps.set('/busy-then-abort', [503]);
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
          await client.get('/busy-then-abort', { signal: controller.signal });
          return 'resolved';
        } catch (error) {
          return { cancel: axios.isCancel(error), fast: performance.now() - started < 2000 };
        }
      })()`);
      expect(result).toEqual({ cancel: true, fast: true });
      expect(attempts('/busy-then-abort')).toHaveLength(1);
    },
    TEST_TIMEOUT,
  );
});
