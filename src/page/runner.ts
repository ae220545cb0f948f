// The page's worker, asked one question at a time, with the progress of long runs and a stop.
import type { Answer, Progress, Question } from './compute.js';
import ComputeWorker from './worker.ts?worker&inline';

/** A question without its id: the runner numbers them. */
export type Ask = Question extends infer Q ? (Q extends Question ? Omit<Q, 'id'> : never) : never;

/** What the runner tells the page: answers, and the progress of the question running. */
export interface RunnerHooks {
  answer(answer: Answer, kind: Ask['kind']): void;
  progress(progress: Progress, kind: Ask['kind']): void;
}

/**
 * A new question while one is running ends that run (the models are synchronous loops that
 * cannot be interrupted) and starts a fresh worker, so the figures always follow the controls,
 * however long a superseded run would have taken. `stop` ends a run the same way.
 */
export class Runner {
  #worker: Worker | undefined;
  #pending: { id: number; kind: Ask['kind'] } | undefined;
  #lastId = 0;
  readonly #hooks: RunnerHooks;

  constructor(hooks: RunnerHooks) {
    this.#hooks = hooks;
  }

  /** The kind of the question running, if any. */
  get running(): Ask['kind'] | undefined {
    return this.#pending?.kind;
  }

  ask(question: Ask): void {
    this.stop();
    this.#worker ??= this.#start();
    const id = ++this.#lastId;
    this.#pending = { id, kind: question.kind };
    this.#worker.postMessage({ ...question, id });
  }

  /** Ends the running question, if any (its worker with it); says whether one was running. */
  stop(): boolean {
    if (this.#pending === undefined) return false;
    this.#worker?.terminate();
    this.#worker = undefined;
    this.#pending = undefined;
    return true;
  }

  #start(): Worker {
    const worker = new ComputeWorker({ name: 'stormproof simulator' });
    worker.onmessage = (event: MessageEvent<Answer | Progress>) => {
      const pending = this.#pending;
      if (pending === undefined || event.data.id !== pending.id) return;
      if (event.data.kind === 'progress') {
        this.#hooks.progress(event.data, pending.kind);
        return;
      }
      this.#pending = undefined;
      this.#hooks.answer(event.data, pending.kind);
    };
    worker.onerror = (event) => {
      event.preventDefault();
      const pending = this.#pending;
      this.#pending = undefined;
      this.#worker = undefined;
      if (pending === undefined) return;
      const message = event.message || 'the worker failed';
      this.#hooks.answer({ id: pending.id, kind: 'error', message }, pending.kind);
    };
    return worker;
  }
}
