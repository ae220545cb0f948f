// The simulator's charts: static SVG and an HTML page that inlines it. The SVG is parsed here as
// XML and its structure checked; where Debian's chromium is installed, a real headless browser
// draws it and the screenshot's pixels show that every chart drew its lines and bars.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { inflateSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { PALETTE, SERIES_COLORS } from '../src/sim/palette.js';
import {
  type BarChart,
  type Chart,
  formatTick,
  formatValue,
  type LineChart,
  renderChartSvg,
  renderChartsSvg,
  renderReportHtml,
  renderReportSvg,
} from '../src/sim/plot.js';

// --- A small XML reader: enough to check that the SVG is well formed and to walk it. ---

interface XmlElement {
  name: string;
  attrs: Record<string, string>;
  children: XmlElement[];
  text: string;
}

const ENTITY = /&(?!(?:amp|lt|gt|quot|apos|#\d+|#x[0-9a-f]+);)/i;

/** Parses an XML document strictly enough for our output: nesting, quoting, entities. */
function parseXml(source: string): XmlElement {
  const root: XmlElement = { name: '#document', attrs: {}, children: [], text: '' };
  const stack: XmlElement[] = [root];
  const token = /<!--[\s\S]*?-->|<\?[\s\S]*?\?>|<\/?[a-zA-Z][^<>]*>|[^<]+|</g;
  for (const [t] of source.matchAll(token)) {
    const top = stack.at(-1)!;
    if (t.startsWith('<!--') || t.startsWith('<?')) continue;
    if (t === '<') throw new Error('a stray < in text');
    if (!t.startsWith('<')) {
      if (ENTITY.test(t)) throw new Error(`an unescaped & in text: ${t.slice(0, 40)}`);
      top.text += t;
      continue;
    }
    if (t.startsWith('</')) {
      const name = t.slice(2, -1).trim();
      if (top.name !== name) throw new Error(`</${name}> closes <${top.name}>`);
      stack.pop();
      continue;
    }
    const selfClosing = t.endsWith('/>');
    const body = t.slice(1, selfClosing ? -2 : -1);
    const name = /^[\w:-]+/.exec(body)![0];
    const rest = body.slice(name.length);
    const attrs: Record<string, string> = {};
    const attr = /\s+([\w:-]+)="([^"<]*)"/y;
    let at = 0;
    for (;;) {
      attr.lastIndex = at;
      const m = attr.exec(rest);
      if (m === null) break;
      if (m[1]! in attrs) throw new Error(`attribute ${m[1]} twice on <${name}>`);
      if (ENTITY.test(m[2]!)) throw new Error(`an unescaped & in ${name}.${m[1]}`);
      attrs[m[1]!] = m[2]!;
      at = attr.lastIndex;
    }
    if (rest.slice(at).trim() !== '') throw new Error(`bad attributes on <${name}>: ${rest}`);
    const element: XmlElement = { name, attrs, children: [], text: '' };
    top.children.push(element);
    if (!selfClosing) stack.push(element);
  }
  if (stack.length !== 1) throw new Error(`<${stack.at(-1)!.name}> is never closed`);
  if (root.children.length !== 1) throw new Error('not exactly one root element');
  return root.children[0]!;
}

function all(element: XmlElement, predicate: (e: XmlElement) => boolean): XmlElement[] {
  const found: XmlElement[] = [];
  const walk = (e: XmlElement) => {
    if (predicate(e)) found.push(e);
    e.children.forEach(walk);
  };
  walk(element);
  return found;
}

const byClass = (root: XmlElement, name: string, cls: string) =>
  all(root, (e) => e.name === name && (e.attrs.class ?? '').split(' ').includes(cls));

function points(polyline: XmlElement): Array<[number, number]> {
  return polyline.attrs
    .points!.trim()
    .split(/\s+/)
    .map((p) => p.split(',').map(Number) as [number, number]);
}

/** The y tick labels of a chart group, as written. */
function yTicks(chart: XmlElement): string[] {
  return all(chart, (e) => e.name === 'text' && e.attrs['text-anchor'] === 'end').map(
    (e) => e.text,
  );
}

const storm: LineChart = {
  kind: 'line',
  title: 'naive <storm> & more',
  xLabel: 'seconds',
  yLabel: 'requests per second',
  x: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
  lines: [
    { label: 'offered', y: [4000, 4000, 9000, 24000, 24000, 23000, 24000, 24000, 24000, 24000] },
    { label: 'succeeded', y: [4000, 4000, 0, 0, 0, 500, 300, 400, 200, 100] },
    { label: 'failed', y: [0, 0, 9000, 24000, 24000, 22500, 23700, 23600, 23800, 23900] },
  ],
  bands: [{ from: 2, to: 4, label: 'database failover' }],
};

const bars: BarChart = {
  kind: 'bar',
  title: 'calls per user request',
  yLabel: 'calls',
  bars: [
    { label: 'top layer', value: 1 },
    { label: 'layer 2', value: 4 },
    { label: 'service', value: 64 },
  ],
};

describe('renderChartSvg', () => {
  it('writes a well-formed SVG document with a line per series, the band and escaped text', () => {
    const svg = renderChartSvg(storm);
    const root = parseXml(svg);
    expect(root.name).toBe('svg');
    expect(root.attrs.xmlns).toBe('http://www.w3.org/2000/svg');
    expect(root.attrs.viewBox).toBe('0 0 560 320');
    expect(svg).not.toMatch(/NaN|Infinity|undefined|<script/);
    expect(all(root, (e) => e.name === 'title')[0]!.text).toBe('naive &lt;storm&gt; &amp; more');

    const series = byClass(root, 'polyline', 'series');
    expect(series.map((s) => s.attrs['data-series'])).toEqual(['offered', 'succeeded', 'failed']);
    for (const line of series) {
      const pts = points(line);
      expect(pts).toHaveLength(10);
      for (const [x, y] of pts) {
        // Inside the plot area: between the margins.
        expect(x).toBeGreaterThanOrEqual(64);
        expect(x).toBeLessThanOrEqual(560 - 18);
        expect(y).toBeGreaterThanOrEqual(52);
        expect(y).toBeLessThanOrEqual(320 - 50);
      }
    }
    expect(series.map((s) => s.attrs.stroke)).toEqual([
      SERIES_COLORS.offered,
      SERIES_COLORS.succeeded,
      SERIES_COLORS.failed,
    ]);
    // Higher values are drawn higher up (smaller y).
    const offered = points(series[0]!);
    expect(offered[3]![1]).toBeLessThan(offered[0]![1]);

    const band = byClass(root, 'rect', 'band');
    expect(band).toHaveLength(1);
    expect(Number(band[0]!.attrs.width)).toBeGreaterThan(0);
    expect(svg).toContain('database failover');
    expect(yTicks(root).at(-1)).toBe('25k');
  });

  it('breaks a line at missing values and draws a lone point', () => {
    const root = parseXml(
      renderChartSvg({
        kind: 'line',
        title: 'gaps',
        xLabel: 'x',
        yLabel: 'y',
        x: [0, 1, 2, 3, 4],
        lines: [
          { label: 'a', y: [1, 2, Number.NaN, 4, 5] },
          { label: 'b', y: [3] },
        ],
      }),
    );
    const series = byClass(root, 'polyline', 'series');
    expect(series.filter((s) => s.attrs['data-series'] === 'a')).toHaveLength(2);
    expect(points(series.find((s) => s.attrs['data-series'] === 'b')!)).toHaveLength(2);
  });

  it('keeps a long series short but keeps its spikes', () => {
    const y = Array.from({ length: 50_000 }, (_, i) => (i === 31_337 ? 1000 : i % 7));
    const root = parseXml(
      renderChartSvg({
        kind: 'line',
        title: 'long',
        xLabel: 'x',
        yLabel: 'y',
        x: y.map((_, i) => i),
        lines: [{ label: 'offered', y }],
        yMax: 1000,
      }),
    );
    const pts = points(byClass(root, 'polyline', 'series')[0]!);
    expect(pts.length).toBeLessThanOrEqual(1602);
    // The spike reaches the top of the plot area.
    expect(Math.min(...pts.map(([, py]) => py))).toBe(52);
  });

  it('draws bars in proportion, with their values and labels', () => {
    const svg = renderChartSvg(bars);
    const root = parseXml(svg);
    const rects = byClass(root, 'rect', 'bar');
    expect(rects.map((r) => r.attrs['data-bar'])).toEqual(['top layer', 'layer 2', 'service']);
    const heights = rects.map((r) => Number(r.attrs.height));
    expect(heights[2]! / heights[1]!).toBeCloseTo(16, 0);
    expect(svg).toContain('>64<');
  });

  it('draws an empty chart without NaN', () => {
    const svg = renderChartSvg({
      kind: 'line',
      title: 'empty',
      xLabel: 'x',
      yLabel: 'y',
      x: [],
      lines: [],
    });
    expect(() => parseXml(svg)).not.toThrow();
    expect(svg).not.toMatch(/NaN|Infinity/);
  });

  it('rejects a bad size or chart kind with a clear error', () => {
    expect(() => renderChartSvg(storm, { width: 10 })).toThrow(
      /width must be a number from 150 to 4000, got 10/,
    );
    expect(() => renderChartSvg({ kind: 'pie' } as unknown as Chart)).toThrow(
      /kind 'line' or 'bar'/,
    );
  });
});

describe('renderChartsSvg', () => {
  const small: LineChart = {
    ...storm,
    title: 'small',
    lines: [{ label: 'offered', y: storm.x.map(() => 10) }],
  };

  it('puts charts side by side in one document, with a shared y axis by default', () => {
    const root = parseXml(renderChartsSvg([storm, small], { title: 'Storm lab' }));
    expect(root.attrs.viewBox).toBe(`0 0 1120 ${36 + 320}`);
    const charts = byClass(root, 'g', 'chart');
    expect(charts).toHaveLength(2);
    expect(charts.map((c) => c.attrs.transform)).toEqual(['translate(0 36)', 'translate(560 36)']);
    expect(charts.map((c) => yTicks(c).at(-1))).toEqual(['25k', '25k']);
  });

  it('gives each chart its own y axis when asked', () => {
    const root = parseXml(renderChartsSvg([storm, small], { shareY: false, columns: 1 }));
    const charts = byClass(root, 'g', 'chart');
    expect(charts.map((c) => yTicks(c).at(-1))).toEqual(['25k', '10']);
    expect(charts[1]!.attrs.transform).toBe('translate(0 320)');
  });
});

describe('reports', () => {
  const report = {
    title: 'Storm <lab>',
    intro: ['Made up & true.'],
    sections: [
      {
        heading: 'naive versus stormproof',
        text: ['offered, succeeded and failed requests per second.'],
        table: {
          head: ['', 'naive'],
          rows: [
            ['peak', 24000.5],
            ['recovered', null],
          ],
        },
        charts: [storm, { ...storm, title: 'stormproof' }],
      },
      { heading: 'layers', charts: [bars], shareY: false },
    ],
    footer: 'made by a test',
  };

  it('renders a self-contained HTML page: inline SVG charts, no script, nothing loaded', () => {
    const html = renderReportHtml(report);
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html).not.toMatch(/<script|<link|<img|@import|url\(/i);
    // The only URL in the page is the SVG namespace.
    expect(
      html.match(/https?:\/\/[^"\s]+/g)?.every((u) => u === 'http://www.w3.org/2000/svg'),
    ).toBe(true);
    expect(html).toContain('<title>Storm &lt;lab&gt;</title>');
    expect(html).toContain('<td>24,000.5</td>');
    expect(html).toContain('<td>-</td>');
    const svgs = html.match(/<svg[\s\S]*?<\/svg>/g)!;
    expect(svgs).toHaveLength(3);
    for (const svg of svgs) expect(() => parseXml(svg)).not.toThrow();
  });

  it('renders a report as one SVG picture with every chart', () => {
    const svg = renderReportSvg(report);
    const root = parseXml(svg);
    expect(byClass(root, 'g', 'chart')).toHaveLength(3);
    expect(byClass(root, 'text', 'section').map((t) => t.text)).toEqual([
      'naive versus stormproof',
      'layers',
    ]);
  });
});

describe('number formats', () => {
  it('tick labels are short', () => {
    expect([0, 5, 2500, 24000, 1_500_000, 0.25].map(formatTick)).toEqual([
      '0',
      '5',
      '2500',
      '24k',
      '1.5M',
      '0.25',
    ]);
  });
  it('values have thousands separators and at most two decimals', () => {
    expect([1109, 1846.09, 62615.362816, -4000, null].map(formatValue)).toEqual([
      '1,109',
      '1,846.09',
      '62,615.36',
      '-4,000',
      '-',
    ]);
  });
});

// --- In a real browser ---------------------------------------------------------------------

const CHROMIUM = '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
const NO_CHROMIUM = `${CHROMIUM} is not installed (Debian: apt-get install chromium): the charts cannot be checked in a browser`;
const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'stormproof-plot-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Picture {
  width: number;
  height: number;
  rgb(x: number, y: number): [number, number, number];
}

/** Decodes an 8-bit RGB or RGBA, non-interlaced PNG (what Chromium writes). */
function decodePng(png: Buffer): Picture {
  let at = 8;
  let width = 0;
  let height = 0;
  let channels = 0;
  const data: Buffer[] = [];
  while (at < png.length) {
    const length = png.readUInt32BE(at);
    const type = png.toString('latin1', at + 4, at + 8);
    const body = png.subarray(at + 8, at + 8 + length);
    if (type === 'IHDR') {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      expect(body[8]).toBe(8); // bit depth
      expect(body[12]).toBe(0); // no interlace
      channels = body[9] === 6 ? 4 : body[9] === 2 ? 3 : 0;
      expect(channels).toBeGreaterThan(0);
    } else if (type === 'IDAT') {
      data.push(body);
    }
    at += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(data));
  const stride = width * channels;
  const pixels = Buffer.alloc(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let i = 0; i < stride; i++) {
      const left = i >= channels ? pixels[y * stride + i - channels]! : 0;
      const up = y > 0 ? pixels[(y - 1) * stride + i]! : 0;
      const upLeft = y > 0 && i >= channels ? pixels[(y - 1) * stride + i - channels]! : 0;
      let predictor = 0;
      if (filter === 1) predictor = left;
      else if (filter === 2) predictor = up;
      else if (filter === 3) predictor = (left + up) >> 1;
      else if (filter === 4) {
        const p = left + up - upLeft;
        const pa = Math.abs(p - left);
        const pb = Math.abs(p - up);
        const pc = Math.abs(p - upLeft);
        predictor = pa <= pb && pa <= pc ? left : pb <= pc ? up : upLeft;
      }
      pixels[y * stride + i] = (line[i]! + predictor) & 0xff;
    }
  }
  return {
    width,
    height,
    rgb: (x, y) => {
      const i = y * stride + x * channels;
      return [pixels[i]!, pixels[i + 1]!, pixels[i + 2]!];
    },
  };
}

/** Opens `file` in headless Chromium at `width` x `height` CSS pixels and decodes the screenshot. */
async function screenshot(file: string, width: number, height: number): Promise<Picture> {
  const png = join(dir, `${file.replace(/\W/g, '_')}.png`);
  await run(
    CHROMIUM,
    [
      '--headless=new',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--hide-scrollbars',
      '--force-device-scale-factor=1',
      `--user-data-dir=${join(dir, 'profile')}`,
      `--window-size=${width},${height}`,
      `--screenshot=${png}`,
      `file://${file}`,
    ],
    { timeout: 60_000 },
  );
  return decodePng(readFileSync(png));
}

const hex = (color: string): [number, number, number] => [
  Number.parseInt(color.slice(1, 3), 16),
  Number.parseInt(color.slice(3, 5), 16),
  Number.parseInt(color.slice(5, 7), 16),
];

/** Pixels within the box whose colour is close to `color`. */
function count(
  picture: Picture,
  color: string,
  box: { x0: number; y0: number; x1: number; y1: number },
): number {
  const [r, g, b] = hex(color);
  let n = 0;
  for (let y = Math.max(0, box.y0); y < Math.min(picture.height, box.y1); y++) {
    for (let x = Math.max(0, box.x0); x < Math.min(picture.width, box.x1); x++) {
      const [pr, pg, pb] = picture.rgb(x, y);
      if (Math.abs(pr - r) + Math.abs(pg - g) + Math.abs(pb - b) < 60) n++;
    }
  }
  return n;
}

describe('in headless Chromium', () => {
  it('every chart of a picture draws its lines and bars inside its own plot area', async () => {
    // A missing browser fails the test, never skips it: .ci/run installs Debian's chromium.
    expect(hasChromium, NO_CHROMIUM).toBe(true);
    const flat = (label: string, v: number) => ({ label, y: storm.x.map(() => v) });
    const charts: Chart[] = [
      {
        ...storm,
        title: 'one',
        lines: [flat('offered', 90), flat('succeeded', 50), flat('failed', 10)],
        yMax: 100,
      },
      { ...storm, title: 'two', lines: [flat('offered', 80), flat('failed', 30)], yMax: 100 },
      {
        ...bars,
        bars: [
          { label: 'a', value: 50, color: PALETTE[4] },
          { label: 'b', value: 80, color: '#d97706' },
        ],
      },
    ];
    const file = join(dir, 'grid.svg');
    writeFileSync(
      file,
      renderChartsSvg(charts, { width: 400, height: 300, columns: 3, shareY: false }),
    );
    const picture = await screenshot(file, 1200, 300);
    expect(picture.width).toBe(1200);
    charts.forEach((chart, i) => {
      // The plot area of chart i, below its legend.
      const box = { x0: i * 400 + 64, y0: 54, x1: i * 400 + 400 - 18, y1: 300 - 50 };
      const colors =
        chart.kind === 'line'
          ? chart.lines.map((l) => ({
              l: SERIES_COLORS[l.label as keyof typeof SERIES_COLORS],
            }))
          : chart.bars.map((b) => ({ l: b.color! }));
      for (const { l } of colors) {
        expect(count(picture, l, box), `chart ${i + 1} colour ${l}`).toBeGreaterThan(150);
      }
    });
    // And the test can tell: chart two has no succeeded line, so next to no green.
    expect(
      count(picture, SERIES_COLORS.succeeded, { x0: 464, y0: 54, x1: 782, y1: 250 }),
    ).toBeLessThan(20);
  });

  it('the HTML report draws every chart', async () => {
    expect(hasChromium, NO_CHROMIUM).toBe(true);
    const file = join(dir, 'report.html');
    const charts: Chart[] = [storm, { ...storm, title: 'stormproof', lines: [storm.lines[1]!] }];
    writeFileSync(
      file,
      renderReportHtml({ title: 'Storm lab', sections: [{ heading: 'charts', charts }] }),
    );
    const picture = await screenshot(file, 1300, 700);
    const whole = { x0: 0, y0: 0, x1: picture.width, y1: picture.height };
    // Two charts with a green line each: far more green than the two legends alone.
    expect(count(picture, SERIES_COLORS.succeeded, whole)).toBeGreaterThan(600);
    expect(count(picture, SERIES_COLORS.offered, whole)).toBeGreaterThan(300);
    expect(count(picture, SERIES_COLORS.failed, whole)).toBeGreaterThan(300);
  });
});
