// The Tail at Scale on virtual time (src/sim/hedge.ts): hedging by the engine's own rules cuts
// the slow tail of a 100-way fan-out for about 5 % more requests, and adds almost nothing once
// the replicas are overloaded.
import { describe, expect, it } from 'vitest';
import { runHedgeSim } from '../src/sim/index.js';
import { runCli } from './helpers/cli.js';

describe('runHedgeSim', () => {
  const small = { requests: 3000 };

  it('cuts the p99 of a 100-way fan-out at least 5x for at most 5% more requests', () => {
    for (const seed of [1, 2]) {
      const plain = runHedgeSim({ ...small, seed, hedge: false });
      const hedged = runHedgeSim({ ...small, seed });
      expect(plain.hedgesSent).toBe(0);
      expect(plain.p99Ms / hedged.p99Ms).toBeGreaterThanOrEqual(5);
      expect(hedged.extraRequests).toBeGreaterThan(0.01);
      expect(hedged.extraRequests).toBeLessThanOrEqual(0.05);
      expect(hedged.failedRequests).toBe(0);
    }
  });

  it('sends almost no hedges into overloaded replicas (pushback, hedges not winning)', () => {
    const light = runHedgeSim({ ...small, load: 0.3 });
    const overloaded = runHedgeSim({ ...small, load: 1.5 });
    expect(overloaded.extraRequests).toBeLessThan(light.extraRequests / 3);
    expect(
      (overloaded.refused.pushback ?? 0) + (overloaded.refused['not-winning'] ?? 0),
    ).toBeGreaterThan(overloaded.hedgesSent);
  });

  it('repeats exactly for a seed, and differs for another', () => {
    const a = runHedgeSim({ requests: 300, fanOut: 20, seed: 4 });
    expect(runHedgeSim({ requests: 300, fanOut: 20, seed: 4 })).toEqual(a);
    expect(runHedgeSim({ requests: 300, fanOut: 20, seed: 5 }).p50Ms).not.toBe(a.p50Ms);
  });

  it('rejects bad options, naming them', () => {
    expect(() => runHedgeSim({ requests: 0 })).toThrow(/requests/);
    expect(() => runHedgeSim({ load: -1 })).toThrow(/load/);
    expect(() => runHedgeSim({ hedge: 'yes' as never })).toThrow(/hedge/);
    expect(() => runHedgeSim({ fanout: 3 } as never)).toThrow(/fanout/);
    expect(() => runHedgeSim(null as never)).toThrow(/runHedgeSim/);
  });
});

describe('stormproof sim hedge', () => {
  it("prints the model's figures, with and without hedging", async () => {
    const args = ['--requests', '300', '--fan-out', '20', '--load', '0.4', '--seed', '3'];
    const ran = await runCli(['sim', 'hedge', ...args, '--json']);
    expect(ran.code).toBe(0);
    const out = JSON.parse(ran.stdout);
    const same = { requests: 300, fanOut: 20, load: 0.4, seed: 3 };
    const { options: _p, ...plain } = runHedgeSim({ ...same, hedge: false });
    const { options: _h, ...hedged } = runHedgeSim({ ...same });
    expect(out).toEqual({ plain, hedged });
  });

  it('names a bad value and exits 2', async () => {
    const ran = await runCli(['sim', 'hedge', '--fan-out', '0']);
    expect(ran.code).toBe(2);
    expect(ran.stderr).toMatch(/--fan-out/);
  });
});
