// Charts for the simulator: self-contained static SVG written as text, and an HTML report that
// inlines it. No script, no fonts or styles from elsewhere, no dependencies: a report opens offline
// in any browser and draws without running anything.

import { BAND_COLORS, PALETTE, SERIES_COLORS } from './palette.js';

/** One line of a line chart: a y value for each x of the chart. */
export interface ChartLine {
  /** The legend's name for it: `"offered"`, `"succeeded"`. */
  readonly label: string;
  /** Its y values, one per `x` of the chart (missing or non-finite values break the line). */
  readonly y: readonly number[];
  /** A CSS colour; by default one from the palette (offered, succeeded and failed have their own). */
  readonly color?: string;
}

/** A stretch of x shaded behind the lines, such as a fault window. */
export interface ChartBand {
  /** Where it starts, in x units. */
  readonly from: number;
  /** Where it ends, in x units. */
  readonly to: number;
  /** A short label written at its top. */
  readonly label?: string;
}

/** Lines over a shared x axis: requests per second over time, say. */
export interface LineChart {
  /** A line chart. */
  readonly kind: 'line';
  /** The chart's title. */
  readonly title: string;
  /** The x axis's label. */
  readonly xLabel: string;
  /** The y axis's label. */
  readonly yLabel: string;
  /** The x values, ascending. */
  readonly x: readonly number[];
  /** The lines, drawn in order (the last on top). */
  readonly lines: readonly ChartLine[];
  /** Stretches of x to shade. */
  readonly bands?: readonly ChartBand[];
  /** The top of the y axis; by default a round number above the highest value. */
  readonly yMax?: number;
}

/** One bar of a bar chart. */
export interface ChartBar {
  /** The label under the bar. */
  readonly label: string;
  /** Its height. */
  readonly value: number;
  /** A CSS colour; by default one from the palette. */
  readonly color?: string;
}

/** Bars side by side: calls per strategy, say. */
export interface BarChart {
  /** A bar chart. */
  readonly kind: 'bar';
  /** The chart's title. */
  readonly title: string;
  /** The y axis's label. */
  readonly yLabel: string;
  /** The bars, left to right. */
  readonly bars: readonly ChartBar[];
  /** The top of the y axis; by default a round number above the highest bar. */
  readonly yMax?: number;
}

/** A chart: lines or bars. */
export type Chart = LineChart | BarChart;

/** Size of one chart. */
export interface ChartSizeOptions {
  /**
   * Width of one chart, in CSS pixels. From 200 to 4000.
   * @default 560
   * @example
   * ```ts
   * renderChartSvg(chart, { width: 800 })
   * ```
   */
  width?: number | undefined;
  /**
   * Height of one chart, in CSS pixels. From 150 to 4000. A title or legend too long for one
   * line wraps, and the chart (with those beside it) grows by the lines it adds.
   * @default 320
   * @example
   * ```ts
   * renderChartSvg(chart, { height: 400 })
   * ```
   */
  height?: number | undefined;
}

/** How several charts are laid out in one picture. */
export interface ChartGridOptions extends ChartSizeOptions {
  /**
   * Charts per row. An integer from 1 to 12.
   * @default the number of charts, up to 3
   * @example
   * ```ts
   * renderChartsSvg([naive, stormproof], { columns: 2 })
   * ```
   */
  columns?: number | undefined;
  /**
   * Give every chart the same y axis (the highest of their tops), so that side-by-side charts
   * compare at a glance. A chart with its own `yMax` keeps it.
   * @default true
   * @example
   * ```ts
   * renderChartsSvg(charts, { shareY: false })
   * ```
   */
  shareY?: boolean | undefined;
  /**
   * A title over the whole picture.
   * @default undefined
   * @example
   * ```ts
   * renderChartsSvg(charts, { title: 'Storm lab: naive versus stormproof' })
   * ```
   */
  title?: string | undefined;
}

/** A table of figures in a report. */
export interface ReportTable {
  /** Column headings. */
  readonly head: readonly string[];
  /** Rows of cells; numbers are printed with thousands separators. */
  readonly rows: readonly (readonly (string | number | null)[])[];
}

/** One part of a report: a heading, some prose, a table, and charts side by side. */
export interface ReportSection {
  /** The section's heading. */
  readonly heading: string;
  /** Paragraphs of plain text (no markup). */
  readonly text?: readonly string[];
  /** A table of figures. */
  readonly table?: ReportTable;
  /** Charts drawn side by side, with a shared y axis unless `shareY` is false. */
  readonly charts?: readonly Chart[];
  /** Whether the charts share a y axis. Default true. */
  readonly shareY?: boolean;
  /** Pictures drawn elsewhere as whole `<svg>` elements (the map's heatmaps), inlined after the charts (HTML only). */
  readonly figures?: readonly string[];
}

/** A report: a self-contained HTML page. */
export interface Report {
  /** The page's title and top heading. */
  readonly title: string;
  /** Paragraphs under the title. */
  readonly intro?: readonly string[];
  /** The sections. */
  readonly sections: readonly ReportSection[];
  /** A line at the bottom: how the report was made. */
  readonly footer?: string;
}

/** Colours of the lines that the storm charts draw, by label. */
const NAMED_COLORS: Readonly<Record<string, string>> = SERIES_COLORS;
/** Most points a line keeps; longer lines keep each stretch's lowest and highest value. */
const MAX_POINTS = 1600;
/** The charts' font attribute, for pictures drawn in the same style. */
export const FONT = 'font-family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif"';

/** Room around the plot of a chart whose title and legend take one line each. */
const MARGIN = { left: 64, right: 18, top: 52, bottom: 50 };
/** How far apart the lines of a chart's title, and the rows of its legend, are. */
const TITLE_LINE = 18;
const LEGEND_ROW = 16;
/** A legend entry: its swatch and the space after it, before the label; then the gap to the next. */
const SWATCH = 22;
const ENTRY_GAP = 12;

/** Escapes text for XML and HTML, in content and in attributes. */
export function escapeXml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/**
 * About how wide `text` is drawn at `size` CSS pixels, rounded up: each character at the width it
 * has in DejaVu Sans (system-ui on most Linux desktops, and wider than Segoe UI, Roboto or San
 * Francisco), so that what is laid out by it fits in those fonts too. The picture is static SVG:
 * nothing measures the text where it is shown.
 */
function textWidth(text: string, size: number, bold = false): number {
  let em = 0;
  for (const ch of text) em += charEm(ch);
  return em * size * (bold ? 1 : 0.92);
}

/** A character's width in em, in bold; regular is 0.92 of it. */
function charEm(ch: string): number {
  if (/[\s'.,:;|/\\ijlIJ\u2019]/.test(ch)) return 0.4;
  if (/[-!()[\]frt_`"*?zcs]/.test(ch)) return 0.6;
  if (/[mwMW%@&]/.test(ch)) return 1.1;
  if (/[A-Z#+<=>^~]/.test(ch)) return 0.86;
  // Wide scripts (CJK, emoji) take about an em.
  return ch.codePointAt(0)! >= 0x1100 ? 1.1 : 0.72;
}

/**
 * `text` in lines of at most `maxWidth` (as {@link textWidth} measures), broken between words; a
 * word wider than a line has a line of its own.
 */
function wrapText(text: string, maxWidth: number, size: number, bold = false): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    const longer = line === '' ? word : `${line} ${word}`;
    if (line !== '' && textWidth(longer, size, bold) > maxWidth) {
      lines.push(line);
      line = word;
    } else line = longer;
  }
  lines.push(line);
  return lines;
}

/**
 * One `<text>` at (`x`, `y`); of several lines, a `<tspan>` each, `lineHeight` apart (one line is
 * written as plain text, as before titles wrapped).
 */
function textLines(
  x: number,
  y: number,
  lines: readonly string[],
  lineHeight: number,
  attributes: string,
): string {
  if (lines.length === 1) {
    return `<text x="${c(x)}" y="${c(y)}" ${attributes}>${escapeXml(lines[0]!)}</text>`;
  }
  const spans = lines.map(
    (line, i) => `<tspan x="${c(x)}" y="${c(y + i * lineHeight)}">${escapeXml(line)}</tspan>`,
  );
  return `<text ${attributes}>${spans.join('')}</text>`;
}

/** A coordinate with at most two decimals. */
function c(n: number): string {
  return String(Math.round(n * 100) / 100);
}

/** A tick label: 1500, 24k, 1.2M, 0.25. */
export function formatTick(n: number): string {
  const abs = Math.abs(n);
  const short = (v: number) => String(Number(v.toPrecision(4)));
  if (abs >= 1e6) return `${short(n / 1e6)}M`;
  if (abs >= 1e4) return `${short(n / 1e3)}k`;
  return short(n);
}

/** A round step that splits `range` into about `count` parts: 1, 2 or 5 times a power of ten. */
function niceStep(range: number, count: number): number {
  if (!(range > 0)) return 1;
  const raw = range / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const norm = raw / magnitude;
  const factor = norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10;
  return factor * magnitude;
}

/** The top of a y axis that shows `max`: a round number at or above it (1 for nothing). */
function niceTop(max: number): number {
  if (!(max > 0) || !Number.isFinite(max)) return 1;
  const step = niceStep(max, 5);
  return Math.ceil(max / step - 1e-9) * step;
}

/** The highest value a chart draws. */
function dataMax(chart: Chart): number {
  let max = 0;
  if (chart.kind === 'bar') {
    for (const bar of chart.bars)
      if (Number.isFinite(bar.value) && bar.value > max) max = bar.value;
  } else {
    for (const line of chart.lines) {
      for (const v of line.y) if (Number.isFinite(v) && v > max) max = v;
    }
  }
  return max;
}

/** The top of a chart's y axis, as drawn. */
export function chartTop(chart: Chart): number {
  return chart.yMax !== undefined && chart.yMax > 0 ? chart.yMax : niceTop(dataMax(chart));
}

/**
 * Indexes of the points to draw: all of them when there are few, else the first and last of the
 * line plus, in each of `MAX_POINTS / 2` stretches, the lowest and the highest (in x order), so
 * spikes survive.
 */
function decimate(y: readonly number[]): number[] {
  const n = y.length;
  if (n <= MAX_POINTS) return Array.from({ length: n }, (_, i) => i);
  const keep: number[] = [];
  const buckets = MAX_POINTS / 2;
  for (let b = 0; b < buckets; b++) {
    const start = Math.floor((b * n) / buckets);
    const end = Math.floor(((b + 1) * n) / buckets);
    let lo = start;
    let hi = start;
    for (let i = start; i < end; i++) {
      const v = y[i]!;
      if (v < y[lo]!) lo = i;
      if (v > y[hi]!) hi = i;
    }
    if (lo === hi) keep.push(lo);
    else keep.push(Math.min(lo, hi), Math.max(lo, hi));
  }
  if (keep[0] !== 0) keep.unshift(0);
  if (keep.at(-1) !== n - 1) keep.push(n - 1);
  return keep;
}

function colorOf(label: string, index: number, given: string | undefined): string {
  return given ?? NAMED_COLORS[label] ?? PALETTE[index % PALETTE.length]!;
}

/** Lines past the palette's length repeat its colours, dashed, so that no two look alike. */
function dashOf(label: string, index: number, given: string | undefined): string {
  if (given !== undefined || NAMED_COLORS[label] !== undefined || index < PALETTE.length) return '';
  return ' stroke-dasharray="6 4"';
}

function checkSize(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 150 || value > 4000) {
    throw new RangeError(
      `stormproof: renderChartSvg ${name} must be a number from 150 to 4000, got ${String(value)}`,
    );
  }
  return value;
}

/** Where a chart is drawn: its size, and the top of its plot (below its title and legend). */
interface Frame {
  readonly width: number;
  readonly height: number;
  readonly plotTop: number;
}

/** One entry of a legend, placed: `x` is where its swatch starts. */
interface LegendEntry {
  readonly label: string;
  readonly color: string;
  /** The line's dash attribute, or nothing. */
  readonly dash: string;
  readonly x: number;
}

/** A chart's header: its title in lines, its legend in rows, and the plot's top below them. */
interface Header {
  readonly title: readonly string[];
  readonly legend: readonly (readonly LegendEntry[])[];
  readonly plotTop: number;
}

/**
 * Lays out a chart's header in `width`: the title wrapped between the plot's left and right
 * edges, then the legend's entries in order, as many to a row as fit there, each row
 * right-aligned. Each line or row past the first moves the plot down.
 */
function chartHeader(chart: Chart, width: number): Header {
  const left = MARGIN.left;
  const right = width - MARGIN.right;
  const title = wrapText(chart.title, right - left, 14, true);
  const rows: { label: string; color: string; dash: string; width: number }[][] = [];
  if (chart.kind === 'line') {
    let row: { label: string; color: string; dash: string; width: number }[] = [];
    let used = 0;
    chart.lines.forEach((line, i) => {
      const entry = {
        label: line.label,
        color: colorOf(line.label, i, line.color),
        dash: dashOf(line.label, i, line.color),
        width: SWATCH + textWidth(line.label, 11),
      };
      if (row.length > 0 && used + ENTRY_GAP + entry.width > right - left) {
        rows.push(row);
        row = [];
      }
      used = row.length === 0 ? entry.width : used + ENTRY_GAP + entry.width;
      row.push(entry);
    });
    if (row.length > 0) rows.push(row);
  }
  const legend = rows.map((row) => {
    let x = right - row.reduce((sum, e) => sum + e.width, 0) - ENTRY_GAP * (row.length - 1);
    return row.map((e) => {
      const placed = { label: e.label, color: e.color, dash: e.dash, x };
      x += e.width + ENTRY_GAP;
      return placed;
    });
  });
  const plotTop =
    MARGIN.top + (title.length - 1) * TITLE_LINE + Math.max(0, legend.length - 1) * LEGEND_ROW;
  return { title, legend, plotTop };
}

/**
 * The headers of charts drawn side by side, `height` tall each at the least: each chart grows
 * by what the tallest header adds, so that their plots line up.
 */
function groupFrame(charts: readonly Chart[], width: number, height: number) {
  const headers = charts.map((chart) => chartHeader(chart, width));
  const plotTop = Math.max(MARGIN.top, ...headers.map((h) => h.plotTop));
  const frame: Frame = { width, height: height + plotTop - MARGIN.top, plotTop };
  return { headers, frame };
}

/** The y axis, its grid and its label; returns the markup and the y scale. */
function yAxis(
  top: number,
  frame: Frame,
  label: string,
): { markup: string; y: (v: number) => number } {
  const { width, height, plotTop } = frame;
  const plotBottom = height - MARGIN.bottom;
  const y = (v: number) =>
    plotBottom - (Math.min(Math.max(v, 0), top) / top) * (plotBottom - plotTop);
  const step = niceStep(top, 5);
  const parts: string[] = [];
  for (let v = 0; v <= top + step * 1e-9; v += step) {
    const yy = c(y(v));
    parts.push(
      `<line x1="${MARGIN.left}" y1="${yy}" x2="${width - MARGIN.right}" y2="${yy}" stroke="#e5e7eb" stroke-width="1"/>`,
      `<text x="${MARGIN.left - 6}" y="${yy}" text-anchor="end" dominant-baseline="middle" font-size="11" fill="#4b5563">${formatTick(v)}</text>`,
    );
  }
  const mid = c((plotTop + plotBottom) / 2);
  parts.push(
    `<text x="14" y="${mid}" transform="rotate(-90 14 ${mid})" text-anchor="middle" font-size="12" fill="#374151">${escapeXml(label)}</text>`,
  );
  return { markup: parts.join(''), y };
}

function lineChartBody(chart: LineChart, frame: Frame, top: number): string {
  const { width, height, plotTop } = frame;
  const xs = chart.x;
  const plotLeft = MARGIN.left;
  const plotRight = width - MARGIN.right;
  const plotBottom = height - MARGIN.bottom;
  // A loop, not Math.min(...xs): spreading a long series (a herd's 100,000 slots) overflows the
  // stack of a browser's Web Worker.
  let xMin = Number.POSITIVE_INFINITY;
  let xMax = Number.NEGATIVE_INFINITY;
  for (const v of xs) {
    if (!Number.isFinite(v)) continue;
    if (v < xMin) xMin = v;
    if (v > xMax) xMax = v;
  }
  if (xMin > xMax) [xMin, xMax] = [0, 1];
  for (const band of chart.bands ?? []) {
    xMin = Math.min(xMin, band.from);
    xMax = Math.max(xMax, band.to);
  }
  if (xMax <= xMin) xMax = xMin + 1;
  const x = (v: number) => plotLeft + ((v - xMin) / (xMax - xMin)) * (plotRight - plotLeft);
  const axis = yAxis(top, frame, chart.yLabel);
  const parts: string[] = [];

  for (const band of chart.bands ?? []) {
    const x1 = x(Math.max(band.from, xMin));
    const x2 = x(Math.min(band.to, xMax));
    parts.push(
      `<rect class="band" x="${c(x1)}" y="${plotTop}" width="${c(Math.max(1, x2 - x1))}" height="${c(plotBottom - plotTop)}" fill="${BAND_COLORS.fill}" fill-opacity="0.18"/>`,
    );
    if (band.label !== undefined) {
      // At the band's start, or as far right as it fits: a band near the end keeps its label.
      const lx = Math.max(plotLeft, Math.min(x1 + 3, plotRight - textWidth(band.label, 11)));
      parts.push(
        `<text x="${c(lx)}" y="${plotTop + 12}" font-size="11" fill="${BAND_COLORS.text}">${escapeXml(band.label)}</text>`,
      );
    }
  }
  parts.push(axis.markup);

  // X ticks at round values.
  const step = niceStep(xMax - xMin, Math.max(2, Math.floor((plotRight - plotLeft) / 90)));
  for (let v = Math.ceil(xMin / step) * step; v <= xMax + step * 1e-9; v += step) {
    const xx = c(x(v));
    parts.push(
      `<line x1="${xx}" y1="${plotBottom}" x2="${xx}" y2="${plotBottom + 4}" stroke="#6b7280"/>`,
      `<text x="${xx}" y="${plotBottom + 16}" text-anchor="middle" font-size="11" fill="#4b5563">${formatTick(Math.abs(v) < step * 1e-9 ? 0 : v)}</text>`,
    );
  }
  parts.push(
    `<line x1="${plotLeft}" y1="${plotBottom}" x2="${plotRight}" y2="${plotBottom}" stroke="#6b7280"/>`,
    `<text x="${c((plotLeft + plotRight) / 2)}" y="${height - 10}" text-anchor="middle" font-size="12" fill="#374151">${escapeXml(chart.xLabel)}</text>`,
  );

  chart.lines.forEach((line, i) => {
    const color = colorOf(line.label, i, line.color);
    const dash = dashOf(line.label, i, line.color);
    const runs: string[][] = [[]];
    const n = Math.min(xs.length, line.y.length);
    for (const j of decimate(line.y.slice(0, n))) {
      const xv = xs[j]!;
      const yv = line.y[j]!;
      if (!Number.isFinite(xv) || !Number.isFinite(yv)) {
        if (runs.at(-1)!.length > 0) runs.push([]);
        continue;
      }
      runs.at(-1)!.push(`${c(x(xv))},${c(axis.y(yv))}`);
    }
    for (const points of runs) {
      if (points.length === 0) continue;
      // A lone point still shows, as a dot.
      if (points.length === 1) points.push(points[0]!);
      parts.push(
        `<polyline class="series" data-series="${escapeXml(line.label)}" fill="none" stroke="${escapeXml(color)}"${dash} stroke-width="2" stroke-linejoin="round" stroke-linecap="round" points="${points.join(' ')}"/>`,
      );
    }
  });
  return parts.join('');
}

/** The legend's rows, under the title's last line. */
function legendMarkup(header: Header): string {
  const first = 20 + (header.title.length - 1) * TITLE_LINE + 18;
  const parts: string[] = [];
  header.legend.forEach((row, j) => {
    const y = first + j * LEGEND_ROW;
    for (const e of row) {
      parts.push(
        `<line x1="${c(e.x)}" y1="${y - 4}" x2="${c(e.x + 16)}" y2="${y - 4}" stroke="${escapeXml(e.color)}"${e.dash} stroke-width="3"/>`,
        `<text x="${c(e.x + SWATCH)}" y="${y}" font-size="11" fill="#374151">${escapeXml(e.label)}</text>`,
      );
    }
  });
  return `<g class="legend">${parts.join('')}</g>`;
}

function barChartBody(chart: BarChart, frame: Frame, top: number): string {
  const { width, height } = frame;
  const axis = yAxis(top, frame, chart.yLabel);
  const plotLeft = MARGIN.left;
  const plotRight = width - MARGIN.right;
  const plotBottom = height - MARGIN.bottom;
  const parts = [axis.markup];
  const n = Math.max(1, chart.bars.length);
  const slot = (plotRight - plotLeft) / n;
  const barWidth = Math.min(80, slot * 0.7);
  chart.bars.forEach((bar, i) => {
    const value = Number.isFinite(bar.value) ? Math.max(0, bar.value) : 0;
    const cx = plotLeft + slot * (i + 0.5);
    const yTop = axis.y(value);
    const color = colorOf(bar.label, i, bar.color);
    parts.push(
      `<rect class="bar" data-bar="${escapeXml(bar.label)}" x="${c(cx - barWidth / 2)}" y="${c(yTop)}" width="${c(barWidth)}" height="${c(Math.max(1, plotBottom - yTop))}" fill="${escapeXml(color)}"/>`,
      `<text x="${c(cx)}" y="${c(yTop - 5)}" text-anchor="middle" font-size="11" fill="#111827">${escapeXml(formatValue(bar.value))}</text>`,
      `<text x="${c(cx)}" y="${plotBottom + 16}" text-anchor="middle" font-size="11" fill="#374151">${escapeXml(bar.label)}</text>`,
    );
  });
  parts.push(
    `<line x1="${plotLeft}" y1="${plotBottom}" x2="${plotRight}" y2="${plotBottom}" stroke="#6b7280"/>`,
  );
  return parts.join('');
}

/** A figure for a label: thousands separated, at most two decimals. */
export function formatValue(n: number | null): string {
  if (n === null) return '-';
  if (!Number.isFinite(n)) return String(n);
  const rounded = Math.round(n * 100) / 100;
  const [whole, fraction] = String(Math.abs(rounded)).split('.');
  const grouped = whole!.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${rounded < 0 ? '-' : ''}${grouped}${fraction === undefined ? '' : `.${fraction}`}`;
}

/** One chart's inner markup, placed at (0, 0), with `top` as its y axis's top. */
function chartBody(chart: Chart, frame: Frame, header: Header, top: number): string {
  const body =
    chart.kind === 'bar' ? barChartBody(chart, frame, top) : lineChartBody(chart, frame, top);
  return [
    `<rect width="${frame.width}" height="${frame.height}" fill="#ffffff"/>`,
    textLines(
      MARGIN.left,
      20,
      header.title,
      TITLE_LINE,
      'font-size="14" font-weight="600" fill="#111827"',
    ),
    body,
    chart.kind === 'line' ? legendMarkup(header) : '',
  ].join('');
}

function checkChart(chart: unknown): Chart {
  const k = (chart as { kind?: unknown } | null)?.kind;
  if (k !== 'line' && k !== 'bar') {
    throw new TypeError(`stormproof: a chart must have kind 'line' or 'bar', got ${String(k)}`);
  }
  return chart as Chart;
}

/**
 * One chart as a standalone SVG document: static markup, no script, no external fonts or styles.
 * Every line is a `<polyline class="series" data-series="label">`, every bar a
 * `<rect class="bar" data-bar="label">` and every shaded stretch a `<rect class="band">`.
 *
 * @example
 * ```ts
 * const svg = renderChartSvg({
 *   kind: 'line', title: 'naive', xLabel: 'seconds', yLabel: 'requests/s',
 *   x: [0, 1, 2], lines: [{ label: 'offered', y: [4000, 24000, 24000] }],
 *   bands: [{ from: 0, to: 1, label: 'fault' }],
 * });
 * ```
 */
export function renderChartSvg(chart: Chart, options?: ChartSizeOptions): string {
  const width = checkSize('width', options?.width, 560);
  const height = checkSize('height', options?.height, 320);
  const ch = checkChart(chart);
  const { headers, frame } = groupFrame([ch], width, height);
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${frame.height}" width="${width}" height="${frame.height}" role="img" ${FONT}>`,
    `<title>${escapeXml(ch.title)}</title>`,
    `<g class="chart">${chartBody(ch, frame, headers[0]!, chartTop(ch))}</g>`,
    '</svg>',
  ].join('');
}

/**
 * Several charts in one SVG document, in a grid (side by side by default), each in its own
 * `<g class="chart">`, with a shared y axis unless `shareY` is false.
 *
 * @example
 * ```ts
 * const svg = renderChartsSvg([naiveChart, stormproofChart], { title: 'Storm lab' });
 * ```
 */
export function renderChartsSvg(charts: readonly Chart[], options?: ChartGridOptions): string {
  const width = checkSize('width', options?.width, 560);
  const height = checkSize('height', options?.height, 320);
  const list = charts.map(checkChart);
  const columnsOption = options?.columns;
  if (
    columnsOption !== undefined &&
    (!Number.isInteger(columnsOption) || columnsOption < 1 || columnsOption > 12)
  ) {
    throw new RangeError(
      `stormproof: renderChartsSvg columns must be an integer from 1 to 12, got ${String(columnsOption)}`,
    );
  }
  const columns = columnsOption ?? Math.max(1, Math.min(3, list.length));
  const rows = Math.max(1, Math.ceil(list.length / columns));
  const totalWidth = width * Math.min(columns, Math.max(1, list.length));
  const title =
    options?.title === undefined ? [] : wrapText(options.title, totalWidth - 32, 17, true);
  const titleHeight = title.length === 0 ? 0 : 36 + (title.length - 1) * 22;
  const { headers, frame } = groupFrame(list, width, height);
  const totalHeight = titleHeight + rows * frame.height;
  const tops = sharedTops(list, options?.shareY ?? true);
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${totalWidth} ${totalHeight}" width="${totalWidth}" height="${totalHeight}" role="img" ${FONT}>`,
    `<title>${escapeXml(options?.title ?? list.map((ch) => ch.title).join(' | '))}</title>`,
    `<rect width="${totalWidth}" height="${totalHeight}" fill="#ffffff"/>`,
  ];
  if (title.length > 0) {
    parts.push(textLines(16, 24, title, 22, 'font-size="17" font-weight="700" fill="#111827"'));
  }
  list.forEach((chart, i) => {
    const x = (i % columns) * width;
    const y = titleHeight + Math.floor(i / columns) * frame.height;
    parts.push(
      `<g class="chart" transform="translate(${x} ${y})">${chartBody(chart, frame, headers[i]!, tops[i]!)}</g>`,
    );
  });
  parts.push('</svg>');
  return parts.join('');
}

/** Each chart's y axis top: its own, or the highest of all when shared (an explicit yMax wins). */
function sharedTops(charts: readonly Chart[], share: boolean): number[] {
  const own = charts.map(chartTop);
  if (!share) return own;
  const max = niceTop(Math.max(0, ...charts.map(dataMax)));
  return charts.map((chart, i) => (chart.yMax !== undefined && chart.yMax > 0 ? own[i]! : max));
}

const STYLE = `
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #111827; margin: 2rem auto; max-width: 1240px; padding: 0 1rem; line-height: 1.45; }
h1 { font-size: 1.6rem; margin-bottom: 0.3rem; }
h2 { font-size: 1.2rem; margin-top: 2.2rem; border-bottom: 1px solid #e5e7eb; padding-bottom: 0.2rem; }
p { max-width: 80ch; }
table { border-collapse: collapse; margin: 1rem 0; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #d1d5db; padding: 0.3rem 0.7rem; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th { background: #f3f4f6; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
.charts svg { border: 1px solid #e5e7eb; max-width: 100%; height: auto; }
footer { margin-top: 2.5rem; color: #6b7280; font-size: 0.85rem; }
`;

function cell(value: string | number | null): string {
  return escapeXml(typeof value === 'number' || value === null ? formatValue(value) : value);
}

/**
 * A report as one self-contained HTML page: inline CSS, inline SVG charts, no script and nothing
 * loaded from elsewhere, so it opens offline. Each section's charts sit side by side with a
 * shared y axis.
 *
 * @example
 * ```ts
 * const html = renderReportHtml({
 *   title: 'Storm lab',
 *   sections: [{ heading: 'naive versus stormproof', table: { head: ['', 'naive'], rows: [['peak', 24000]] }, charts }],
 * });
 * ```
 */
export function renderReportHtml(report: Report): string {
  const parts = [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escapeXml(report.title)}</title>`,
    `<style>${STYLE}</style>`,
    '</head>',
    '<body>',
    `<h1>${escapeXml(report.title)}</h1>`,
  ];
  for (const p of report.intro ?? []) parts.push(`<p>${escapeXml(p)}</p>`);
  for (const section of report.sections) {
    parts.push('<section>', `<h2>${escapeXml(section.heading)}</h2>`);
    for (const p of section.text ?? []) parts.push(`<p>${escapeXml(p)}</p>`);
    if (section.table !== undefined) {
      parts.push(
        '<table>',
        `<thead><tr>${section.table.head.map((h) => `<th>${escapeXml(h)}</th>`).join('')}</tr></thead>`,
        '<tbody>',
        ...section.table.rows.map(
          (row) => `<tr>${row.map((v) => `<td>${cell(v)}</td>`).join('')}</tr>`,
        ),
        '</tbody>',
        '</table>',
      );
    }
    const charts = section.charts ?? [];
    if (charts.length > 0) {
      const list = charts.map(checkChart);
      const tops = sharedTops(list, section.shareY ?? true);
      const { headers, frame } = groupFrame(list, 560, 320);
      parts.push('<div class="charts">');
      list.forEach((chart, i) => {
        parts.push(
          [
            `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 560 ${frame.height}" width="560" height="${frame.height}" role="img" ${FONT}>`,
            `<title>${escapeXml(chart.title)}</title>`,
            `<g class="chart">${chartBody(chart, frame, headers[i]!, tops[i]!)}</g>`,
            '</svg>',
          ].join(''),
        );
      });
      parts.push('</div>');
    }
    if (section.figures !== undefined && section.figures.length > 0) {
      parts.push('<div class="charts">', ...section.figures, '</div>');
    }
    parts.push('</section>');
  }
  if (report.footer !== undefined) parts.push(`<footer>${escapeXml(report.footer)}</footer>`);
  parts.push('</body>', '</html>', '');
  return parts.join('\n');
}

/**
 * A report as one SVG picture: the title, then each section's heading and charts (side by side,
 * up to 3 a row, with a shared y axis unless the section says otherwise). Prose and tables are
 * left out; use {@link renderReportHtml} for those.
 *
 * @example
 * ```ts
 * const svg = renderReportSvg({ title: 'Storm lab', sections: [{ heading: 'naive versus stormproof', charts }] });
 * ```
 */
export function renderReportSvg(report: Report, options?: ChartSizeOptions): string {
  const width = checkSize('width', options?.width, 560);
  const height = checkSize('height', options?.height, 320);
  const sections = report.sections.filter((s) => (s.charts ?? []).length > 0);
  const columns = Math.max(1, ...sections.map((s) => Math.min(3, s.charts!.length)));
  const totalWidth = columns * width;
  const parts: string[] = [];
  let y = 44;
  for (const section of sections) {
    const charts = section.charts!.map(checkChart);
    const perRow = Math.min(3, charts.length);
    const tops = sharedTops(charts, section.shareY ?? true);
    const { headers, frame } = groupFrame(charts, width, height);
    const heading = wrapText(section.heading, totalWidth - 32, 15, true);
    parts.push(
      textLines(
        16,
        y + 22,
        heading,
        19,
        'class="section" font-size="15" font-weight="600" fill="#111827"',
      ),
    );
    y += 34 + (heading.length - 1) * 19;
    charts.forEach((chart, i) => {
      const x = (i % perRow) * width;
      const cy = y + Math.floor(i / perRow) * frame.height;
      parts.push(
        `<g class="chart" transform="translate(${x} ${cy})">${chartBody(chart, frame, headers[i]!, tops[i]!)}</g>`,
      );
    });
    y += Math.ceil(charts.length / perRow) * frame.height + 8;
  }
  return svgPage(report.title, totalWidth, y, parts);
}

/**
 * A report's one SVG picture: a white page `width` wide, its title on top, then `parts` (drawn
 * from y = 44 down to `contentBottom`, and moved down as a whole when the title takes more lines).
 */
export function svgPage(
  title: string,
  width: number,
  contentBottom: number,
  parts: readonly string[],
): string {
  const lines = wrapText(title, width - 32, 19, true);
  // A title of several lines moves everything under it down.
  const extra = (lines.length - 1) * 24;
  const height = Math.max(contentBottom, 60) + extra;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" ${FONT}>`,
    `<title>${escapeXml(title)}</title>`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    textLines(16, 30, lines, 24, 'font-size="19" font-weight="700" fill="#111827"'),
    ...(extra === 0 ? parts : [`<g transform="translate(0 ${extra})">`, ...parts, '</g>']),
    '</svg>',
    '',
  ].join('');
}
