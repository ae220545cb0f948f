// The map's hedging row (issue 20): 'budget-hedge' is 'budget' plus the engine's own `Hedging` at
// its defaults, paid from the same RetryBudget. Its hedges reach the server and count in the
// amplification; adding the row leaves every other row as it was; and hedging with its budget does
// not tip a cell that 'budget' keeps stable (docs/hedging.md, "The map", has the full grid).
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { runMapModel } from '../src/sim/map/model.js';
import { MAP_POLICIES, type MapPolicy } from '../src/sim/map/policies.js';
import { runMap } from '../src/sim/map/sweep.js';

describe("the map's 'budget-hedge' policy", () => {
  it('is a row of the map, after budget', () => {
    expect(MAP_POLICIES).toEqual([
      'naive',
      'backoff',
      'full-jitter',
      'budget',
      'budget-hedge',
      'a6',
      'breaker',
      'aws-2026',
    ]);
  });

  it('sends hedges that win at a calm load, and every hedge is a call at the server', async () => {
    const plain = await runMapModel({ policy: 'budget', load: 0.3, triggerSeconds: 0 });
    const run = await runMapModel({ policy: 'budget-hedge', load: 0.3, triggerSeconds: 0 });
    const t = run.totals;
    expect(plain.totals.amplification).toBe(1);
    expect(t.hedges.sent).toBeGreaterThan(0);
    expect(t.hedges.won).toBeGreaterThan(0);
    expect(t.hedges.won).toBeLessThanOrEqual(t.hedges.sent);
    // Each of the 8 clients learns from its first 20 successes before its first hedge.
    expect(t.hedges.refused.learning).toBeGreaterThanOrEqual(8 * 20);
    // The calls at the server are the first copies, the retries and the hedges (a few sent in
    // the run's last milliseconds have not arrived when it ends).
    const sent = t.users + t.retries + t.hedges.sent;
    expect(t.calls).toBeLessThanOrEqual(sent);
    expect(t.calls).toBeGreaterThanOrEqual(sent - 5);
    expect(t.amplification).toBeGreaterThan(1);
    // A losing copy is abandoned by its client and still served: wasted work, none without a trigger otherwise.
    expect(plain.totals.wasted).toBe(0);
    expect(t.wasted).toBeGreaterThan(0);
    expect(t.wasted).toBeLessThanOrEqual(t.hedges.sent);
  });

  it('pays its hedges from the retry budget, and sends none while stormproof/server pushes back', async () => {
    const spent = await runMapModel({ policy: 'budget-hedge', load: 0.7, triggerSeconds: 10 });
    expect(spent.totals.hedges.refused.budget).toBeGreaterThan(0);
    const plain = await runMapModel({ policy: 'budget', load: 0.7, triggerSeconds: 10 });
    // Same budget: the hedges it paid for leave fewer retries.
    expect(spent.totals.retries).toBeLessThan(plain.totals.retries);
    const shed = await runMapModel({
      policy: 'budget-hedge',
      load: 0.7,
      triggerSeconds: 10,
      stormproofServer: true,
    });
    expect(shed.totals.hedges.refused.pushback).toBeGreaterThan(0);
  });

  it('leaves every other row bit for bit as it was', async () => {
    // The rows the map had before this one ('aws-2026' came later: test/map-aws.test.ts).
    const others = MAP_POLICIES.filter((p) => p !== 'budget-hedge' && p !== 'aws-2026');
    const map = await runMap({
      loads: [0.5, 0.9],
      triggerSeconds: [2, 10],
      policies: others,
      seeds: 5,
    });
    expect(map.cells).toHaveLength(96);
    // sha256 of these 96 cells as the map printed them before the row was added: the same cells
    // of `stormproof map --json` (full grid, seeds 1 to 5) built from commit 245d8e3.
    const hash = createHash('sha256').update(JSON.stringify(map.cells)).digest('hex');
    expect(hash).toBe('74b4c43321992775918e31f8aecee90e0d99d3e797a6c2e81a13f67466a1159f');
  }, 60_000);
});

describe("the cells 'budget' keeps stable, with hedging", () => {
  const key = (c: {
    stormproofServer: boolean;
    triggerKind: string;
    load: number;
    triggerSeconds: number;
  }) =>
    `${c.stormproofServer ? 'server' : 'no server'} ${c.triggerKind} load ${c.load} ${c.triggerSeconds} s`;

  it('stay stable over loads 0.3 to 0.95, short and long triggers of both kinds, with and without stormproof/server (5 seeds)', async () => {
    const policies: MapPolicy[] = ['budget', 'budget-hedge'];
    // 0.95 after a 1 or 2 s trigger behind stormproof/server: the cells hedging tipped before
    // a hedge needed the time to answer and an attempt that timed out counted as one it lost.
    const map = await runMap({
      loads: [0.3, 0.6, 0.8, 0.9, 0.95],
      triggerSeconds: [1, 2, 8, 20],
      policies,
      seeds: 5,
    });
    const budget = map.cells.filter((c) => c.policy === 'budget');
    const hedged = new Map(
      map.cells.filter((c) => c.policy === 'budget-hedge').map((c) => [key(c), c]),
    );
    const stable = budget.filter((c) => c.class === 'stable');
    // The grid is meaningful: the budget alone keeps some cells stable and loses others.
    expect(stable.length).toBeGreaterThan(20);
    expect(stable.length).toBeLessThan(budget.length);
    const tipped = stable.filter((c) => hedged.get(key(c))!.class !== 'stable').map(key);
    expect(tipped).toEqual([]);
    // Hedging's cost shows in the amplification: more calls per user request where it hedges.
    const amplification = (p: MapPolicy) =>
      map.cells.filter((c) => c.policy === p).reduce((a, c) => a + c.amplification, 0);
    expect(amplification('budget-hedge')).toBeGreaterThan(amplification('budget'));
  }, 60_000);

  it("at 95% of capacity behind stormproof/server, over 40 seeds: as stable as the budget alone, within the seeds' noise", async () => {
    // The cells at the edge: 'budget' itself is vulnerable in about one seed in 25 here. Hedges
    // sent at 95% of capacity seldom win behind one FIFO queue, so every one that goes is load;
    // before 'too-late' and the judging of timed-out attempts, 21 of these 160 seeds were not
    // stable with hedging against 5 without (docs/hedging.md).
    const cells = [
      { triggerKind: 'capacity-loss', triggerSeconds: 1 },
      { triggerKind: 'capacity-loss', triggerSeconds: 2 },
      { triggerKind: 'load-spike', triggerSeconds: 1 },
      { triggerKind: 'load-spike', triggerSeconds: 2 },
    ] as const;
    const notStable = { budget: 0, 'budget-hedge': 0 };
    for (const policy of ['budget', 'budget-hedge'] as const) {
      for (const cell of cells) {
        for (let seed = 1; seed <= 40; seed++) {
          const run = await runMapModel({
            policy,
            load: 0.95,
            stormproofServer: true,
            seed,
            ...cell,
          });
          expect(run.class.class, JSON.stringify({ policy, seed, ...cell })).not.toBe('metastable');
          if (run.class.class !== 'stable') notStable[policy]++;
        }
      }
    }
    // Two runs of 160 that differ in their random draws: at one seed in 25 either way, the
    // difference has a standard deviation of about 3 seeds; two standard deviations are allowed.
    expect(notStable.budget).toBeGreaterThan(0);
    expect(notStable['budget-hedge']).toBeLessThanOrEqual(notStable.budget + 6);
  }, 60_000);
});
