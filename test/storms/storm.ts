// The `storm` scenario: the storm story's weather API and its 30-second database failover.
// The three behaviours the issue asks for are asserted on the result's figures with the default
// seed; the rest checks that the runs repeat, that the stormproof clients really go through the
// engine (budget, attempts, Retry-After) and that options are validated.
import { describe, expect, it } from 'vitest';
import type { Budget } from '../../src/core/budgets/budget.js';
import { RetryBudget } from '../../src/core/budgets/retry-budget.js';
import {
  runStorm,
  type StormLiveSecond,
  type StormOptions,
  type StormResult,
} from '../../src/sim/storm.js';
import { FULL_STORM_TIMEOUT, runStormOnce, SMALL_STORM } from '../helpers/fixtures.js';

/** Success ratio of the user requests that ended in the last `n` seconds of the run. */
function tailSuccess(result: StormResult, n: number): number {
  const tail = result.series.slice(-n);
  const ok = tail.reduce((sum, s) => sum + s.succeeded, 0);
  const failed = tail.reduce((sum, s) => sum + s.failed, 0);
  return ok / (ok + failed);
}

describe('runStorm with the defaults', { timeout: FULL_STORM_TIMEOUT }, () => {
  it('naive: the metastable state, several times normal load and still failing at the end', () => {
    const r = runStormOnce({ policy: 'naive' });
    expect(r.normalRps).toBeGreaterThan(3800);
    expect(r.normalRps).toBeLessThan(4200);
    expect(r.dbHealthyAtSeconds).toBe(40);
    expect(r.peakRpsAfterFailover).toBeGreaterThan(4 * r.normalRps);
    expect(r.recoveredAfterFaultSeconds).toBeNull();
    expect(r.recovery).toBeNull();
    // Long after the database is back: the load is still high and almost nothing succeeds...
    const last = r.series.slice(-20);
    expect(Math.min(...last.map((s) => s.load))).toBeGreaterThan(3 * r.normalRps);
    expect(tailSuccess(r, 20)).toBeLessThan(0.05);
    // ...although the cache is warm again: the API servers work for callers that have hung up.
    expect(Math.min(...last.map((s) => s.cacheHitRatio))).toBeGreaterThan(0.8);
    expect(last.reduce((sum, s) => sum + s.wasted, 0)).toBeGreaterThan(20 * r.normalRps);
    expect(r.series).toHaveLength(180);
  });

  it('naive with manual recovery: recovers only after the shedding and the 20% steps', () => {
    const r = runStormOnce({ policy: 'naive', manualRecovery: true });
    const recovery = r.recovery;
    expect(recovery).not.toBeNull();
    expect(recovery?.shedAtSeconds).toBe(100);
    expect(recovery?.steps.map(([, share]) => share)).toEqual([0.2, 0.4, 0.6, 0.8, 1]);
    const reopened = recovery?.reopenedAtSeconds;
    expect(reopened).toBeTypeOf('number');
    expect(r.recoveredAfterFaultSeconds).not.toBeNull();
    // Not before the edge let everyone back in, and soon after it did.
    const recoveredAt = (r.recoveredAfterFaultSeconds ?? 0) + r.dbHealthyAtSeconds;
    expect(recoveredAt).toBeGreaterThanOrEqual(reopened ?? Number.POSITIVE_INFINITY);
    expect(recoveredAt).toBeLessThanOrEqual((reopened ?? 0) + 5);
    // Still in the storm until the shedding, as without the engineer.
    const beforeShed = r.series.slice(90, 100);
    expect(beforeShed.every((s) => s.succeeded < s.failed)).toBe(true);
    expect(r.series[100]?.shed).toBeGreaterThan(0);
    expect(tailSuccess(r, 20)).toBe(1);
  });

  it('stormproof: recovers within seconds, at a peak well below the naive one', () => {
    const r = runStormOnce({ policy: 'stormproof' });
    const naive = runStormOnce({ policy: 'naive' });
    expect(r.normalRps).toBe(naive.normalRps);
    expect(r.recoveredAfterFaultSeconds).not.toBeNull();
    expect(r.recoveredAfterFaultSeconds).toBeLessThan(10);
    expect(r.peakRpsAfterFailover).toBeLessThan(1.5 * r.normalRps);
    expect(r.peakRpsAfterFailover * 4).toBeLessThan(naive.peakRpsAfterFailover);
    expect(r.totals.retries.wrapper).toBe(0);
    expect(r.totals.retries.gateway).toBe(0);
    expect(r.totals.budgetRefusals).toBeGreaterThan(0);
    expect(r.parameters.retryAfterSeconds).toBe(2);
    expect(naive.parameters.retryAfterSeconds).toBe(0);
  });
});

describe('runStorm is a deterministic simulation', () => {
  it('gives the same result for the same seed', () => {
    const a = runStorm({ ...SMALL_STORM, policy: 'naive', seed: 7 });
    const b = runStorm({ ...SMALL_STORM, policy: 'naive', seed: 7 });
    expect(b).toEqual(a);
  });

  it('gives another run for another seed', () => {
    const a = runStorm({ ...SMALL_STORM, seed: 7 });
    const b = runStorm({ ...SMALL_STORM, seed: 8 });
    expect(b.series).not.toEqual(a.series);
  });

  it('reports progress once per simulated second', () => {
    const calls: [number, number][] = [];
    runStorm({
      ...SMALL_STORM,
      durationSeconds: 20,
      faultSeconds: 5,
      onProgress: (done, total) => calls.push([done, total]),
    });
    expect(calls).toHaveLength(20);
    expect(calls[0]).toEqual([1, 20]);
    expect(calls[19]).toEqual([20, 20]);
  });

  it("hears each second's chart lines as it ends, final then, and the run is the same without", () => {
    const options = { ...SMALL_STORM, durationSeconds: 30, faultSeconds: 10, seed: 4 };
    const heard: StormLiveSecond[] = [];
    const progress: number[] = [];
    const run = runStorm({
      ...options,
      onSecond: (second) => heard.push(second),
      onProgress: (done) => progress.push(heard.length - done),
    });
    // Each second is heard before its progress, in order, with the figures the series keeps.
    expect(progress.every((d) => d === 0)).toBe(true);
    expect(heard).toEqual(
      run.series.map((s) => ({
        t: s.t,
        offered: s.offered,
        succeeded: s.succeeded,
        failed: s.failed,
      })),
    );
    expect(heard.some((s) => s.failed > 0)).toBe(true);
    expect(runStorm(options)).toEqual(run);
    expect(() => runStorm({ onSecond: 3 as unknown as () => void })).toThrow(
      /onSecond must be a function, got 3/,
    );
  });
});

describe('the stormproof clients go through the engine', () => {
  it('retry more without a budget', () => {
    const withBudget = runStorm(SMALL_STORM);
    const without = runStorm({ ...SMALL_STORM, retryPolicy: { budget: false } });
    expect(withBudget.totals.budgetRefusals).toBeGreaterThan(0);
    expect(without.totals.budgetRefusals).toBe(0);
    expect(without.totals.retries.library).toBeGreaterThan(3 * withBudget.totals.retries.library);
  });

  it('use the budget each instance is given, asking it before every retry', () => {
    const budgets: Budget[] = [];
    let asked = 0;
    const refuseAll = () => {
      const budget: Budget = {
        recordRequest: () => {},
        recordSuccess: () => {},
        recordFailure: () => {},
        tryRetry: () => {
          asked++;
          return false;
        },
      };
      budgets.push(budget);
      return budget;
    };
    const r = runStorm({ ...SMALL_STORM, retryPolicy: { budget: refuseAll } });
    expect(budgets).toHaveLength(SMALL_STORM.partnerInstances ?? 0);
    expect(r.totals.retries.library).toBe(0);
    expect(asked).toBeGreaterThan(0);
    expect(r.totals.budgetRefusals).toBe(asked);
  });

  it('make no retries with maxAttempts 1', () => {
    const r = runStorm({ ...SMALL_STORM, retryPolicy: { maxAttempts: 1 } });
    expect(r.totals.retries.library).toBe(0);
    // One attempt per user request (those of the last few ms are still on their way).
    expect(r.totals.edgeRequests).toBeLessThanOrEqual(r.totals.userRequests);
    expect(r.totals.edgeRequests).toBeGreaterThan(r.totals.userRequests - 100);
  });

  it("honour the server's Retry-After: a pause past the 3 s deadline means no retry", () => {
    // During the failover every failure is a 503 that comes back in about 0.5 s. With
    // Retry-After: 5 the engine gives up at once (the pause alone would pass the deadline).
    const ample = () => new RetryBudget({ maxCredits: 1_000_000, cost: 1 });
    const two = runStorm({ ...SMALL_STORM, retryPolicy: { budget: ample } });
    const five = runStorm({ ...SMALL_STORM, retryAfterSeconds: 5, retryPolicy: { budget: ample } });
    const ignored = runStorm({
      ...SMALL_STORM,
      retryAfterSeconds: 5,
      retryPolicy: { budget: ample, honorRetryAfter: false },
    });
    expect(two.totals.retries.library).toBeGreaterThan(1000);
    expect(five.totals.retries.library).toBeLessThan(two.totals.retries.library / 10);
    expect(ignored.totals.retries.library).toBeGreaterThan(two.totals.retries.library);
  });

  it('the old stack retries at all three layers', () => {
    // With the naive stack, a wrapped instance's tap can fan out to 4 x 4 x 4 calls.
    const r = runStorm({ ...SMALL_STORM, policy: 'naive', wrappedShare: 1 });
    expect(r.totals.retries.wrapper).toBeGreaterThan(0);
    expect(r.totals.retries.gateway).toBeGreaterThan(r.totals.retries.library);
    expect(r.peakApiRps).toBeGreaterThan(10 * r.normalRps);
  });
});

describe('runStorm validates its options', () => {
  it('rejects unknown options and non-objects', () => {
    expect(() => runStorm({ rsp: 10 } as StormOptions)).toThrow(TypeError);
    expect(() => runStorm({ rsp: 10 } as StormOptions)).toThrow(/"rsp"/);
    expect(() => runStorm(5 as unknown as StormOptions)).toThrow(TypeError);
    expect(() => runStorm({ retryPolicy: { maxAttempt: 2 } } as StormOptions)).toThrow(
      /retryPolicy has no option "maxAttempt"/,
    );
  });

  it('names the option and the value at fault', () => {
    expect(() => runStorm({ policy: 'eager' as 'naive' })).toThrow(TypeError);
    expect(() => runStorm({ policy: 'eager' as 'naive' })).toThrow(/policy .*"eager"/);
    expect(() => runStorm({ rps: -1 })).toThrow(RangeError);
    expect(() => runStorm({ rps: -1 })).toThrow(/rps .*-1/);
    expect(() => runStorm({ rps: Number.NaN })).toThrow(TypeError);
    expect(() => runStorm({ seed: 1.5 })).toThrow(/seed .*1\.5/);
    expect(() => runStorm({ wrappedShare: 2 })).toThrow(/wrappedShare .*2/);
    expect(() => runStorm({ manualRecovery: 'yes' as unknown as boolean })).toThrow(
      /manualRecovery must be a boolean, got "yes"/,
    );
    expect(() => runStorm({ onProgress: 3 as unknown as () => void })).toThrow(/onProgress/);
  });

  it('keeps the fault inside the run', () => {
    expect(() => runStorm({ durationSeconds: 60, faultAtSeconds: 61 })).toThrow(/faultAtSeconds/);
    expect(() => runStorm({ durationSeconds: 60, faultAtSeconds: 40, faultSeconds: 30 })).toThrow(
      /faultSeconds .*30/,
    );
  });

  it('checks the client library options with the engine', () => {
    expect(() => runStorm({ retryPolicy: { maxAttempts: 0 } })).toThrow(RangeError);
    expect(() => runStorm({ retryPolicy: { maxAttempts: 0 } })).toThrow(
      /runStorm retryPolicy maxAttempts .*0/,
    );
    expect(() => runStorm({ retryPolicy: { budget: 'yes' as unknown as false } })).toThrow(
      /retryPolicy budget must be a function/,
    );
    expect(() =>
      runStorm({ ...SMALL_STORM, retryPolicy: { budget: () => ({}) as unknown as Budget } }),
    ).toThrow(/budget must be a Budget/);
  });
});
