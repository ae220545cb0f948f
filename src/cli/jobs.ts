// Runs simulator jobs in worker threads, a few at a time, and gathers their progress. Workers keep
// the main thread free: the progress bar draws while a model runs, and Ctrl-C stops every worker
// at once, even in the middle of a synchronous loop.
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { Job } from './runners.js';
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
 * Runs every job, each in its own worker, at most `availableParallelism()` at once, and returns
 * their results in order. `onProgress` gets the mean share done across all jobs (0 to 1). When
 * `signal` aborts, every worker is terminated and the promise rejects with an InterruptedError.
 */
export function runJobs(
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
