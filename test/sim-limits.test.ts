// `stormproof sim limits`: the knee limit and the anchors' limiters in front of simulated backends
// of known concurrency, as users run it, and the sweep under it.
import { describe, expect, it } from 'vitest';
import { runLimitCell } from '../src/sim/limits/run.js';
import { runLimitsSweep } from '../src/sim/limits/sweep.js';
import { runCli } from './helpers/cli.js';

describe('stormproof sim limits', () => {
  it('prints every contender on a small grid, and the knee limit is the one inside the band', async () => {
    const { code, stdout, stderr } = await runCli([
      'sim',
      'limits',
      '--concurrency',
      '4',
      '--service-ms',
      '20',
      '--loads',
      '2',
      '--json',
      '--progress',
      'never',
    ]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const { contenders } = JSON.parse(stdout) as {
      contenders: Array<{
        contender: string;
        cells: Array<{ pass: boolean; finalLimit: number; bandEntryMs: number | null }>;
        step: { pass: boolean };
        slowdown: {
          slowMs: number | null;
          backMs: number | null;
          goodputAfter: number;
          pass: boolean;
          trace: unknown[];
        };
      }>;
    };
    expect(contenders.map((c) => c.contender)).toEqual([
      'knee',
      'gradient2',
      'vegas',
      'envoy',
      'go-zero',
      'failsafe-go',
    ]);
    const [knee, gradient2] = contenders;
    expect(knee!.cells[0]!.pass).toBe(true);
    expect(knee!.step.pass).toBe(true);
    // Every contender reports the slowdown: a pass is both times within 2 s.
    for (const c of contenders) {
      const { slowMs, backMs, pass, trace } = c.slowdown;
      expect(trace.length).toBeGreaterThan(1);
      expect(pass).toBe(slowMs !== null && slowMs <= 2000 && backMs !== null && backMs <= 2000);
      expect(c.slowdown.goodputAfter).toBeGreaterThan(0);
    }
    // Gradient2 never goes below 20: behind a backend of 4 it is never in [4, 6.2].
    expect(gradient2!.cells[0]!.bandEntryMs).toBeNull();
    expect(gradient2!.cells[0]!.finalLimit).toBeGreaterThanOrEqual(20);
  }, 60_000);

  it('names a bad contender', async () => {
    const { code, stderr } = await runCli(['sim', 'limits', '--contender', 'bbr']);
    expect(code).toBe(2);
    expect(stderr).toMatch(/--contender/);
  });
});

describe('runLimitsSweep', () => {
  it('skips a cell that would offer more requests than allowed, and says so', () => {
    const r = runLimitsSweep({
      contender: 'knee',
      concurrencies: [4, 1000],
      servicesMs: [20],
      loads: [2],
      maxRequests: 100_000,
    });
    expect(r.cells.map((c) => [c.concurrency, c.skipped])).toEqual([
      [4, false],
      [1000, true],
    ]);
    expect(r.cells[1]!.pass).toBe(false);
  });

  it('repeats exactly for a seed', () => {
    const o = { contender: 'vegas' as const, concurrencies: [4], servicesMs: [20], loads: [2] };
    expect(runLimitsSweep(o)).toEqual(runLimitsSweep(o));
    const e = { ...o, service: 'exponential' as const };
    expect(runLimitsSweep(e)).toEqual(runLimitsSweep(e));
  });

  it('runs steady backends unless told otherwise', () => {
    const o = { contender: 'knee' as const, concurrencies: [4], servicesMs: [20], loads: [0.5, 2] };
    const r = runLimitsSweep(o);
    expect(r.service).toBe('uniform');
    expect(runLimitsSweep({ ...o, service: 'uniform' })).toEqual(r);
    expect(runLimitsSweep({ ...o, service: 'exponential' }).cells).not.toEqual(r.cells);
  });

  it('names a bad service', () => {
    expect(() =>
      runLimitsSweep({ contender: 'knee', service: 'lognormal' as never, concurrencies: [4] }),
    ).toThrow(/service must be 'uniform' or 'exponential', got lognormal/);
  });

  it('below capacity a cell passes on what it shed, and fails when it sheds', () => {
    const o = {
      concurrencies: [4],
      servicesMs: [20],
      loads: [0.5],
      service: 'exponential' as const,
    };
    // Gradient2 never goes below 20: in front of 4 at half load it has nothing to shed.
    const roomy = runLimitsSweep({ ...o, contender: 'gradient2' }).cells[0]!;
    expect(roomy.rejectedShare).toBe(0);
    expect(roomy.pass).toBe(true);
    expect(roomy.missed).toEqual([]);
    // At 50 in flight it starts at 20 and grows slowly: what it sheds meanwhile fails the cell.
    const short = runLimitsSweep({ ...o, concurrencies: [100], contender: 'gradient2' }).cells[0]!;
    expect(short.rejectedShare).toBeGreaterThan(0.01);
    expect(short.pass).toBe(false);
    expect(short.missed).toEqual(['shed']);
  });
});

describe('a cell names the targets it missed', () => {
  it('above capacity: band, goodput and p99, each judged on its own; pass when none', () => {
    const o = { contender: 'knee' as const, servicesMs: [20], loads: [2] };
    // One at a time: the knee keeps a second request inside the backend, which waits a whole
    // service time behind the first (admitted p99 about 2.6 S), while its limit sits in [1, 2.3].
    const one = runLimitsSweep({ ...o, concurrencies: [1] }).cells[0]!;
    expect(one.admittedP99).toBeGreaterThan(2);
    expect(one.missed).toContain('p99');
    expect(one.pass).toBe(false);
    // Gradient2 never goes below 20: in front of 4 its limit is never in [4, 6.2].
    const g2 = runLimitsSweep({ ...o, contender: 'gradient2', concurrencies: [4] }).cells[0]!;
    expect(g2.bandEntryMs).toBeNull();
    expect(g2.missed).toContain('band');
    const ten = runLimitsSweep({ ...o, concurrencies: [10] }).cells[0]!;
    expect(ten.pass).toBe(true);
    expect(ten.missed).toEqual([]);
    for (const c of [one, g2, ten]) {
      expect(c.missed.includes('goodput')).toBe(c.goodput < 0.95);
      expect(c.missed.includes('p99')).toBe(c.admittedP99 > 2);
    }
  });

  it('the table prints them beside miss', async () => {
    const { code, stdout } = await runCli([
      'sim',
      'limits',
      '--contender',
      'knee',
      '--concurrency',
      '1,10',
      '--service-ms',
      '20',
      '--loads',
      '2',
      '--progress',
      'never',
    ]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/1 x 20 ms, 2x\s+miss \([a-z, ]*p99[a-z, ]*\) /);
    expect(stdout).toMatch(/10 x 20 ms, 2x\s+pass /);
  });
});

describe('runLimitCell', () => {
  const cell = { concurrency: 4, serviceMs: 20, durationMs: 20_000, measureFromMs: 2000, seed: 3 };

  it("spreads service times as asked: exponential's p99 is ln(100) S, uniform's 1.1 S", () => {
    // A limit far above the load: nothing queues, so latency is service time alone.
    const exp = runLimitCell({
      ...cell,
      limit: 1000,
      concurrency: 1000,
      load: 0.01,
      service: 'exponential',
    });
    const uni = runLimitCell({ ...cell, limit: 1000, concurrency: 1000, load: 0.01 });
    expect(exp.admittedP99).toBeGreaterThan(Math.log(100) * 0.8);
    expect(exp.admittedP99).toBeLessThan(Math.log(100) * 1.2);
    expect(uni.admittedP99).toBeGreaterThan(1.05);
    expect(uni.admittedP99).toBeLessThanOrEqual(1.1);
  });

  it('measures the share of the time the limit spent below the concurrency, steps included', () => {
    expect(runLimitCell({ ...cell, limit: 2, load: 2 }).belowShare).toBe(1);
    expect(runLimitCell({ ...cell, limit: 8, load: 2 }).belowShare).toBe(0);
    // C drops from 4 to 1 at 11 s: a fixed 2 is below it for the 9 s of the measured 18 before.
    const stepped = runLimitCell({
      ...cell,
      limit: 2,
      load: 2,
      steps: [{ atMs: 11_000, concurrency: 1 }],
    });
    expect(stepped.belowShare).toBeCloseTo(0.5, 10);
  });

  it('serves every request 5 times slower during a slowdown, and counts the capacity it left', () => {
    // A fixed limit of 8 in front of 4 at 2x keeps the backend busy: it completes what its
    // capacity allows, so goodput is 1 whether it is slowed or not, only if the capacity counted
    // the slowdown (from 2 s to 11 s, half the measured 18 s: 0.6 had it not).
    const normal = runLimitCell({ ...cell, limit: 8, load: 2 });
    const slowed = runLimitCell({
      ...cell,
      limit: 8,
      load: 2,
      steps: [
        { atMs: 2000, concurrency: 4, slowdown: 5 },
        { atMs: 11_000, concurrency: 4 },
      ],
    });
    expect(normal.goodput).toBeGreaterThan(0.97);
    expect(slowed.goodput).toBeGreaterThan(0.97);
    expect(slowed.goodput).toBeLessThan(1.03);
    // Served more slowly: fewer admitted, and each took longer (p99 over the unslowed S).
    expect(slowed.admitted).toBeLessThan(0.7 * normal.admitted);
    expect(slowed.admittedP99).toBeGreaterThan(1.5 * normal.admittedP99);
  });

  it('counts what was offered and shed from the measured half on', () => {
    const r = runLimitCell({ ...cell, limit: 2, load: 2 });
    expect(r.offered).toBeGreaterThan(0);
    expect(r.rejectedShare).toBeGreaterThan(0.5);
    expect(r.rejectedShare).toBeLessThan(1);
  });
});
