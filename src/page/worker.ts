// The page's Web Worker: the simulator runs here, so the page never freezes while it computes.
import { answer, type OnProgress, type Progress, type Question } from './compute.js';

/** The part of a dedicated worker's global scope used here (lib DOM types the window's). */
interface WorkerScope {
  onmessage: ((event: MessageEvent<Question>) => void) | null;
  postMessage(message: unknown): void;
}

/**
 * Progress is posted in steps of at least this share, so that a long run sends a few hundred
 * messages (a storm's each with its charts so far).
 */
const STEP = 0.005;

const scope = self as unknown as WorkerScope;
scope.onmessage = async (event) => {
  const { id } = event.data;
  let posted = 0;
  const onProgress: OnProgress = (done, live) => {
    if (done - posted < STEP && done < 1) return;
    posted = done;
    const message: Progress =
      live === undefined
        ? { id, kind: 'progress', done }
        : { id, kind: 'progress', done, live: live() };
    scope.postMessage(message);
  };
  scope.postMessage(await answer(event.data, onProgress));
};
