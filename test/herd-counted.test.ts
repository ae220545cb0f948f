// The counted herd (runHerd's mode 'counted'): the same herd as the exact mode in distribution,
// at a cost that does not grow with the clients. Issue 25: `sim herd --clients 100000000` ran past
// 60 s with no output, since the only mode followed every client.
import { describe, expect, it } from 'vitest';
import { binomial, logFactorial } from '../src/sim/binomial.js';
import { type HerdOptions, type HerdResult, runHerd } from '../src/sim/herd.js';
import { PythonRandom } from '../src/sim/python-random.js';

function stats(xs: readonly number[]): { mean: number; se: number } {
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  const variance = xs.reduce((a, b) => a + (b - mean) ** 2, 0) / (xs.length - 1);
  return { mean, se: Math.sqrt(variance / xs.length) };
}

describe('binomial', () => {
  it('log(k!) by table and by Stirling agree with the sum of logs', () => {
    expect(logFactorial(0)).toBe(0);
    expect(logFactorial(1)).toBe(0);
    let sum = 0;
    for (let k = 2; k <= 3000; k++) {
      sum += Math.log(k);
      expect(Math.abs(logFactorial(k) - sum) / sum).toBeLessThan(1e-13);
    }
  });

  it.each([
    [20, 0.3],
    [1000, 0.01],
    [1000, 0.5],
    [10_000, 0.9],
    [1_000_000_000, 0.25],
  ])('Binomial(%d, %d): mean and variance within noise, in range', (n, p) => {
    const rng = new PythonRandom(11);
    const random = () => rng.random();
    const draws = 4000;
    const xs: number[] = [];
    for (let i = 0; i < draws; i++) {
      const x = binomial(n, p, random);
      expect(Number.isInteger(x) && x >= 0 && x <= n).toBe(true);
      xs.push(x);
    }
    const mean = n * p;
    const variance = n * p * (1 - p);
    const { mean: m, se } = stats(xs);
    expect(Math.abs(m - mean)).toBeLessThan(5 * Math.sqrt(variance / draws));
    const sampleVariance = (se * se * draws) as number;
    // The sample variance of 4000 draws is within about 10% of the true one.
    expect(Math.abs(sampleVariance / variance - 1)).toBeLessThan(0.12);
  });

  it('small n: the frequencies fit the mass function (chi-square)', () => {
    const rng = new PythonRandom(3);
    const random = () => rng.random();
    const n = 8;
    const p = 0.35;
    const draws = 40_000;
    const seen = new Array<number>(n + 1).fill(0);
    for (let i = 0; i < draws; i++) seen[binomial(n, p, random)]!++;
    let chi = 0;
    for (let k = 0; k <= n; k++) {
      const expected =
        draws *
        Math.exp(logFactorial(n) - logFactorial(k) - logFactorial(n - k)) *
        p ** k *
        (1 - p) ** (n - k);
      chi += (seen[k]! - expected) ** 2 / expected;
    }
    // 8 degrees of freedom: P(chi-square > 26.1) = 0.001.
    expect(chi).toBeLessThan(26.1);
  });

  it('edges: n 0, p 0 and p 1 draw nothing and return the obvious', () => {
    const never = () => {
      throw new Error('drew');
    };
    expect(binomial(0, 0.5, never)).toBe(0);
    expect(binomial(10, 0, never)).toBe(0);
    expect(binomial(10, 1, never)).toBe(10);
  });
});

const SEEDS = [1, 2, 3, 4, 5, 6, 7, 8];

/** Mean calls, busiest slot and done time over the seeds, for one mode. */
function over(options: HerdOptions, mode: 'exact' | 'counted') {
  const runs: HerdResult[] = SEEDS.map((seed) => runHerd({ ...options, seed, mode }));
  return {
    calls: stats(runs.map((r) => r.calls)),
    busiest: stats(runs.map((r) => r.busiestSlot)),
    done: stats(runs.map((r) => r.doneAfterSeconds)),
  };
}

/**
 * The two modes agree when their means differ by less than 4 combined standard errors, plus
 * `slack` of the exact mean (for a figure whose spread the seeds can hide, and for the counted
 * mode's moving the biggest slots by their means).
 */
function expectAgree(
  a: { mean: number; se: number },
  b: { mean: number; se: number },
  slack: number,
) {
  const allowed = 4 * Math.sqrt(a.se ** 2 + b.se ** 2) + slack * Math.abs(a.mean);
  expect(Math.abs(a.mean - b.mean)).toBeLessThanOrEqual(allowed);
}

describe('runHerd mode counted agrees with mode exact in distribution', () => {
  it.each<[string, HerdOptions]>([
    ['full jitter, 20,000 clients (its first slot moves by the mean)', { clients: 20_000 }],
    ['full jitter, 3,000 clients, 1 ms slots', { clients: 3000, perSlot: 4, slotMs: 1 }],
    ['equal jitter', { clients: 4000, jitter: 'equal' }],
    ['band jitter', { clients: 4000, jitter: 'band' }],
    ['no jitter', { clients: 1500, jitter: 'none' }],
    ['a zero base', { clients: 300, perSlot: 5, baseMs: 0 }],
    ['pushback fixed', { clients: 4000, pushback: 'fixed' }],
    ['pushback spread', { clients: 4000, pushback: 'spread' }],
  ])('%s: calls, busiest slot and done time', (_, options) => {
    const exact = over(options, 'exact');
    const counted = over(options, 'counted');
    expectAgree(exact.calls, counted.calls, 0.005);
    expectAgree(exact.busiest, counted.busiest, 0.02);
    expectAgree(exact.done, counted.done, 0.01);
  });

  it('the means are not all alike: a wrong herd fails the comparison', () => {
    // The check must be able to fail: a herd with half the capacity is far outside it.
    const exact = over({ clients: 4000 }, 'exact');
    const other = over({ clients: 4000, perSlot: 12 }, 'counted');
    expect(() => expectAgree(exact.calls, other.calls, 0.005)).toThrow();
    expect(() => expectAgree(exact.done, other.done, 0.01)).toThrow();
  });
});

describe('runHerd mode counted', () => {
  it('repeats for a seed and differs between seeds', () => {
    const a = runHerd({ clients: 5000, mode: 'counted', seed: 1 });
    expect(runHerd({ clients: 5000, mode: 'counted', seed: 1 })).toEqual(a);
    expect(runHerd({ clients: 5000, mode: 'counted', seed: 2 })).not.toEqual(a);
  });

  it('reports every slot, and the slots add up to the calls; progress ends with everyone done', () => {
    let calls = 0;
    let served = 0;
    const progress: number[] = [];
    const r = runHerd({
      clients: 50_000,
      mode: 'counted',
      onSlot: (_ms, s, f) => {
        served += s;
        calls += s + f;
      },
      onProgress: (done) => progress.push(done),
    });
    expect(calls).toBe(r.calls);
    expect(served).toBe(50_000);
    expect(progress.at(-1)).toBe(50_000);
    expect(progress.length).toBeGreaterThan(10);
  });

  it('issue 25: a hundred million clients run as counts (auto), with sane figures', () => {
    // Ran client by client before: past 60 s with no output. Fewer slots here (perSlot 20,000)
    // keep the test short; bench/herd-counted.mjs times the default service at 10^9.
    const r = runHerd({ clients: 100_000_000, perSlot: 20_000 });
    expect(r.calls).toBeGreaterThan(100_000_000);
    expect(r.doneAfterSeconds).toBeGreaterThanOrEqual((100_000_000 / 20_000) * 0.01);
    expect(r.doneAfterSeconds).toBeLessThan((100_000_000 / 20_000) * 0.01 * 1.1);
    expect(r.busiestSlot).toBeLessThanOrEqual(100_000_000);
  });

  it('issue 25: 10^9 clients without jitter skip the empty slots between waves, same figures', () => {
    // Every wave of a lone group at the cap was visited slot by slot, 500 empty slots apart: 21 s
    // for 4 * 10^7 waves. The figures, the slots reported and the progress are pinned from that
    // slot-by-slot run.
    const progress: number[] = [];
    const r = runHerd({
      clients: 1_000_000_000,
      jitter: 'none',
      onProgress: (done) => progress.push(done),
    });
    expect(r).toEqual({
      calls: 20_000_000_514_827_536,
      busiestSlot: 999_999_975,
      doneAfterSeconds: 199_999_976.21,
    });
    expect(progress).toHaveLength(100);
    expect(progress.at(-1)).toBe(1_000_000_000);
  });

  it.each<[HerdOptions, HerdResult, number]>([
    [
      { clients: 2_000_000, jitter: 'none' },
      { calls: 80_001_000_000, busiestSlot: 1_999_975, doneAfterSeconds: 399_976.21 },
      80_000,
    ],
    [
      { clients: 100_000_000, jitter: 'none', pushback: 'fixed', perSlot: 2500 },
      { calls: 2_000_050_000_000, busiestSlot: 99_997_500, doneAfterSeconds: 279_974.21 },
      40_000,
    ],
    [
      { clients: 3_000_000, jitter: 'none', perSlot: 7, slotMs: 3, baseMs: 50, capMs: 700 },
      { calls: 642_858_642_858, busiestSlot: 2_999_993, doneAfterSeconds: 299_569.08 },
      428_572,
    ],
  ])(
    'a lone group at the cap, %o: the slot-by-slot figures and slots',
    (options, expected, slots) => {
      let reported = 0;
      let calls = 0;
      const r = runHerd({
        ...options,
        mode: 'counted',
        onSlot: (_ms, served, failed) => {
          reported++;
          calls += served + failed;
        },
      });
      expect(r).toEqual(expected);
      expect(reported).toBe(slots);
      expect(calls).toBe(r.calls);
    },
  );

  it('auto stays exact up to 100,000 clients: the published figures are unchanged', () => {
    expect(runHerd({ mode: 'auto' })).toEqual(runHerd({ mode: 'exact' }));
    expect(runHerd({ mode: 'counted' })).not.toEqual(runHerd({ mode: 'exact' }));
  });

  it.each([
    [{ mode: 'fast' }, TypeError, /mode.*"fast"/],
    [{ mode: 'counted', jitter: 'decorrelated' }, RangeError, /mode 'counted'.*decorrelated/],
    [{ mode: 'counted', pushback: 'load-aware' }, RangeError, /mode 'counted'.*load-aware/],
    [{ mode: 'counted', slotMs: 1, capMs: 86_400_000 }, RangeError, /mode 'counted'.*capMs/],
  ])('rejects %o naming the option', (options, type, message) => {
    const run = () => runHerd(options as HerdOptions);
    expect(run).toThrow(type);
    expect(run).toThrow(message);
  });

  it('auto falls back to exact where it cannot count (decorrelated, a big herd)', () => {
    // 120,000 clients > the exact limit, but decorrelated jitter cannot be counted: exact, same
    // figures as asked for explicitly.
    const options: HerdOptions = { clients: 120_000, jitter: 'decorrelated', perSlot: 2000 };
    expect(runHerd(options)).toEqual(runHerd({ ...options, mode: 'exact' }));
  });
});
