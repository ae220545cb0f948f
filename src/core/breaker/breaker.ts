// One circuit breaker: a synchronous state machine on the injected clock. `admit` decides from
// local state alone and `record` updates it, so a closed breaker adds no await to a call.
import { channels } from '../instrument.js';
import { checkKnownKeys, checkOptionsObject, show } from '../validate.js';
import {
  BREAKER_KEYS,
  type BreakerOptions,
  type BreakerSettings,
  type BreakerState,
  resolveBreakerOptions,
} from './options.js';
import type { BreakerRules, BreakerStoreEvent, SharedBreakerState } from './store.js';
import { SlidingWindow } from './window.js';

/** A call let through: as an ordinary call, or as one of a half-open breaker's probes. */
export interface BreakerAdmitted {
  readonly admitted: true;
  readonly probe: boolean;
}

/** A call refused: fail it at once with a `BreakerOpenError(key, retryAfterMs)`. */
export interface BreakerRejected {
  readonly admitted: false;
  /** Ms until the next probe may go; `undefined` while isolated by hand. */
  readonly retryAfterMs: number | undefined;
}

/** What {@link CircuitBreaker.admit} decided. */
export type BreakerAdmission = BreakerAdmitted | BreakerRejected;

/**
 * How an admitted call ended: `'success'`, `'failure'` (a failure the breaker should count:
 * the service is down or overloaded), or `'ignored'` (neither: the caller aborted, a 404...).
 * An ignored probe frees its slot without deciding anything.
 */
export type BreakerOutcome = 'success' | 'failure' | 'ignored';

/** A breaker's state as JSON, to carry it over a restart (`toJSON` and `restore`). */
export interface BreakerSnapshot {
  readonly key: string;
  readonly state: BreakerState;
  /** Failed probes since the breaker last closed: the open period's ceiling doubles with each. */
  readonly level: number;
  /** Consecutive failures counted while closed. */
  readonly failures: number;
  /** When (epoch ms) an open breaker lets its next probe go; null unless open. */
  readonly probeAt: number | null;
}

const ADMITTED: BreakerAdmitted = Object.freeze({ admitted: true, probe: false });
const breakerChannel = channels.breaker;
const PROBE: BreakerAdmitted = Object.freeze({ admitted: true, probe: true });
const ISOLATED: BreakerRejected = Object.freeze({ admitted: false, retryAfterMs: undefined });
const STATES: readonly BreakerState[] = ['closed', 'open', 'half-open', 'isolated'];
// A probe is being arranged with the fleet's store: refused for now, the answer comes within a
// round trip.
const ARRANGING: BreakerRejected = Object.freeze({ admitted: false, retryAfterMs: 0 });
// After a store failure, the store is tried again at most this often per key.
const STORE_RETRY_MS = 1000;

/**
 * A circuit breaker for one key (an origin, a route, a method). Closed, it counts failures:
 * `consecutiveFailures` in a row (default 5), or a `failureRatio` over a sliding window with a
 * minimum volume. Open, it refuses every call until its open period ends; the period is drawn
 * with equal jitter and its ceiling doubles from `openMs` (5 s) to `maxOpenMs` (300 s) after each
 * failed probe, so a fleet that opened together does not probe together. Half-open, it lets
 * `probes` calls through at once (default 1) and closes after `successesToClose` successes
 * (default 1); a probe failure opens it again.
 *
 * `admit()` and `record()` are synchronous and decide from local state alone: wrap a call as
 * `const a = b.admit(); if (!a.admitted) throw new BreakerOpenError(b.key, a.retryAfterMs);`
 * then `b.record(a, outcome)` when it ends.
 *
 * @example
 * ```ts
 * const breaker = new CircuitBreaker('api.example.com');
 * const admission = breaker.admit();
 * if (!admission.admitted) throw new BreakerOpenError(breaker.key, admission.retryAfterMs);
 * try {
 *   const res = await fetch(url);
 *   breaker.record(admission, res.status >= 500 ? 'failure' : 'success');
 * } catch (error) {
 *   breaker.record(admission, 'failure');
 *   throw error;
 * }
 * ```
 */
export class CircuitBreaker {
  /** The key this breaker guards. */
  readonly key: string;
  readonly #o: BreakerSettings;
  #state: BreakerState = 'closed';
  #level = 0;
  #failures = 0;
  readonly #window: SlidingWindow | undefined;
  /** Open: when the next probe may go. Half-open: when the probes out lose their slots. */
  #until = 0;
  #probesOut = 0;
  #successes = 0;
  // With a store: outcomes not yet reported, and the state of the conversation with it.
  readonly #rules: BreakerRules | undefined;
  #pendingReset = false;
  #pendingFailures = 0;
  #pendingSuccesses = 0;
  #busy = false; // a report or claim is in flight: at most one per breaker
  // A call was admitted since the last store call began: never two round trips for one call.
  #calledSinceTalk = false;
  #syncedAt = Number.NEGATIVE_INFINITY;
  #storeDownUntil = Number.NEGATIVE_INFINITY;
  #storeUp = true;
  #lease: string | undefined; // our claim on the fleet's probe
  #granted = false; // the lease is ours and its probe not yet sent
  #grantedUntil = 0; // when that lease ends: a probe sent after it would not be the only one
  // When another process's probe lease ends: no probe of ours before then, store reachable or not.
  #othersLeaseUntil = Number.NEGATIVE_INFINITY;

  /** Throws a TypeError or RangeError naming the option and value when an option is bad. */
  constructor(key: string, options?: BreakerOptions | BreakerSettings) {
    if (typeof key !== 'string') {
      throw new TypeError(`stormproof: CircuitBreaker key must be a string, got ${show(key)}`);
    }
    this.key = key;
    this.#o = isResolved(options) ? options : resolve('CircuitBreaker', options);
    this.#window =
      this.#o.failureRatio === undefined ? undefined : new SlidingWindow(this.#o.windowMs);
    const o = this.#o;
    this.#rules =
      o.store === undefined
        ? undefined
        : Object.freeze({
            consecutiveFailures: o.consecutiveFailures,
            failureRatio: o.failureRatio,
            windowMs: o.windowMs,
            minimumCalls: o.minimumCalls,
            openMs: o.openMs,
            maxOpenMs: o.maxOpenMs,
            successesToClose: o.successesToClose,
          });
  }

  /** True while a store is set and answering; false when the breaker decides alone. */
  get shared(): boolean {
    return this.#rules !== undefined && this.#storeUp;
  }

  /** The current state; an open breaker whose period has ended reads as `'half-open'`. */
  get state(): BreakerState {
    if (this.#state === 'open' && this.#o.clock.now() >= this.#until) return 'half-open';
    return this.#state;
  }

  /**
   * Decides, from local state alone, whether a call may go now. With a store, a closed breaker
   * whose copy of the fleet's state is older than `syncMs` starts a refresh in the background,
   * so a process whose calls hang still sees a trip elsewhere.
   */
  admit(): BreakerAdmission {
    const admission = this.#admit();
    if (breakerChannel.hasSubscribers && (!admission.admitted || admission.probe)) {
      breakerChannel.publish(
        admission.admitted
          ? { type: 'probe', breaker: this, key: this.key }
          : { type: 'refused', breaker: this, key: this.key, state: this.#state },
      );
    }
    return admission;
  }

  #admit(): BreakerAdmission {
    if (this.#rules !== undefined) this.#calledSinceTalk = true;
    switch (this.#state) {
      case 'closed':
        if (this.#rules !== undefined) this.#flush(false);
        return ADMITTED;
      case 'isolated':
        return ISOLATED;
      case 'open': {
        // Failures of a local trip held back by the one-round-trip-per-call rule go now.
        if (this.#pendingFailures > 0 || this.#pendingReset) this.#flush(true);
        const now = this.#o.clock.now();
        if (now < this.#until) {
          return { admitted: false, retryAfterMs: Math.ceil(this.#until - now) };
        }
        if (this.#fleetDecides(now)) return this.#fleetProbe(now);
        // Deciding alone, but another process's probe is out: never a second one in its lease.
        if (now < this.#othersLeaseUntil) {
          return { admitted: false, retryAfterMs: Math.ceil(this.#othersLeaseUntil - now) };
        }
        this.#move('half-open');
        this.#probesOut = 0;
        this.#successes = 0;
        return this.#probe(now);
      }
      case 'half-open': {
        const now = this.#o.clock.now();
        // With the fleet, our one probe is out: everyone else waits for it, until its lease ends.
        if (this.#lease !== undefined && this.#fleetDecides(now)) {
          if (now < this.#until) {
            return { admitted: false, retryAfterMs: Math.ceil(this.#until - now) };
          }
          this.#lease = undefined;
          this.#probesOut = 0;
          this.#move('open');
          return this.#fleetProbe(now);
        }
        return this.#probe(now);
      }
    }
  }

  /** Records how an admitted call ended. A refused admission is ignored. */
  record(admission: BreakerAdmission, outcome: BreakerOutcome): void {
    if (!admission.admitted) return;
    if (admission.probe) {
      if (this.#state !== 'half-open') return; // reset or isolated while the probe was out
      this.#probesOut = Math.max(0, this.#probesOut - 1);
      const lease = this.#lease;
      this.#lease = undefined;
      if (outcome === 'failure') this.#open(this.#level + 1);
      else if (outcome === 'success' && ++this.#successes >= this.#o.successesToClose) {
        this.#close();
      }
      if (lease !== undefined) this.#settle(lease, outcome);
      return;
    }
    // Calls admitted while closed that end after the breaker opened change nothing.
    if (this.#state !== 'closed' || outcome === 'ignored') return;
    const failed = outcome === 'failure';
    if (this.#rules !== undefined) this.#queue(failed);
    const window = this.#window;
    if (window === undefined) {
      this.#failures = failed ? this.#failures + 1 : 0;
      if (this.#failures >= this.#o.consecutiveFailures) this.#open(0);
      return;
    }
    window.add(this.#o.clock.now(), failed);
    if (
      failed &&
      window.calls >= this.#o.minimumCalls &&
      window.failures >= this.#o.failureRatio! * window.calls
    ) {
      this.#open(0);
    }
  }

  /**
   * Opens the breaker by hand until {@link reset}: every call is refused, no probe goes. With a
   * store, the whole fleet's breaker of this key is isolated; the promise settles once the store
   * has it (it rejects when the store fails; this process is isolated either way).
   */
  isolate(): Promise<void> {
    this.#move('isolated');
    return this.#control('isolate');
  }

  /** Closes the breaker by hand and forgets its failures and backoff (fleet-wide with a store). */
  reset(): Promise<void> {
    this.#close();
    return this.#control('reset');
  }

  /** The state as JSON, with wall-clock times, for {@link restore} in another process. */
  toJSON(): BreakerSnapshot {
    const state = this.#state === 'half-open' ? 'open' : this.#state;
    const probeAt =
      state === 'open'
        ? this.#o.wallClock() + Math.max(0, this.#until - this.#o.clock.now())
        : null;
    return { key: this.key, state, level: this.#level, failures: this.#failures, probeAt };
  }

  /**
   * Takes the state of a snapshot of this key. A half-open snapshot comes back open with its
   * probe due at once, so no probe is lost or doubled over a restart.
   * @throws TypeError naming the field at fault.
   */
  restore(snapshot: BreakerSnapshot): void {
    const s = checkSnapshot(snapshot);
    if (s.key !== this.key) {
      throw new TypeError(
        `stormproof: snapshot key ${show(s.key)} does not match breaker ${show(this.key)}`,
      );
    }
    this.#level = s.level;
    this.#failures = s.failures;
    this.#probesOut = 0;
    this.#successes = 0;
    this.#window?.clear();
    if (s.state === 'open' || s.state === 'half-open') {
      const left = s.probeAt === null ? 0 : Math.max(0, s.probeAt - this.#o.wallClock());
      this.#until = this.#o.clock.now() + left;
      this.#move('open');
    } else {
      this.#move(s.state);
    }
  }

  /** True when the fleet's store should decide who probes (it is set and answering). */
  #fleetDecides(now: number): boolean {
    return this.#rules !== undefined && (this.#storeUp || now >= this.#storeDownUntil);
  }

  /** The open period is over: probe if the fleet's lease is ours, else ask for it. */
  #fleetProbe(now: number): BreakerAdmission {
    if (this.#granted && now >= this.#grantedUntil) {
      this.#granted = false; // no call came while the lease lasted: ask again
      this.#lease = undefined;
    }
    if (this.#granted) {
      this.#granted = false;
      this.#move('half-open');
      this.#probesOut = 1;
      this.#successes = 0;
      this.#until = this.#grantedUntil; // the lease ends on the store then, too
      return PROBE;
    }
    if (!this.#busy) {
      const token = newToken();
      this.#talk(this.#o.store!.claimProbe(this.key, this.#rules!, token), now, (shared) => {
        if (shared.granted) {
          this.#lease = token;
          this.#granted = true;
          this.#grantedUntil = this.#o.clock.now() + shared.retryInMs;
        }
      });
    }
    return ARRANGING;
  }

  /** Counts an outcome for the next report, and starts one when it is due. */
  #queue(failed: boolean): void {
    if (failed) {
      this.#pendingFailures++;
    } else {
      this.#pendingSuccesses++;
      // In consecutive mode only the failures after the last success matter.
      if (this.#window === undefined) {
        if (this.#pendingFailures > 0 || this.#failures > 0) this.#pendingReset = true;
        this.#pendingFailures = 0;
      }
    }
    this.#flush(false);
  }

  /**
   * Sends the outcomes not yet reported, when due: at once for a failure or a reset (they change
   * the fleet's count), else when the local copy is older than `syncMs` (`stale`; its age counts
   * from when the round trip that brought it began), and only if a call was admitted since the
   * last round trip began: a call costs at most one round trip (a failure whose call already
   * started one goes with the next call), and a healthy closed breaker one per `syncMs` at most.
   */
  #flush(onlyUrgent: boolean): void {
    if (this.#busy || !this.#calledSinceTalk) return;
    const now = this.#o.clock.now();
    if (!this.#fleetDecides(now)) return;
    const urgent = this.#pendingFailures > 0 || this.#pendingReset;
    if (!urgent && (onlyUrgent || now - this.#syncedAt < this.#o.syncMs)) return;
    const report = {
      reset: this.#pendingReset,
      failures: this.#pendingFailures,
      successes: this.#pendingSuccesses,
      draw: this.#o.random(),
    };
    this.#pendingReset = false;
    this.#pendingFailures = 0;
    this.#pendingSuccesses = 0;
    // Failures recorded while this report was out are sent as soon as it returns.
    this.#talk(this.#o.store!.report(this.key, this.#rules!, report), now, () => {
      queueMicrotask(() => this.#flush(true));
    });
  }

  #settle(lease: string, outcome: BreakerOutcome): void {
    const now = this.#o.clock.now();
    if (!this.#fleetDecides(now)) return;
    this.#talk(
      this.#o.store!.settleProbe(this.key, this.#rules!, lease, outcome, this.#o.random()),
      now,
      undefined,
      true,
    );
  }

  #control(action: 'isolate' | 'reset'): Promise<void> {
    if (this.#rules === undefined) return Promise.resolve();
    this.#dropPending();
    return this.#o.store!.control(this.key, action).then((shared) => this.#adopt(shared));
  }

  /**
   * Runs one store call in the background (never awaited by a call): adopts the fleet's state
   * it returns, and on failure goes on alone and says so. `startedAt` is the clock read before
   * the call was made. `always` runs even while another call is in flight (a probe's outcome
   * must not be dropped).
   */
  #talk<T extends SharedBreakerState>(
    call: Promise<T>,
    startedAt: number,
    then?: (shared: T) => void,
    always = false,
  ): void {
    if (!always) this.#busy = true;
    this.#calledSinceTalk = false;
    call.then(
      (shared) => {
        if (!always) this.#busy = false;
        // The answer holds the store's state as of some moment after the call began, so the
        // copy's age counts from then. Counted from the answer's arrival, a late answer (a slow
        // way back, or a process descheduled before this continuation ran) would put the next
        // sync off by that lateness, past "seen within syncMs plus a round trip".
        this.#syncedAt = startedAt;
        if (!this.#storeUp) {
          // Back after an outage: the outcomes counted meanwhile were acted on locally and are
          // stale now; the fleet's state wins.
          this.#dropPending();
          this.#storeUp = true;
          this.#tell({ type: 'available', key: this.key });
        }
        then?.(shared);
        this.#adopt(shared);
      },
      (error: unknown) => {
        if (!always) this.#busy = false;
        this.#storeDownUntil = this.#o.clock.now() + STORE_RETRY_MS;
        this.#lease = undefined;
        this.#granted = false;
        if (this.#storeUp) {
          this.#storeUp = false;
          this.#tell({ type: 'unavailable', key: this.key, error });
        }
      },
    );
  }

  /** Takes the fleet's state as this process's own. */
  #adopt(shared: SharedBreakerState): void {
    const now = this.#o.clock.now();
    switch (shared.state) {
      case 'closed':
        // Failures not yet reported may have opened this copy: report them, the answer decides.
        if (this.#state !== 'closed') {
          if (this.#pendingFailures === 0) this.#close();
          else queueMicrotask(() => this.#flush(true));
        }
        this.#failures = (this.#pendingReset ? 0 : shared.failures) + this.#pendingFailures;
        return;
      case 'isolated':
        this.#dropPending();
        this.#move('isolated');
        return;
      case 'half-open':
        this.#dropPending();
        if (this.#lease !== undefined) return; // the probe out is ours
        break;
      default:
        this.#dropPending();
    }
    // Open, or someone else's probe is out: refuse until the fleet says a probe may go. A probe
    // may close the key long before its lease ends, so ask again after `syncMs` at most.
    if (this.#granted) return;
    this.#level = shared.level;
    if (shared.state === 'half-open') {
      this.#othersLeaseUntil = now + shared.retryInMs;
      this.#until = now + Math.min(shared.retryInMs, this.#o.syncMs);
    } else {
      this.#othersLeaseUntil = Number.NEGATIVE_INFINITY;
      this.#until = now + shared.retryInMs;
    }
    this.#probesOut = 0;
    this.#move('open');
  }

  /**
   * Forgets the outcomes not yet reported: the fleet is not closed, so the store would ignore
   * them, and they must not count against its next closed period.
   */
  #dropPending(): void {
    this.#pendingReset = false;
    this.#pendingFailures = 0;
    this.#pendingSuccesses = 0;
  }

  #tell(event: BreakerStoreEvent): void {
    try {
      this.#o.onStoreEvent?.(event);
    } catch {
      // A hook that throws must not break the breaker.
    }
  }

  #probe(now: number): BreakerAdmission {
    if (this.#probesOut > 0 && now >= this.#until) this.#probesOut = 0; // lost probes: free them
    if (this.#probesOut >= this.#o.probes) {
      return { admitted: false, retryAfterMs: Math.ceil(this.#until - now) };
    }
    // A probe that never reports keeps its slot for one open ceiling at most.
    if (this.#probesOut++ === 0) this.#until = now + this.#ceiling(this.#level);
    return PROBE;
  }

  #ceiling(level: number): number {
    return Math.min(this.#o.maxOpenMs, this.#o.openMs * 2 ** level);
  }

  #open(level: number): void {
    this.#level = level;
    const ceiling = this.#ceiling(level);
    this.#until = this.#o.clock.now() + ceiling / 2 + this.#o.random() * (ceiling / 2);
    this.#failures = 0;
    this.#move('open');
  }

  #close(): void {
    this.#othersLeaseUntil = Number.NEGATIVE_INFINITY;
    this.#level = 0;
    this.#failures = 0;
    this.#probesOut = 0;
    this.#successes = 0;
    this.#window?.clear();
    this.#move('closed');
  }

  #move(to: BreakerState): void {
    const from = this.#state;
    this.#state = to;
    if (from !== to && breakerChannel.hasSubscribers) {
      breakerChannel.publish({ type: 'state', breaker: this, key: this.key, from, to });
    }
    if (from === to || this.#o.onStateChange === undefined) return;
    try {
      this.#o.onStateChange({ key: this.key, from, to });
    } catch {
      // A hook that throws must not break the call that tripped the breaker.
    }
  }
}

function isResolved(
  options: BreakerOptions | BreakerSettings | undefined,
): options is BreakerSettings {
  return options !== undefined && options !== null && RESOLVED.has(options);
}

// Options objects made by `resolve`, so a registry can hand its breakers filled options.
const RESOLVED = new WeakSet<object>();

/** Checks and fills breaker options once; the result can be shared by many breakers. */
export function resolve(
  owner: string,
  options: unknown,
  extra: readonly string[] = [],
): BreakerSettings {
  const o = checkOptionsObject(owner, options);
  checkKnownKeys(owner, o, [...BREAKER_KEYS, ...extra]);
  const resolved = Object.freeze(resolveBreakerOptions(owner, o));
  RESOLVED.add(resolved);
  return resolved;
}

function checkSnapshot(s: unknown): BreakerSnapshot {
  const bad = (field: string, value: unknown) =>
    new TypeError(`stormproof: breaker snapshot ${field} is invalid, got ${show(value)}`);
  if (s === null || typeof s !== 'object') throw bad('', s);
  const r = s as Record<string, unknown>;
  if (typeof r.key !== 'string') throw bad('key', r.key);
  if (!STATES.includes(r.state as BreakerState)) throw bad('state', r.state);
  for (const f of ['level', 'failures'] as const) {
    if (!Number.isSafeInteger(r[f]) || (r[f] as number) < 0) throw bad(f, r[f]);
  }
  if (r.probeAt !== null && !Number.isFinite(r.probeAt)) throw bad('probeAt', r.probeAt);
  return r as unknown as BreakerSnapshot;
}

/** A token for a probe lease, unique across a fleet. */
function newToken(): string {
  return globalThis.crypto.randomUUID();
}
