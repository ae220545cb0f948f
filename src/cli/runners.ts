// The simulator runs a command can ask for, by name, so that a worker thread (which receives only
// data) can run them. Each takes plain options and a progress callback and returns plain data.
// A run's model is imported when the run starts, so a command loads only the models it runs; and
// each run has a cost estimate from its options, by which small runs skip the worker thread.
import type { BrookerOptions } from '../sim/brooker.js';
import type { BudgetTestOptions } from '../sim/budget-test.js';
import type { HedgeSimOptions } from '../sim/hedge.js';
import type { HerdOptions } from '../sim/herd.js';
import type { LayersOptions } from '../sim/layers.js';
import type { LimitsSweepOptions } from '../sim/limits/sweep.js';
import type { StormOptions } from '../sim/storm.js';
import type { TimersOptions } from '../sim/timers.js';
import type { HerdTimelineOptions } from './herd-timeline.js';

/** Reports the share of the work done, from 0 to 1. */
export type Progress = (done: number, total: number) => void;

type Run<O> = (options: O, onProgress: Progress) => unknown;

/** The runs a worker can make, by name: each loads its model and returns how to run it. */
export const RUNNERS = {
  herd: async (): Promise<Run<HerdOptions>> => {
    const { runHerd } = await import('../sim/herd.js');
    return (options, onProgress) => runHerd({ ...options, onProgress });
  },
  herdTimeline: async (): Promise<Run<HerdTimelineOptions>> => {
    const { herdTimeline } = await import('./herd-timeline.js');
    return (options) => herdTimeline(options);
  },
  budget: async (): Promise<Run<BudgetTestOptions>> => {
    const { runBudgetTest } = await import('../sim/budget-test.js');
    return (options) => runBudgetTest(options);
  },
  brooker: async (): Promise<Run<BrookerOptions>> => {
    const { runBrooker } = await import('../sim/brooker.js');
    return (options, onProgress) => runBrooker({ ...options, onProgress });
  },
  layers: async (): Promise<Run<LayersOptions>> => {
    const { runLayers } = await import('../sim/layers.js');
    return (options) => runLayers(options);
  },
  storm: async (): Promise<Run<StormOptions>> => {
    const { runStorm } = await import('../sim/storm.js');
    return (options, onProgress) => runStorm({ ...options, onProgress });
  },
  timers: async (): Promise<Run<TimersOptions>> => {
    const { runTimers } = await import('../sim/timers.js');
    return (options) => runTimers(options);
  },
  hedge: async (): Promise<Run<HedgeSimOptions>> => {
    const { runHedgeSim } = await import('../sim/hedge.js');
    return (options) => runHedgeSim(options);
  },
  limits: async (): Promise<Run<LimitsSweepOptions>> => {
    const { runLimitsSweep } = await import('../sim/limits/sweep.js');
    return (options, onProgress) => runLimitsSweep({ ...options, onProgress });
  },
} as const;

/** The name of a run. */
export type RunnerName = keyof typeof RUNNERS;

/** One run to make: which, with what options (plain data, sent to a worker). */
export interface Job {
  readonly runner: RunnerName;
  readonly options: Readonly<Record<string, unknown>>;
}

/** Runs `job` here, in this thread. */
export async function runJob(job: Job, onProgress: Progress): Promise<unknown> {
  const load = Object.hasOwn(RUNNERS, job.runner) ? RUNNERS[job.runner] : undefined;
  if (typeof load !== 'function') throw new TypeError(`stormproof: no such run ${job.runner}`);
  const run = (await load()) as Run<unknown>;
  return run(job.options, onProgress);
}

// --- cost -----------------------------------------------------------------------------------

/**
 * Runs whose estimated costs add up to at most this run in the main thread: about 0.1 s of work
 * on a quiet laptop, less than starting a worker thread and loading the model in it. Above it,
 * each run gets a worker, so that the progress bar moves and Ctrl-C stops at once.
 */
export const INLINE_MAX_COST = 100_000;

/**
 * `runHerd`'s mode 'auto' rule, as herd.ts sets it (HERD_EXACT_MAX_CLIENTS and
 * HERD_EXACT_MAX_CLIENTS_NO_JITTER; a test keeps the two in step). Copied, not imported, so that
 * deciding where to run does not load the model.
 */
export const HERD_AUTO_EXACT_MAX = { jitter: 100_000, noJitter: 10_000 } as const;

const numberOr = (value: unknown, fallback: number): number =>
  typeof value === 'number' && Number.isFinite(value) ? value : fallback;

/** The herd's calls (exact mode) or slots (counted mode), from its options, weighed in µs. */
function herdCost(o: Readonly<Record<string, unknown>>): number {
  const clients = Math.max(0, numberOr(o.clients, 2000));
  const perSlot = Math.max(1, numberOr(o.perSlot, 25));
  const slotMs = Math.max(1, numberOr(o.slotMs, 10));
  const baseMs = Math.max(0, numberOr(o.baseMs, 200));
  const capMs = Math.max(0, numberOr(o.capMs, 5000));
  const jitter = o.jitter ?? 'full';
  const pushback = o.pushback ?? 'none';
  const lockstep = jitter === 'none' && pushback !== 'spread' && pushback !== 'load-aware';
  const countable = jitter !== 'decorrelated' && pushback !== 'load-aware';
  const mode = o.mode ?? 'auto';
  const counted =
    countable &&
    (mode === 'counted' ||
      (mode === 'auto' &&
        clients > (lockstep ? HERD_AUTO_EXACT_MAX.noJitter : HERD_AUTO_EXACT_MAX.jitter)));
  // Counted: a few states visited per slot, and about clients / perSlot slots have callers.
  // Without jitter or pushback, exact runs too a wave at a time: clients / perSlot waves.
  if (counted || (jitter === 'none' && pushback === 'none')) return (clients / perSlot) * 0.2;
  // Exact, without jitter: every wave brings back everyone not yet served, perSlot fewer each
  // time. With jitter: a call per doubling of the backoff, then about one per half cap while the
  // service drains the herd (clients / perSlot slots).
  const doublings = baseMs > 0 && capMs > baseMs ? Math.ceil(Math.log2(capMs / baseMs)) + 1 : 1;
  const capSlots = Math.max(1, capMs / slotMs);
  const calls = lockstep
    ? clients + (clients * clients) / (2 * perSlot)
    : clients * doublings + (clients * clients) / (perSlot * capSlots);
  return calls * 0.5;
}

/** What each run costs, in about µs of work, from its options (never by timing it). */
const COSTS: Readonly<Record<RunnerName, (o: Readonly<Record<string, unknown>>) => number>> = {
  herd: herdCost,
  herdTimeline: herdCost,
  // Calls through retry() on a virtual clock, with and without a budget.
  budget: (o) => numberOr(o.requests, 1000) * numberOr(o.maxAttempts, 4) * 2 * 10,
  // Every client of every run, for each of the five strategies.
  brooker: (o) => numberOr(o.clients, 100) * numberOr(o.runs, 100) * 5 * 12,
  // Calls made one by one at the bottom (retryAt 'all' multiplies them layer by layer).
  layers: (o) => {
    const attempts = numberOr(o.attempts, 4);
    const layers = numberOr(o.layers, 3);
    return (o.retryAt === 'all' || o.retryAt === undefined ? attempts ** layers : attempts) * 6;
  },
  // User requests over the run, each through the model's whole stack.
  storm: (o) => numberOr(o.rps, 4000) * numberOr(o.durationSeconds, 180) * 10,
  // Two mornings of every device's timer.
  timers: (o) => numberOr(o.devices, 10_000) * 2 * 30,
  // Every leaf of every request, with its events.
  hedge: (o) => numberOr(o.requests, 10_000) * numberOr(o.fanOut, 100) * 5,
  // A sweep of many cells: always long.
  limits: () => Number.POSITIVE_INFINITY,
};

/** The estimated cost of `job`, in about µs of work. */
export function jobCost(job: Job): number {
  const cost = Object.hasOwn(COSTS, job.runner) ? COSTS[job.runner](job.options) : undefined;
  return cost === undefined || Number.isNaN(cost) ? Number.POSITIVE_INFINITY : cost;
}
