// A worker thread of `stormproof map`: makes its share of the map's runs (given as plain data)
// and posts each run's summary as soon as it is done, so the progress bar moves run by run.
import { parentPort, workerData } from 'node:worker_threads';
import type { MapModelOptions } from '../sim/map/model.js';
import { type MapScenarioRun, runScenarioRun } from '../sim/map/scenarios.js';
import { runCellSeed } from '../sim/map/sweep.js';

/** One run: a cell's seed of the sweep, or a scenario's run. */
export type MapTask = { readonly kind: 'cell'; readonly options: MapModelOptions } | MapScenarioRun;

/** What the main thread gives a worker: its runs and their places in the whole list. */
export interface MapWorkerData {
  readonly tasks: readonly MapTask[];
  readonly indices: readonly number[];
}

/** What a worker tells the main thread. */
export type MapWorkerMessage =
  | { readonly type: 'done'; readonly index: number; readonly summary: unknown }
  | { readonly type: 'error'; readonly name: string; readonly message: string };

const port = parentPort;
if (port !== null) {
  const { tasks, indices } = workerData as MapWorkerData;
  try {
    for (let i = 0; i < tasks.length; i++) {
      const task = tasks[i]!;
      const summary =
        task.kind === 'cell' ? await runCellSeed(task.options) : await runScenarioRun(task);
      port.postMessage({ type: 'done', index: indices[i]!, summary } satisfies MapWorkerMessage);
    }
  } catch (error) {
    const e = error as { name?: unknown; message?: unknown };
    port.postMessage({
      type: 'error',
      name: typeof e?.name === 'string' ? e.name : 'Error',
      message: typeof e?.message === 'string' ? e.message : String(error),
    } satisfies MapWorkerMessage);
  }
}
