// The live lab for real, as `stormproof lab --live` runs it: the old stack and stormproof clients
// with stormproof/server at the edge, each an API server, a gateway and two client workers on
// 127.0.0.1, with a 10 s failover (the story's 30 s at the default --scale 3) and 20 s after it.
// Not shorter: a 7.5 s failover (--scale 4) did not tip the old stack into a storm on a machine
// loaded by other work (it sits near the boundary), and the edge's ramp needs about 8 s to reopen.
// The two runs go side by side, each its own lab (servers, ports, workers), sharing only the
// cores: 37 s instead of 71 s, and the figures as far from the bounds as one after the other
// (three runs at load 5-30: the old stack 7.4x to 15.4x its normal load, stormproof recovered
// after 0.7 to 4.7 s and served 0.85 to 0.87 of its normal load; one after the other 11.9x, 1.7 s,
// 0.88). The shape is asserted from what was measured: the old stack's
// retries multiply the load and keep it up after the database is back; stormproof with the server
// recovers within a stated bound. Nothing is left running afterwards, and the report's curves
// draw in headless Chromium. The lab runs from dist/ (built by the suite's global setup): its
// client workers are files that Node loads.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { liveReport } from '../src/cli/live.js';
import type { LiveLabResult } from '../src/lab/index.js';
import { PALETTE, SERIES_COLORS } from '../src/sim/palette.js';
import { renderReportHtml } from '../src/sim/plot.js';
import { MAIN, root } from './helpers/cli.js';

type Lab = typeof import('../src/lab/index.js');
const DIST_LAB = join(root, 'dist/lab/index.js');
const CHROMIUM = '/usr/bin/chromium';
const NO_CHROMIUM = `${CHROMIUM} is not installed (Debian: apt-get install chromium): the live report cannot be checked in a browser`;
const dir = mkdtempSync(join(tmpdir(), 'stormproof-live-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Seconds after the database is back within which stormproof with the server must recover. */
const RECOVERY_BOUND_SECONDS = 11;

/** Handles that would keep a process alive: servers, sockets, worker threads. */
function liveHandles(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const kind of process.getActiveResourcesInfo()) {
    if (/TCP|Worker|MessagePort/.test(kind)) counts[kind] = (counts[kind] ?? 0) + 1;
  }
  return counts;
}

describe('options', () => {
  it('bad options throw, naming the option and the value', async () => {
    const { liveParameters } = (await import(DIST_LAB)) as Lab;
    expect(() => liveParameters({ scale: 0 })).toThrow(
      /scale must be a number from 1 to 30, got 0/,
    );
    expect(() => liveParameters({ scale: null as never })).toThrow(/scale .* got null/);
    expect(() => liveParameters({ rps: 1000 })).toThrow(/rps must be a number from 10 to 200/);
    expect(() => liveParameters({ workers: 1.5 })).toThrow(/workers must be an integer/);
    expect(() => liveParameters({ runs: ['naive' as never] })).toThrow(/runs must be .*"naive"/);
    expect(liveParameters({ scale: 3 }).parameters).toMatchObject({
      faultSeconds: 10,
      cacheTtlMs: 6667,
      rps: 60,
      workers: 2,
    });
  });

  it('the CLI names a bad option and exits with code 2', async () => {
    const run = promisify(execFile);
    const cases = [
      [['--scale', 'fast'], /--scale must be a number from 1 to 30, got "fast"/],
      [['--scale', '100'], /--scale must be a number from 1 to 30, got "100"/],
      [['--out', 'x.png'], /--out/],
      [['--rps', '5'], /unknown option --rps/],
    ] as const;
    const ran = await Promise.all(
      cases.map(([args]) =>
        run(process.execPath, [MAIN, 'lab', '--live', ...args]).then(
          () => undefined,
          (error: { code: number; stderr: string }) => error,
        ),
      ),
    );
    for (const [i, [args, message]] of cases.entries()) {
      const failed = ran[i];
      expect(failed?.code, args.join(' ')).toBe(2);
      expect(failed?.stderr).toMatch(message);
    }
  });
});

describe('a short storm on 127.0.0.1', () => {
  let result: LiveLabResult;
  let before: Record<string, number>;

  beforeAll(async () => {
    const lab = (await import(DIST_LAB)) as Lab;
    before = liveHandles();
    // Both settled before going on, so that a failed run leaves nothing running.
    const settled = await Promise.allSettled(
      (['old-stack', 'stormproof-server'] as const).map((run) =>
        lab.runLiveLab({ scale: 3, runs: [run] }),
      ),
    );
    const labs = settled.map((s) => {
      if (s.status === 'rejected') throw s.reason;
      return s.value;
    });
    result = { parameters: labs[0]!.parameters, runs: labs.flatMap((l) => l.runs) };
  }, 150_000);

  it('ran the story scaled: 10 s failover, 60 user requests a second', () => {
    expect(result.parameters).toMatchObject({ scale: 3, faultSeconds: 10, rps: 60 });
    for (const run of result.runs) {
      // Normal load is the offered taps, give or take the Poisson arrivals and a loaded machine.
      expect(run.figures.normalRps).toBeGreaterThan(35);
      expect(run.figures.normalRps).toBeLessThan(90);
      expect(run.series.length).toBe(33);
    }
  });

  // Whether the storm outlives the 20 s after the failover is not asserted: near the boundary it
  // may vary from run to run; the amplification is what the story is about.
  it('the old stack amplifies: the edge sees 3x normal or more after the database is back', () => {
    const old = result.runs.find((r) => r.name === 'old-stack')!.figures;
    expect(old.peakAfterDbBackRps).toBeGreaterThanOrEqual(3 * old.normalRps);
    expect(old.edgeCallsPerUserRequest).toBeGreaterThan(2);
    expect(old.apiCallsPerUserRequest).toBeGreaterThan(old.edgeCallsPerUserRequest);
    // Answers the API server worked out for callers that had hung up: the wasted work.
    expect(old.wastedAnswers).toBeGreaterThan(0);
  });

  it(`stormproof with the server at the edge recovers within ${RECOVERY_BOUND_SECONDS} s and never amplifies`, () => {
    const server = result.runs.find((r) => r.name === 'stormproof-server')!.figures;
    expect(server.recoveredAfterSeconds).not.toBeNull();
    expect(server.recoveredAfterSeconds!).toBeLessThanOrEqual(RECOVERY_BOUND_SECONDS);
    expect(server.peakAfterDbBackRps).toBeLessThan(2 * server.normalRps);
    expect(server.edgeCallsPerUserRequest).toBeLessThan(1.5);
    expect(server.shed).toBeGreaterThan(0);
    expect(server.servedAfterRps).toBeGreaterThan(0.8 * server.normalRps);
  });

  it('leaves nothing running: servers closed, sockets gone, workers terminated', async () => {
    // Closed means closed when runLiveLab resolved; one turn of the loop lets Node drop the handles.
    await new Promise((r) => setImmediate(r));
    expect(liveHandles()).toEqual(before);
  });

  it('the report draws the measured curves in headless Chromium', async () => {
    // A missing browser fails the test, never skips it: .ci/run installs Debian's chromium.
    expect(existsSync(CHROMIUM), NO_CHROMIUM).toBe(true);
    const file = join(dir, 'storm-lab-live.html');
    writeFileSync(file, renderReportHtml(liveReport(result)));
    const { chromium } = await import('playwright-core');
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run'],
      timeout: 30_000,
    });
    try {
      const page = await browser.newPage({ viewport: { width: 1300, height: 900 } });
      await page.goto(`file://${file}`);
      const charts = await page.locator('svg').count();
      expect(charts).toBeGreaterThanOrEqual(1);
      await page.locator('svg').first().scrollIntoViewIfNeeded();
      const png = await page.locator('svg').first().screenshot();
      const rgb = (hex: string) => [1, 3, 5].map((i) => Number.parseInt(hex.slice(i, i + 2), 16));
      const LINE_RGB = {
        offered: rgb(SERIES_COLORS.offered),
        succeeded: rgb(SERIES_COLORS.succeeded),
        failed: rgb(SERIES_COLORS.failed),
        api: rgb(PALETTE[4]),
      };
      // The browser decodes its own screenshot: pixels near each line's colour, counted.
      const counts = (await page.evaluate(
        `(async () => {
          const img = new Image();
          img.src = 'data:image/png;base64,${png.toString('base64')}';
          await img.decode();
          const canvas = document.createElement('canvas');
          canvas.width = img.width;
          canvas.height = img.height;
          const ctx = canvas.getContext('2d');
          ctx.drawImage(img, 0, 0);
          const data = ctx.getImageData(0, 0, img.width, img.height).data;
          const colours = ${JSON.stringify(LINE_RGB)};
          const out = { offered: 0, succeeded: 0, failed: 0, api: 0, white: 0, total: data.length / 4 };
          for (let i = 0; i < data.length; i += 4) {
            const [r, g, b] = [data[i], data[i + 1], data[i + 2]];
            if (r > 245 && g > 245 && b > 245) out.white++;
            for (const [name, [cr, cg, cb]] of Object.entries(colours)) {
              if (Math.abs(r - cr) + Math.abs(g - cg) + Math.abs(b - cb) < 60) out[name]++;
            }
          }
          return out;
        })()`,
      )) as Record<string, number>;
      // Non-blank, and each of the old stack's curves drew well past its legend swatch.
      expect(counts.white!).toBeLessThan(counts.total! * 0.99);
      for (const line of ['offered', 'failed', 'api', 'succeeded']) {
        expect(counts[line], line).toBeGreaterThan(150);
      }
    } finally {
      await browser.close();
    }
  }, 60_000);
});
