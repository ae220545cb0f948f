// Hedged attempts: when an attempt is slower than nearly all attempts, send a second copy and
// take whichever answers first ("The Tail at Scale", Dean and Barroso, CACM 2013). A hedge is a
// load multiplier, so every one is paid for from the retry budget and none is sent while the
// service pushes back, while the breaker is not closed, or while hedges stop winning (a
// saturated service makes every copy slow). Hedging lives inside one attempt: the engine sees an
// attempt that succeeded or failed, and its retries, waits and deadline are the same with or
// without hedges. An attempt's copies fail together: only when every copy sent has failed.

import { AttemptScope } from './attempt-scope.js';
import type { CircuitBreaker } from './breaker/breaker.js';
import type { Budget } from './budgets/budget.js';
import { classify } from './classify.js';
import { AttemptTimeoutError, DeadlineExceededError } from './errors.js';
import { type CallRef, channels, type HedgeMessage } from './instrument.js';
import type { AttemptContext, ResolvedPolicy } from './options.js';
import { checkKnownKeys, checkNumber, checkOptionsObject } from './validate.js';

const hedgeChannel = channels.hedge;

/** Options of `hedge`: when to send a second copy of a slow attempt. */
export interface HedgeOptions {
  /**
   * The most extra copies of one attempt (each waits its own delay after the one before).
   * @default 1
   * @example
   * ```ts
   * createRetryPolicy({ hedge: { maxHedges: 2 } })
   * ```
   */
  maxHedges?: number | undefined;
  /**
   * The extra load hedging may add, as a share of attempts: at most this share of attempts get
   * a hedge, and the hedge goes out after the latency that four fifths of this share of recent
   * successful attempts exceeded (0.05: the p96), each timed from its first copy (an attempt a
   * hedge won counts as slower than the delay). The fifth below the cap leaves room for an
   * estimate that lags a changing latency. Dean and Barroso's hedge after the p95 added about
   * 5 % load.
   * @default 0.05
   * @example
   * ```ts
   * createRetryPolicy({ hedge: { maxExtraLoad: 0.02 } }) // after the p98.4 (1 - 0.8 x 0.02)
   * ```
   */
  maxExtraLoad?: number | undefined;
  /**
   * A fixed delay before each hedge, in ms, instead of the learned one. Needed for `retry()`,
   * whose one call has no history to learn from.
   * @default undefined (learned from the last 1,024 successful attempts, after 20)
   * @example
   * ```ts
   * retry(op, { hedge: { delayMs: 50 } })
   * ```
   */
  delayMs?: number | undefined;
  /**
   * The learned delay never goes below this, in ms: a hedge sent sooner mostly duplicates work
   * that was about to finish (Dean and Barroso's BigTable test hedged after 10 ms).
   * @default 10
   * @example
   * ```ts
   * createRetryPolicy({ hedge: { minDelayMs: 25 } })
   * ```
   */
  minDelayMs?: number | undefined;
}

/** Why a hedge was not sent. */
export type HedgeRefusal =
  | 'budget'
  | 'extra-load'
  | 'pushback'
  | 'breaker'
  | 'not-winning'
  | 'too-late'
  | 'learning';

/** What hedging did in one call. */
export interface HedgeReport {
  /** Copies sent beyond the first, over all attempts. */
  readonly sent: number;
  /** Attempts a hedge answered first. */
  readonly won: number;
  /** Copies aborted because another copy answered first. */
  readonly cancelled: number;
  /** Hedges that were due but not sent, by reason. */
  readonly refused: Readonly<Partial<Record<HedgeRefusal, number>>>;
}

const HEDGE_KEYS = ['maxHedges', 'maxExtraLoad', 'delayMs', 'minDelayMs'];
/** Latencies kept, successful attempts learned from before the first learned hedge. */
const WINDOW = 1024;
const MIN_SAMPLES = 20;
/** Hedges earned and not spent are kept for this many windows of attempts. */
const ALLOWANCE_WINDOWS = 4;
/** The delay is the latency this share of `maxExtraLoad` of attempts exceeded. */
const QUANTILE_MARGIN = 0.8;
/**
 * A hedge goes only while its attempt has time left for this share of copies to answer: the
 * latency this share of recent successful attempts stayed under.
 */
const ANSWER_QUANTILE = 0.9;
/** The learned delay is recomputed every this many samples. */
const RECOMPUTE_EVERY = 32;
/** Hedges judged for "still winning", and how many of them must have won. */
const OUTCOMES = 16;
const MIN_WINS = 2;
/** While hedges are not winning, one due hedge in this many still goes, to see if they would. */
const PROBE_EVERY = 16;
/** A pushback without a wait of its own pauses hedging this long. */
const PUSHBACK_PAUSE_MS = 1000;

/**
 * The reason a losing copy's signal aborts with. Its `name` is `'AbortError'`, so clients that
 * take the signal stop quietly.
 */
export class HedgeLostError extends Error {
  override readonly name = 'AbortError';
  readonly code = 'STORMPROOF_HEDGE_LOST';
  constructor() {
    super('stormproof: another copy of this attempt answered first');
  }
}

/**
 * Where `value` goes among the first `size` values of `ordered` (in the order a typed array sorts:
 * NaN last): the first place whose value is not below it.
 */
function orderOf(ordered: Float64Array, size: number, value: number): number {
  let low = 0;
  let high = size;
  while (low < high) {
    const mid = (low + high) >>> 1;
    const v = ordered[mid]!;
    if (v < value || (Number.isNaN(value) && !Number.isNaN(v))) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** Hedging of one policy: its options and what its calls have learned, shared by all of them. */
export class Hedging {
  readonly maxHedges: number;
  readonly maxExtraLoad: number;
  readonly fixedDelayMs: number | undefined;
  readonly minDelayMs: number;
  /** The window's latencies in the order they came (a ring), and the same values in order. */
  private readonly latencies = new Float64Array(WINDOW);
  private readonly ordered = new Float64Array(WINDOW);
  private samples = 0;
  private learnedMs: number | undefined;
  /** The latency nine in ten recent successful attempts stayed under, once learned. */
  private answerMs = 0;
  /** The last OUTCOMES hedges, one bit each (1: won), newest lowest. */
  private outcomes = 0;
  private judged = 0;
  private probeCountdown = PROBE_EVERY;
  private pausedUntil = Number.NEGATIVE_INFINITY;
  /** Hedges that may go now; a fresh policy starts with one window's worth. */
  private allowance: number;

  constructor(owner: string, input: unknown) {
    const o = checkOptionsObject(`${owner} hedge`, input);
    checkKnownKeys(`${owner} hedge`, o, HEDGE_KEYS);
    this.maxHedges =
      o.maxHedges === undefined
        ? 1
        : checkNumber(owner, 'hedge.maxHedges', o.maxHedges, { min: 1, max: 4, integer: true });
    this.maxExtraLoad =
      o.maxExtraLoad === undefined
        ? 0.05
        : checkNumber(owner, 'hedge.maxExtraLoad', o.maxExtraLoad, {
            min: 0,
            minExclusive: true,
            max: 0.5,
          });
    this.fixedDelayMs =
      o.delayMs === undefined
        ? undefined
        : checkNumber(owner, 'hedge.delayMs', o.delayMs, { min: 0, max: 2 ** 31 - 1 });
    this.allowance = this.maxExtraLoad * WINDOW;
    this.minDelayMs =
      o.minDelayMs === undefined
        ? 10
        : checkNumber(owner, 'hedge.minDelayMs', o.minDelayMs, { min: 0, max: 2 ** 31 - 1 });
  }

  /** The delay before a hedge now, or undefined while too few attempts have been seen. */
  delayMs(): number | undefined {
    return this.fixedDelayMs ?? this.learnedMs;
  }

  /** A successful attempt's latency from its first copy, in ms. */
  learn(latencyMs: number): void {
    if (this.fixedDelayMs !== undefined) return;
    // The window is kept in order as it changes (a binary search and a move of part of it, a few
    // hundred nanoseconds): sorting all of it at each recompute took most of a hedged call's time.
    const ordered = this.ordered;
    let size = Math.min(this.samples, WINDOW);
    const slot = this.samples % WINDOW;
    if (this.samples >= WINDOW) {
      const at = orderOf(ordered, size, this.latencies[slot]!);
      ordered.copyWithin(at, at + 1, size);
      size--;
    }
    const at = orderOf(ordered, size, latencyMs);
    ordered.copyWithin(at + 1, at, size);
    ordered[at] = latencyMs;
    size++;
    this.latencies[slot] = latencyMs;
    this.samples++;
    if (this.samples >= MIN_SAMPLES && (this.samples - MIN_SAMPLES) % RECOMPUTE_EVERY === 0) {
      // A fifth below the cap: the estimate lags a changing latency, and hedges due beyond the
      // allowance would be refused at random, the slowest attempts among them.
      const share = QUANTILE_MARGIN * this.maxExtraLoad;
      const q = ordered[Math.min(size - 1, Math.floor((1 - share) * size))]!;
      this.learnedMs = Math.max(this.minDelayMs, q);
      this.answerMs = ordered[Math.floor(ANSWER_QUANTILE * size)]!;
    }
  }

  /**
   * A hedged attempt ended: whether a hedge answered first with a success. An attempt that ended
   * with no success at all (every copy failed, or its time ran out) is one the hedge did not win:
   * a saturated service makes every copy slow, and its attempts time out rather than succeed.
   */
  judge(hedgeWon: boolean): void {
    this.outcomes = ((this.outcomes << 1) | (hedgeWon ? 1 : 0)) & ((1 << OUTCOMES) - 1);
    if (this.judged < OUTCOMES) this.judged++;
  }

  /** A copy failed with what the service says is overload: no hedges for a while. */
  pushedBack(nowMs: number, waitMs: number | undefined): void {
    this.pausedUntil = Math.max(this.pausedUntil, nowMs + (waitMs ?? PUSHBACK_PAUSE_MS));
  }

  /** An attempt started: it earns hedging `maxExtraLoad` of one hedge. */
  started(): void {
    // Each attempt earns `maxExtraLoad` of a hedge, kept for four latency windows of attempts:
    // over time hedges stay within that share of attempts (Finagle's BackupRequestFilter caps
    // them with a budget of the same share), and a burst of slow attempts is still covered.
    this.allowance = Math.min(
      ALLOWANCE_WINDOWS * this.maxExtraLoad * WINDOW,
      this.allowance + this.maxExtraLoad,
    );
  }

  /**
   * A hedge is due: undefined when it may go (and it is paid for, from the allowance and the
   * retry budget), or why not. `endsAtMs` is when the attempt's timeout or the call's deadline
   * will end every copy. The budget is asked last, so a refusal for another reason spends
   * nothing.
   */
  decide(
    nowMs: number,
    endsAtMs: number,
    breaker: CircuitBreaker | undefined,
    budget: Budget | undefined,
  ): HedgeRefusal | undefined {
    if (nowMs < this.pausedUntil) return 'pushback';
    if (breaker !== undefined && breaker.state !== 'closed') return 'breaker';
    // A copy that most copies could not answer in the time left is load and nothing else: it is
    // cut off with its attempt. Near saturation latency climbs toward the attempt's timeout, so
    // this is where hedges stop first (Vulimiri et al. 2013: duplication only pays well below
    // capacity).
    if (endsAtMs - nowMs < this.answerMs) return 'too-late';
    if (this.judged >= OUTCOMES && popCount(this.outcomes) < MIN_WINS) {
      if (--this.probeCountdown > 0) return 'not-winning';
      this.probeCountdown = PROBE_EVERY;
    }
    if (this.allowance < 1) return 'extra-load';
    if (budget !== undefined && !budget.tryRetry(nowMs)) return 'budget';
    this.allowance -= 1;
    return undefined;
  }
}

function popCount(bits: number): number {
  let n = 0;
  for (let b = bits; b !== 0; b &= b - 1) n++;
  return n;
}

/** Whether a failure says the service is overloaded, and the wait it asked for. */
function overloadOf(failure: unknown): { waitMs: number | undefined } | undefined {
  const verdict = classify(failure);
  const waitMs = verdict.pushbackMs ?? verdict.retryAfterMs;
  if (
    waitMs !== undefined ||
    verdict.kind === 'do-not-retry' ||
    verdict.kind === 'throttled' ||
    verdict.status === 503
  ) {
    return { waitMs };
  }
  return undefined;
}

/** A call's counts, filled as its attempts hedge. */
export interface HedgeCounts {
  sent: number;
  won: number;
  cancelled: number;
  refused: Partial<Record<HedgeRefusal, number>>;
}

export function hedgeCounts(): HedgeCounts {
  return { sent: 0, won: 0, cancelled: 0, refused: {} };
}

/** The report's copy of a call's counts. */
export function hedgeReport(counts: HedgeCounts): HedgeReport {
  return { ...counts, refused: { ...counts.refused } };
}

/** One copy of an attempt: what the operation sees, and how to stop it. */
class Copy extends AttemptScope {
  /** It answered or failed. */
  done = false;

  constructor(
    attempt: number,
    /** 0 for the first copy, 1 and up for hedges. */
    readonly hedge: number,
    readonly startedAt: number,
  ) {
    super(attempt);
  }
}

/** How an attempt's copies tell a failed value (a 503 Response) from a success. */
export interface CopyCheck<T> {
  isFailure(value: T): boolean;
  discard?(value: T): void;
  isCopyConflict?(failure: unknown): boolean;
}

/**
 * A hedge's timer this much later than its time says the process stalled (a real timer is
 * otherwise about 1 ms late).
 */
const STALLED_MS = 5;

/**
 * Runs one attempt as up to `1 + maxHedges` copies of `operation`, all ended at `endsAtMs` (the
 * attempt's timeout or the call's deadline). Settles with the first copy
 * that succeeds (the others aborted through their signals, their late values discarded), or,
 * once every copy sent has failed, with the last failure: thrown, or a failed value returned.
 * A hedge's failure that only reports a copy in progress (`check.isCopyConflict`) is the
 * attempt's failure only when no other copy's failure is there to be it.
 */
export function runHedged<T>(
  policy: ResolvedPolicy,
  hedging: Hedging,
  operation: (context: AttemptContext) => T | PromiseLike<T>,
  context: AttemptContext,
  endsAtMs: number,
  check: CopyCheck<T> | undefined,
  breaker: CircuitBreaker | undefined,
  counts: HedgeCounts,
  owner?: { callRef(): CallRef },
): Promise<T> {
  const clock = policy.clock;
  /** Reports to `stormproof:hedge` (only called while someone listens). */
  const report = (type: HedgeMessage['type'], reason?: string) => {
    if (owner === undefined) return;
    hedgeChannel.publish({ type, call: owner.callRef(), attempt: context.attempt, reason });
  };
  return new Promise<T>((resolve, reject) => {
    const copies: Copy[] = [];
    let running = 0;
    let settled = false;
    /** The failure that decides the attempt if every copy fails: held, not yet discarded. */
    let decisive: { failure: unknown; isValue: boolean; conflict: boolean } | undefined;
    const setAside = (f: { failure: unknown; isValue: boolean }) => {
      if (f.isValue) check?.discard?.(f.failure as T);
    };
    const timer = new AbortController();
    const attemptSignal = context.signal;

    const finish = () => {
      settled = true;
      timer.abort();
      attemptSignal.removeEventListener('abort', onAttemptAbort);
    };
    const onAttemptAbort = () => {
      // The engine ended the attempt (deadline, timeout, the caller): every copy stops with it.
      for (const copy of copies) copy.end(attemptSignal.reason);
      finish();
      // Out of time with a hedge out and no answer: the hedge did not win. (A caller that gave
      // up says nothing about the service.)
      const reason: unknown = attemptSignal.reason;
      if (
        copies.length > 1 &&
        (reason instanceof AttemptTimeoutError || reason instanceof DeadlineExceededError)
      ) {
        hedging.judge(false);
      }
      if (decisive !== undefined) setAside(decisive);
    };
    attemptSignal.addEventListener('abort', onAttemptAbort);

    const failed = (copy: Copy, failure: unknown, isValue: boolean) => {
      copy.done = true;
      running--;
      if (settled) {
        if (isValue) check?.discard?.(failure as T);
        return;
      }
      const overload = overloadOf(failure);
      if (overload !== undefined) hedging.pushedBack(clock.now(), overload.waitMs);
      // The latest failure decides, unless it is a hedge's conflict and another copy's failure
      // is already there (a keyed request's 409 answers the duplicate, not the request).
      const conflict = copy.hedge > 0 && check?.isCopyConflict?.(failure) === true;
      const next = { failure, isValue, conflict };
      if (decisive === undefined || !conflict || decisive.conflict) {
        if (decisive !== undefined) setAside(decisive);
        decisive = next;
      } else setAside(next);
      if (running > 0) return; // another copy may still answer
      finish();
      if (copies.length > 1) hedging.judge(false);
      const { failure: chosen, isValue: chosenIsValue } = decisive;
      if (chosenIsValue) resolve(chosen as T);
      else reject(chosen);
    };
    const succeeded = (copy: Copy, value: T) => {
      copy.done = true;
      running--;
      if (settled) {
        check?.discard?.(value);
        return;
      }
      finish();
      if (decisive !== undefined) setAside(decisive);
      // The attempt's time from its first copy: what it would have taken without hedging, or,
      // when a hedge won, a bound above the delay, which is all a quantile near it needs.
      hedging.learn(clock.now() - copies[0]!.startedAt);
      if (copies.length > 1) {
        hedging.judge(copy.hedge > 0);
        if (copy.hedge > 0) {
          counts.won++;
          if (hedgeChannel.hasSubscribers) report('won');
        }
      }
      for (const other of copies) {
        if (!other.done) {
          other.end(new HedgeLostError());
          counts.cancelled++;
          if (hedgeChannel.hasSubscribers) report('cancelled');
        }
      }
      resolve(value);
    };
    const start = (hedge: number) => {
      const copy = new Copy(context.attempt, hedge, clock.now());
      copies.push(copy);
      running++;
      let result: T | PromiseLike<T>;
      try {
        result = operation(copy);
      } catch (error) {
        failed(copy, error, false);
        return;
      }
      Promise.resolve(result).then(
        (value) => {
          if (check?.isFailure(value)) failed(copy, value, true);
          else succeeded(copy, value);
        },
        (error: unknown) => failed(copy, error, false),
      );
    };
    const schedule = (hedge: number) => {
      const delayMs = hedging.delayMs();
      if (delayMs === undefined) {
        counts.refused.learning = (counts.refused.learning ?? 0) + 1;
        if (hedgeChannel.hasSubscribers) report('refused', 'learning');
        return;
      }
      const dueAtMs = clock.now() + delayMs;
      const send = () => {
        if (settled) return;
        const refusal = hedging.decide(clock.now(), endsAtMs, breaker, policy.budget);
        if (refusal !== undefined) {
          counts.refused[refusal] = (counts.refused[refusal] ?? 0) + 1;
          if (hedgeChannel.hasSubscribers) report('refused', refusal);
          return;
        }
        counts.sent++;
        if (hedgeChannel.hasSubscribers) report('sent');
        start(hedge);
        if (hedge < hedging.maxHedges && !settled) schedule(hedge + 1);
      };
      clock.sleep(delayMs, timer.signal).then(() => {
        // A timer that fired well after its time (the process stalled: a long task, a GC pause,
        // a busy machine) runs before the sockets are read, and the first copy's answer may be
        // waiting in one: the hedge waits one more turn of the event loop, so that such an
        // answer ends the attempt instead of being sent for again (test/hedge-stall.test.ts).
        if (clock.now() - dueAtMs > STALLED_MS) clock.sleep(0, timer.signal).then(send, noop);
        else send();
      }, noop);
    };

    hedging.started();
    start(0);
    if (!settled) schedule(1);
  });
}

const noop = () => {};
