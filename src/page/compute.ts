// What the page's worker computes, as plain functions of plain data: the figures (shaped as the
// CLI's --json prints them, so a test compares the two field by field) and the charts, drawn as
// SVG text by the reports' own renderer. No DOM and no `node:` here: the worker runs it in the
// browser and the tests run it in Node.
import { stormFigures, stormReport } from '../cli/scenarios/storm.js';
import { serverSuffix } from '../cli/storm-server.js';
import { checkStack } from '../sim/check.js';
import { type HerdJitter, runHerd } from '../sim/herd.js';
import type { MapPolicy } from '../sim/map/policies.js';
import { mapReport } from '../sim/map/report.js';
import { type MapResult, type MapSweepOptions, runMap } from '../sim/map/sweep.js';
import type { TriggerKind } from '../sim/map/trigger.js';
import {
  type BarChart,
  formatValue,
  type LineChart,
  type Report,
  renderChartsSvg,
} from '../sim/plot.js';
import { runStorm, type StormLiveSecond, type StormResult } from '../sim/storm.js';
import type { HerdParams, MapParams, StormParams } from './state.js';

/** `stormproof sim herd --json`. */
export interface HerdFigures {
  readonly calls: number;
  readonly busiestSlot: number;
  readonly doneAfterSeconds: number;
}

/**
 * One herd run: its jitter, its figures, and its calls slot by slot. A long herd's slots are
 * gathered `slotsPerPoint` to a point, each point the busiest of its slots (as the chart's own
 * thinning keeps each stretch's highest point), so a herd that lasts hours stays a small message.
 */
export interface HerdRun {
  readonly jitter: HerdJitter;
  readonly figures: HerdFigures;
  readonly slotsPerPoint: number;
  /** The most calls in one slot of each point: all, served and failed. */
  readonly offered: readonly number[];
  readonly served: readonly number[];
  readonly failed: readonly number[];
  /** Slots from the first to the last that had calls. */
  readonly slots: number;
}

/** Most points a herd's line keeps. */
export const HERD_MAX_POINTS = 65_536;

/** The herd view: no jitter beside the chosen one (full if none was chosen), as `--plot` draws. */
export interface HerdView {
  readonly runs: readonly [HerdRun, HerdRun];
  readonly svg: string;
}

/** `stormproof check --json`. */
export interface CheckJson {
  readonly worstCaseBottomCalls: number;
  readonly worstCaseLatencyMs: number | null;
  readonly warnings: readonly string[];
  readonly notes: readonly string[];
  readonly layers: ReturnType<typeof checkStack>['layers'];
}

/** The check view: the report and its chart, or why the stack was refused. */
export type CheckView =
  | {
      readonly ok: true;
      readonly name: string | undefined;
      readonly json: CheckJson;
      readonly svg: string;
    }
  | { readonly ok: false; readonly error: string };

/** `stormproof sim storm --json`: one run's figures. */
export type StormFigures = ReturnType<typeof stormFigures>;

/**
 * A report's section as the page shows it: its prose, its table (each cell as the HTML report
 * writes it) and its charts, drawn by the report's renderer in one picture.
 */
export interface PageSection {
  readonly heading: string;
  readonly text: readonly string[];
  readonly table: { readonly head: readonly string[]; readonly rows: readonly string[][] } | null;
  /** The charts, side by side (null: none). */
  readonly svg: string | null;
  /** Pictures drawn whole elsewhere (the map's heatmaps). */
  readonly figures: readonly string[];
}

/**
 * The storm view: the chosen run and the other policy beside it, as `stormproof sim storm --plot`
 * runs and draws them (naive first). `chosen` is the chosen run's index.
 */
export interface StormView {
  readonly figures: readonly StormFigures[];
  readonly chosen: number;
  readonly sections: readonly PageSection[];
}

/** The map view: the map and its report, computed here or read from a `stormproof map --json` file. */
export interface MapView {
  readonly result: MapResult;
  readonly sections: readonly PageSection[];
  /** The report's first paragraphs: the model and the rule. */
  readonly intro: readonly string[];
}

/** What the page asks its worker; `id` pairs an answer with its question. */
export type Question =
  | { readonly id: number; readonly kind: 'herd'; readonly params: HerdParams }
  | { readonly id: number; readonly kind: 'storm'; readonly params: StormParams }
  | { readonly id: number; readonly kind: 'map'; readonly params: MapParams }
  | { readonly id: number; readonly kind: 'map-file'; readonly text: string }
  | { readonly id: number; readonly kind: 'check'; readonly stack: string };

export type Answer =
  | { readonly id: number; readonly kind: 'herd'; readonly view: HerdView; readonly ms: number }
  | { readonly id: number; readonly kind: 'storm'; readonly view: StormView; readonly ms: number }
  | { readonly id: number; readonly kind: 'map'; readonly view: MapView; readonly ms: number }
  | { readonly id: number; readonly kind: 'check'; readonly view: CheckView; readonly ms: number }
  | { readonly id: number; readonly kind: 'error'; readonly message: string };

/**
 * What the worker posts while a long question runs: the share done, from 0 to 1, and for a storm
 * its charts so far (SVG).
 */
export interface Progress {
  readonly id: number;
  readonly kind: 'progress';
  readonly done: number;
  readonly live?: string;
}

/** Hears how far a run has got; `live` draws its charts so far (a storm's), when asked. */
export type OnProgress = (done: number, live?: () => string) => void;

/** What the herd's chart compares: no jitter and the chosen one (full, if none was chosen). */
export function herdPair(jitter: HerdJitter): [HerdJitter, HerdJitter] {
  return jitter === 'none' ? ['none', 'full'] : ['none', jitter];
}

/** One run of the herd, its figures and its timeline together (the CLI makes them in two runs). */
export function herdRun(params: HerdParams, jitter: HerdJitter): HerdRun {
  let offered: number[] = [];
  let served: number[] = [];
  let failed: number[] = [];
  let slotsPerPoint = 1;
  let slots = 0;
  const halve = (xs: number[]) =>
    Array.from({ length: Math.ceil(xs.length / 2) }, (_, i) =>
      Math.max(xs[2 * i]!, xs[2 * i + 1] ?? 0),
    );
  const result = runHerd({
    ...params,
    jitter,
    onSlot: (ms, servedInSlot, failedInSlot) => {
      const slot = ms / params.slotMs;
      slots = slot + 1;
      while (Math.floor(slot / slotsPerPoint) >= HERD_MAX_POINTS) {
        slotsPerPoint *= 2;
        [offered, served, failed] = [halve(offered), halve(served), halve(failed)];
      }
      const i = Math.floor(slot / slotsPerPoint);
      while (offered.length <= i) {
        offered.push(0);
        served.push(0);
        failed.push(0);
      }
      offered[i] = Math.max(offered[i]!, servedInSlot + failedInSlot);
      served[i] = Math.max(served[i]!, servedInSlot);
      failed[i] = Math.max(failed[i]!, failedInSlot);
    },
  });
  return {
    jitter,
    figures: {
      calls: result.calls,
      busiestSlot: result.busiestSlot,
      doneAfterSeconds: result.doneAfterSeconds,
    },
    slotsPerPoint,
    offered,
    served,
    failed,
    slots,
  };
}

/** The chart of one run, as `stormproof sim herd --plot` draws it. */
export function herdChart(run: HerdRun, slotMs: number): LineChart {
  const x = run.offered.map((_, i) => (i * run.slotsPerPoint * slotMs) / 1000);
  const done = (run.slots * slotMs) / 1000;
  const f = run.figures;
  return {
    kind: 'line',
    title: `jitter ${run.jitter}: ${formatValue(f.calls)} calls, busiest ${formatValue(f.busiestSlot)}, ${formatValue(done)} s`,
    xLabel: 'seconds since every client failed',
    yLabel:
      run.slotsPerPoint === 1
        ? `calls per ${slotMs} ms slot`
        : `calls per ${slotMs} ms slot (busiest of ${formatValue(run.slotsPerPoint)})`,
    x,
    lines: [
      { label: 'offered', y: run.offered },
      { label: 'succeeded', y: run.served },
      { label: 'failed', y: run.failed },
    ],
  };
}

export function herdView(params: HerdParams): HerdView {
  const [a, b] = herdPair(params.jitter);
  const runs: [HerdRun, HerdRun] = [herdRun(params, a), herdRun(params, b)];
  const svg = renderChartsSvg(
    runs.map((run) => herdChart(run, params.slotMs)),
    { columns: 2, width: 520 },
  );
  return { runs, svg };
}

/** The check of a stack typed as JSON, as `stormproof check --json` reports it. */
export function checkView(text: string): CheckView {
  let stack: unknown;
  try {
    stack = JSON.parse(text);
  } catch (error) {
    return { ok: false, error: `not valid JSON: ${(error as Error).message}` };
  }
  let report: ReturnType<typeof checkStack>;
  try {
    report = checkStack(stack);
  } catch (error) {
    return { ok: false, error: (error as Error).message.replace(/^stormproof: /, '') };
  }
  const json: CheckJson = {
    worstCaseBottomCalls: report.worstCaseBottomCalls,
    worstCaseLatencyMs: report.worstCaseLatencyMs,
    warnings: report.warnings,
    notes: report.notes,
    layers: report.layers,
  };
  const chart: BarChart = {
    kind: 'bar',
    title: `Worst case: ${formatValue(report.worstCaseBottomCalls)} calls at the service per user request`,
    yLabel: 'calls per user request',
    bars: [
      ...report.layers.map((l) => ({ label: l.name, value: l.worstCaseCallsReceived })),
      { label: 'the service', value: report.worstCaseBottomCalls },
    ],
  };
  const svg = renderChartsSvg([chart], { width: Math.min(1000, 260 + 130 * chart.bars.length) });
  return { ok: true, name: report.name, json, svg };
}

/** The page's sections of a report: its tables as text and its charts drawn as the report draws them. */
export function pageSections(report: Report): PageSection[] {
  return report.sections.map((section) => {
    const charts = section.charts ?? [];
    return {
      heading: section.heading,
      text: section.text ?? [],
      table:
        section.table === undefined
          ? null
          : {
              head: section.table.head,
              rows: section.table.rows.map((row) =>
                row.map((v) => (typeof v === 'string' ? v : formatValue(v))),
              ),
            },
      svg:
        charts.length === 0
          ? null
          : renderChartsSvg(charts, {
              columns: Math.min(2, charts.length),
              width: 540,
              shareY: section.shareY ?? true,
            }),
      figures: section.figures ?? [],
    };
  });
}

/** A storm setup's name, as the report names its run (`stormproof + breaker + stormproof/server`). */
function setupName(p: StormParams): string {
  return `${p.policy}${p.breaker ? ' + breaker' : ''}${p.manualRecovery ? ' + manual recovery' : ''}${serverSuffix(p.server)}`;
}

/**
 * The storm's charts while it runs: each setup's seconds so far (none yet for the second run
 * until it starts), on the whole run's x axis, with the report's lines and failover band.
 */
export function liveStormSvg(
  setups: readonly StormParams[],
  seconds: readonly (readonly StormLiveSecond[])[],
): string {
  const p = setups[0]!;
  const x = Array.from({ length: p.durationSeconds }, (_, t) => t);
  const charts = setups.map((setup, i): LineChart => {
    const done = seconds[i]!;
    const line = (key: 'offered' | 'succeeded' | 'failed') =>
      x.map((t) => (t < done.length ? done[t]![key] : Number.NaN));
    return {
      kind: 'line',
      title: `${setupName(setup)}: ${done.length} of ${p.durationSeconds} s simulated`,
      xLabel: 'seconds since the start of the run',
      yLabel: 'requests per second',
      x,
      lines: [
        { label: 'offered', y: line('offered') },
        { label: 'succeeded', y: line('succeeded') },
        { label: 'failed', y: line('failed') },
      ],
      bands: [
        {
          from: p.faultAtSeconds,
          to: p.faultAtSeconds + p.faultSeconds,
          label: 'database failover',
        },
      ],
    };
  });
  return renderChartsSvg(charts, { columns: 2, width: 540 });
}

/**
 * The storm as `stormproof sim storm --plot` runs it: the chosen run, then the other policy
 * with neither breaker, manual recovery nor server protection; `onProgress` gets the share of
 * both runs' simulated seconds done, and their charts so far.
 */
export function stormView(params: StormParams, onProgress?: OnProgress): StormView {
  const other: StormParams = {
    ...params,
    policy: params.policy === 'naive' ? 'stormproof' : 'naive',
    breaker: false,
    manualRecovery: false,
    server: 'none',
  };
  // Drawn in the report's order, naive first.
  const first = params.policy === 'naive' ? 0 : 1;
  const setups = [params, other];
  const seconds: StormLiveSecond[][] = [[], []];
  const live = () =>
    liveStormSvg([setups[first]!, setups[1 - first]!], [seconds[first]!, seconds[1 - first]!]);
  const runs: StormResult[] = setups.map((p, i) =>
    runStorm({
      ...p,
      onSecond: (second) => seconds[i]!.push(second),
      onProgress: (done, total) => onProgress?.((i + done / total) / 2, live),
    }),
  );
  const ordered = first === 0 ? runs : [runs[1]!, runs[0]!];
  return {
    figures: ordered.map(stormFigures),
    chosen: first,
    sections: pageSections(stormReport(ordered, 'The storm')),
  };
}

/** `runMap`'s options for the page's map, as `stormproof map` builds them from its flags. */
export function mapOptions(params: MapParams): MapSweepOptions {
  return {
    loads: params.loads,
    triggerSeconds: params.triggers,
    ...(params.trigger === 'both' ? {} : { triggerKinds: [params.trigger as TriggerKind] }),
    policies: [params.policy as MapPolicy],
    ...(params.server === 'both' ? {} : { stormproofServer: [params.server === 'on'] }),
    seeds: params.seeds,
    model: { horizonSeconds: params.horizon },
  };
}

/** The map's report, as the page shows it. */
function mapViewOf(result: MapResult): MapView {
  const report = mapReport(result);
  return { result, sections: pageSections(report), intro: report.intro ?? [] };
}

/** The map computed here, run by run, in the order `stormproof map` makes them. */
export async function mapView(params: MapParams, onProgress?: OnProgress): Promise<MapView> {
  const result = await runMap({
    ...mapOptions(params),
    onProgress: (done, total) => onProgress?.(done / total),
  });
  return mapViewOf(result);
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A map read from the text of a `stormproof map --json` file: its shape checked (the cells and
 * grid the report draws), or the sentence that says why it is not such a file.
 */
export function readMapFile(text: string): { view: MapView } | { error: string } {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    return { error: `not valid JSON: ${(error as Error).message}` };
  }
  if (isObject(data) && typeof data.scenario === 'string') {
    return {
      error: `this is a scenario's file (stormproof map --scenario ${data.scenario}), not a map; the page draws the sweep's map`,
    };
  }
  const wrong = mapFileProblem(data);
  if (wrong !== undefined) return { error: `not a stormproof map --json file: ${wrong}` };
  return { view: mapViewOf(data as unknown as MapResult) };
}

/** What a map file lacks that the report needs, if anything. */
function mapFileProblem(data: unknown): string | undefined {
  if (!isObject(data)) return 'it is not a JSON object';
  if (typeof data.rule !== 'string') return 'it has no "rule"';
  const { grid, model, cells, boundaries } = data;
  if (!isObject(grid)) return 'it has no "grid"';
  for (const key of ['loads', 'triggerSeconds', 'triggerKinds', 'policies', 'stormproofServer']) {
    if (!Array.isArray(grid[key]) || (grid[key] as unknown[]).length === 0) {
      return `its grid has no "${key}" list`;
    }
  }
  if (typeof grid.seeds !== 'number') return 'its grid has no "seeds"';
  if (!isObject(model)) return 'it has no "model"';
  for (const key of ['workers', 'serviceMs', 'clients', 'maxAttempts', 'horizonSeconds']) {
    if (typeof model[key] !== 'number') return `its model has no "${key}"`;
  }
  if (!Array.isArray(cells) || !Array.isArray(boundaries))
    return 'it has no "cells" or "boundaries"';
  const classes = ['stable', 'vulnerable', 'metastable'];
  const bad = cells.findIndex(
    (c) =>
      !isObject(c) ||
      !classes.includes(c.class as string) ||
      typeof c.load !== 'number' ||
      typeof c.triggerSeconds !== 'number' ||
      !isObject(c.probability) ||
      typeof c.amplification !== 'number',
  );
  if (bad >= 0) return `cells[${bad}] is not a cell of the map`;
  return undefined;
}

/** Answers one question; never throws (an error becomes an answer). `onProgress` hears how far a storm or a map has got. */
export async function answer(
  question: Question,
  onProgress: OnProgress = () => {},
): Promise<Answer> {
  const started = performance.now();
  const ms = () => performance.now() - started;
  try {
    switch (question.kind) {
      case 'herd':
        return { id: question.id, kind: 'herd', view: herdView(question.params), ms: ms() };
      case 'storm': {
        const view = stormView(question.params, onProgress);
        return { id: question.id, kind: 'storm', view, ms: ms() };
      }
      case 'map': {
        const view = await mapView(question.params, onProgress);
        return { id: question.id, kind: 'map', view, ms: ms() };
      }
      case 'map-file': {
        const read = readMapFile(question.text);
        if ('error' in read) return { id: question.id, kind: 'error', message: read.error };
        return { id: question.id, kind: 'map', view: read.view, ms: ms() };
      }
      case 'check':
        return { id: question.id, kind: 'check', view: checkView(question.stack), ms: ms() };
    }
  } catch (error) {
    return {
      id: question.id,
      kind: 'error',
      message: error instanceof Error ? error.message : String(error),
    };
  }
}
