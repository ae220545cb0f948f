// The API servers and their queue: `apiConnections` connections, `apiCores` cores working
// through accepted requests first in, first out, as one fluid server, and a forecast cache in
// front of the database. A request holds its connection from the moment it is accepted until its
// answer is written; a request that finds no connection free is rejected at once, for
// `rejectCpuMs` of CPU. The servers never learn that a caller hung up: they finish every request.
import type { Outcome } from '../../core/step.js';
import type { Arrivals } from './arrivals.js';
import { Database } from './database.js';
import type { Measurements } from './measurements.js';
import { type Attempt, type Job, OK, type World } from './world.js';

/** Who sent the servers their requests, and gets each answer: the gateway. */
export interface ServerCaller {
  /** The servers wrote `outcome` for job `j` and freed its connection. */
  answered(j: Job, outcome: Outcome): void;
}

export class ApiServers {
  /** Connections in use. */
  busy = 0;
  /** CPU ms owed for rejections, paid before any queued work. */
  #cpuDebtMs = 0;
  #cpuQueue: Job[] = [];
  #cpuHead = 0;
  /** Per forecast, when its cached copy expires (ms), or -1. */
  readonly #cacheExpiry: Float64Array;
  readonly #ttlMs: number;
  readonly database: Database;
  caller: ServerCaller | undefined;

  constructor(
    private readonly world: World,
    private readonly m: Measurements,
    arrivals: Arrivals,
  ) {
    const p = world.p;
    this.database = new Database(world, m, (j, outcome) => this.#fromDatabase(j, outcome));
    // The cache starts in its steady state: a key asked for r times a second is cached
    // rT / (1 + rT) of the time, and a cached entry has a uniformly distributed time left.
    this.#ttlMs = p.cacheTtlSeconds * 1000;
    this.#cacheExpiry = new Float64Array(p.forecastKeys);
    for (let k = 0; k < p.forecastKeys; k++) {
      const rT = arrivals.rate(k) * p.cacheTtlSeconds;
      this.#cacheExpiry[k] = world.random() < rT / (1 + rT) ? world.random() * this.#ttlMs : -1;
    }
  }

  /**
   * A gateway's try `tryNo` for attempt `a` reaches the servers: accepted (undefined), or the
   * answer it is rejected with at once.
   */
  accept(a: Attempt, tryNo: number): Outcome | undefined {
    const m = this.m;
    const sec = this.world.sec;
    m.apiCalls[sec]!++;
    if (this.busy < this.world.p.apiConnections) {
      this.busy++;
      this.#cpuQueue.push({
        attempt: a,
        tryNo,
        key: a.user.key,
        remaining: Number.NaN,
        miss: false,
      });
      return undefined;
    }
    m.rejected[sec]!++;
    this.#cpuDebtMs += this.world.p.rejectCpuMs;
    return this.world.serviceUnavailable;
  }

  /** Runs the CPU for one millisecond: rejections first, then the queue in order. */
  runCpu(): void {
    const { world, m } = this;
    const p = world.p;
    let available = p.apiCores;
    if (this.#cpuDebtMs > 0) {
      const paid = Math.min(this.#cpuDebtMs, available);
      this.#cpuDebtMs -= paid;
      available -= paid;
    }
    const queue = this.#cpuQueue;
    while (available > 0 && this.#cpuHead < queue.length) {
      const j = queue[this.#cpuHead]!;
      if (Number.isNaN(j.remaining)) {
        m.lookups[world.sec]!++;
        if (this.#cacheExpiry[j.key]! > world.now) {
          m.hits[world.sec]!++;
          j.remaining = p.hitCpuMs;
        } else {
          j.miss = true;
          j.remaining = p.missCpuMs;
        }
      }
      if (j.remaining > available) {
        j.remaining -= available;
        break;
      }
      available -= j.remaining;
      this.#cpuHead++;
      if (j.miss) this.database.query(j);
      else this.#finish(j, OK);
    }
    if (this.#cpuHead > 4096 && this.#cpuHead * 2 > queue.length) {
      this.#cpuQueue = queue.slice(this.#cpuHead);
      this.#cpuHead = 0;
    }
  }

  /** The database answered job `j`: a forecast fills the cache (whoever still waits for it). */
  #fromDatabase(j: Job, outcome: Outcome): void {
    if (outcome.ok) this.#cacheExpiry[j.key] = this.world.now + this.#ttlMs;
    this.#finish(j, outcome);
  }

  /** A server writes its answer to job `j` and frees the connection. */
  #finish(j: Job, outcome: Outcome): void {
    this.busy--;
    this.caller!.answered(j, outcome);
  }
}
