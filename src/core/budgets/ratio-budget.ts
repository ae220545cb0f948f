// Finagle's retry budget (also Linkerd's): requests deposit, retries withdraw, and both expire
// after a time-to-live, so the budget follows the recent request rate instead of all history.

import { channels } from '../instrument.js';
import { checkKnownKeys, checkNumber, checkOptionsObject, given, show } from '../validate.js';
import type { Budget } from './budget.js';

const budgetChannel = channels.budget;

/** Options of {@link RatioBudget}. The defaults are Finagle's and Linkerd's. */
export interface RatioBudgetOptions {
  /**
   * Retries allowed per request sent within the last `ttlMs`: 0, or from 0.001 (one retry per
   * 1000 requests) to 1. 0 leaves only the reserve of `minRetriesPerSecond`.
   * @default 0.2
   * @example
   * ```ts
   * new RatioBudget({ retryRatio: 0.1 }); // one retry per 10 recent requests, plus the reserve
   * ```
   */
  retryRatio?: number | undefined;
  /**
   * Retries allowed per second on top of the ratio, so a client that has just started or sends
   * few requests can still retry. The reserve is `minRetriesPerSecond * ttlMs / 1000` retries
   * (rounded down) within any `ttlMs`. A whole number from 0 to 1,000,000.
   * @default 10
   * @example
   * ```ts
   * new RatioBudget({ minRetriesPerSecond: 0 }); // retries come only from recent requests
   * ```
   */
  minRetriesPerSecond?: number | undefined;
  /**
   * How long, in ms, a request's deposit and a retry's withdrawal count. A whole number from 10
   * (so each of the window's 10 slices is at least 1 ms long) to 3,600,000 (an hour).
   * @default 10_000
   * @example
   * ```ts
   * new RatioBudget({ ttlMs: 60_000 }); // follows the last minute of traffic
   * ```
   */
  ttlMs?: number | undefined;
}

const KEYS = ['retryRatio', 'minRetriesPerSecond', 'ttlMs'] as const;

/** Finagle splits the window into 10 slices; so do we. */
const SLICES = 10;

/** A request's deposit: 1000 units, so a ratio's cost 1000 / ratio is a whole number of units. */
const DEPOSIT = 1000;

/**
 * A sum over the last `SLICES` slices of time. Old slices drop out as time moves on. Time comes
 * only from the `nowMs` the caller passes, never from a clock of its own. Slices are aligned to
 * multiples of the slice length, so an entry counts for between `ttl - ttl/10` and `ttl`.
 */
class WindowedSum {
  readonly #sliceMs: number;
  readonly #slices: number[] = new Array<number>(SLICES).fill(0);
  /** The number of the newest slice (`floor(nowMs / sliceMs)`), or undefined before any time. */
  #head: number | undefined;
  #total = 0;

  constructor(ttlMs: number) {
    this.#sliceMs = ttlMs / SLICES;
  }

  get total(): number {
    return this.#total;
  }

  /** Moves the window up to `nowMs`. Time that goes back, or is not finite, moves nothing. */
  advance(nowMs: number): void {
    const slice = Math.floor(nowMs / this.#sliceMs);
    if (!Number.isFinite(slice)) return;
    if (this.#head === undefined) {
      this.#head = slice;
      return;
    }
    if (slice <= this.#head) return;
    const expired = Math.min(slice - this.#head, SLICES);
    for (let step = 1; step <= expired; step++) {
      const i = ring(this.#head + step);
      this.#total -= this.#slices[i] ?? 0;
      this.#slices[i] = 0;
    }
    this.#head = slice;
  }

  /** Adds `amount` (negative to subtract) to the newest slice. */
  add(amount: number): void {
    const i = ring(this.#head ?? 0);
    this.#slices[i] = (this.#slices[i] ?? 0) + amount;
    this.#total += amount;
  }
}

/** A slice number's place in the ring, also for negative numbers. */
function ring(slice: number): number {
  return ((slice % SLICES) + SLICES) % SLICES;
}

/** `DEPOSIT / ratio` rounded down, except that a quotient within float error of a whole number is that number. */
function costOf(ratio: number): number {
  const quotient = DEPOSIT / ratio;
  const nearest = Math.round(quotient);
  // 1000 / (1 / 93) is 92999.99999999999 in floating point; it means 93000.
  return Math.abs(quotient - nearest) <= quotient * 1e-12 ? nearest : Math.floor(quotient);
}

/**
 * A retry budget that follows the recent request rate, as Finagle's `RetryBudget` (and Linkerd's
 * retry budget) does: each request deposits 1000 units, each retry withdraws `1000 / retryRatio`
 * units (rounded down) if the balance allows it, and both expire after `ttlMs`. A permanent
 * reserve worth `minRetriesPerSecond * ttlMs / 1000` retries lets a new or quiet client retry too.
 *
 * So within any `ttlMs`, retries are at most the reserve plus `retryRatio` times the requests
 * (a little more when `1000 / retryRatio` is not a whole number and is rounded down).
 * With the defaults (Finagle's: ratio 0.2, 10 per second, 10 s) an idle client may send 100
 * retries, and each 5 requests allow one more. Deposits and withdrawals are kept, as in Finagle,
 * in one sum over a window of `ttlMs` split into 10 slices; an entry drops out between 0.9 and 1
 * `ttlMs` after it was made. Time comes only from the `nowMs` the engine passes.
 *
 * With `retryRatio` 0, requests deposit nothing and a retry withdraws 1 unit (Finagle's rule),
 * so only the reserve is left. Successes and failures are not counted.
 *
 * @example
 * ```ts
 * const policy = createRetryPolicy({ budget: new RatioBudget({ retryRatio: 0.2 }) });
 * ```
 */
export class RatioBudget implements Budget {
  /** Retries allowed per recent request. */
  readonly retryRatio: number;
  /** Retries per second allowed on top of the ratio. */
  readonly minRetriesPerSecond: number;
  /** How long, in ms, deposits and withdrawals count. */
  readonly ttlMs: number;
  /** Units one retry withdraws: `1000 / retryRatio` rounded down, or 1 when `retryRatio` is 0. */
  readonly retryCost: number;
  /** Units of the permanent reserve: `floor(minRetriesPerSecond * ttlMs / 1000)` retries' worth. */
  readonly reserve: number;
  readonly #deposit: number;
  readonly #window: WindowedSum;

  /** Throws a TypeError or RangeError naming the option and the value when an option is bad. */
  constructor(options?: RatioBudgetOptions) {
    const o = checkOptionsObject('RatioBudget', options);
    checkKnownKeys('RatioBudget', o, KEYS);
    // The bounds keep every sum of units a safe integer: a retry costs at most 1,000,000 units
    // and the reserve is at most 1e6 per second x 3600 s of them.
    this.retryRatio = checkNumber('RatioBudget', 'retryRatio', given(o.retryRatio, 0.2), {
      min: 0,
      max: 1,
    });
    if (this.retryRatio > 0 && this.retryRatio < 0.001) {
      throw new RangeError(
        `stormproof: RatioBudget retryRatio must be 0 or from 0.001 to 1, got ${show(this.retryRatio)}`,
      );
    }
    this.minRetriesPerSecond = checkNumber(
      'RatioBudget',
      'minRetriesPerSecond',
      given(o.minRetriesPerSecond, 10),
      { min: 0, max: 1_000_000, integer: true },
    );
    this.ttlMs = checkNumber('RatioBudget', 'ttlMs', given(o.ttlMs, 10_000), {
      min: 10,
      max: 3_600_000,
      integer: true,
    });
    this.#deposit = this.retryRatio === 0 ? 0 : DEPOSIT;
    this.retryCost = this.retryRatio === 0 ? 1 : costOf(this.retryRatio);
    this.reserve = Math.floor((this.minRetriesPerSecond * this.ttlMs) / 1000) * this.retryCost;
    this.#window = new WindowedSum(this.ttlMs);
  }

  /**
   * Units available as of the latest time given to a hook (or to `retriesAvailable`): the reserve
   * plus recent deposits minus recent withdrawals. It can dip below 0 for a while when deposits
   * expire before the withdrawals they paid for.
   */
  get balance(): number {
    return this.reserve + this.#window.total;
  }

  /**
   * How many retries `tryRetry` would allow, one after another, at `nowMs` (or at the latest time
   * given when `nowMs` is absent).
   */
  retriesAvailable(nowMs?: number): number {
    if (nowMs !== undefined) this.#window.advance(nowMs);
    return Math.max(0, Math.floor(this.balance / this.retryCost));
  }

  /** Deposits 1000 units that count for `ttlMs`. */
  recordRequest(nowMs: number): void {
    this.#window.advance(nowMs);
    this.#window.add(this.#deposit);
  }

  /** Not counted by this budget. */
  recordSuccess(): void {}

  /** Not counted by this budget. */
  recordFailure(_nowMs: number, _retryable: boolean): void {}

  /** Withdraws `retryCost` units and returns true when the balance holds them; otherwise false. */
  tryRetry(nowMs: number): boolean {
    this.#window.advance(nowMs);
    const allowed = this.balance >= this.retryCost;
    if (allowed) this.#window.add(-this.retryCost);
    if (budgetChannel.hasSubscribers) {
      budgetChannel.publish({
        type: allowed ? 'allowed' : 'refused',
        budget: this,
        tokens: this.balance,
      });
    }
    return allowed;
  }
}
