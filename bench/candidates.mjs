// The contenders, each set up as its documentation shows, wrapped to the same shape:
// `run(fn)` returns a promise of fn's value, retrying fn's failures.
import { ConfiguredRetryStrategy, StandardRetryStrategy } from '@smithy/util-retry';
import asyncRetry from 'async-retry';
import { ConstantBackoff, retry as cockatielRetry, ExponentialBackoff, handleAll } from 'cockatiel';
import { backOff } from 'exponential-backoff';
import pRetry from 'p-retry';
import { createRetryPolicy, retry } from '../dist/index.js';

/** Retryable as stormproof's default classifier sees it (an HTTP 503). */
export class Unavailable extends Error {
  status = 503;
}

/** How the AWS SDK's retry middleware drives a smithy strategy (it always sleeps on a timer). */
async function smithy(strategy, fn) {
  let token = await strategy.acquireInitialRetryToken('bench');
  for (;;) {
    try {
      const value = await fn();
      strategy.recordSuccess(token);
      return value;
    } catch {
      token = await strategy.refreshRetryTokenForRetry(token, { errorType: 'TRANSIENT' });
      await new Promise((resolve) => setTimeout(resolve, token.getRetryDelay()));
    }
  }
}

const pass = (value) => value;
const rethrow = (error) => {
  throw error;
};

/** Defaults, for the success path: every library as a user would first write it. */
export function successPath() {
  const policy = createRetryPolicy();
  const cockatiel = cockatielRetry(handleAll, {
    maxAttempts: 3,
    backoff: new ExponentialBackoff(),
  });
  const standard = new StandardRetryStrategy(3);
  return {
    // The floor: the least any wrapper that watches the outcome can do.
    'fn().then(ok, fail)': (fn) => fn().then(pass, rethrow),
    // The floor for a wrapper that can settle before fn does (at a deadline fn ignores): a
    // promise of its own, settled by fn's outcome or by something else.
    'own promise around fn()': (fn) =>
      new Promise((resolve, reject) => {
        fn().then(resolve, reject);
      }),
    // The other way to keep a deadline: a platform timer per call, armed and cleared (stormproof
    // instead puts calls that share a deadline in one list behind one timer).
    'own promise + a timer per call': (fn) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('deadline')), 3000);
        fn().then(
          (value) => {
            clearTimeout(timer);
            resolve(value);
          },
          (error) => {
            clearTimeout(timer);
            reject(error);
          },
        );
      }),
    'stormproof retry()': (fn) => retry(fn),
    // A fresh options literal per call, as people write it inline: resolved and checked each time.
    'stormproof retry(fn, options)': (fn) => retry(fn, { maxAttempts: 3, deadlineMs: 2000 }),
    'stormproof policy.retry()': (fn) => policy.retry(fn),
    'p-retry': (fn) => pRetry(fn),
    cockatiel: (fn) => cockatiel.execute(fn),
    'exponential-backoff': (fn) => backOff(fn),
    'async-retry': (fn) => asyncRetry(fn),
    '@smithy/util-retry': (fn) => smithy(standard, fn),
  };
}

/** Every delay set to 0, for the retry path: what is left is each library's own cost. */
export function zeroDelay() {
  const policy = createRetryPolicy({ baseDelayMs: 0, maxDelayMs: 0, budget: false });
  const cockatiel = cockatielRetry(handleAll, { maxAttempts: 3, backoff: new ConstantBackoff(0) });
  return {
    'hand-written loop': async (fn) => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await fn();
        } catch (error) {
          if (attempt >= 4) throw error;
        }
      }
    },
    'stormproof policy.retry()': (fn) => policy.retry(fn),
    'p-retry': (fn) => pRetry(fn, { retries: 3, minTimeout: 0, maxTimeout: 0 }),
    cockatiel: (fn) => cockatiel.execute(fn),
    'exponential-backoff': (fn) => backOff(fn, { numOfAttempts: 4, startingDelay: 0, maxDelay: 0 }),
    'async-retry': (fn) => asyncRetry(fn, { retries: 3, minTimeout: 0, maxTimeout: 0 }),
    // A strategy per call: one shared strategy's retry quota (500 tokens, 14 a retry) runs dry
    // within the benchmark, as every budget would; stormproof's budget is off here too.
    '@smithy/util-retry': (fn) => smithy(new ConfiguredRetryStrategy(4, 0), fn),
  };
}
