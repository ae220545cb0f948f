// What the page's worker computes, as plain functions of plain data: the figures (shaped as the
// CLI's --json prints them, so a test compares the two field by field) and the charts, drawn as
// SVG text by the reports' own renderer. No DOM and no `node:` here: the worker runs it in the
// browser and the tests run it in Node.
import { checkStack } from '../sim/check.js';
import { type HerdJitter, runHerd } from '../sim/herd.js';
import { type BarChart, formatValue, type LineChart, renderChartsSvg } from '../sim/plot.js';
import type { HerdParams } from './state.js';

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

/** What the page asks its worker; `id` pairs an answer with its question. */
export type Question =
  | { readonly id: number; readonly kind: 'herd'; readonly params: HerdParams }
  | { readonly id: number; readonly kind: 'check'; readonly stack: string };

export type Answer =
  | { readonly id: number; readonly kind: 'herd'; readonly view: HerdView; readonly ms: number }
  | { readonly id: number; readonly kind: 'check'; readonly view: CheckView; readonly ms: number }
  | { readonly id: number; readonly kind: 'error'; readonly message: string };

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

/** Answers one question; never throws (an error becomes an answer). */
export function answer(question: Question): Answer {
  const started = performance.now();
  try {
    if (question.kind === 'herd') {
      const view = herdView(question.params);
      return { id: question.id, kind: 'herd', view, ms: performance.now() - started };
    }
    const view = checkView(question.stack);
    return { id: question.id, kind: 'check', view, ms: performance.now() - started };
  } catch (error) {
    return {
      id: question.id,
      kind: 'error',
      message: error instanceof Error ? error.message : String(error),
    };
  }
}
