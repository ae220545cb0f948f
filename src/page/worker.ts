// The page's Web Worker: the simulator runs here, so the page never freezes while it computes.
import { answer, type Progress, type Question } from './compute.js';

/** The part of a dedicated worker's global scope used here (lib DOM types the window's). */
interface WorkerScope {
  onmessage: ((event: MessageEvent<Question>) => void) | null;
  postMessage(message: unknown): void;
}

/** Progress is posted in steps of at least this share, so that a long run sends a few hundred messages. */
const STEP = 0.005;

const scope = self as unknown as WorkerScope;
scope.onmessage = async (event) => {
  const { id } = event.data;
  let posted = 0;
  const onProgress = (done: number) => {
    if (done - posted < STEP && done < 1) return;
    posted = done;
    scope.postMessage({ id, kind: 'progress', done } satisfies Progress);
  };
  scope.postMessage(await answer(event.data, onProgress));
};
