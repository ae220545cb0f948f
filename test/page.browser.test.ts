// The storm lab's page as a person gets it: `stormproof lab --serve` (dist/cli/main.js, with the
// page built into dist/page by `npm run build:page` before the tests) on 127.0.0.1, opened in
// headless Chromium (Debian's, through playwright-core; the tests fail without it). Every wait is
// for a state of the page, never for time. Screenshots of each view go to reports/.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, it as base, beforeAll, describe, expect, it, vi } from 'vitest';
import { herdView, mapView, type PageSection, stormView } from '../src/page/compute.js';
import {
  checkHerd,
  checkMap,
  checkStorm,
  type HerdInputs,
  type MapParams,
  readHash,
  type StormParams,
} from '../src/page/state.js';
import { MAP_POLICIES } from '../src/sim/map/policies.js';
import { launchChromium } from './helpers/browser.js';
import { MAIN, root, runCli } from './helpers/cli.js';

/** A running `stormproof lab --serve`, and what it printed. */
interface Served {
  readonly child: ChildProcess;
  origin: string;
  stdout: string;
  stderr: string;
}

/** Starts `stormproof lab --serve ...args`; resolves once it prints its address. */
function serve(args: readonly string[] = []): Promise<Served> {
  const child = spawn(process.execPath, [MAIN, 'lab', '--serve', ...args], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const served: Served = { child, origin: '', stdout: '', stderr: '' };
  return new Promise((resolve, reject) => {
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      served.stdout += d;
      const address = /http:\/\/127\.0\.0\.1:\d+/.exec(served.stdout);
      if (address !== null && served.origin === '') {
        served.origin = address[0];
        resolve(served);
      }
    });
    child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      served.stderr += d;
    });
    child.on('error', reject);
    child.on('exit', (code) =>
      reject(new Error(`lab --serve exited with ${code} before serving: ${served.stderr}`)),
    );
  });
}

/** Ends a server the way a person does, with Ctrl-C; resolves with its exit code. */
async function stop(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  const exited = once(child, 'exit');
  child.kill('SIGINT');
  const [code] = await exited;
  return code as number | null;
}

/** One raw request (no URL normalising, any Host header); resolves with the status and body. */
function raw(
  origin: string,
  path: string,
  options: { method?: string; host?: string } = {},
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  const url = new URL(origin);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path,
        method: options.method ?? 'GET',
        headers: { host: options.host ?? url.host },
        agent: false,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (d: string) => {
          body += d;
        });
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

let server: Served | undefined;
const origin = () => server!.origin;

beforeAll(async () => {
  // The page as `npm run build` makes it: the global setup builds only what tsc builds.
  execFileSync(
    process.execPath,
    ['node_modules/vite/bin/vite.js', 'build', '--config', 'src/page/vite.config.ts'],
    { cwd: root, stdio: 'inherit' },
  );
  server = await serve();
}, 60_000);

afterAll(async () => {
  if (server !== undefined) await stop(server.child);
});

describe('stormproof lab --serve', () => {
  it('serves the built page on 127.0.0.1 with its script and stylesheet', async () => {
    expect(server!.stdout).toMatch(
      /^The storm lab's page: http:\/\/127\.0\.0\.1:\d+\/ \(Ctrl-C stops it\)\n$/,
    );
    const page = await fetch(`${origin()}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('content-security-policy')).toContain("default-src 'self'");
    const html = await page.text();
    expect(html).toContain('<title>The storm lab: stormproof</title>');
    const assets = [...html.matchAll(/(?:src|href)="\.\/(assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets.map((a) => a.replace(/-[\w-]+\./, '.'))).toEqual([
      'assets/index.js',
      'assets/index.css',
    ]);
    for (const asset of assets) {
      const res = await fetch(`${origin()}/${asset}`);
      expect(res.status, asset).toBe(200);
      expect(res.headers.get('content-type'), asset).toMatch(/^text\/(javascript|css)/);
      // Nothing is loaded from elsewhere: no absolute URL of another origin in the page's files.
      expect(await res.text(), asset).not.toMatch(/\b(?:src|href)=["']?https?:/);
    }
  });

  it('serves nothing outside the page, to no other host name, and only GET and HEAD', async () => {
    const origin = server!.origin;
    for (const path of ['/../package.json', '/%2e%2e/package.json', '/..%2f..%2fpackage.json']) {
      expect((await raw(origin, path)).status, path).toBe(404);
    }
    expect((await raw(origin, '/assets')).status).toBe(404);
    expect((await raw(origin, '/nothing.html')).status).toBe(404);
    expect((await raw(origin, '/', { host: 'storm.example:80' })).status).toBe(421);
    expect((await raw(origin, '/', { host: `localhost:${new URL(origin).port}` })).status).toBe(
      200,
    );
    const post = await raw(origin, '/', { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
    const head = await raw(origin, '/', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
  });

  it('takes --port, refuses a port in use (exit 2), and stops on Ctrl-C', async () => {
    const first = await serve(['--port', '0']);
    const port = new URL(first.origin).port;
    const second = spawn(process.execPath, [MAIN, 'lab', '--serve', '--port', port], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    second.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    const [code] = await once(second, 'exit');
    expect(code).toBe(2);
    expect(stderr).toBe(
      `stormproof lab --serve: port ${port} is in use; give another --port, or 0\n`,
    );
    expect(await stop(first.child)).toBe(130);
    expect(first.stderr).toBe('stormproof: interrupted\n');
    await expect(fetch(first.origin)).rejects.toThrow();
  });

  it('says what is wrong with its options', async () => {
    const run = (args: string[]) =>
      new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
        const child = spawn(process.execPath, [MAIN, 'lab', ...args], { cwd: root });
        let out = '';
        let err = '';
        child.stdout.setEncoding('utf8').on('data', (d: string) => {
          out += d;
        });
        child.stderr.setEncoding('utf8').on('data', (d: string) => {
          err += d;
        });
        child.on('exit', (code) => resolve({ code, out, err }));
      });
    const bad = await run(['--serve', '--port', '70000']);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('--port must be an integer from 0 to 65535');
    const both = await run(['--serve', '--live']);
    expect(both.code).toBe(2);
    const help = await run(['--serve', '--help']);
    expect(help.code).toBe(0);
    expect(help.out).toMatch(/--port N\s+the port on 127\.0\.0\.1 \(0: a free one\) \(default 0\)/);
  });
});

// Each test has a browser context of its own, so they run side by side, one a core (each page
// computes in a worker of its own); one browser serves them all.
vi.setConfig({ maxConcurrency: Math.max(2, availableParallelism()) });
describe.concurrent('the page in Chromium', () => {
  /** Generous bounds for a busy 2-core machine; every wait ends as soon as the page is ready. */
  const WAIT = 30_000;
  let browser: Browser | undefined;

  beforeAll(async () => {
    browser = await launchChromium("the storm lab's page");
  }, WAIT);

  afterAll(async () => {
    await browser?.close();
  });

  /** A test's own browser context, the page it opens on, and what went wrong in its pages. */
  interface Tab {
    readonly context: BrowserContext;
    /** The page opened before the test, on the page's first view. */
    readonly page: Page;
    /** Console errors and warnings, and uncaught errors, of the test's pages. */
    readonly problems: string[];
    /** A new page of the test's context, at `hash`, that records its problems. */
    open(hash?: string): Promise<Page>;
  }

  const it = base.extend<{ tab: Tab }>({
    // biome-ignore lint/correctness/noEmptyPattern: vitest reads a fixture's dependencies from this pattern; it has none
    tab: async ({}, use) => {
      const problems: string[] = [];
      const context = await browser!.newContext({ viewport: { width: 1200, height: 900 } });
      const open = async (hash = '') => {
        const opened = await context.newPage();
        opened.on('console', (m) => {
          if (m.type() === 'error' || m.type() === 'warning') {
            problems.push(`${m.type()}: ${m.text()}`);
          }
        });
        opened.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
        await opened.goto(`${origin()}/${hash}`);
        return opened;
      };
      try {
        await use({ context, page: await open(), problems, open });
      } finally {
        await context.close();
      }
      expect(problems).toEqual([]);
    },
  });

  /** Waits until `view` has computed, and returns what it shows: its figures and its chart. */
  async function shown(on: Page, view: 'herd' | 'check') {
    await on.waitForSelector(`#${view}[data-state="done"]`, { timeout: WAIT });
    return on.evaluate((v) => {
      const section = document.getElementById(v)!;
      return {
        figures: Array.from(section.querySelector('table')!.tBodies[0]!.rows)
          .map((row) => Array.from(row.cells, (cell) => cell.textContent).join('\t'))
          .join('\n'),
        chart: section.querySelector('.chart')!.innerHTML,
        summary: document.getElementById('check-summary')!.textContent,
      };
    }, view);
  }

  /** Does `act` and waits until the view shows other figures than before, computed. */
  async function changes(
    page: Page,
    view: 'herd' | 'check',
    act: () => Promise<void>,
    what: string,
  ) {
    const before = await shown(page, view);
    await act();
    await page.waitForFunction(
      ([v, old]) =>
        document.getElementById(v!)!.dataset.state === 'done' &&
        document.getElementById(v!)!.querySelector('.chart')!.innerHTML !== old,
      [view, before.chart] as const,
      { timeout: WAIT },
    );
    const after = await shown(page, view);
    expect(after.figures, what).not.toBe(before.figures);
    expect(after.chart, what).not.toBe(before.chart);
    return after;
  }

  /** The figures the page must show for the herd in its URL: the worker's module, run here. */
  function expectedHerd(url: string): string {
    const checked = checkHerd(readHash(new URL(url).hash).herd as HerdInputs);
    if (!('params' in checked)) throw new Error(`the URL's herd is invalid: ${url}`);
    return herdView(checked.params)
      .runs.map((r) =>
        [
          r.jitter,
          r.figures.calls.toLocaleString('en-US'),
          r.figures.busiestSlot.toLocaleString('en-US'),
          `${r.figures.doneAfterSeconds.toFixed(2)} s`,
        ].join('\t'),
      )
      .join('\n');
  }

  it(
    "opens on the herd with the storm story's figures and no console error; a screenshot of each view",
    async ({ tab }) => {
      const { page } = tab;
      const herd = await shown(page, 'herd');
      expect(herd.figures).toBe('none\t81,000\t1,975\t376.21 s\nfull\t6,487\t205\t3.45 s');
      expect(herd.chart.match(/<g class="chart"/g)).toHaveLength(2);
      expect(new URL(page.url()).hash).toBe(
        '#view=herd&clients=2000&per-slot=25&slot-ms=10&base-ms=200&cap-ms=5000&seed=7&jitter=full&pushback=none',
      );
      expect(await page.textContent('#herd-command')).toBe(
        'stormproof sim herd --clients 2000 --per-slot 25 --slot-ms 10 --base-ms 200 --cap-ms 5000 --seed 7 --jitter full --pushback none --json',
      );
      mkdirSync(join(root, 'reports'), { recursive: true });
      await page.screenshot({ path: join(root, 'reports/page-herd.png'), fullPage: true });
      await page.click('#show-check');
      const check = await shown(page, 'check');
      expect(check.summary).toBe(
        'The weather API before the fix: in the worst case one user request makes 64 calls at the service and takes 32,000 ms.',
      );
      expect(check.figures.split('\n')).toEqual([
        'partner backend\t4\t1\t0 ms\t32,000 ms',
        'client library\t4\t4\t0 ms\t8,000 ms',
        'API gateway\t4\t16\t0 ms\t4,000 ms',
      ]);
      expect(await page.locator('#check-warnings li').count()).toBeGreaterThan(0);
      await page.screenshot({ path: join(root, 'reports/page-check.png'), fullPage: true });
    },
    WAIT * 2,
  );

  it(
    'moving each control of the herd changes its chart, its figures and the URL',
    async ({ tab }) => {
      const { page } = tab;
      await shown(page, 'herd');
      const sliders = await page.$$eval('#herd input[type="range"]', (els) => els.map((e) => e.id));
      expect(sliders).toEqual([
        'herd-clients-slider',
        'herd-per-slot-slider',
        'herd-slot-ms-slider',
        'herd-base-ms-slider',
        'herd-cap-ms-slider',
      ]);
      for (const id of sliders) {
        const flag = id.replace(/^herd-|-slider$/g, '');
        const hash = new URL(page.url()).hash;
        // By the keyboard, as a slider is moved without a mouse.
        await changes(page, 'herd', () => page.press(`#${id}`, 'ArrowRight'), id);
        expect(new URL(page.url()).hash, id).not.toBe(hash);
        const value = await page.inputValue(`#herd-${flag}`);
        expect(new URL(page.url()).hash, id).toContain(`&${flag}=${value}&`);
      }
      for (const [id, value] of [
        ['herd-clients', '3000'],
        ['herd-per-slot', '40'],
        ['herd-slot-ms', '7'],
        ['herd-base-ms', '150'],
        ['herd-cap-ms', '3000'],
        ['herd-seed', '8'],
      ] as const) {
        await changes(page, 'herd', () => page.fill(`#${id}`, value), id);
        expect(new URL(page.url()).hash, id).toContain(`${id.slice(5)}=${value}`);
      }
      for (const [id, value] of [
        ['herd-jitter', 'equal'],
        ['herd-pushback', 'spread'],
        ['herd-jitter', 'decorrelated'],
        ['herd-pushback', 'load-aware'],
      ] as const) {
        await changes(
          page,
          'herd',
          async () => void (await page.selectOption(`#${id}`, value)),
          id,
        );
      }
      // What it shows is what the worker's module computes for the URL's parameters.
      expect((await shown(page, 'herd')).figures).toBe(expectedHerd(page.url()));
    },
    WAIT * 4,
  );

  it(
    'marks a wrong value, says why, and computes again once it is right',
    async ({ tab }) => {
      const { page } = tab;
      await shown(page, 'herd');
      await page.fill('#herd-per-slot', '0');
      await page.waitForSelector('#herd[data-state="invalid"]', { timeout: WAIT });
      expect(await page.getAttribute('#herd-per-slot', 'aria-invalid')).toBe('true');
      expect(await page.textContent('#herd-per-slot-error')).toBe(
        'Calls the service answers per slot must be an integer from 1 to 2147483647, got 0.',
      );
      await page.fill('#herd-per-slot', '30');
      await shown(page, 'herd');
      expect(await page.getAttribute('#herd-per-slot', 'aria-invalid')).toBe('false');
      expect(await page.textContent('#herd-per-slot-error')).toBe('');
    },
    WAIT * 2,
  );

  it(
    'check: typing a stack changes its chart and its worst case; a wrong one says why',
    async ({ tab }) => {
      const { page } = tab;
      await page.click('#show-check');
      await changes(
        page,
        'check',
        () =>
          page.fill(
            '#check-stack',
            JSON.stringify({
              layers: [
                { name: 'a', attempts: 3 },
                { name: 'b', attempts: 3, timeoutMs: 500 },
              ],
            }),
          ),
        'check-stack',
      );
      expect(await page.textContent('#check-summary')).toBe(
        'The stack: in the worst case one user request makes 9 calls at the service and takes 4,500 ms.',
      );
      expect(new URL(page.url()).hash).toMatch(/^#view=check&stack=%7B/);
      await page.fill('#check-stack', '{"layers": [{"name": "a", "atempts": 3}]}');
      await page.waitForSelector('#check[data-state="invalid"]', { timeout: WAIT });
      expect(await page.getAttribute('#check-stack', 'aria-invalid')).toBe('true');
      expect(await page.textContent('#check-error')).toMatch(
        /^Cannot check it: stack layers\[0\] has no field "atempts" \(did you mean "attempts"\?\)/,
      );
      expect(await page.locator('#check-chart svg').count()).toBe(0);
    },
    WAIT * 2,
  );

  it(
    'a link brings back the same view: the herd and the check',
    async ({ tab }) => {
      const { page } = tab;
      await shown(page, 'herd');
      await page.fill('#herd-clients', '700');
      await page.selectOption('#herd-jitter', 'band');
      await page.selectOption('#herd-pushback', 'fixed');
      await page.press('#herd-cap-ms-slider', 'ArrowLeft');
      await page.waitForFunction(() => location.hash.includes('cap-ms=2000'), null, {
        timeout: WAIT,
      });
      const herd = await shown(page, 'herd');
      const controls = () =>
        page.$$eval('input, select, textarea', (els) =>
          els.map((e) => [e.id, (e as HTMLInputElement).value]),
        );
      const values = await controls();
      const link = page.url();
      const again = await tab.open(new URL(link).hash);
      expect(await shown(again, 'herd')).toEqual(herd);
      expect(
        await again.$$eval('input, select, textarea', (els) =>
          els.map((e) => [e.id, (e as HTMLInputElement).value]),
        ),
      ).toEqual(values);
      expect(again.url()).toBe(link);
      expect(herd.figures).toBe(expectedHerd(link));

      const stack =
        '{ "name": "two",\n  "layers": [ { "name": "x", "attempts": 2 }, { "name": "y", "attempts": 5 } ] }';
      await page.click('#show-check');
      await page.fill('#check-stack', stack);
      await page.waitForFunction(
        () => document.getElementById('check-summary')!.textContent!.startsWith('two:'),
        null,
        { timeout: WAIT },
      );
      const check = await shown(page, 'check');
      const checkLink = page.url();
      const third = await tab.open(new URL(checkLink).hash);
      expect(await shown(third, 'check')).toEqual(check);
      expect(await third.inputValue('#check-stack')).toBe(stack);
      expect(await third.isVisible('#herd')).toBe(false);
    },
    WAIT * 3,
  );

  it(
    'the keyboard alone reaches every control, and every control has a name',
    async ({ tab }) => {
      const { page } = tab;
      await shown(page, 'herd');
      const reached = async () => {
        const ids = new Set<string>();
        // Twice round the page at most: each Tab moves to the next control.
        for (let i = 0; i < 60; i++) {
          await page.keyboard.press('Tab');
          const id = await page.evaluate(() => document.activeElement?.id ?? '');
          if (id !== '') ids.add(id);
        }
        return ids;
      };
      const visibleControls = () =>
        page.$$eval('button, input, select, textarea', (els) =>
          els.filter((e) => (e as HTMLElement).offsetParent !== null).map((e) => e.id),
        );
      const herdControls = await visibleControls();
      expect(herdControls.length).toBe(4 + 5 * 2 + 1 + 2); // views, sliders and fields, seed, choices
      expect([...(await reached())].sort()).toEqual(expect.arrayContaining(herdControls.sort()));
      // The check view, opened from the keyboard.
      await page.focus('#show-check');
      await page.keyboard.press('Enter');
      await shown(page, 'check');
      const checkControls = await visibleControls();
      expect(checkControls.sort()).toEqual([
        'check-stack',
        'show-check',
        'show-herd',
        'show-map',
        'show-storm',
      ]);
      expect([...(await reached())]).toEqual(expect.arrayContaining(checkControls));
      // Every control's accessible name: a <label for>, or an aria-label, or its text.
      const unnamed = await page.$$eval('button, input, select, textarea', (els) =>
        els
          .filter((e) => {
            const c = e as HTMLInputElement;
            const label = Array.from(c.labels ?? [], (l) => l.textContent).join('');
            return (
              (
                label +
                (c.getAttribute('aria-label') ?? '') +
                (c.type === 'submit' || c.tagName === 'BUTTON' ? c.textContent : '')
              ).trim() === ''
            );
          })
          .map((e) => e.id),
      );
      expect(unnamed).toEqual([]);
    },
    WAIT * 2,
  );

  it(
    'the static build works from a folder of another server (npm run build:page, hosted anywhere)',
    async ({ tab }) => {
      // A plain static server that knows nothing of the page, with the page under a sub-path.
      const PREFIX = '/docs/storm-lab/';
      const types: Record<string, string> = {
        html: 'text/html',
        js: 'text/javascript',
        css: 'text/css',
      };
      const host = createServer((req, res) => {
        const path = new URL(req.url!, 'http://x').pathname;
        const name = path === PREFIX ? 'index.html' : path.slice(PREFIX.length);
        if (!path.startsWith(PREFIX) || name.includes('..')) return void res.writeHead(404).end();
        try {
          const body = readFileSync(join(root, 'dist/page', name));
          res.writeHead(200, { 'content-type': types[name.split('.').pop()!] ?? 'text/plain' });
          res.end(body);
        } catch {
          res.writeHead(404).end();
        }
      });
      await new Promise<void>((done) => host.listen(0, '127.0.0.1', done));
      try {
        const port = (host.address() as AddressInfo).port;
        const hosted = await tab.context.newPage();
        hosted.on('pageerror', (e) => tab.problems.push(`pageerror: ${e.message}`));
        hosted.on('console', (m) => {
          if (m.type() === 'error') tab.problems.push(`error: ${m.text()}`);
        });
        await hosted.goto(`http://127.0.0.1:${port}${PREFIX}#view=herd&clients=300&jitter=equal`);
        const herd = await shown(hosted, 'herd');
        expect(herd.figures).toBe(expectedHerd(hosted.url()));
      } finally {
        host.closeAllConnections();
        await new Promise((done) => host.close(done));
      }
    },
    WAIT * 2,
  );

  it(
    'keeps computing offline once loaded, and a run superseded by a new value never shows',
    async ({ tab }) => {
      const { page } = tab;
      await shown(page, 'herd');
      await tab.context.setOffline(true);
      // A long herd (the most clients, without jitter), superseded at once by a small one: the
      // page ends the long run's worker and starts another, from the script it already has.
      await page.selectOption('#herd-jitter', 'none');
      await page.fill('#herd-clients', '100000');
      await page.fill('#herd-clients', '300');
      await page.waitForFunction(
        () =>
          document.getElementById('herd')!.dataset.state === 'done' &&
          location.hash.includes('clients=300&'),
        null,
        { timeout: WAIT },
      );
      expect((await shown(page, 'herd')).figures).toBe(expectedHerd(page.url()));
      await changes(page, 'herd', () => page.fill('#herd-seed', '9'), 'offline');
    },
    WAIT * 2,
  );

  // --- the storm and the map ---------------------------------------------------------------------

  /** A short storm (as the URL gives it): 300 requests a second, a 10 s failover, 40 s. */
  const SHORT_STORM = '#view=storm&rps=300&fault-seconds=10&fault-at=5&duration=40&seed=3';
  /** A small map: one policy, both server settings, 2 loads by 2 trigger lengths, 2 seeds. */
  const SMALL_MAP =
    '#view=map&policy=budget&server=both&trigger=capacity-loss&loads=0.3%2C0.9&triggers=2%2C10&seeds=2&horizon=30';

  /** What a storm or map view shows once computed: its tables as text, its pictures, its squares. */
  async function report(on: Page, view: 'storm' | 'map') {
    await on.waitForSelector(`#${view}[data-state="done"]`, { timeout: WAIT });
    return on.evaluate((v) => {
      const section = document.getElementById(v)!;
      const text = (id: string) => document.getElementById(id)?.textContent ?? '';
      return {
        tables: Array.from(section.querySelectorAll('.report-section table'), (t) =>
          Array.from((t as HTMLTableElement).rows, (r) =>
            Array.from(r.cells, (c) => c.textContent).join('\t'),
          ).join('\n'),
        ),
        // Everything in words: the source and model lines, and every table (the map's cells too).
        figures: [
          text('map-source'),
          text('map-intro'),
          ...Array.from(section.querySelectorAll('table'), (t) => t.textContent),
        ].join('\n'),
        chart: Array.from(section.querySelectorAll('.chart'), (c) => c.innerHTML).join(''),
        squares: Array.from(section.querySelectorAll('rect.cell'), (r) =>
          r.getAttribute('data-class'),
        ),
      };
    }, view);
  }

  /**
   * Does `act` and waits until the view shows other figures, computed; its picture changes too,
   * unless `sameChart` (the storm's policy: --plot draws both policies whichever is chosen).
   */
  async function reportChanges(
    page: Page,
    view: 'storm' | 'map',
    act: () => Promise<void>,
    what: string,
    sameChart = false,
  ) {
    const before = await report(page, view);
    // Everything the view shows, read before acting: an answer may come back at once.
    const old = await page.evaluate(
      (v) =>
        Array.from(
          document.getElementById(v)!.querySelectorAll('.chart, table'),
          (c) => c.innerHTML,
        ).join(''),
      view,
    );
    await act();
    await page.waitForFunction(
      ([v, was]) =>
        document.getElementById(v)!.dataset.state === 'done' &&
        Array.from(
          document.getElementById(v)!.querySelectorAll('.chart, table'),
          (c) => c.innerHTML,
        ).join('') !== was,
      [view, old] as const,
      { timeout: WAIT * 4 },
    );
    const after = await report(page, view);
    expect(after.figures, what).not.toBe(before.figures);
    if (sameChart) expect(after.chart, what).toBe(before.chart);
    else expect(after.chart, what).not.toBe(before.chart);
    return after;
  }

  /** The tables the page must show for a report's sections: the worker's module, run here. */
  const tablesOf = (sections: readonly PageSection[]) =>
    sections
      .filter((s) => s.table !== null)
      .map((s) => [s.table!.head, ...s.table!.rows].map((row) => row.join('\t')).join('\n'));

  /** The storm's parameters in a URL. */
  function stormParams(url: string): StormParams {
    const checked = checkStorm(readHash(new URL(url).hash).storm);
    if (!('params' in checked)) throw new Error(`the URL's storm is invalid: ${url}`);
    return checked.params;
  }

  function mapParams(url: string): MapParams {
    const checked = checkMap(readHash(new URL(url).hash).map);
    if (!('params' in checked)) throw new Error(`the URL's map is invalid: ${url}`);
    return checked.params;
  }

  /** The squares of the heatmaps, in order, for the map in a URL. */
  async function expectedSquares(url: string): Promise<string[]> {
    const view = await mapView(mapParams(url));
    return view.sections.flatMap((s) =>
      s.figures.flatMap((svg) =>
        [...svg.matchAll(/class="cell" data-class="(\w+)"/g)].map((m) => m[1]!),
      ),
    );
  }

  it(
    "the storm: opens with no console error, shows the worker module's figures and charts; a screenshot",
    async ({ tab }) => {
      const page = await tab.open(SHORT_STORM);
      const shown = await report(page, 'storm');
      const expected = stormView(stormParams(page.url()));
      expect(shown.tables).toEqual(tablesOf(expected.sections));
      expect(shown.tables[0]!.split('\n')[0]).toBe('\tnaive\tstormproof');
      // The chosen run's figures, key by key, as the CLI's --json prints them.
      const figures = await page.$$eval('#storm-figures tbody tr', (rows) =>
        rows.map((r) => Array.from((r as HTMLTableRowElement).cells, (c) => c.textContent)),
      );
      expect(Object.fromEntries(figures)).toEqual(
        Object.fromEntries(
          Object.entries(expected.figures[expected.chosen]!).map(([k, v]) => [
            k,
            typeof v === 'string' ? v : JSON.stringify(v),
          ]),
        ),
      );
      // The comparison's two charts and stormproof's own scale, each with the report's lines.
      expect(shown.chart.match(/<g class="chart"/g)).toHaveLength(3);
      for (const chart of shown.chart.split('<g class="chart"').slice(1)) {
        for (const line of ['offered', 'succeeded', 'failed']) {
          expect(chart).toContain(`<polyline class="series" data-series="${line}"`);
        }
      }
      expect(await page.textContent('#storm-command')).toBe(
        'stormproof sim storm --policy naive --server none --rps 300 --fault-seconds 10 --fault-at 5 --duration 40 --seed 3 --json',
      );
      expect(await page.getAttribute('#storm-stop', 'aria-disabled')).toBe('true');
      mkdirSync(join(root, 'reports'), { recursive: true });
      await page.screenshot({ path: join(root, 'reports/page-storm.png'), fullPage: true });
    },
    WAIT * 2,
  );

  it(
    'the storm: moving each control changes its charts, its figures and the URL',
    async ({ tab }) => {
      // A smaller storm than the others (each control reruns it): 100 requests a second for 20 s.
      const page = await tab.open(
        '#view=storm&rps=100&fault-seconds=5&fault-at=3&duration=20&seed=3',
      );
      await report(page, 'storm');
      for (const id of ['rps', 'fault-seconds', 'fault-at', 'duration']) {
        const hash = new URL(page.url()).hash;
        await reportChanges(
          page,
          'storm',
          () => page.press(`#storm-${id}-slider`, 'ArrowRight'),
          id,
        );
        expect(new URL(page.url()).hash, id).not.toBe(hash);
        expect(new URL(page.url()).hash, id).toContain(
          `&${id}=${await page.inputValue(`#storm-${id}`)}`,
        );
      }
      await reportChanges(page, 'storm', () => page.fill('#storm-seed', '4'), 'seed');
      await reportChanges(
        page,
        'storm',
        async () => void (await page.selectOption('#storm-policy', 'stormproof')),
        'policy',
        true,
      );
      expect(await page.textContent('#storm-figures tbody tr')).toBe('policystormproof');
      await reportChanges(
        page,
        'storm',
        async () => void (await page.selectOption('#storm-server', 'all-or-nothing')),
        'server',
      );
      // The checkboxes, by the keyboard.
      await reportChanges(page, 'storm', () => page.press('#storm-breaker', ' '), 'breaker');
      expect(new URL(page.url()).hash).toContain('&breaker=on&');
      await reportChanges(
        page,
        'storm',
        () => page.press('#storm-manual-recovery', ' '),
        'manual recovery',
      );
      expect(new URL(page.url()).hash).toContain('&manual-recovery=on&');
      // What it shows is what the worker's module computes for the URL's parameters.
      expect((await report(page, 'storm')).tables).toEqual(
        tablesOf(stormView(stormParams(page.url())).sections),
      );
      // A breaker needs the stormproof policy: said, and nothing runs.
      await page.selectOption('#storm-policy', 'naive');
      await page.waitForSelector('#storm[data-state="invalid"]', { timeout: WAIT });
      expect(await page.textContent('#storm-breaker-error')).toBe(
        'A circuit breaker in each partner instance (stormproof policy only) needs the stormproof policy (the naive stack has no breaker).',
      );
    },
    WAIT * 16,
  );

  it(
    'the storm: shows its progress, Stop ends the run, and a new value supersedes a long one',
    async ({ tab }) => {
      // The storm story's defaults: 4,000 requests a second for 180 s, twice; seconds of work.
      const page = await tab.open('#view=storm');
      await page.waitForFunction(
        () => (document.getElementById('storm-progress') as HTMLProgressElement).value > 0,
        null,
        { timeout: WAIT },
      );
      expect(await page.getAttribute('#storm', 'data-state')).toBe('computing');
      expect(await page.textContent('#storm-status')).toMatch(/^Computing… \d+%$/);
      // Its charts grow as it runs: naive's seconds so far, stormproof's to come.
      await page.waitForSelector('#storm-live svg', { timeout: WAIT });
      expect(await page.textContent('#storm-live svg title')).toMatch(
        /^naive: \d+ of 180 s simulated \| stormproof: 0 of 180 s simulated$/,
      );
      expect(await page.getAttribute('#storm-stop', 'aria-disabled')).toBe('false');
      await page.focus('#storm-stop');
      await page.keyboard.press('Enter');
      expect(await page.getAttribute('#storm', 'data-state')).toBe('stopped');
      expect(await page.textContent('#storm-status')).toMatch(
        /^Stopped at \d+%\. Change a value, or press Compute, to run it again\.$/,
      );
      expect(await page.locator('#storm-report table').count()).toBe(0);
      // What was simulated before the stop stays in view.
      expect(await page.locator('#storm-live svg').count()).toBe(1);
      // Compute runs it again; a smaller load typed meanwhile supersedes it, and only it shows.
      await page.click('#storm-run');
      await page.fill('#storm-duration', '40');
      await page.fill('#storm-fault-at', '5');
      await page.fill('#storm-fault-seconds', '10');
      await page.fill('#storm-rps', '300');
      await page.fill('#storm-seed', '3');
      const shown = await report(page, 'storm');
      expect(shown.tables).toEqual(tablesOf(stormView(stormParams(page.url())).sections));
      expect(await page.locator('#storm-live svg').count()).toBe(0);
    },
    WAIT * 3,
  );

  it(
    "the map: opens with no console error, shows the worker module's squares and figures; a screenshot",
    async ({ tab }) => {
      const page = await tab.open(SMALL_MAP);
      const shown = await report(page, 'map');
      expect(shown.squares).toEqual(await expectedSquares(page.url()));
      expect(shown.squares).toHaveLength(8);
      expect(shown.tables).toEqual(tablesOf((await mapView(mapParams(page.url()))).sections));
      expect(await page.textContent('#map-source')).toBe(
        'Computed in this page: 16 runs, 2 seeds a cell.',
      );
      expect(await page.locator('#map-cells tbody tr').count()).toBe(8);
      expect(await page.textContent('#map-command')).toBe(
        'stormproof map --policy budget --server both --trigger capacity-loss --loads 0.3,0.9 --triggers 2,10 --seeds 2 --horizon 30 --json',
      );
      mkdirSync(join(root, 'reports'), { recursive: true });
      await page.screenshot({ path: join(root, 'reports/page-map.png'), fullPage: true });
    },
    WAIT * 2,
  );

  it(
    'the map: moving each control changes its heatmaps, its figures and the URL',
    async ({ tab }) => {
      const page = await tab.open(SMALL_MAP);
      await report(page, 'map');
      for (const id of ['seeds', 'horizon']) {
        await reportChanges(page, 'map', () => page.press(`#map-${id}-slider`, 'ArrowRight'), id);
        expect(new URL(page.url()).hash, id).toContain(
          `&${id}=${await page.inputValue(`#map-${id}`)}`,
        );
      }
      await reportChanges(page, 'map', () => page.fill('#map-loads', '0.2,0.5,0.9'), 'loads');
      expect(new URL(page.url()).hash).toContain('&loads=0.2%2C0.5%2C0.9&');
      await reportChanges(page, 'map', () => page.fill('#map-triggers', '1,20'), 'triggers');
      for (const [id, value] of [
        ['map-policy', 'naive'],
        ['map-trigger', 'load-spike'],
        ['map-server', 'off'],
      ] as const) {
        await reportChanges(
          page,
          'map',
          async () => void (await page.selectOption(`#${id}`, value)),
          id,
        );
        expect(new URL(page.url()).hash, id).toContain(`${id.slice(4)}=${value}`);
      }
      const shown = await report(page, 'map');
      expect(shown.squares).toEqual(await expectedSquares(page.url()));
      // A wrong list is marked and said.
      await page.fill('#map-loads', '0.5,0.5');
      await page.waitForSelector('#map[data-state="invalid"]', { timeout: WAIT });
      expect(await page.getAttribute('#map-loads', 'aria-invalid')).toBe('true');
      expect(await page.textContent('#map-loads-error')).toBe(
        'Offered loads (shares of capacity, comma-separated) must be comma-separated numbers from 0.01 to 10, none repeated, got "0.5,0.5".',
      );
    },
    WAIT * 12,
  );

  it(
    'the map: its progress shows, Stop ends it, and Compute runs it again',
    async ({ tab }) => {
      // The default grid at 20 seeds a cell: 1,440 runs, far longer than it takes to press Stop.
      const page = await tab.open('#view=map&seeds=20');
      await page.waitForFunction(
        () => (document.getElementById('map-progress') as HTMLProgressElement).value > 0,
        null,
        { timeout: WAIT },
      );
      expect(await page.getAttribute('#map', 'data-state')).toBe('computing');
      await page.click('#map-stop');
      expect(await page.getAttribute('#map', 'data-state')).toBe('stopped');
      expect(await page.textContent('#map-status')).toMatch(/^Stopped at \d+%\./);
      expect(await page.getAttribute('#map-stop', 'aria-disabled')).toBe('true');
      expect(await page.locator('#map-report svg').count()).toBe(0);
      await page.fill('#map-seeds', '1');
      await page.click('#map-run');
      const shown = await report(page, 'map');
      expect(shown.squares).toEqual(await expectedSquares(page.url()));
    },
    WAIT * 3,
  );

  it(
    'the map: draws a full map from a stormproof map --json file, and says why another file is not one',
    async ({ tab }) => {
      const dir = mkdtempSync(join(tmpdir(), 'stormproof-page-file-'));
      try {
        // Every policy, both server settings and both kinds: 4 heatmaps a policy, 2 by 2 squares.
        const ran = await runCli([
          'map',
          '--loads',
          '0.3,0.9',
          '--triggers',
          '2,10',
          '--seeds',
          '1',
          '--horizon',
          '20',
          '--json',
          '--out',
          join(dir, 'map.html'),
          '--progress',
          'never',
        ]);
        expect(ran.code, ran.stderr).toBe(0);
        const page = await tab.open(SMALL_MAP);
        const computed = await report(page, 'map');
        await page.setInputFiles('#map-file', {
          name: 'full-map.json',
          mimeType: 'application/json',
          buffer: Buffer.from(ran.stdout),
        });
        await page.waitForFunction(
          () => document.getElementById('map-source')!.textContent!.startsWith('From the file'),
          null,
          { timeout: WAIT },
        );
        const drawn = await report(page, 'map');
        expect(await page.locator('#map-report svg.heatmap').count()).toBe(4 * MAP_POLICIES.length);
        const cells = (JSON.parse(ran.stdout) as { cells: { class: string }[] }).cells;
        expect(drawn.squares.sort()).toEqual(cells.map((c) => c.class).sort());
        expect(await page.textContent('#map-source')).toBe(
          `From the file full-map.json: ${MAP_POLICIES.length} policies, ${16 * MAP_POLICIES.length} runs, 1 seeds a cell. A file is not in the link: the link brings back the map the controls compute.`,
        );
        expect(await page.locator('#map-cells tbody tr').count()).toBe(16 * MAP_POLICIES.length);
        // The URL still holds the controls' map.
        expect(new URL(page.url()).hash).toBe(SMALL_MAP);
        // A file that is not a map: said, and the map on show stays.
        await page.setInputFiles('#map-file', {
          name: 'notes.json',
          mimeType: 'application/json',
          buffer: Buffer.from('{"scenario": "weather-api"}'),
        });
        await page.waitForSelector('#map[data-state="error"]', { timeout: WAIT });
        expect(await page.getAttribute('#map-file', 'aria-invalid')).toBe('true');
        expect(await page.textContent('#map-file-error')).toBe(
          "Cannot draw notes.json: this is a scenario's file (stormproof map --scenario weather-api), not a map; the page draws the sweep's map",
        );
        expect(await page.locator('#map-report svg.heatmap').count()).toBe(4 * MAP_POLICIES.length);
        // Compute goes back to the controls' map.
        await page.click('#map-run');
        await page.waitForFunction(
          () => document.getElementById('map-source')!.textContent!.startsWith('Computed'),
          null,
          { timeout: WAIT },
        );
        expect((await report(page, 'map')).squares).toEqual(computed.squares);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    WAIT * 3,
  );

  it(
    'a link brings back the same storm and the same map',
    async ({ tab }) => {
      const page = await tab.open(SHORT_STORM);
      await report(page, 'storm');
      await page.selectOption('#storm-policy', 'stormproof');
      await page.press('#storm-breaker', ' ');
      await page.fill('#storm-seed', '6');
      await page.waitForFunction(() => location.hash.includes('seed=6'), null, { timeout: WAIT });
      const storm = await report(page, 'storm');
      const values = (on: Page) =>
        on.$$eval('#storm input, #storm select, #map input, #map select', (els) =>
          els.map((e) => [
            e.id,
            (e as HTMLInputElement).type === 'checkbox'
              ? String((e as HTMLInputElement).checked)
              : (e as HTMLInputElement).value,
          ]),
        );
      const stormValues = await values(page);
      const link = page.url();
      const again = await tab.open(new URL(link).hash);
      expect(await report(again, 'storm')).toEqual(storm);
      expect(await values(again)).toEqual(stormValues);
      expect(again.url()).toBe(link);

      await page.click('#show-map');
      await page.fill('#map-loads', '0.4,0.8');
      await page.fill('#map-triggers', '3,6');
      await page.selectOption('#map-server', 'on');
      await page.fill('#map-seeds', '1');
      await page.waitForFunction(() => location.hash.includes('seeds=1'), null, { timeout: WAIT });
      const map = await report(page, 'map');
      const mapLink = page.url();
      expect(mapLink).toContain(
        '#view=map&policy=naive&server=on&trigger=capacity-loss&loads=0.4%2C0.8&triggers=3%2C6&seeds=1&horizon=60',
      );
      const third = await tab.open(new URL(mapLink).hash);
      expect(await report(third, 'map')).toEqual(map);
      expect(await third.isVisible('#storm')).toBe(false);
    },
    WAIT * 4,
  );

  it(
    'the keyboard alone reaches every control of the storm and the map, and each has a name',
    async ({ tab }) => {
      const { page } = tab;
      const reached = async () => {
        const ids = new Set<string>();
        for (let i = 0; i < 60; i++) {
          await page.keyboard.press('Tab');
          const id = await page.evaluate(() => document.activeElement?.id ?? '');
          if (id !== '') ids.add(id);
        }
        return ids;
      };
      const visibleControls = () =>
        page.$$eval('button, input, select, textarea', (els) =>
          els.filter((e) => (e as HTMLElement).offsetParent !== null).map((e) => e.id),
        );
      await page.focus('#show-storm');
      await page.keyboard.press('Enter');
      const storm = await visibleControls();
      // Views, 2 choices, 2 checkboxes, 4 sliders and fields, the seed, Stop and Compute.
      expect(storm.length).toBe(4 + 2 + 2 + 4 * 2 + 1 + 2);
      expect([...(await reached())]).toEqual(expect.arrayContaining(storm));
      await page.focus('#show-map');
      await page.keyboard.press('Enter');
      const map = await visibleControls();
      // Views, 3 choices, 2 lists, 2 sliders and fields, Stop and Compute, the file.
      expect(map.length).toBe(4 + 3 + 2 + 2 * 2 + 2 + 1);
      expect(map).toContain('map-file');
      expect([...(await reached())]).toEqual(expect.arrayContaining(map));
      const unnamed = await page.$$eval(
        '#storm button, #storm input, #storm select, #map button, #map input, #map select',
        (els) =>
          els
            .filter((e) => {
              const c = e as HTMLInputElement;
              const label = Array.from(c.labels ?? [], (l) => l.textContent).join('');
              return (
                (
                  label +
                  (c.getAttribute('aria-label') ?? '') +
                  (c.tagName === 'BUTTON' ? c.textContent : '')
                ).trim() === ''
              );
            })
            .map((e) => e.id),
      );
      expect(unnamed).toEqual([]);
      // The progress bars are named too.
      for (const id of ['storm-progress', 'map-progress']) {
        const label = await page.getAttribute(`#${id}`, 'aria-labelledby');
        expect((await page.textContent(`#${label}`))!.trim(), id).not.toBe('');
      }
    },
    WAIT * 3,
  );
});
