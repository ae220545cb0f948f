// The storm story's retry budget test, driven through the library's real `retry()` and
// `RetryBudget`: 1000 requests to a service that always answers 503, first without a budget,
// then with one. Sleeps resolve at once on a virtual clock, so the test takes milliseconds.
import { RetryBudget } from '../core/budgets/retry-budget.js';
import type { Clock } from '../core/clock.js';
import { retry } from '../core/retry.js';
import { checkKnownKeys, checkNumber, checkOptionsObject } from '../core/validate.js';
import { checkSeed, PythonRandom } from './python-random.js';

/** The options of {@link runBudgetTest}. Every field is optional; the defaults are the storm story's. */
export interface BudgetTestOptions {
  /**
   * How many requests are sent, one after another. An integer from 0 to 1,000,000.
   * @default 1000
   * @example
   * ```ts
   * await runBudgetTest({ requests: 10_000 })
   * ```
   */
  requests?: number | undefined;
  /**
   * Attempts per request, the first one included (the engine's `maxAttempts`). An integer from
   * 1 to 100.
   * @default 4
   * @example
   * ```ts
   * await runBudgetTest({ maxAttempts: 3 }) // the SRE book's limit
   * ```
   */
  maxAttempts?: number | undefined;
  /**
   * Credits one retry spends (`RetryBudget`'s `cost`).
   * @default 10
   * @example
   * ```ts
   * await runBudgetTest({ cost: 20 })
   * ```
   */
  cost?: number | undefined;
  /**
   * The most credits the budget holds, and what it starts with (`RetryBudget`'s `maxCredits`).
   * @default 100
   * @example
   * ```ts
   * await runBudgetTest({ maxCredits: 50 })
   * ```
   */
  maxCredits?: number | undefined;
  /**
   * Seed of the CPython-compatible generator that draws the jitter. With 4 attempts or fewer
   * the counts do not depend on it (full-jitter waits add up to at most 1.4 s, inside the 3 s
   * deadline); the virtual time does.
   * @default 7
   * @example
   * ```ts
   * await runBudgetTest({ seed: 1 })
   * ```
   */
  seed?: number | bigint | undefined;
}

/** One half of the test: with or without the budget. */
export interface BudgetTestRun {
  /** Attempts that reached the service, first tries included. */
  readonly calls: number;
  /** Of those, the retries. */
  readonly retries: number;
  /** Calls made by each request, in order (1 to `maxAttempts`). */
  readonly callsPerRequest: readonly number[];
  /** Virtual milliseconds the run took (all sleeps added up). */
  readonly virtualTimeMs: number;
}

/** What {@link runBudgetTest} reports. */
export interface BudgetTestResult {
  /** Every request retried up to `maxAttempts`: `requests * maxAttempts` calls. */
  readonly withoutBudget: BudgetTestRun;
  /** The same requests sharing one `RetryBudget`. */
  readonly withBudget: BudgetTestRun;
}

const OWNER = 'runBudgetTest';
const KNOWN_KEYS = ['requests', 'maxAttempts', 'cost', 'maxCredits', 'seed'] as const;

/** A clock whose sleeps resolve at once and move virtual time forward. */
function instantClock(): Clock & { t: number } {
  const clock = {
    t: 0,
    now: () => clock.t,
    sleep: (ms: number, signal?: AbortSignal): Promise<void> => {
      if (signal?.aborted) return Promise.reject(signal.reason);
      clock.t += ms;
      return Promise.resolve();
    },
  };
  return clock;
}

async function runOnce(
  requests: number,
  maxAttempts: number,
  seed: number | bigint,
  budget: RetryBudget | false,
): Promise<BudgetTestRun> {
  const clock = instantClock();
  const rng = new PythonRandom(seed);
  const random = () => rng.random();
  const callsPerRequest: number[] = [];
  let calls = 0;
  for (let i = 0; i < requests; i++) {
    let made = 0;
    try {
      await retry(
        () => {
          made++;
          throw Object.assign(new Error('HTTP 503'), { status: 503 });
        },
        // The storm story's loop: 4 attempts, base 0.2 s, cap 5 s, deadline 3 s, full jitter.
        { maxAttempts, clock, random, budget },
      );
    } catch {
      // Every request ends in a 503: that is the test.
    }
    calls += made;
    callsPerRequest.push(made);
  }
  return { calls, retries: calls - requests, callsPerRequest, virtualTimeMs: clock.t };
}

/**
 * The storm story's budget test: `requests` requests, one after another, to a service that
 * always answers 503, each through the library's `retry()` with up to `maxAttempts` attempts,
 * first without a budget and then sharing one `RetryBudget`. The clock is virtual (a sleep
 * resolves at once and moves time on), so nothing waits for real.
 *
 * With the defaults: 4000 calls without the budget, and 1109 with it: 1000 first tries, 10
 * retries from the full counter, then about one per 10 requests.
 *
 * @throws TypeError or RangeError naming the option and value when an option is invalid or unknown.
 * @example
 * ```ts
 * const r = await runBudgetTest();
 * r.withoutBudget.calls; // 4000
 * r.withBudget.calls;    // 1109
 * ```
 */
export async function runBudgetTest(options?: BudgetTestOptions): Promise<BudgetTestResult> {
  const o = checkOptionsObject(OWNER, options);
  checkKnownKeys(OWNER, o, KNOWN_KEYS);
  const requests = checkNumber(OWNER, 'requests', o.requests ?? 1000, {
    min: 0,
    max: 1_000_000,
    integer: true,
  });
  const maxAttempts = checkNumber(OWNER, 'maxAttempts', o.maxAttempts ?? 4, {
    min: 1,
    max: 100,
    integer: true,
  });
  const seed = checkSeed(OWNER, o.seed ?? 7);
  // RetryBudget checks its own options and names them.
  const budget = new RetryBudget({ cost: o.cost as number, maxCredits: o.maxCredits as number });
  return {
    withoutBudget: await runOnce(requests, maxAttempts, seed, false),
    withBudget: await runOnce(requests, maxAttempts, seed, budget),
  };
}
