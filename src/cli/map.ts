// `stormproof map`: the metastability map of every client policy, or one named scenario. This
// file parses the options, spreads the runs over worker threads (map-worker.ts), draws the
// progress bar, and prints and writes what src/sim/map computed; it decides nothing itself.
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import { MAP_POLICIES, type MapPolicy } from '../sim/map/policies.js';
import {
  figuresSvg,
  mapReport,
  mapSvg,
  mapText,
  scenarioReport,
  scenarioText,
} from '../sim/map/report.js';
import {
  assembleScenario,
  MAP_SCENARIOS,
  type MapScenarioName,
  type MapScenarioRunSummary,
  scenarioRuns,
} from '../sim/map/scenarios.js';
import {
  assembleMap,
  type MapRunSummary,
  type MapSweepOptions,
  mapCells,
  resolveMapGrid,
  runOptions,
} from '../sim/map/sweep.js';
import type { TriggerKind } from '../sim/map/trigger.js';
import { renderReportHtml } from '../sim/plot.js';
import { type OptionSpec, optionsHelp, parse, UsageError } from './args.js';
import { InterruptedError, JobError } from './jobs.js';
import type { MapTask, MapWorkerData, MapWorkerMessage } from './map-worker.js';
import { PROGRESS_OPTION, ProgressBar, type ProgressMode } from './progress.js';
import { writeWhole } from './write.js';

/** What the command needs from the program: output streams and Ctrl-C. */
export interface MapIo {
  out(text: string): void;
  err(text: string): void;
  readonly interrupt: AbortSignal;
}

const COMMAND = 'stormproof map';
const SCENARIO_NAMES = Object.keys(MAP_SCENARIOS) as MapScenarioName[];

/** The options of `stormproof map`. */
export const MAP_OPTIONS: readonly OptionSpec[] = [
  {
    flag: 'scenario',
    key: 'scenario',
    kind: { type: 'enum', values: SCENARIO_NAMES },
    help: 'run a named scenario that reproduces a published result instead of the sweep',
    defaultHelp: 'the sweep',
  },
  {
    flag: 'json',
    key: 'json',
    kind: { type: 'flag' },
    help: 'print one JSON object with every cell (or setup)',
  },
  {
    flag: 'out',
    key: 'out',
    kind: { type: 'file', extensions: ['.html', '.htm', '.svg'] },
    default: 'reports/stormproof-map.html',
    help: 'where to write the report with the heatmaps (.html or .svg)',
  },
  {
    flag: 'seeds',
    key: 'seeds',
    kind: { type: 'int', min: 1, max: 1000 },
    help: 'seeds per cell (or per setup of a scenario)',
    defaultHelp: '5; a scenario: its own (10, 5, 1)',
  },
  {
    flag: 'loads',
    key: 'loads',
    kind: { type: 'numbers', min: 0.01, max: 10 },
    help: 'offered loads, as shares of capacity',
    defaultHelp: '0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,0.95',
  },
  {
    flag: 'triggers',
    key: 'triggers',
    kind: { type: 'numbers', min: 0, max: 86_400 },
    help: 'trigger lengths in seconds',
    defaultHelp: '1,2,3,5,8,10,15,20,25,30',
  },
  {
    flag: 'trigger',
    key: 'trigger',
    kind: { type: 'enum', values: ['both', 'capacity-loss', 'load-spike'] },
    default: 'both',
    help: 'trigger kinds: an 80% capacity loss, a 2x load spike, or both',
  },
  {
    flag: 'policy',
    key: 'policy',
    kind: { type: 'enum', values: ['all', ...MAP_POLICIES] },
    default: 'all',
    help: 'client policies',
  },
  {
    flag: 'server',
    key: 'server',
    kind: { type: 'enum', values: ['both', 'off', 'on'] },
    default: 'both',
    help: 'each policy without stormproof/server, with it, or both',
  },
  {
    flag: 'horizon',
    key: 'horizon',
    kind: { type: 'number', min: 5, max: 86_400 },
    default: 60,
    help: 'seconds judged after the trigger ends',
  },
  {
    flag: 'deadline-ms',
    key: 'deadlineMs',
    kind: { type: 'number', min: 1, max: 86_400_000 },
    help: "every policy's deadline per user request, ms",
    defaultHelp: 'none',
  },
  {
    flag: 'scale',
    key: 'scale',
    kind: { type: 'number', min: 0.001, max: 1 },
    help: "huang2022-retry: the share of the paper's request rate and capacity simulated",
    defaultHelp: '0.1',
  },
  {
    flag: 'threads',
    key: 'threads',
    kind: { type: 'int', min: 1, max: 256 },
    help: 'worker threads',
    defaultHelp: 'the cores available',
  },
  PROGRESS_OPTION,
];

/** The sweep's own options, which a scenario does not take. */
const SWEEP_ONLY = ['loads', 'triggers', 'trigger', 'policy', 'server', 'horizon', 'deadline-ms'];

/** The help of `stormproof map`. */
export function mapHelp(): string {
  return `Usage: ${COMMAND} [options]

The metastability map: for each client policy (${MAP_POLICIES.join(', ')}), with and
without stormproof/server, at which offered load and for how long a trigger (a capacity loss or
a load spike) tips the system into a storm that outlives its cause. Every cell runs several seeds
and is classified stable, vulnerable or metastable by a stated rule (printed with the map).
Prints the map, writes a report with a heatmap per policy, and --json prints every cell.

Scenarios (--scenario) reproduce published results:
${SCENARIO_NAMES.map((n) => `  ${n}: ${MAP_SCENARIOS[n]}`).join('\n')}

Options:
${optionsHelp(MAP_OPTIONS)}

The model, the rule and the calibration: docs/simulator.md.
`;
}

/** Runs `tasks` over `threads` worker threads; results in task order. */
function runTasks(
  tasks: readonly MapTask[],
  threads: number,
  onProgress: (fraction: number) => void,
  signal: AbortSignal,
): Promise<unknown[]> {
  const results: unknown[] = new Array(tasks.length);
  const count = Math.max(1, Math.min(threads, tasks.length));
  const workers: Worker[] = [];
  let done = 0;
  let settled = false;
  return new Promise((resolvePromise, reject) => {
    const finish = (error?: Error) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      for (const w of workers) void w.terminate();
      if (error === undefined) resolvePromise(results);
      else reject(error);
    };
    const onAbort = () => finish(new InterruptedError('interrupted'));
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    if (tasks.length === 0) return finish();
    for (let w = 0; w < count; w++) {
      // Interleaved shares: neighbouring runs (the seeds of one cell) cost about the same.
      const indices: number[] = [];
      for (let i = w; i < tasks.length; i += count) indices.push(i);
      const data: MapWorkerData = { tasks: indices.map((i) => tasks[i]!), indices };
      let worker: Worker;
      try {
        worker = new Worker(new URL('./map-worker.js', import.meta.url), { workerData: data });
      } catch (error) {
        return finish(error as Error);
      }
      workers.push(worker);
      let left = indices.length;
      worker.on('message', (m: MapWorkerMessage) => {
        if (settled) return;
        if (m.type === 'error') return finish(new JobError(m.name, m.message));
        results[m.index] = m.summary;
        left--;
        done++;
        onProgress(done / tasks.length);
        if (done === tasks.length) finish();
      });
      worker.on('error', (error) => finish(error));
      worker.on('exit', (code) => {
        if (!settled && left > 0) finish(new Error(`a map worker stopped with exit code ${code}`));
      });
    }
  });
}

function isSvg(file: string): boolean {
  return /\.svg$/i.test(file);
}

/** `stormproof map ...`: returns the exit code; throws a UsageError for a bad option. */
export async function mapCommand(args: readonly string[], io: MapIo): Promise<number> {
  const parsed = parse(COMMAND, args, MAP_OPTIONS);
  if (parsed.help) {
    io.out(mapHelp());
    return 0;
  }
  const v = parsed.values;
  const typed = new Set(
    args.filter((a) => a.startsWith('--')).map((a) => a.slice(2).split('=')[0]!),
  );
  const scenario = v.scenario as MapScenarioName | undefined;
  if (scenario !== undefined) {
    const wrong = SWEEP_ONLY.find((flag) => typed.has(flag));
    if (wrong !== undefined) {
      throw new UsageError(
        `${COMMAND}: --${wrong} is an option of the sweep; a scenario sets its own (--scenario ${scenario})`,
      );
    }
  }
  if (v.scale !== undefined && scenario !== 'huang2022-retry') {
    throw new UsageError(`${COMMAND}: --scale is an option of --scenario huang2022-retry only`);
  }
  const threads = (v.threads as number | undefined) ?? availableParallelism();
  const out = String(v.out);
  const bar = new ProgressBar(
    process.stderr,
    scenario === undefined ? COMMAND : `${COMMAND} ${scenario}`,
    v.progress as ProgressMode,
  );
  const started = performance.now();
  bar.update(0);
  let summaries: unknown[];
  if (scenario !== undefined) {
    const options = {
      ...(v.seeds === undefined ? {} : { seeds: v.seeds as number }),
      ...(v.scale === undefined ? {} : { scale: v.scale as number }),
    };
    try {
      summaries = await runTasks(
        scenarioRuns(scenario, options),
        threads,
        (f) => bar.update(f),
        io.interrupt,
      );
    } finally {
      bar.clear();
    }
    const seconds = (performance.now() - started) / 1000;
    const result = assembleScenario(scenario, summaries as MapScenarioRunSummary[], options);
    const report = scenarioReport(result);
    writeWhole(out, isSvg(out) ? figuresSvg(report) : renderReportHtml(report));
    if (v.json === true)
      io.out(`${JSON.stringify({ ...result, report: out, wallSeconds: round1(seconds) })}\n`);
    else
      io.out(
        `${scenarioText(result)}\n\n${summaryLine(summaries.length, threads, seconds)}\nReport: ${out} (file://${resolve(out)})\n`,
      );
    return result.holds ? 0 : 1;
  }
  const list = (key: string) =>
    v[key] === undefined ? undefined : String(v[key]).split(',').map(Number);
  const options: MapSweepOptions = {
    ...(list('loads') === undefined ? {} : { loads: list('loads') }),
    ...(list('triggers') === undefined ? {} : { triggerSeconds: list('triggers') }),
    ...(v.trigger === 'both' ? {} : { triggerKinds: [v.trigger as TriggerKind] }),
    ...(v.policy === 'all' ? {} : { policies: [v.policy as MapPolicy] }),
    ...(v.server === 'both' ? {} : { stormproofServer: [v.server === 'on'] }),
    ...(v.seeds === undefined ? {} : { seeds: v.seeds as number }),
    model: {
      horizonSeconds: v.horizon as number,
      ...(v.deadlineMs === undefined ? {} : { deadlineMs: v.deadlineMs as number }),
    },
  };
  const grid = resolveMapGrid(options);
  const tasks: MapTask[] = [];
  for (const cell of mapCells(grid))
    for (let seed = 1; seed <= grid.seeds; seed++)
      tasks.push({ kind: 'cell', options: runOptions(grid, cell, seed) });
  try {
    summaries = await runTasks(tasks, threads, (f) => bar.update(f), io.interrupt);
  } finally {
    bar.clear();
  }
  const seconds = (performance.now() - started) / 1000;
  const result = assembleMap(grid, summaries as MapRunSummary[]);
  const timing = summaryLine(tasks.length, threads, seconds);
  writeWhole(
    out,
    isSvg(out) ? mapSvg(result) : renderReportHtml(mapReport(result, `${COMMAND}: ${timing}`)),
  );
  if (v.json === true)
    io.out(`${JSON.stringify({ ...result, report: out, wallSeconds: round1(seconds) })}\n`);
  else
    io.out(
      `${mapText(result)}\n\n${timing}\nReport with the heatmaps: ${out} (file://${resolve(out)})\n`,
    );
  return 0;
}

function round1(n: number): number {
  return Math.round(n * 10) / 10;
}

function summaryLine(runs: number, threads: number, seconds: number): string {
  return `${runs} runs on ${threads} worker thread${threads === 1 ? '' : 's'} in ${seconds.toFixed(1)} s`;
}
