// Fixtures several suites share.
import { runStorm, type StormOptions, type StormResult } from '../../src/sim/index.js';

/**
 * The fixed stack's one retrying layer, as a stack file writes it: 4 attempts, capped backoff
 * with full jitter, a 1 s attempt timeout, a 3 s deadline and a budget.
 */
export const CLIENT_LIBRARY_LAYER = {
  name: 'client library',
  attempts: 4,
  baseDelayMs: 200,
  maxDelayMs: 5000,
  jitter: 'full',
  timeoutMs: 1000,
  deadlineMs: 3000,
  budget: true,
} as const;

/** A small, quick stormproof storm: 1,000 requests a second from 100 instances of 10 each. */
export const SMALL_STORM: StormOptions = {
  policy: 'stormproof',
  rps: 1000,
  partnerInstances: 100,
  durationSeconds: 60,
  faultAtSeconds: 10,
  forecastKeys: 10_000,
};

/**
 * The timeout of a test that runs a full storm: about 6 s of computing on a quiet core, 23 s
 * measured on a 2-core machine with two other busy processes beside the suite (more than the
 * suite's 20 s). It is a computation, not a wait: a longer limit loses no check.
 */
export const FULL_STORM_TIMEOUT = 180_000;

/** Freezes a value and everything it holds, so no test can change what another one reads. */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}

/**
 * Runs each storm once per test file, on first use, and hands every caller the same frozen
 * result: a full storm takes seconds. The tests that run full storms are parts of one file
 * (test/storms.test.ts), so each storm is computed once for all of them.
 */
const storms = new Map<string, StormResult>();
export function runStormOnce(options: StormOptions): StormResult {
  const key = JSON.stringify(options);
  let result = storms.get(key);
  if (result === undefined) {
    result = deepFreeze(runStorm(options));
    storms.set(key, result);
  }
  return result;
}
