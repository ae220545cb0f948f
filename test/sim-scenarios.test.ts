// The storm lab's scenarios as library API: the storm story's budget test, Brooker's model,
// retries at several layers, timers and the stack checker. Brooker's figures were printed by
// CPython 3.11.7 running his simulator (aws-samples/aws-arch-backoff-simulator,
// src/backoff_simulator.py) with pandas, bokeh and the file output taken out, `random.seed(seed)`
// before each strategy's runs, and `print(repr(stats.calls / runs), repr(tm / runs))` per strategy
// (the script is not part of the repo); the model here, whose waits come from the engine's `step`,
// gives the same floats bit for bit.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { herdTimeline, MAX_TIMELINE_POINTS } from '../src/cli/herd-timeline.js';
import { type BrookerStrategy, runBrooker } from '../src/sim/brooker.js';
import { runBudgetTest } from '../src/sim/budget-test.js';
import { checkStack } from '../src/sim/check.js';
import { type HerdJitter, runHerd } from '../src/sim/herd.js';
import { runLayers } from '../src/sim/layers.js';
import { runTimers } from '../src/sim/timers.js';
import { CLIENT_LIBRARY_LAYER } from './helpers/fixtures.js';

describe('runBudgetTest: the storm story', () => {
  it('1000 requests to an always-503 service: 4000 calls without a budget, 1109 with one', async () => {
    const r = await runBudgetTest();
    expect(r.withoutBudget.calls).toBe(4000);
    expect(r.withBudget.calls).toBe(1109);
    expect(r.withBudget.retries).toBe(109);
    expect(r.withoutBudget.callsPerRequest.every((n) => n === 4)).toBe(true);
    // The full counter pays for 10 retries at once: the first three requests retry 3, 3 and 3
    // times (100 -> 70 -> 41 -> 12 credits), then the fourth once.
    expect(r.withBudget.callsPerRequest.slice(0, 5)).toEqual([4, 4, 4, 2, 1]);
    // Full jitter sleeps at most 0.2 + 0.4 + 0.8 s per request, on the virtual clock.
    expect(r.withoutBudget.virtualTimeMs).toBeGreaterThan(0);
    expect(r.withoutBudget.virtualTimeMs).toBeLessThan(1000 * 1400);
  });

  it('takes the budget and attempts from its options', async () => {
    const r = await runBudgetTest({ requests: 100, maxAttempts: 3, cost: 20, maxCredits: 40 });
    expect(r.withoutBudget.calls).toBe(300);
    // 40 credits: two retries at once (the second request has 1 credit back: 1 + 1 = 2 < 20),
    // then one retry per 20 requests.
    expect(r.withBudget.calls).toBe(100 + 2 + 4);
  });

  it('rejects bad options by name', async () => {
    await expect(runBudgetTest({ requests: -1 })).rejects.toThrow(
      /runBudgetTest requests must be >= 0/,
    );
    await expect(runBudgetTest({ cost: 0 })).rejects.toThrow(/RetryBudget cost/);
    await expect(runBudgetTest({ nope: 1 } as never)).rejects.toThrow(/has no option "nope"/);
  });
});

type Figures = Record<BrookerStrategy, [calls: number, timeMs: number]>;

function figures(r: ReturnType<typeof runBrooker>): Figures {
  return Object.fromEntries(Object.entries(r).map(([k, v]) => [k, [v.calls, v.timeMs]])) as Figures;
}

describe("runBrooker: Brooker's simulator, bit for bit", () => {
  it('100 clients, 100 runs, seed 7 (the defaults)', () => {
    const r = runBrooker();
    expect(figures(r)).toEqual({
      exponential: [1846.09, 62615.362816509194],
      full: [795.87, 4823.668700474165],
      equal: [812.86, 6597.364788558731],
      decorrelated: [1002.22, 4580.756414372613],
      none: [2418.13, 2023.7118213845883],
    });
    // The storm story's re-run: plain backoff about 1,850 calls, full jitter about 795
    // (fewer than half), decorrelated about 1,000 and a little sooner than full jitter.
    expect(r.full.calls).toBeLessThan(r.exponential.calls / 2);
    expect(r.decorrelated.timeMs).toBeLessThan(r.full.timeMs);
    // Every client writes successfully exactly once per run.
    for (const s of Object.values(r)) {
      expect(s.timeline.reduce((n, b) => n + b.succeeded, 0)).toBe(100);
    }
  });

  it('10 clients, 3 runs, seed 1', () => {
    expect(figures(runBrooker({ clients: 10, runs: 3, seed: 1 }))).toEqual({
      exponential: [47, 2937.215258574904],
      full: [40.333333333333336, 632.2120427565524],
      equal: [41.666666666666664, 723.0082853375137],
      decorrelated: [38.333333333333336, 498.98551298083515],
      none: [45, 312.4247973025244],
    });
  });

  it('50 clients, 20 runs, seed 42', () => {
    expect(figures(runBrooker({ clients: 50, runs: 20, seed: 42 }))).toEqual({
      exponential: [621, 36484.16804089828],
      full: [333.65, 2772.105011735381],
      equal: [347.65, 4176.687619947],
      decorrelated: [371.25, 2551.7815515551333],
      none: [689.1, 1122.6220124701447],
    });
  });

  it('reports progress after every run', () => {
    const seen: Array<[number, number]> = [];
    runBrooker({ clients: 2, runs: 2, onProgress: (done, total) => seen.push([done, total]) });
    expect(seen).toHaveLength(10);
    expect(seen.at(-1)).toEqual([10, 10]);
  });

  it('rejects bad options by name', () => {
    expect(() => runBrooker({ clients: 0 })).toThrow(/runBrooker clients must be >= 1/);
    expect(() => runBrooker({ capMs: 5 })).toThrow(/runBrooker capMs must be >= 10/);
    expect(() => runBrooker({ seed: 1.5 })).toThrow(/seed must be an integer/);
    expect(() => runBrooker({ runs: 1, colour: 1 } as never)).toThrow(/has no option "colour"/);
  });
});

describe('runLayers: retries multiply through the layers', () => {
  it.each([
    [3, 4, 64],
    [5, 3, 243],
    [5, 4, 1024],
    [1, 4, 4],
  ])('%i layers of %i attempts: %i calls at the bottom', async (layers, attempts, calls) => {
    const r = await runLayers({ layers, attempts });
    expect(r.bottomCalls).toBe(calls);
    expect(r.callsPerLevel).toEqual(Array.from({ length: layers + 1 }, (_, i) => attempts ** i));
  });

  it('retrying at one layer only: the top or the bottom', async () => {
    expect((await runLayers({ retryAt: 'top' })).callsPerLevel).toEqual([1, 4, 4, 4]);
    expect((await runLayers({ retryAt: 'bottom' })).callsPerLevel).toEqual([1, 1, 1, 4]);
    expect((await runLayers({ layers: 5, attempts: 3, retryAt: 'top' })).bottomCalls).toBe(3);
  });

  it('waits on the virtual clock with the engine’s backoff', async () => {
    // One retrying layer, no jitter: 200 + 400 + 800 ms.
    const r = await runLayers({ retryAt: 'top', baseDelayMs: 200, jitter: 'none' });
    expect(r.virtualTimeMs).toBe(1400);
    expect((await runLayers()).virtualTimeMs).toBe(0);
  });

  it('rejects bad options by name, and stacks too deep to run', async () => {
    await expect(runLayers({ retryAt: 'middle' as never })).rejects.toThrow(
      /retryAt must be one of/,
    );
    await expect(runLayers({ attempts: 0 })).rejects.toThrow(/attempts must be >= 1/);
    await expect(runLayers({ layers: 10, attempts: 10 })).rejects.toThrow(/stops at 1000000/);
    await expect(runLayers({ baseDelayMs: 10, jitter: 'wild' as never })).rejects.toThrow(
      /jitter must be one of/,
    );
  });
});

describe('runTimers: real daily timers on virtual time', () => {
  it('10,000 numbered devices: a peak within 1.2x of an even spread, against 10,000 at once', async () => {
    const r = await runTimers();
    expect(r.uniformRps).toBeCloseTo(10_000 / 1200, 10);
    expect(r.aligned.peakRps).toBe(10_000);
    expect(r.offset.peakRps).toBeLessThanOrEqual(1.2 * r.uniformRps);
    expect(r.offset.peakRps).toBe(10);
    const sum = (s: typeof r.aligned.series) => s.reduce((n, x) => n + x.requests, 0);
    expect(sum(r.aligned.series)).toBe(10_000);
    expect(sum(r.offset.series)).toBe(10_000); // one run per device in the morning, none twice
    // From 05:49:00 to 06:10:59, both schedules on the same seconds.
    expect(r.offset.series[0]!.t).toBe(-660);
    expect(r.offset.series.at(-1)!.t).toBe(659);
    expect(r.aligned.series.map((s) => s.t)).toEqual(r.offset.series.map((s) => s.t));
    // Nothing outside 05:50 to 06:10, and every second of it busy.
    const inside = r.offset.series.filter((s) => s.t >= -600 && s.t < 600);
    expect(Math.min(...inside.map((s) => s.requests))).toBe(7);
    expect(sum(inside)).toBe(10_000);
  });

  it('hashed names and fresh random draws spread like dice: flatter than 06:00, lumpier than numbers', async () => {
    const named = await runTimers({ ids: 'named' });
    const random = await runTimers({ ids: 'random' });
    for (const r of [named, random]) {
      expect(r.offset.peakRps).toBeGreaterThan(1.2 * r.uniformRps);
      expect(r.offset.peakRps).toBeLessThan(4 * r.uniformRps);
      expect(r.offset.series.reduce((n, x) => n + x.requests, 0)).toBe(10_000);
    }
  });

  it('named and numbered slots are fixed; random ones by the seed', async () => {
    const small = { devices: 500, spreadSeconds: 60 };
    expect(await runTimers({ ...small, ids: 'named' })).toEqual(
      await runTimers({ ...small, ids: 'named', seed: 99 }),
    );
    expect(await runTimers({ ...small, ids: 'random', seed: 3 })).toEqual(
      await runTimers({ ...small, ids: 'random', seed: 3 }),
    );
    await expect(runTimers({ devices: -5 })).rejects.toThrow(/runTimers devices must be >= 0/);
    await expect(runTimers({ spreadSeconds: 61 })).rejects.toThrow(/spreadSeconds must be even/);
    await expect(runTimers({ ids: null as never })).rejects.toThrow(
      /runTimers ids must be one of numbered, named, random, got null/,
    );
  });
});

describe('the herd timeline agrees with runHerd', () => {
  it.each<HerdJitter>(['none', 'full', 'equal', 'decorrelated', 'band'])(
    'jitter %s: the same calls, busiest slot and end',
    (jitter) => {
      const t = herdTimeline({ jitter });
      const h = runHerd({ jitter });
      const calls = t.served.map((s, i) => s + t.failed[i]!);
      expect(t.calls).toBe(h.calls);
      expect(calls.reduce((a, b) => a + b, 0)).toBe(h.calls);
      expect(Math.max(...calls.slice(1))).toBe(h.busiestSlot);
      expect(Number(((calls.length * 10) / 1000).toFixed(2))).toBe(h.doneAfterSeconds);
      expect(t.served.reduce((a, b) => a + b, 0)).toBe(2000);
    },
  );
});

describe('the herd timeline of a long herd (issue 25)', () => {
  it('keeps at most maxPoints points, each the busiest slot of its span', () => {
    // The storm story's herd without jitter: 37,621 slots, 80 waves.
    const whole = herdTimeline({ jitter: 'none' });
    const kept = herdTimeline({ jitter: 'none' }, 1000);
    expect(whole.slotsPerPoint).toBe(1);
    expect(whole.served).toHaveLength(37_621);
    // 37,621 slots in at most 1,000 points: 64 slots a point (32 would need 1,176).
    expect(kept.slotsPerPoint).toBe(64);
    expect(kept.served).toHaveLength(Math.ceil(37_621 / 64));
    expect([kept.calls, kept.busiestSlot, kept.slots]).toEqual([81_000, 1975, 37_621]);
    const offered = (t: typeof whole, i: number) => t.served[i]! + t.failed[i]!;
    for (let p = 0; p < kept.served.length; p++) {
      let busiest = p * 64;
      for (let i = p * 64; i < Math.min((p + 1) * 64, 37_621); i++) {
        if (offered(whole, i) > offered(whole, busiest)) busiest = i;
      }
      expect([kept.served[p], kept.failed[p]]).toEqual([
        whole.served[busiest],
        whole.failed[busiest],
      ]);
    }
    // A point has calls wherever its span had a wave (the first waves, 20 and 40 slots apart,
    // share spans).
    const spans = new Set(whole.served.flatMap((_, i) => (offered(whole, i) > 0 ? [i >> 6] : [])));
    expect(kept.served.filter((_, p) => offered(kept, p) > 0)).toHaveLength(spans.size);
  });

  it('a counted herd of 10^9 clients without jitter: bounded points, the figures of runHerd', () => {
    // 2 * 10^10 slots from the first call to the last: one array entry per slot before.
    // The figures are runHerd's (test/herd-counted.test.ts pins them).
    const t = herdTimeline({ clients: 1_000_000_000, jitter: 'none' });
    expect(t.served.length).toBeLessThanOrEqual(MAX_TIMELINE_POINTS);
    expect(t.served.length).toBeGreaterThan(MAX_TIMELINE_POINTS / 2);
    expect([t.calls, t.busiestSlot, t.slots]).toEqual([
      20_000_000_514_827_536, 999_999_975, 19_999_997_621,
    ]);
  });
});

describe('checkStack', () => {
  it('one retry layer in one process: a stormproof layer over a stormproof layer passes up', () => {
    const layer = (name: string, extra: object = {}) => ({
      name,
      maxAttempts: 4,
      baseDelayMs: 200,
      maxDelayMs: 5000,
      jitter: 'full',
      budget: true,
      deadlineMs: 3000,
      stormproof: true,
      ...extra,
    });
    const nested = checkStack({ layers: [layer('app wrapper'), layer('client library')] });
    expect(nested.worstCaseBottomCalls).toBe(4);
    expect(nested.layers.map((l) => [l.attempts, l.passesUp])).toEqual([
      [1, true],
      [4, undefined],
    ]);
    expect(nested.warnings.some((w) => w.includes('layers retry'))).toBe(false);
    // The engine's opt-out, and layers that are not both stormproof, multiply as before.
    const optOut = checkStack({
      layers: [layer('batch job', { allowNestedRetries: true }), layer('client library')],
    });
    expect(optOut.worstCaseBottomCalls).toBe(16);
    const mixed = checkStack({
      layers: [layer('partner wrapper', { stormproof: false }), layer('client library')],
    });
    expect(mixed.worstCaseBottomCalls).toBe(16);
  });

  const example = JSON.parse(
    readFileSync(new URL('../examples/stack.json', import.meta.url), 'utf8'),
  );

  it("the storm story's stack: 64 calls, 32 s, seven warnings", () => {
    const r = checkStack(example);
    expect(r.worstCaseBottomCalls).toBe(64);
    expect(r.worstCaseLatencyMs).toBe(32_000);
    expect(r.layers.map((l) => [l.worstCaseCallsReceived, l.worstCaseLatencyMs])).toEqual([
      [1, 32_000],
      [4, 8000],
      [16, 4000],
    ]);
    expect(r.warnings).toHaveLength(7);
    expect(r.warnings[0]).toMatch(
      /^3 layers retry \(partner backend, client library and API gateway\).*64 calls/,
    );
    expect(r.warnings.filter((w) => /retries at once/.test(w))).toHaveLength(3);
    expect(r.warnings.filter((w) => /no retry budget/.test(w))).toHaveLength(3);
  });

  it('the fixed stack: one retrying layer with backoff, jitter, a budget and a deadline', () => {
    const r = checkStack({
      layers: [
        { name: 'partner backend', attempts: 1 },
        CLIENT_LIBRARY_LAYER,
        { name: 'API gateway', attempts: 1, timeoutMs: 1000 },
      ],
    });
    expect(r).toMatchObject({ worstCaseBottomCalls: 4, worstCaseLatencyMs: 3000, warnings: [] });
    expect(r.layers[1]!.maxTotalBackoffMs).toBe(1400);
  });

  it("takes a stormproof policy's own option names, so a policy can be pasted in as a layer", () => {
    const policy = {
      maxAttempts: 4,
      baseDelayMs: 200,
      maxDelayMs: 5000,
      deadlineMs: 3000,
      attemptTimeoutMs: 1000,
      jitter: 'full',
      budget: { maxCredits: 100, cost: 10 },
      honorRetryAfter: true,
      throttledDelayMultiplier: 5,
      maxInternalErrorRetries: 1,
    };
    const pasted = checkStack({ layers: [{ name: 'client library', ...policy }] });
    const written = checkStack({
      layers: [CLIENT_LIBRARY_LAYER],
    });
    expect(pasted).toEqual(written);
    expect(pasted.warnings).toEqual([]);
    // gRPC's band as a policy writes it: the top of the band bounds each wait.
    const band = checkStack({
      layers: [{ name: 'x', maxAttempts: 3, baseDelayMs: 100, jitter: { band: [0.5, 1.5] } }],
    });
    expect(band.layers[0]!.maxTotalBackoffMs).toBeCloseTo((100 + 200) * 1.5, 9);
    expect(() => checkStack({ layers: [{ name: 'x', attempts: 4, maxAttempts: 4 }] })).toThrow(
      /layers\[0\] has both attempts and maxAttempts, which mean the same; give one/,
    );
    expect(() => checkStack({ layers: [{ name: 'x', maxAttempts: 0 }] })).toThrow(
      /layers\[0\]\.maxAttempts must be >= 1/,
    );
    expect(() =>
      checkStack({ layers: [{ name: 'x', maxAttempts: 2, jitter: { band: [1.2, 0.8] } }] }),
    ).toThrow(/layers\[0\]\.jitter must be one of .* or \{ "band": \[low, high\] \}/);
  });

  it('works out the worst backoff of each jitter', () => {
    const backoff = (layer: object) =>
      checkStack({
        layers: [{ name: 'x', attempts: 4, baseDelayMs: 100, timeoutMs: 10, ...layer }],
      }).layers[0]!.maxTotalBackoffMs;
    expect(backoff({ jitter: 'full' })).toBe(100 + 200 + 400);
    expect(backoff({ jitter: 'band' })).toBeCloseTo(700 * 1.2, 9);
    expect(backoff({ jitter: 'decorrelated' })).toBe(300 + 900 + 2700);
    expect(backoff({ jitter: 'decorrelated', maxDelayMs: 1000 })).toBe(300 + 900 + 1000);
    expect(backoff({ jitter: 'none', maxDelayMs: 250 })).toBe(100 + 200 + 250);
  });

  it('warns of everything the storm story warns against', () => {
    const r = checkStack({
      layers: [{ name: 'sync job', attempts: 8, baseDelayMs: 100, retriesNonIdempotent: true }],
    });
    expect(r.worstCaseLatencyMs).toBeNull();
    expect(r.warnings.join('\n')).toMatch(/without jitter/);
    expect(r.warnings.join('\n')).toMatch(/non-idempotent/);
    expect(r.warnings.join('\n')).toMatch(/no retry budget/);
    expect(r.warnings.join('\n')).toMatch(/8 attempts, more than 5/);
    expect(r.warnings.join('\n')).toMatch(/No layer has a timeout or a deadline/);
  });

  it('names the field at fault', () => {
    expect(() => checkStack([])).toThrow(/stack must be an object with a "layers" array/);
    expect(() => checkStack({ layers: [] })).toThrow(/layers must be a non-empty array/);
    expect(() => checkStack({ layer: [] })).toThrow(
      /stack has no field "layer" \(did you mean "layers"\?\)/,
    );
    expect(() => checkStack({ layers: [{ name: 'a' }] })).toThrow(
      /layers\[0\]\.attempts \(or maxAttempts\) is required/,
    );
    expect(() =>
      checkStack({
        layers: [
          { name: 'a', attempts: 1 },
          { name: 'b', attempts: 0 },
        ],
      }),
    ).toThrow(/stack layers\[1\]\.attempts must be >= 1 and <= 100, got 0/);
    expect(() => checkStack({ layers: [{ name: 'a', atempts: 2 }] })).toThrow(
      /stack layers\[0\] has no field "atempts" \(did you mean "attempts"\?\); its fields are name, description, attempts/,
    );
    expect(() => checkStack({ layers: [{ name: 'a', attempts: 2, jitter: 'lots' }] })).toThrow(
      /layers\[0\]\.jitter must be one of "none", "full"/,
    );
    expect(() => checkStack({ layers: [{ name: 'a', attempts: 2, budget: 'yes' }] })).toThrow(
      /layers\[0\]\.budget must be true or false, got "yes"/,
    );
    expect(() =>
      checkStack({ layers: [{ name: 'a', attempts: 2, baseDelayMs: 100, maxDelayMs: 50 }] }),
    ).toThrow(/layers\[0\]\.maxDelayMs must be >= 100, got 50/);
    expect(() => checkStack({ layers: [{ name: '', attempts: 2 }] })).toThrow(
      /layers\[0\]\.name must be a non-empty string/,
    );
  });
});
