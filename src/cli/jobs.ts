// Runs simulator jobs and gathers their progress: long ones in worker threads, a few at a time,
// small ones here. Workers keep the main thread free: the progress bar draws while a model runs,
// and Ctrl-C stops every worker at once, even in the middle of a synchronous loop. But a worker
// costs about 0.2 s to start and load its model, far more than a small run itself, so runs whose
// estimated cost (from their options, see runners.ts) is small enough run in this thread.
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { INLINE_MAX_COST, type Job, jobCost, runJob } from './runners.js';
import type { WorkerMessage } from './worker.js';

/** The run was stopped by the user (Ctrl-C). */
export class InterruptedError extends Error {
  override readonly name = 'InterruptedError';
}

/** A run failed inside its worker: the error's name and message, as it was thrown there. */
export class JobError extends Error {
  override readonly name = 'JobError';
  constructor(
    readonly errorName: string,
    message: string,
  ) {
    super(message);
  }
}

const WORKER = new URL('./worker.js', import.meta.url);

/**
 * Where jobs run: in worker threads, in this thread, or by their estimated cost (`'auto'`). The
 * environment variable STORMPROOF_WORKERS (`always`, `never`) overrides `'auto'`, so that a test
 * can run the same command both ways.
 */
export type JobPlace = 'auto' | 'workers' | 'here';

/** Where `'auto'` puts `jobs`: here when their estimated costs add up to little. */
export function placeOf(jobs: readonly Job[], place: JobPlace = 'auto'): 'workers' | 'here' {
  if (place !== 'auto') return place;
  const forced = process.env.STORMPROOF_WORKERS;
  if (forced === 'always') return 'workers';
  if (forced === 'never') return 'here';
  let cost = 0;
  for (const job of jobs) cost += jobCost(job);
  return cost <= INLINE_MAX_COST ? 'here' : 'workers';
}

/**
 * Runs every job and returns their results in order: in this thread one after another, or each in
 * its own worker, at most `availableParallelism()` at once (see {@link placeOf}). `onProgress`
 * gets the mean share done across all jobs (0 to 1). When `signal` aborts, every worker is
 * terminated and the promise rejects with an InterruptedError; a job running here is small, so it
 * finishes first. A job that throws rejects with a JobError, wherever it ran.
 */
export function runJobs(
  jobs: readonly Job[],
  onProgress: (fraction: number) => void,
  signal: AbortSignal,
  place: JobPlace = 'auto',
): Promise<unknown[]> {
  return placeOf(jobs, place) === 'here'
    ? runHere(jobs, onProgress, signal)
    : runInWorkers(jobs, onProgress, signal);
}

/** The error a job threw, as the caller sees it wherever the job ran. */
export function jobError(error: unknown): JobError {
  const e = error as { name?: unknown; message?: unknown };
  return new JobError(
    typeof e?.name === 'string' ? e.name : 'Error',
    typeof e?.message === 'string' ? e.message : String(error),
  );
}

async function runHere(
  jobs: readonly Job[],
  onProgress: (fraction: number) => void,
  signal: AbortSignal,
): Promise<unknown[]> {
  const results: unknown[] = [];
  for (const [index, job] of jobs.entries()) {
    if (signal.aborted) throw new InterruptedError('interrupted');
    const progress = (done: number, total: number) =>
      onProgress((index + (total > 0 ? Math.min(1, done / total) : 1)) / jobs.length);
    try {
      results.push(await runJob(job, progress));
    } catch (error) {
      throw jobError(error);
    }
    onProgress((index + 1) / jobs.length);
  }
  // Ctrl-C during the last job: its results are not printed, as with workers.
  if (signal.aborted) throw new InterruptedError('interrupted');
  return results;
}

function runInWorkers(
  jobs: readonly Job[],
  onProgress: (fraction: number) => void,
  signal: AbortSignal,
): Promise<unknown[]> {
  const results: unknown[] = new Array(jobs.length);
  const fractions = new Array<number>(jobs.length).fill(0);
  const running = new Set<Worker>();
  const limit = Math.max(1, Math.min(availableParallelism(), jobs.length));
  let next = 0;
  let finished = 0;
  let settled = false;

  return new Promise((resolve, reject) => {
    const stop = (error: Error) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      for (const worker of running) void worker.terminate();
      running.clear();
      reject(error);
    };
    const onAbort = () => stop(new InterruptedError('interrupted'));
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });

    const report = () => onProgress(fractions.reduce((a, b) => a + b, 0) / jobs.length);
    const start = (index: number) => {
      let worker: Worker;
      try {
        worker = new Worker(WORKER, { workerData: jobs[index] });
      } catch (error) {
        return stop(error as Error);
      }
      running.add(worker);
      let done = false;
      worker.on('message', (message: WorkerMessage) => {
        if (settled) return;
        if (message.type === 'progress') {
          fractions[index] = message.fraction;
          report();
        } else if (message.type === 'result') {
          done = true;
          results[index] = message.result;
          fractions[index] = 1;
          report();
        } else {
          done = true;
          stop(new JobError(message.name, message.message));
        }
      });
      worker.on('error', (error) => stop(error));
      worker.on('exit', (code) => {
        running.delete(worker);
        if (settled) return;
        if (!done) return stop(new Error(`a simulator worker stopped with exit code ${code}`));
        finished++;
        if (finished === jobs.length) {
          settled = true;
          signal.removeEventListener('abort', onAbort);
          resolve(results);
        } else if (next < jobs.length) {
          start(next++);
        }
      });
    };
    if (jobs.length === 0) {
      settled = true;
      signal.removeEventListener('abort', onAbort);
      return resolve(results);
    }
    while (next < limit) start(next++);
  });
}
