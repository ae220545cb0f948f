// The metastability map's model (src/sim/map): its parts, the classification rule, the sweep and
// the named scenarios, each asserting the published outcome from the model's own output.
import { describe, expect, it } from 'vitest';
import { classifyRun, MAP_RULE, ruleText } from '../src/sim/map/classify.js';
import type { MapSeries } from '../src/sim/map/measure.js';
import { resolveMapModel, runMapModel } from '../src/sim/map/model.js';
import { mapReport, mapText, renderHeatmapSvg } from '../src/sim/map/report.js';
import { HUANG_CAPACITY, runMapScenario, runScenarioRun } from '../src/sim/map/scenarios.js';
import { assembleMap, resolveMapGrid, runMap } from '../src/sim/map/sweep.js';
import { capacityAt, type Trigger, workDoneAt } from '../src/sim/map/trigger.js';
import { CLASS_FILLS } from '../src/sim/palette.js';
import { renderReportHtml } from '../src/sim/plot.js';

/** A series of `seconds` seconds with 100 offered a second and `good(s)` answered. */
function series(seconds: number, good: (s: number) => number): MapSeries {
  const zeros = () => new Array<number>(seconds).fill(0);
  return {
    offered: new Array<number>(seconds).fill(100),
    goodput: Array.from({ length: seconds }, (_, s) => good(s)),
    failed: zeros(),
    calls: zeros(),
    wasted: zeros(),
  };
}

describe('the classification rule', () => {
  it('is stated in words with its thresholds', () => {
    const text = ruleText();
    expect(text).toContain('>= 95% of offered');
    expect(text).toContain('below 50% of offered in every window');
    expect(MAP_RULE).toEqual({ recoveredShare: 0.95, collapsedShare: 0.5, windowSeconds: 5 });
  });

  it('stable: recovered from the first window after which every window is at or above 95%', () => {
    const r = classifyRun(
      series(60, (s) => (s < 20 ? 0 : 100)),
      10,
    );
    expect(r).toEqual({ class: 'stable', recoverySeconds: 10, finalShare: 1 });
  });

  it('a dip after a recovery moves the recovery past the dip', () => {
    const r = classifyRun(
      series(60, (s) => (s < 20 || s === 40 ? 0 : 100)),
      10,
    );
    expect(r.class).toBe('stable');
    expect(r.recoverySeconds).toBe(31);
  });

  it('metastable: below 50% in every window of the horizon', () => {
    expect(
      classifyRun(
        series(60, () => 49),
        10,
      ).class,
    ).toBe('metastable');
  });

  it('vulnerable: neither (a partial recovery, or a window at 50% or more that is not 95%)', () => {
    expect(
      classifyRun(
        series(60, () => 80),
        10,
      ).class,
    ).toBe('vulnerable');
    expect(
      classifyRun(
        series(60, (s) => (s < 55 ? 0 : 100)),
        10,
        58,
      ).class,
    ).toBe('vulnerable');
  });

  it('judges only the horizon it is given', () => {
    // Collapsed after second 40: outside a horizon that ends at 40.
    const s = series(60, (t) => (t < 40 ? 100 : 0));
    expect(classifyRun(s, 10, 40).class).toBe('stable');
    expect(classifyRun(s, 10).class).toBe('vulnerable');
  });
});

describe('the trigger', () => {
  const loss: Trigger = { kind: 'capacity-loss', startMs: 1000, endMs: 2000, magnitude: 0.8 };

  it('slows the work while it lasts: work that spans its edges ends exactly', () => {
    expect(capacityAt(loss, 1500)).toBeCloseTo(0.2);
    expect(capacityAt(loss, 2000)).toBe(1);
    expect(workDoneAt(loss, 0, 500)).toBe(500);
    // 500 ms of work from 900: 100 before, 200 done in the 1000 ms of the loss, 200 after.
    expect(workDoneAt(loss, 900, 500)).toBeCloseTo(2200);
    expect(workDoneAt(loss, 1500, 50)).toBeCloseTo(1750);
  });
});

describe('runMapModel', () => {
  it('rejects bad options, naming the option and the value', () => {
    expect(() => resolveMapModel({ load: null } as never)).toThrow(/load must not be null/);
    expect(() => resolveMapModel({ lod: 1 } as never)).toThrow(/lod/);
    expect(() => resolveMapModel({ policy: 'eager' } as never)).toThrow(
      /policy must be one of .*'naive'.*got "eager"/,
    );
    expect(() => resolveMapModel({ load: -1 })).toThrow(/load/);
    expect(() => resolveMapModel({ triggerKind: 'capacity-loss', triggerMagnitude: 1 })).toThrow(
      /triggerMagnitude/,
    );
    expect(() => resolveMapModel({ workers: Number.POSITIVE_INFINITY })).toThrow(
      /ratePerSecond is needed/,
    );
  });

  it('repeats a run exactly for a seed, and differs for another', async () => {
    const a = await runMapModel({ policy: 'full-jitter', load: 0.6, seed: 3 });
    const b = await runMapModel({ policy: 'full-jitter', load: 0.6, seed: 3 });
    const c = await runMapModel({ policy: 'full-jitter', load: 0.6, seed: 4 });
    expect(b.series).toEqual(a.series);
    expect(c.series).not.toEqual(a.series);
  });

  it('naive retries turn a 10 s capacity loss at 70% load into a storm that outlives it; the 10% budget recovers', async () => {
    const naive = await runMapModel({ policy: 'naive', load: 0.7, triggerSeconds: 10 });
    const budget = await runMapModel({ policy: 'budget', load: 0.7, triggerSeconds: 10 });
    expect(naive.class.class).toBe('metastable');
    // Every user request makes its 4 attempts once the queue is past the timeout.
    expect(naive.totals.amplification).toBeGreaterThan(3);
    expect(naive.totals.amplification).toBeLessThanOrEqual(4);
    expect(naive.totals.wasted).toBeGreaterThan(0);
    expect(budget.class.class).toBe('stable');
    expect(budget.totals.amplification).toBeLessThan(1.2);
    expect(budget.totals.budgetRefusals).toBeGreaterThan(0);
  });

  it("A6 throttling and the breaker cut the retries through the engine's own TokenBucket and CircuitBreaker", async () => {
    const a6 = await runMapModel({ policy: 'a6', load: 0.7, triggerSeconds: 10 });
    const breaker = await runMapModel({ policy: 'breaker', load: 0.7, triggerSeconds: 10 });
    expect(a6.totals.budgetRefusals).toBeGreaterThan(0);
    expect(a6.totals.amplification).toBeLessThan(1.2);
    expect(breaker.totals.breakerRefusals).toBeGreaterThan(0);
    expect(breaker.class.class).toBe('stable');
  });

  it('stormproof/server (the real shedder, on virtual time) keeps naive retries out of the storm', async () => {
    const off = await runMapModel({ policy: 'naive', load: 0.7, triggerSeconds: 10 });
    const on = await runMapModel({
      policy: 'naive',
      load: 0.7,
      triggerSeconds: 10,
      stormproofServer: true,
    });
    expect(off.class.class).toBe('metastable');
    expect(on.class.class).toBe('stable');
    expect(on.totals.wasted).toBeLessThan(off.totals.wasted / 10);
    // Its queue hands out admissions as promises: a run that uses the queue still ends, exactly repeatable.
    const again = await runMapModel({
      policy: 'naive',
      load: 0.7,
      triggerSeconds: 10,
      stormproofServer: true,
    });
    expect(again.series).toEqual(on.series);
  });

  it('stays stable at low load whatever the policy', async () => {
    for (const policy of ['naive', 'backoff'] as const) {
      const r = await runMapModel({ policy, load: 0.1, triggerSeconds: 5 });
      expect(r.class).toMatchObject({ class: 'stable' });
    }
  });
});

describe('runMap (the sweep)', () => {
  it('runs every cell over its seeds, with probabilities, recovery, amplification and boundaries', async () => {
    let calls = 0;
    const map = await runMap({
      loads: [0.2, 0.7],
      triggerSeconds: [1, 10],
      triggerKinds: ['capacity-loss'],
      policies: ['naive', 'budget'],
      stormproofServer: [false],
      seeds: 5,
      onProgress: () => calls++,
    });
    expect(calls).toBe(2 * 2 * 2 * 5);
    expect(map.cells).toHaveLength(8);
    for (const c of map.cells) {
      expect(c.seeds).toBe(5);
      expect(
        c.probability.stable + c.probability.vulnerable + c.probability.metastable,
      ).toBeCloseTo(1);
      expect(c.amplification).toBeGreaterThanOrEqual(0.9);
    }
    const cell = (policy: string, load: number, s: number) =>
      map.cells.find((c) => c.policy === policy && c.load === load && c.triggerSeconds === s)!;
    expect(cell('naive', 0.7, 10).class).toBe('metastable');
    expect(cell('naive', 0.7, 10).recoverySeconds).toBeNull();
    expect(cell('budget', 0.7, 10).class).toBe('stable');
    expect(cell('budget', 0.7, 10).recoverySeconds).toBeGreaterThan(0);
    const boundary = map.boundaries.find((b) => b.policy === 'naive' && b.load === 0.7)!;
    expect(boundary).toMatchObject({ stableUpToSeconds: 1, metastableFromSeconds: 10 });
    expect(map.rule).toBe(ruleText());
    expect(map.model).toMatchObject({
      workers: 4,
      serviceMs: 100,
      clients: 8,
      horizonSeconds: 60,
      deadlineMs: null,
    });
    expect(mapText(map)).toContain('capacity 40 requests/s');
    // The text map and the report carry the rule and a heatmap per policy.
    expect(mapText(map)).toContain(ruleText());
    const html = renderReportHtml(mapReport(map));
    expect(html.match(/<svg[^>]*class="heatmap"/g)).toHaveLength(2);
    expect(html.match(/class="cell"/g)).toHaveLength(8);
    expect(html).toContain('data-class="metastable"');
  });

  it('rejects a bad grid, naming the option', () => {
    expect(() => resolveMapGrid({ loads: [] })).toThrow(/loads must be a non-empty array/);
    expect(() => resolveMapGrid({ policies: ['naive', 'greedy' as never] })).toThrow(
      /policies\[1\]/,
    );
    expect(() => resolveMapGrid({ seeds: 0 })).toThrow(/seeds/);
    expect(() => resolveMapGrid({ model: { load: 0.5 } as never })).toThrow(
      /model.load is set by the sweep/,
    );
    expect(() => resolveMapGrid({ model: { workers: 0 } })).toThrow(/workers/);
    expect(() => assembleMap(resolveMapGrid({ loads: [0.5] }), [])).toThrow(/expected/);
  });

  it('draws a heatmap square per cell with its class', () => {
    const svg = renderHeatmapSvg({
      title: 't',
      rows: ['0.5', '0.9'],
      columns: ['1'],
      xTitle: 'x',
      yTitle: 'y',
      cells: [
        { row: 0, column: 0, class: 'stable', label: '0', note: 'a' },
        { row: 1, column: 0, class: 'metastable', label: '100', note: 'b' },
      ],
    });
    expect(svg.match(/<rect class="cell"/g)).toHaveLength(2);
    expect(svg).toContain(`fill="${CLASS_FILLS.metastable}"`);
    expect(svg).toContain(`fill="${CLASS_FILLS.stable}"`);
  });
});

describe('named scenarios: the published outcomes, from the model', () => {
  it("brooker-collapse: immediate retries stay collapsed after the spike; backoff with jitter recovers (Brooker's 10 runs, averaged)", async () => {
    const r = await runMapScenario('brooker-collapse');
    const [immediate, jitter] = r.setups;
    expect(immediate!.class).toBe('metastable');
    expect(immediate!.finalShare).toBeLessThan(0.5);
    expect(immediate!.probability.metastable).toBeGreaterThanOrEqual(0.3);
    expect(immediate!.amplification).toBeGreaterThan(1.5);
    expect(jitter!.class).toBe('stable');
    expect(jitter!.probability.stable).toBe(1);
    expect(jitter!.finalShare).toBeGreaterThanOrEqual(0.95);
    expect(r.holds).toBe(true);
  }, 120_000);

  it(`huang2022-retry: (b) 80% for 10 s is metastable; (a) 78% for 10 s, (c) 80% for 9 s and (d) 10,000/s recover, all at once with capacity ${HUANG_CAPACITY}`, async () => {
    const r = await runMapScenario('huang2022-retry', { seeds: 3, scale: 0.05 });
    expect(r.setups.map((s) => s.class)).toEqual(['stable', 'metastable', 'stable', 'stable']);
    expect(r.setups[1]!.probability.metastable).toBeGreaterThanOrEqual(2 / 3);
    expect(r.holds).toBe(true);
  }, 300_000);

  it("weather-api: the storm model's naive stack recovers with 16,000 connections and stays down with 20,000 and the default 32,000; stormproof recovers at 32,000", async () => {
    const run = (policy: string, apiConnections: number) =>
      runScenarioRun({
        kind: 'storm',
        options: { policy, apiConnections, faultSeconds: 30, seed: 1 },
      });
    expect((await run('naive', 16_000)).class).toBe('stable');
    expect((await run('naive', 20_000)).class).toBe('metastable');
    const naive = await run('naive', 32_000);
    expect(naive.class).toBe('metastable');
    expect(naive.lastGood / naive.lastOffered).toBeLessThan(0.5);
    expect((await run('stormproof', 32_000)).class).toBe('stable');
  }, 300_000);
});
