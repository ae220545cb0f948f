// The server and its queue: `workers` requests served at once, the rest wait first in, first out,
// and nothing is ever cancelled: a request whose client has hung up is still served (the work is
// thrown away). That queue with client timeouts and retries is the sustaining effect of a retry
// storm. Service time can grow with the number in service (Brooker's collapse model), and a
// capacity loss slows the work while it lasts.
import { type Trigger, workDoneAt } from './trigger.js';

/** How long one request takes at full speed. */
export type ServiceTime = 'exponential' | 'fixed';

/** The server's settings. */
export interface ServerSettings {
  /** Requests served at once (Infinity: no limit, no queue). */
  readonly workers: number;
  /** Mean service time at full speed, ms. */
  readonly serviceMs: number;
  readonly serviceTime: ServiceTime;
  /** Extra ms of service per request in service when one starts, itself included. */
  readonly concurrencySlopeMs: number;
}

/** A FIFO server. `onDone` is called when a job's work is done. */
export class QueueServer<J> {
  readonly #s: ServerSettings;
  readonly #trigger: Trigger;
  readonly #random: () => number;
  readonly #schedule: (atMs: number, job: J) => void;
  #busy = 0;
  #queue: J[] = [];
  #head = 0;

  constructor(
    settings: ServerSettings,
    trigger: Trigger,
    random: () => number,
    schedule: (atMs: number, job: J) => void,
  ) {
    this.#s = settings;
    this.#trigger = trigger;
    this.#random = random;
    this.#schedule = schedule;
  }

  /** Requests in service. */
  get busy(): number {
    return this.#busy;
  }

  /** Requests waiting. */
  get queued(): number {
    return this.#queue.length - this.#head;
  }

  /** A request arrives at `nowMs`: served at once if a worker is free, else queued. */
  arrive(nowMs: number, job: J): void {
    if (this.#busy < this.#s.workers) this.#start(nowMs, job);
    else this.#queue.push(job);
  }

  /** A job's work is done at `nowMs`: its worker takes the next in line. */
  done(nowMs: number): void {
    this.#busy--;
    if (this.#head < this.#queue.length) {
      const next = this.#queue[this.#head]!;
      this.#queue[this.#head++] = undefined as J;
      if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
        this.#queue = this.#queue.slice(this.#head);
        this.#head = 0;
      }
      this.#start(nowMs, next);
    }
  }

  #start(nowMs: number, job: J): void {
    this.#busy++;
    const s = this.#s;
    const base =
      s.serviceTime === 'fixed' ? s.serviceMs : -Math.log(1 - this.#random()) * s.serviceMs;
    const work = base + s.concurrencySlopeMs * this.#busy;
    this.#schedule(workDoneAt(this.#trigger, nowMs, work), job);
  }
}
