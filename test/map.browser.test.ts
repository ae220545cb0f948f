// The map's report in a real browser: headless Chromium (Debian's /usr/bin/chromium through
// playwright-core) opens the HTML report of a small sweep; every heatmap square is laid out, and
// the screenshot shows the three class colours. Where chromium is missing, the test fails.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { mapReport } from '../src/sim/map/report.js';
import { runMap } from '../src/sim/map/sweep.js';
import { CLASS_FILLS } from '../src/sim/palette.js';
import { renderReportHtml } from '../src/sim/plot.js';
import { launchChromium } from './helpers/browser.js';

const dir = mkdtempSync(join(tmpdir(), 'stormproof-map-browser-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('draws every heatmap of the report: squares laid out, and a screenshot with the colour of each class', async () => {
  const map = await runMap({
    loads: [0.1, 0.5, 0.9],
    triggerSeconds: [1, 3, 10],
    triggerKinds: ['capacity-loss'],
    policies: ['naive', 'budget'],
    stormproofServer: [false],
    seeds: 5,
  });
  const classes = new Set(map.cells.map((c) => c.class));
  expect(classes.has('stable') && classes.has('metastable')).toBe(true);
  const file = join(dir, 'map.html');
  writeFileSync(file, renderReportHtml(mapReport(map)));

  const browser = await launchChromium("the map's heatmaps");
  try {
    const page = await browser.newPage({ viewport: { width: 1300, height: 900 } });
    await page.goto(pathToFileURL(file).href);
    const boxes = await page.$$eval('svg.heatmap rect.cell', (rects) =>
      rects.map((r) => {
        const b = r.getBoundingClientRect();
        return { w: b.width, h: b.height, fill: getComputedStyle(r).fill };
      }),
    );
    expect(boxes).toHaveLength(map.cells.length);
    for (const b of boxes) {
      expect(b.w).toBeGreaterThan(10);
      expect(b.h).toBeGreaterThan(10);
    }
    const heatmap = page.locator('svg.heatmap').first();
    const png = await heatmap.screenshot();
    expect(png.length).toBeGreaterThan(1000);
    // The browser reads its own screenshot back: count the pixels of each class colour.
    const rgb = (hex: string) => [1, 3, 5].map((i) => Number.parseInt(hex.slice(i, i + 2), 16));
    const fills = {
      stable: rgb(CLASS_FILLS.stable),
      vulnerable: rgb(CLASS_FILLS.vulnerable),
      metastable: rgb(CLASS_FILLS.metastable),
    };
    const counts = await page.evaluate(
      async ([b64, fills]) => {
        const img = new Image();
        img.src = `data:image/png;base64,${b64}`;
        await img.decode();
        const canvas = document.createElement('canvas');
        canvas.width = img.width;
        canvas.height = img.height;
        const g = canvas.getContext('2d')!;
        g.drawImage(img, 0, 0);
        const data = g.getImageData(0, 0, img.width, img.height).data;
        const near = (i: number, rgb: number[]) =>
          Math.abs(data[i]! - rgb[0]!) +
            Math.abs(data[i + 1]! - rgb[1]!) +
            Math.abs(data[i + 2]! - rgb[2]!) <
          30;
        const out = { stable: 0, vulnerable: 0, metastable: 0, total: data.length / 4 };
        for (let i = 0; i < data.length; i += 4) {
          if (near(i, fills.stable)) out.stable++;
          else if (near(i, fills.metastable)) out.metastable++;
          else if (near(i, fills.vulnerable)) out.vulnerable++;
        }
        return out;
      },
      [png.toString('base64'), fills] as const,
    );
    const naive = map.cells.filter((c) => c.policy === 'naive');
    const share = (cls: string) => naive.filter((c) => c.class === cls).length / naive.length;
    // Each class colours about its share of the squares (the squares fill about half the picture).
    expect(counts.metastable / counts.total).toBeGreaterThan(share('metastable') * 0.2);
    expect(counts.stable / counts.total).toBeGreaterThan(share('stable') * 0.2);
    if (share('vulnerable') === 0) expect(counts.vulnerable).toBe(0);
  } finally {
    await browser.close();
  }
}, 60_000);
