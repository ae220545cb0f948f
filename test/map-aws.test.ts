// The map's AWS row (issue 22): 'aws-2026' is the AWS SDKs' 2026 retry defaults run by the engine
// (3 attempts, full jitter from 50 ms, 1 s for a 429, to 20 s, the RetryQuota), reading of a
// rejection only what the SDK reads. Adding it leaves the seven other rows bit for bit as they
// were, and its own cells are pinned.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { RetryQuota } from '../src/core/budgets/retry-quota.js';
import { classify } from '../src/core/classify.js';
import { systemClock } from '../src/core/clock.js';
import { runMapModel } from '../src/sim/map/model.js';
import { headersSeen, MAP_POLICIES, type MapPolicy, makeClient } from '../src/sim/map/policies.js';
import { runMap } from '../src/sim/map/sweep.js';

const SHAPE = {
  maxAttempts: 4,
  attemptTimeoutMs: 1000,
  deadlineMs: Number.POSITIVE_INFINITY,
  baseDelayMs: 200,
  maxDelayMs: 5000,
};

/** stormproof/server's "come back later", as the model hands it to a client. */
const SHED: ReadonlyArray<[string, string]> = [
  ['retry-after', '2'],
  ['retry-after-ms', '1500'],
  ['stormproof-pushback-ms', '1500'],
];

/** sha256 of a small grid's cells as `runMap` returns them. */
async function cellsHash(policies: MapPolicy[]) {
  const map = await runMap({ loads: [0.5, 0.9], triggerSeconds: [2, 10], policies, seeds: 5 });
  const hash = createHash('sha256').update(JSON.stringify(map.cells)).digest('hex');
  return { cells: map.cells.length, hash };
}

describe("the map's 'aws-2026' policy", () => {
  it('is the last row of the map', () => {
    expect(MAP_POLICIES.at(-1)).toBe('aws-2026');
    expect(MAP_POLICIES).toHaveLength(8);
  });

  it("is the SDK's own schedule and quota, whatever the run's shared backoff", () => {
    const client = makeClient('aws-2026', SHAPE, systemClock, Math.random, 'client-0');
    const p = client.policy;
    expect([p.maxAttempts, p.baseDelayMs, p.throttledDelayMultiplier, p.maxDelayMs]).toEqual([
      3, 50, 20, 20_000,
    ]);
    expect(p.jitter).toEqual({ kind: 'full' });
    expect(p.attemptTimeoutMs).toBe(1000);
    expect(p.budget).toBeInstanceOf(RetryQuota);
    expect((p.budget as RetryQuota).tokens).toBe(500);
    expect(client.breaker).toBeUndefined();
    expect(client.hedging).toBeUndefined();
  });

  it("reads only Retry-After of stormproof/server's rejection, so it backs off by its own rule", () => {
    const aws = makeClient('aws-2026', SHAPE, systemClock, Math.random, 'client-0');
    const seen = headersSeen(aws, SHED);
    expect(seen).toEqual({ 'retry-after': '2' });
    expect(classify({ status: 503, headers: seen }, 0)).toEqual({
      retryable: true,
      kind: 'unavailable',
      status: 503,
      retryAfterMs: 2000,
    });
    expect(headersSeen(aws, [['stormproof-overloaded', '1']])).toEqual({});
    // The other rows that read hints read them all: the exact pushback included.
    const jitter = makeClient('full-jitter', SHAPE, systemClock, Math.random, 'client-0');
    expect(classify({ status: 503, headers: headersSeen(jitter, SHED) }, 0).pushbackMs).toBe(1500);
  });

  it('rides out a 10 s capacity loss at 70% load: each quota empties after 35 retries and stops the rest', async () => {
    const run = await runMapModel({ policy: 'aws-2026', load: 0.7, triggerSeconds: 10 });
    const t = run.totals;
    expect(run.class.class).toBe('stable');
    expect(t.budgetRefusals).toBeGreaterThan(0);
    // 8 clients x 35 retries of 14 tokens empty the quotas; a few successes refill them.
    expect(t.retries).toBeGreaterThanOrEqual(8 * 35);
    expect(t.retries).toBeLessThan(8 * 35 + 20);
    expect(t.amplification).toBeLessThan(1.2);
    // Three attempts at most per user request.
    expect(t.calls).toBeLessThanOrEqual(3 * t.users);
  });

  it('leaves the seven other rows bit for bit as they were', async () => {
    const others = MAP_POLICIES.filter((p) => p !== 'aws-2026' && p !== 'budget-hedge');
    expect(others).toHaveLength(6);
    // sha256 of these 96 cells as the map gave them before the row was added: the same as
    // test/map-hedge.test.ts pins for them (built from 245d8e3).
    expect(await cellsHash(others)).toEqual({
      cells: 96,
      hash: '74b4c43321992775918e31f8aecee90e0d99d3e797a6c2e81a13f67466a1159f',
    });
    // 'budget-hedge' as b25cd46 made it ('too-late', hedged attempts that time out judged); the
    // row this test pinned with the six others was built from 74c09ab, before that change
    // (its 16 cells then hashed to 9d58bcaf...).
    expect(await cellsHash(['budget-hedge'])).toEqual({
      cells: 16,
      hash: '4f65df86f5bd4893f27054e51e2df276720accbe65fc621bab5dbe7b6fee8e43',
    });
  }, 60_000);

  it('gives its own cells exactly again', async () => {
    expect(await cellsHash(['aws-2026'])).toEqual({
      cells: 16,
      hash: 'ec34b193dee757de6e593bee956e610063b02012fac71cdc0de4f466f04fcebe',
    });
  }, 60_000);
});
