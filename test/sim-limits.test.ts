// `stormproof sim limits`: the knee limit and the anchors' limiters in front of simulated backends
// of known concurrency, as users run it, and the sweep under it.
import { describe, expect, it } from 'vitest';
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
  });
});
