// The bounded queue in front of the concurrency limit: Meta's CoDel variant with adaptive LIFO
// ("Fail at Scale", folly's Codel). One deque per rank (criticality and first attempt or retry,
// ranked by shares.ts), the oldest of each at its head; one timer sweeps out what waited too long.
import type { Clock } from '../core/clock.js';
import { DemandGauge } from './demand.js';

/** Whether the caller of a request has gone away; an `AbortSignal` is one. */
export interface CallerState {
  readonly aborted: boolean;
}

/** One request waiting in the queue; `resolve` hears what became of it. */
export interface Waiter<A> {
  readonly enqueuedAt: number;
  readonly retry: boolean;
  readonly caller: CallerState | undefined;
  readonly resolve: (answer: A) => void;
}

/** The queue's settings, filled. */
export interface QueueSettings {
  /** How many may wait. */
  readonly capacity: number;
  /** CoDel's target queueing delay, ms. */
  readonly targetMs: number;
  /** CoDel's interval, ms. */
  readonly intervalMs: number;
  /**
   * The backend's unloaded latency (ms), when the limit measures it and the target and interval
   * were not given: the queue's times then follow it (see `CodelQueue`).
   */
  readonly follow?: (() => number | undefined) | undefined;
}

/** The shortest and longest interval when the queue follows the unloaded latency, ms. */
const FOLLOW_MIN_MS = 1;
const FOLLOW_MAX_MS = 1000;
/**
 * While requests arrive below capacity, a request may wait this many unloaded latencies: the
 * queue drains by itself. An M/M/4 queue at 95 % load (the map's server) waits longer than 20
 * service times 1.6 % of the time, at 90 % load 0.03 %.
 */
const PATIENT_LATENCIES = 20;

/**
 * The queue turns overloaded when it has not been empty for a whole interval; then a request may
 * wait only twice the target (folly's slough timeout), else up to one interval. It stays
 * overloaded until a whole interval passes in which no request waited past the target: under a
 * standing overload the queue empties for a moment whenever arrivals pause, and that moment must
 * not reopen FIFO with interval-long waits. Once a queue forms (its oldest waited past the
 * target) or while overloaded, it serves newest first: the newest callers are the ones most
 * likely still waiting.
 *
 * CoDel's 5 ms target and 100 ms interval suit a service that answers in tens of milliseconds.
 * When the limit measures the backend's unloaded latency and the times were not given, they
 * follow it: the interval is half that latency (between 1 ms and 1 s) and the target a quarter
 * of it, so an admitted request waits at most about half its service time in the queue,
 * however fast or slow the backend is.
 *
 * A queue that follows the latency also counts arrivals against completions (`demand`). While
 * requests arrive below capacity, its queue drains by itself: a request may then wait 20 unloaded
 * latencies, oldest first, and the short waits return when arrivals outrun completions. Near
 * capacity, a service whose latencies spread widely (an exponential service) has a long queue
 * by nature, and a wait of half its latency would shed a tenth of what it could serve.
 */
export class CodelQueue<A> {
  private readonly deques: Waiter<A>[][];
  /** How many wait, in all deques. */
  length = 0;
  private nonEmptySince = 0;
  private overloaded = false;
  /** The last time a request was seen waiting past the target. */
  private slowAt = 0;
  private sweepAt = Number.POSITIVE_INFINITY;
  private cancelSweep: (() => void) | undefined;
  /** The target and interval in force, ms. */
  private targetMs: number;
  private intervalMs: number;
  /** Arrivals against completions, when the queue follows the limit's latency. */
  readonly demand: DemandGauge | undefined;

  /**
   * @param ranks the number of deques, most important first
   * @param expire answers a waiter the sweep found past its time
   */
  constructor(
    readonly settings: QueueSettings,
    ranks: number,
    private readonly clock: Clock,
    private readonly expire: (waiter: Waiter<A>, nowMs: number) => void,
  ) {
    this.deques = Array.from({ length: ranks }, () => []);
    this.targetMs = settings.targetMs;
    this.intervalMs = settings.intervalMs;
    this.demand = settings.follow === undefined ? undefined : new DemandGauge();
  }

  /** How long a request may wait while requests arrive below capacity, if they do, ms. */
  private patientMs(): number | undefined {
    if (this.demand?.belowCapacity !== true) return undefined;
    const latency = this.settings.follow?.();
    if (latency === undefined || !(latency > 0)) return undefined;
    return Math.max(this.intervalMs, PATIENT_LATENCIES * latency);
  }

  /** Moves the target and interval to the latency the queue follows, when there is one. */
  private retime(): void {
    const latency = this.settings.follow?.();
    if (latency === undefined || !(latency > 0)) return;
    this.intervalMs = Math.min(FOLLOW_MAX_MS, Math.max(FOLLOW_MIN_MS, latency / 2));
    this.targetMs = Math.min(this.intervalMs / 2, latency / 4);
  }

  get full(): boolean {
    return this.length >= this.settings.capacity;
  }

  /** Whether the queue is overloaded at `nowMs` (and the state moved to that time). */
  isOverloaded(nowMs: number): boolean {
    this.retime();
    const { targetMs, intervalMs } = this;
    if (this.length > 0 && nowMs - this.oldestEnqueuedAt() > targetMs) this.slowAt = nowMs;
    if (!this.overloaded && this.length > 0 && nowMs - this.nonEmptySince > intervalMs) {
      this.overloaded = true;
      this.slowAt = nowMs;
    } else if (this.overloaded && nowMs - this.slowAt > intervalMs) {
      this.overloaded = false;
      // Count the next interval afresh, or a short steady queue would turn it straight back.
      if (this.length > 0) this.nonEmptySince = nowMs;
    }
    return this.overloaded;
  }

  /**
   * The longest a request may wait now: 20 unloaded latencies while requests arrive below
   * capacity, else twice the target while overloaded, else the interval.
   */
  maxWait(nowMs: number): number {
    // First, as before there was patience: it moves CoDel's state to now, and the interval (which
    // `patientMs` reads) to the latency.
    const overloaded = this.isOverloaded(nowMs);
    return this.patientMs() ?? (overloaded ? 2 * this.targetMs : this.intervalMs);
  }

  /** Newest first: once a queue forms or while overloaded, unless arrivals are below capacity. */
  private lifo(nowMs: number): boolean {
    const overloaded = this.isOverloaded(nowMs); // first, as in `maxWait`
    if (this.patientMs() !== undefined) return false;
    return overloaded || nowMs - this.oldestEnqueuedAt() > this.targetMs;
  }

  /** When the oldest waiting request arrived; each deque holds its oldest at its head. */
  oldestEnqueuedAt(): number {
    let oldest = Number.POSITIVE_INFINITY;
    for (const deque of this.deques)
      if (deque.length > 0 && deque[0]!.enqueuedAt < oldest) oldest = deque[0]!.enqueuedAt;
    return oldest;
  }

  /**
   * Whether one more waiter would make someone wait past their time, predicted from the rate
   * the queue drains at (completions per ms; undefined before it is measured: no prediction).
   * Oldest first, the newcomer waits for everyone ahead of it; newest first, it goes ahead of
   * everyone and the oldest waits for all of them. A newcomer to an empty queue is always taken:
   * the timeouts catch what the prediction misses.
   */
  wouldOverrun(nowMs: number, drainPerMs: number | undefined): boolean {
    if (this.length === 0 || drainPerMs === undefined || !(drainPerMs > 0)) return false;
    const maxWait = this.maxWait(nowMs);
    const age = nowMs - this.oldestEnqueuedAt();
    return (this.lifo(nowMs) ? age : 0) + (this.length + 1) / drainPerMs > maxWait;
  }

  /** Adds a waiter at `rank` and makes sure the sweep will find it. */
  push(rank: number, waiter: Waiter<A>, nowMs: number): void {
    if (this.length === 0) this.nonEmptySince = nowMs;
    this.deques[rank]!.push(waiter);
    this.length++;
    this.schedule(nowMs);
  }

  /**
   * Takes the next waiter to serve: from the most important pair of deques (`rank` and `rank +
   * 1`, first attempts and retries of one criticality) that holds any, the retries when
   * `retriesFirst()` says so or there are no first attempts; newest first once a queue forms.
   */
  take(nowMs: number, retriesFirst: () => boolean): Waiter<A> | undefined {
    for (let rank = 0; rank < this.deques.length; rank += 2) {
      const firsts = this.deques[rank]!;
      const retries = this.deques[rank + 1]!;
      if (firsts.length === 0 && retries.length === 0) continue;
      const deque =
        retries.length > 0 && (firsts.length === 0 || retriesFirst()) ? retries : firsts;
      const waiter = this.lifo(nowMs) ? deque.pop() : deque.shift();
      this.length--;
      return waiter;
    }
    return undefined;
  }

  /** Takes out the oldest waiter of the least important rank below `rank`, if any. */
  evictBelow(rank: number): Waiter<A> | undefined {
    for (let i = this.deques.length - 1; i > rank; i--) {
      const deque = this.deques[i]!;
      if (deque.length === 0) continue;
      this.length--;
      return deque.shift();
    }
    return undefined;
  }

  /** Takes out every waiter (on close). */
  clear(): Waiter<A>[] {
    const all: Waiter<A>[] = [];
    for (const deque of this.deques) all.push(...deque.splice(0));
    this.length = 0;
    return all;
  }

  /** Answers the waiters past their time; the oldest of each deque is at its head. */
  private sweep(): void {
    const nowMs = this.clock.now();
    const maxWait = this.maxWait(nowMs);
    for (const deque of this.deques) {
      while (deque.length > 0 && nowMs - deque[0]!.enqueuedAt > maxWait) {
        const waiter = deque.shift()!;
        this.length--;
        this.expire(waiter, nowMs);
      }
    }
    this.schedule(nowMs);
  }

  /** Sets the one sweep timer for the oldest waiter's time, or stops it when nobody waits. */
  schedule(nowMs: number): void {
    if (this.length === 0) {
      this.cancelSweep?.();
      this.cancelSweep = undefined;
      this.sweepAt = Number.POSITIVE_INFINITY;
      return;
    }
    const oldest = this.oldestEnqueuedAt();
    // Just past the deadline, so the sweep finds the head expired even on an exact clock; and
    // at the latest when the queue turns overloaded, since its waits then shrink.
    let due = oldest + this.maxWait(nowMs) + 1;
    if (!this.isOverloaded(nowMs)) due = Math.min(due, this.nonEmptySince + this.intervalMs + 1);
    if (this.cancelSweep !== undefined && this.sweepAt <= due) return;
    this.cancelSweep?.();
    this.sweepAt = due;
    let fired = false;
    const fire = () => {
      if (fired || this.cancelSweep !== cancel) return;
      fired = true;
      this.cancelSweep = undefined;
      this.sweepAt = Number.POSITIVE_INFINITY;
      this.sweep();
    };
    let cancel: () => void;
    const clock = this.clock;
    if (clock.setTimer !== undefined) {
      // A clock with timers calls back directly: no promise, so a clock on virtual time can
      // fire the sweep at its exact millisecond without waiting for promise callbacks.
      const stop = clock.setTimer(Math.max(0, due - nowMs), fire);
      cancel = () => {
        fired = true;
        stop();
      };
    } else {
      const controller = new AbortController();
      clock.sleep(Math.max(0, due - nowMs), controller.signal).then(fire, () => {});
      cancel = () => {
        fired = true;
        controller.abort();
      };
    }
    this.cancelSweep = cancel;
  }
}
