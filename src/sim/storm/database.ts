// The forecast database, and the trigger: its failover. Healthy, a query takes `dbQueryMs`, at
// most `dbConcurrency` run at once and the rest wait in line. From `faultAtSeconds`, for
// `faultSeconds`, every query fails after `dbFailMs` (the driver's connect timeout).
import type { Outcome } from '../../core/step.js';
import type { Measurements } from './measurements.js';
import { EV_DB_DONE, EV_DB_FAILED, type Job, OK, type World } from './world.js';

export class Database {
  /** The trigger: the failover's first and first healthy millisecond. */
  readonly faultStartMs: number;
  readonly faultEndMs: number;
  #busy = 0;
  #queue: Job[] = [];
  #head = 0;

  /** @param answer Called with each query's job and its outcome (a forecast, or the 503 of a failure). */
  constructor(
    private readonly world: World,
    private readonly m: Measurements,
    private readonly answer: (job: Job, outcome: Outcome) => void,
  ) {
    this.faultStartMs = world.p.faultAtSeconds * 1000;
    this.faultEndMs = (world.p.faultAtSeconds + world.p.faultSeconds) * 1000;
  }

  /** Whether the database is failing over at `nowMs`. */
  failingOver(nowMs: number): boolean {
    return nowMs >= this.faultStartMs && nowMs < this.faultEndMs;
  }

  /** Starts the query of a cache miss. */
  query(j: Job): void {
    const { world, m } = this;
    const p = world.p;
    m.dbQueries[world.sec]!++;
    if (this.failingOver(world.now)) {
      world.calendar.schedule(world.now + p.dbFailMs, j, EV_DB_FAILED);
      return;
    }
    if (this.#busy < p.dbConcurrency) {
      this.#busy++;
      world.calendar.schedule(world.now + p.dbQueryMs, j, EV_DB_DONE);
    } else {
      this.#queue.push(j);
    }
  }

  /** A query answered (EV_DB_DONE): its job gets the forecast, the next in line starts. */
  done(j: Job): void {
    const world = this.world;
    const p = world.p;
    this.#busy--;
    this.answer(j, OK);
    while (this.#busy < p.dbConcurrency && this.#head < this.#queue.length) {
      this.#busy++;
      world.calendar.schedule(world.now + p.dbQueryMs, this.#queue[this.#head++]!, EV_DB_DONE);
    }
    if (this.#head > 4096 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
  }

  /** A query failed during the failover (EV_DB_FAILED): the server answers 503. */
  failed(j: Job): void {
    this.answer(j, this.world.serviceUnavailable);
  }
}
