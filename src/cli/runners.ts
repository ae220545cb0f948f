// The simulator runs a command can ask for, by name, so that a worker thread (which receives only
// data) can run them. Each takes plain options and a progress callback and returns plain data.
import {
  type BrookerOptions,
  type BudgetTestOptions,
  type HerdOptions,
  type LayersOptions,
  runBrooker,
  runBudgetTest,
  runHerd,
  runLayers,
  runStorm,
  runTimers,
  type StormOptions,
  type TimersOptions,
} from '../sim/index.js';
import { type LimitsSweepOptions, runLimitsSweep } from '../sim/limits/sweep.js';
import { type HerdTimelineOptions, herdTimeline } from './herd-timeline.js';

/** Reports the share of the work done, from 0 to 1. */
export type Progress = (done: number, total: number) => void;

/** The runs a worker can make, by name. */
export const RUNNERS = {
  herd: (options: HerdOptions, onProgress: Progress) => runHerd({ ...options, onProgress }),
  herdTimeline: (options: HerdTimelineOptions) => herdTimeline(options),
  budget: (options: BudgetTestOptions) => runBudgetTest(options),
  brooker: (options: BrookerOptions, onProgress: Progress) =>
    runBrooker({ ...options, onProgress }),
  layers: (options: LayersOptions) => runLayers(options),
  storm: (options: StormOptions, onProgress: Progress) => runStorm({ ...options, onProgress }),
  timers: (options: TimersOptions) => runTimers(options),
  limits: (options: LimitsSweepOptions, onProgress: Progress) =>
    runLimitsSweep({ ...options, onProgress }),
} as const;

/** The name of a run. */
export type RunnerName = keyof typeof RUNNERS;

/** One run to make: which, with what options (plain data, sent to a worker). */
export interface Job {
  readonly runner: RunnerName;
  readonly options: Readonly<Record<string, unknown>>;
}

/** Runs `job` here, in this thread. */
export function runJob(job: Job, onProgress: Progress): unknown {
  const run = RUNNERS[job.runner] as (options: unknown, onProgress: Progress) => unknown;
  if (typeof run !== 'function') throw new TypeError(`stormproof: no such run ${job.runner}`);
  return run(job.options, onProgress);
}
