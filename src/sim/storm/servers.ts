// The API servers and their queue: `apiConnections` connections, `apiCores` cores working
// through accepted requests first in, first out, as one fluid server, and a forecast cache in
// front of the database. A request holds its connection from the moment it is accepted until its
// answer is written; a request that finds no connection free is rejected at once, for
// `rejectCpuMs` of CPU. The servers never learn that a caller hung up: they finish every request.
import type { Outcome } from '../../core/step.js';
import type { Arrivals } from './arrivals.js';
import { Database } from './database.js';
import type { Measurements } from './measurements.js';
import { AllOrNothingGuard, RUN, type ServerGuard, StormproofGuard, WAIT } from './protection.js';
import { type Attempt, type Job, OK, type World } from './world.js';

/** Who sent the servers their requests, and gets each answer: the gateway. */
export interface ServerCaller {
  /** The servers wrote `outcome` for job `j` and freed its connection. */
  answered(j: Job, outcome: Outcome): void;
  /** The servers' protection rejected job `j`, which had waited in its queue. */
  rejectedLater(j: Job, outcome: Outcome): void;
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
  /** What protects the servers beyond their connection limit (`server` option), or nothing. */
  readonly guard: ServerGuard | undefined;

  constructor(
    private readonly world: World,
    private readonly m: Measurements,
    arrivals: Arrivals,
    /** Whether every retrying layer reads a failure's status only (see StormproofGuard). */
    statusOnly: boolean,
  ) {
    const p = world.p;
    this.guard =
      p.server === 'stormproof'
        ? new StormproofGuard(world, statusOnly)
        : p.server === 'all-or-nothing'
          ? new AllOrNothingGuard(() => this.#queueDelayMs())
          : undefined;
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
    this.m.apiCalls[this.world.sec]!++;
    if (this.busy >= this.world.p.apiConnections) {
      this.#reject();
      return this.world.serviceUnavailable;
    }
    this.busy++;
    const j: Job = {
      attempt: a,
      tryNo,
      key: a.user.key,
      remaining: Number.NaN,
      miss: false,
      acceptedAt: this.world.now,
      server: 0,
      admission: undefined,
    };
    const verdict = this.guard === undefined ? RUN : this.guard.admit(j);
    if (verdict === RUN) this.#cpuQueue.push(j);
    if (verdict === RUN || verdict === WAIT) return undefined;
    this.busy--;
    this.#reject();
    return verdict;
  }

  /** The protection decided on a job that waited in its queue (EV_SERVER_DECIDED). */
  decided(j: Job): void {
    const rejection = (this.guard as StormproofGuard).rejection(j);
    if (rejection === undefined) {
      this.#cpuQueue.push(j);
      return;
    }
    this.busy--;
    this.#reject();
    this.caller!.rejectedLater(j, rejection);
  }

  /** The end of second `sec`: the protection samples or records. */
  endSecond(sec: number): void {
    this.guard?.endSecond(sec);
  }

  /** A request rejected at once: a canned 503 costs the servers `rejectCpuMs` of CPU. */
  #reject(): void {
    this.m.rejected[this.world.sec]!++;
    this.#cpuDebtMs += this.world.p.rejectCpuMs;
  }

  /** How long the request at the front of the CPU queue has waited, in ms (0 when empty). */
  #queueDelayMs(): number {
    const head = this.#cpuQueue[this.#cpuHead];
    return head === undefined ? 0 : this.world.now - head.acceptedAt;
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
    this.guard?.finished(j, outcome.ok);
    this.caller!.answered(j, outcome);
  }
}
