// The map drawn: heatmaps (SVG, in the storm lab report's style, through src/sim/plot.ts), a
// text map for the terminal, and the report pages for a sweep and for a scenario.
import { CLASS_FILLS, CLASS_LABELS } from '../palette.js';
import { escapeXml, FONT, formatValue, type Report, type ReportSection, svgPage } from '../plot.js';
import type { MapClass } from './classify.js';
import { type MapPolicy, POLICY_SUMMARY } from './policies.js';
import { type MapScenarioResult, WEATHER_CONNECTIONS, WEATHER_FAULT_SECONDS } from './scenarios.js';
import type { MapCell, MapResult } from './sweep.js';
import type { TriggerKind } from './trigger.js';

/** The colour of each class: blue, orange and dark red, apart for colour-blind readers. */
export const CLASS_COLORS: Readonly<Record<MapClass, string>> = CLASS_FILLS;

/** The one-letter mark of each class in the text map. */
export const CLASS_MARKS: Readonly<Record<MapClass, string>> = {
  stable: '.',
  vulnerable: 'v',
  metastable: 'M',
};

/** One square of a heatmap. */
export interface HeatmapCell {
  /** Index into `rows` (drawn bottom up) and `columns`. */
  readonly row: number;
  readonly column: number;
  readonly class: MapClass;
  /** Printed in the square (a probability, a share). */
  readonly label: string;
  /** The square's tooltip. */
  readonly note: string;
}

/** A heatmap: rows (y, bottom up) by columns (x), each square coloured by its class. */
export interface Heatmap {
  readonly title: string;
  readonly rows: readonly string[];
  readonly columns: readonly string[];
  readonly xTitle: string;
  readonly yTitle: string;
  readonly cells: readonly HeatmapCell[];
}

const W = 560;
const H = 320;
const M = { left: 64, right: 18, top: 52, bottom: 50 };

/**
 * One heatmap as a standalone `<svg>`: each square a `<rect class="cell" data-class="...">`,
 * coloured stable (blue), vulnerable (orange) or metastable (dark red), with its label and tooltip.
 *
 * @example
 * ```ts
 * renderHeatmapSvg({ title: 'naive', rows: ['0.5'], columns: ['10'], xTitle: 's', yTitle: 'load',
 *   cells: [{ row: 0, column: 0, class: 'metastable', label: '1', note: '' }] });
 * ```
 */
export function renderHeatmapSvg(map: Heatmap): string {
  const pw = W - M.left - M.right;
  const ph = H - M.top - M.bottom;
  const cw = pw / Math.max(1, map.columns.length);
  const ch = ph / Math.max(1, map.rows.length);
  const font = Math.max(8, Math.min(12, Math.floor(Math.min(cw / 3, ch / 1.6))));
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" class="heatmap" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" ${FONT}>`,
    `<title>${escapeXml(map.title)}</title>`,
    `<rect width="${W}" height="${H}" fill="#ffffff"/>`,
    `<text x="${M.left}" y="24" font-size="14" font-weight="600" fill="#111827">${escapeXml(map.title)}</text>`,
  ];
  for (const cell of map.cells) {
    const x = M.left + cell.column * cw;
    const y = M.top + (map.rows.length - 1 - cell.row) * ch;
    parts.push(
      `<g><title>${escapeXml(cell.note)}</title><rect class="cell" data-class="${cell.class}" x="${r2(x)}" y="${r2(y)}" width="${r2(cw - 1)}" height="${r2(ch - 1)}" fill="${CLASS_COLORS[cell.class]}"/>`,
      `<text x="${r2(x + cw / 2)}" y="${r2(y + ch / 2 + font / 3)}" font-size="${font}" text-anchor="middle" fill="${CLASS_LABELS[cell.class]}">${escapeXml(cell.label)}</text></g>`,
    );
  }
  map.rows.forEach((label, i) => {
    const y = M.top + (map.rows.length - 1 - i) * ch + ch / 2 + 4;
    parts.push(
      `<text x="${M.left - 6}" y="${r2(y)}" font-size="11" text-anchor="end" fill="#374151">${escapeXml(label)}</text>`,
    );
  });
  map.columns.forEach((label, i) => {
    parts.push(
      `<text x="${r2(M.left + i * cw + cw / 2)}" y="${H - M.bottom + 16}" font-size="11" text-anchor="middle" fill="#374151">${escapeXml(label)}</text>`,
    );
  });
  parts.push(
    `<text x="${M.left + pw / 2}" y="${H - 12}" font-size="12" text-anchor="middle" fill="#111827">${escapeXml(map.xTitle)}</text>`,
    `<text transform="translate(16 ${M.top + ph / 2}) rotate(-90)" font-size="12" text-anchor="middle" fill="#111827">${escapeXml(map.yTitle)}</text>`,
    '</svg>',
  );
  return parts.join('');
}

function r2(n: number): string {
  return String(Math.round(n * 100) / 100);
}

const KIND_TEXT: Readonly<Record<TriggerKind, string>> = {
  'capacity-loss': 'capacity loss',
  'load-spike': 'load spike',
};

function serverText(on: boolean): string {
  return on ? 'with stormproof/server' : 'without stormproof/server';
}

function percent(p: number): string {
  return `${Math.round(p * 100)}`;
}

/** The heatmap of one policy: loads (rows) by trigger lengths (columns), P(metastable) in each square. */
export function policyHeatmap(
  result: MapResult,
  cells: readonly MapCell[],
  title: string,
): Heatmap {
  const { loads, triggerSeconds } = result.grid;
  return {
    title,
    rows: loads.map((l) => String(l)),
    columns: triggerSeconds.map((s) => String(s)),
    xTitle: 'trigger length (s); in each square: % of seeds metastable',
    yTitle: 'offered load (share of capacity)',
    cells: cells.map((c) => ({
      row: loads.indexOf(c.load),
      column: triggerSeconds.indexOf(c.triggerSeconds),
      class: c.class,
      label: percent(c.probability.metastable),
      note: `load ${c.load}, trigger ${c.triggerSeconds} s: ${c.class} (stable ${percent(c.probability.stable)}%, vulnerable ${percent(c.probability.vulnerable)}%, metastable ${percent(c.probability.metastable)}% of ${c.seeds} seeds); recovery ${c.recoverySeconds === null ? '-' : `${c.recoverySeconds} s`}; ${formatValue(round2(c.amplification))} calls per request`,
    })),
  };
}

function round2(n: number): number {
  return Math.round(n * 100) / 100;
}

/** The blocks of a map: one per trigger kind and server setting, the policies in each. */
function blocks(result: MapResult): { kind: TriggerKind; server: boolean; cells: MapCell[] }[] {
  const out: { kind: TriggerKind; server: boolean; cells: MapCell[] }[] = [];
  for (const kind of result.grid.triggerKinds)
    for (const server of result.grid.stormproofServer)
      out.push({
        kind,
        server,
        cells: result.cells.filter((c) => c.triggerKind === kind && c.stormproofServer === server),
      });
  return out;
}

/** The boundary of `policy` at `load` in `block`, as `a/b` (stable up to a s, metastable from b s). */
function boundaryText(
  result: MapResult,
  block: { kind: TriggerKind; server: boolean },
  policy: MapPolicy,
  load: number,
): string {
  const b = result.boundaries.find(
    (x) =>
      x.policy === policy &&
      x.load === load &&
      x.triggerKind === block.kind &&
      x.stormproofServer === block.server,
  );
  if (b === undefined) return '';
  const up = b.stableUpToSeconds === null ? '-' : `${b.stableUpToSeconds}`;
  const from = b.metastableFromSeconds === null ? '-' : `${b.metastableFromSeconds}`;
  return `${up}/${from}`;
}

/** The shared model in one line. */
function modelLine(result: MapResult): string {
  const m = result.model;
  const capacity = (m.workers * 1000) / m.serviceMs;
  return `Model: ${m.workers} workers x ${m.serviceMs} ms ${m.serviceTime} service (capacity ${formatValue(round2(capacity))} requests/s), FIFO, no cancellation; ${m.clients} clients, ${m.maxAttempts} attempts of ${m.attemptTimeoutMs} ms, deadline ${m.deadlineMs === null ? 'none' : `${m.deadlineMs} ms`}; network ${m.networkMs} ms each way; ${m.warmupSeconds} s warm-up, ${m.horizonSeconds} s horizon; triggers: 80% capacity loss, 2x load spike.`;
}

/** The map for a terminal: the rule, then per trigger kind and server a block of marks per policy, and the boundaries. */
export function mapText(result: MapResult): string {
  const { grid } = result;
  const lines = [
    `stormproof map: ${grid.policies.length} policies x ${grid.stormproofServer.length} server settings x ${grid.triggerKinds.length} trigger kinds x ${grid.loads.length} loads x ${grid.triggerSeconds.length} trigger lengths, ${grid.seeds} seeds a cell`,
    '',
    modelLine(result),
    result.rule,
    `Marks: ${CLASS_MARKS.stable} stable, ${CLASS_MARKS.vulnerable} vulnerable, ${CLASS_MARKS.metastable} metastable (the class of most seeds). Columns: trigger lengths ${grid.triggerSeconds.join(', ')} s.`,
    'Boundary a/b: stable for every trigger up to a s, metastable from b s (-: none).',
  ];
  const width = grid.triggerSeconds.length;
  for (const block of blocks(result)) {
    lines.push('', `${KIND_TEXT[block.kind]}, ${serverText(block.server)}`);
    lines.push(
      `  ${'load'.padEnd(6)}${grid.policies.map((p) => p.padEnd(Math.max(width, p.length) + 2)).join('')}  boundary by policy`,
    );
    for (const load of grid.loads) {
      let row = `  ${String(load).padEnd(6)}`;
      const bounds: string[] = [];
      for (const policy of grid.policies) {
        const marks = grid.triggerSeconds
          .map((s) => {
            const c = block.cells.find(
              (x) => x.policy === policy && x.load === load && x.triggerSeconds === s,
            );
            return c === undefined ? ' ' : CLASS_MARKS[c.class];
          })
          .join('');
        row += marks.padEnd(Math.max(width, policy.length) + 2);
        bounds.push(boundaryText(result, block, policy, load));
      }
      lines.push(`${row}  ${bounds.join(' ')}`);
    }
  }
  return lines.join('\n');
}

/** The HTML report of a sweep: the rule, then per trigger kind and server the heatmaps of every policy. */
export function mapReport(result: MapResult, footer?: string): Report {
  const { grid } = result;
  const sections: ReportSection[] = blocks(result).map((block) => ({
    heading: `${KIND_TEXT[block.kind]}, ${serverText(block.server)}`,
    text: [
      'Rows: offered load; columns: trigger length. Colour: the class of most seeds (blue stable, orange vulnerable, dark red metastable); number: % of seeds metastable. Hover a square for its recovery time and amplification.',
    ],
    table: {
      head: ['load', ...grid.policies.map((p) => `${p}: stable up to / metastable from (s)`)],
      rows: grid.loads.map((load) => [
        String(load),
        ...grid.policies.map((policy) => boundaryText(result, block, policy, load)),
      ]),
    },
    figures: grid.policies.map((policy) =>
      renderHeatmapSvg(
        policyHeatmap(
          result,
          block.cells.filter((c) => c.policy === policy),
          `${policy}${block.server ? ' + stormproof/server' : ''}: ${KIND_TEXT[block.kind]}`,
        ),
      ),
    ),
  }));
  return {
    title: 'stormproof map: where each retry policy tips into a metastable failure',
    intro: [
      modelLine(result),
      result.rule,
      `Each cell runs ${grid.seeds} seeds of the map's model (docs/simulator.md): open-loop Poisson arrivals, a trigger after a warm-up, a FIFO server with no cancellation, client processes whose every retry decision is stormproof's engine. Policies: ${grid.policies.map((p) => `${p} (${POLICY_SUMMARY[p]})`).join('; ')}.`,
    ],
    sections,
    ...(footer === undefined ? {} : { footer }),
  };
}

/** A scenario's outcome as text: each setup, its class against the published one. */
export function scenarioText(result: MapScenarioResult): string {
  const lines = [
    `stormproof map --scenario ${result.scenario}: ${result.source}`,
    `Model: ${result.model}`,
    '',
  ];
  for (const s of result.setups) {
    const expected = s.expected === null ? 'no published outcome' : `published: ${s.expected}`;
    lines.push(
      `  ${s.holds ? 'ok  ' : 'FAIL'} ${s.name}: ${s.class} (${expected}; stable ${percent(s.probability.stable)}%, metastable ${percent(s.probability.metastable)}% of seeds; goodput ${percent(s.finalShare)}% of offered in the last 20 s; ${formatValue(round2(s.amplification))} calls per request)`,
    );
  }
  lines.push(
    '',
    result.holds ? 'Every published outcome holds.' : 'A published outcome does NOT hold.',
  );
  return lines.join('\n');
}

/** The weather API's grid as heatmaps, one per setup: pool sizes (rows) by failover lengths. */
function weatherHeatmaps(result: MapScenarioResult): string[] {
  const per = WEATHER_CONNECTIONS.length * WEATHER_FAULT_SECONDS.length;
  return ['naive', 'stormproof'].map((policy, p) =>
    renderHeatmapSvg({
      title: `weather API, ${policy}: where the default (32,000, 30 s) sits`,
      rows: WEATHER_CONNECTIONS.map((c) => c.toLocaleString('en-US')),
      columns: WEATHER_FAULT_SECONDS.map(String),
      xTitle: 'database failover (s); in each square: goodput % in the last 20 s',
      yTitle: 'API connections',
      cells: result.setups.slice(p * per, (p + 1) * per).map((s, i) => ({
        row: i % WEATHER_CONNECTIONS.length,
        column: Math.floor(i / WEATHER_CONNECTIONS.length),
        class: s.class,
        label: percent(s.finalShare),
        note: `${s.name}: ${s.class}; ${formatValue(round2(s.amplification))} calls per user request`,
      })),
    }),
  );
}

/** A report as one SVG picture: the title, then each section's heading and its figures, side by side. */
export function figuresSvg(report: Report): string {
  const columns = Math.max(1, ...report.sections.map((s) => Math.min(3, s.figures?.length ?? 0)));
  // Wide enough for the title whatever the number of columns.
  const width = Math.max(columns * W, 2 * W);
  const parts: string[] = [];
  let y = 44;
  for (const section of report.sections) {
    const figures = section.figures ?? [];
    if (figures.length === 0) continue;
    parts.push(
      `<text x="16" y="${y + 22}" font-size="15" font-weight="600" fill="#111827">${escapeXml(section.heading)}</text>`,
    );
    y += 34;
    figures.forEach((svg, i) => {
      const x = (i % columns) * W;
      const fy = y + Math.floor(i / columns) * H;
      parts.push(svg.replace('<svg ', `<svg x="${x}" y="${fy}" `));
    });
    y += Math.ceil(figures.length / columns) * H + 8;
  }
  return svgPage(report.title, width, y, parts);
}

/** A sweep as one SVG picture of every heatmap. */
export function mapSvg(result: MapResult): string {
  return figuresSvg(mapReport(result));
}

/** A scenario's report page: the setups as a table (and for the weather API, its grid as heatmaps). */
export function scenarioReport(result: MapScenarioResult): Report {
  const section: ReportSection = {
    ...(result.scenario === 'weather-api' ? { figures: weatherHeatmaps(result) } : {}),
    heading: result.scenario,
    text: [result.source, `Model: ${result.model}`],
    table: {
      head: [
        'setup',
        'published',
        'model',
        'stable %',
        'metastable %',
        'goodput % (last 20 s)',
        'calls per request',
        'holds',
      ],
      rows: result.setups.map((s) => [
        s.name,
        s.expected ?? '-',
        s.class,
        Math.round(s.probability.stable * 100),
        Math.round(s.probability.metastable * 100),
        Math.round(s.finalShare * 100),
        round2(s.amplification),
        s.holds ? 'yes' : 'NO',
      ]),
    },
  };
  return { title: `stormproof map --scenario ${result.scenario}`, sections: [section] };
}
