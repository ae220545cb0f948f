// The page's Web Worker: the simulator runs here, so the page never freezes while it computes.
import { answer, type Question } from './compute.js';

/** The part of a dedicated worker's global scope used here (lib DOM types the window's). */
interface WorkerScope {
  onmessage: ((event: MessageEvent<Question>) => void) | null;
  postMessage(message: unknown): void;
}

const scope = self as unknown as WorkerScope;
scope.onmessage = (event) => scope.postMessage(answer(event.data));
