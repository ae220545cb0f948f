// A worker thread that makes one simulator run, so that the main thread stays free to draw the
// progress bar and to stop at once on Ctrl-C (the models are synchronous loops).
import { parentPort, workerData } from 'node:worker_threads';
import { type Job, runJob } from './runners.js';

/** What a worker tells the main thread. */
export type WorkerMessage =
  | { readonly type: 'progress'; readonly fraction: number }
  | { readonly type: 'result'; readonly result: unknown }
  | { readonly type: 'error'; readonly name: string; readonly message: string };

const port = parentPort;
if (port !== null) {
  const post = (message: WorkerMessage) => port.postMessage(message);
  let percent = -1;
  const onProgress = (done: number, total: number) => {
    const fraction = total > 0 ? done / total : 1;
    const now = Math.floor(fraction * 100);
    if (now === percent) return;
    percent = now;
    post({ type: 'progress', fraction });
  };
  try {
    const result = await runJob(workerData as Job, onProgress);
    post({ type: 'result', result });
  } catch (error) {
    const e = error as { name?: unknown; message?: unknown };
    post({
      type: 'error',
      name: typeof e?.name === 'string' ? e.name : 'Error',
      message: typeof e?.message === 'string' ? e.message : String(error),
    });
  }
}
