// The storm story's credit counter: requests earn credits, retries spend them. Whole
// numbers only, so the count never drifts the way repeated float additions do.

import { channels } from '../instrument.js';
import { checkKnownKeys, checkNumber, checkOptionsObject, given } from '../validate.js';
import type { Budget } from './budget.js';

const budgetChannel = channels.budget;

/** Options of {@link RetryBudget}. Both are whole numbers. */
export interface RetryBudgetOptions {
  /**
   * The most credits the budget can hold; it starts this full. The cap stops a quiet spell from
   * saving up a pile of credits that would later allow a burst of retries.
   * @default 100
   * @example
   * ```ts
   * new RetryBudget({ maxCredits: 50 }); // a burst of 5 retries at most, at the default cost
   * ```
   */
  maxCredits?: number | undefined;
  /**
   * Credits one retry spends. Each request earns 1, so the long-run allowance is about one
   * retry per `cost` requests. Between 1 and `maxCredits`.
   * @default 10
   * @example
   * ```ts
   * new RetryBudget({ cost: 20 }); // about one retry per 20 requests once the burst is spent
   * ```
   */
  cost?: number | undefined;
}

const KEYS = ['maxCredits', 'cost'] as const;

/**
 * A credit counter, exactly the budget of the storm story (docs/storm.md): every new request
 * earns 1 credit up to `maxCredits`, every retry spends `cost`, and
 * a retry is refused when fewer than `cost` credits are left.
 *
 * It starts full, so a short blip can still retry at once (10 retries with the defaults); in a
 * long outage it empties, and then allows about one retry per `cost` requests. In the storm
 * story's test, 1,000 calls to an always-failing service with 4 attempts each make 4,000
 * attempts without a budget and 1,109 with this one. Successes and failures are not counted.
 *
 * @example
 * ```ts
 * const policy = createRetryPolicy({ budget: new RetryBudget({ maxCredits: 100, cost: 10 }) });
 * ```
 */
export class RetryBudget implements Budget {
  /** The most credits the budget holds. */
  readonly maxCredits: number;
  /** Credits one retry spends. */
  readonly cost: number;
  #credits: number;

  /** Throws a TypeError or RangeError naming the option and the value when an option is bad. */
  constructor(options?: RetryBudgetOptions) {
    const o = checkOptionsObject('RetryBudget', options);
    checkKnownKeys('RetryBudget', o, KEYS);
    // A safe-integer cap keeps `credits + 1` exact.
    this.maxCredits = checkNumber('RetryBudget', 'maxCredits', given(o.maxCredits, 100), {
      min: 1,
      max: Number.MAX_SAFE_INTEGER,
      integer: true,
    });
    this.cost = checkNumber('RetryBudget', 'cost', given(o.cost, 10), {
      min: 1,
      max: this.maxCredits,
      integer: true,
    });
    this.#credits = this.maxCredits;
  }

  /** Credits left now, a whole number in [0, maxCredits]. */
  get credits(): number {
    return this.#credits;
  }

  /** Earns 1 credit, up to `maxCredits`. */
  recordRequest(_nowMs: number): void {
    if (this.#credits < this.maxCredits) this.#credits += 1;
  }

  /** Not counted by this budget. */
  recordSuccess(): void {}

  /** Not counted by this budget. */
  recordFailure(_nowMs: number, _retryable: boolean): void {}

  /** Spends `cost` credits and returns true when that many are left; otherwise returns false. */
  tryRetry(_nowMs: number): boolean {
    const allowed = this.#credits >= this.cost;
    if (allowed) this.#credits -= this.cost;
    if (budgetChannel.hasSubscribers) {
      budgetChannel.publish({
        type: allowed ? 'allowed' : 'refused',
        budget: this,
        tokens: this.#credits,
      });
    }
    return allowed;
  }
}
