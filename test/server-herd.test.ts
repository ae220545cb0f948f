// The herd with stormproof/server's answers: the load-aware wait must come within 5% of the
// lower bound where every client that misses the first slot calls exactly twice (3975 calls,
// all done at 0.80 s).
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runHerd } from '../src/sim/herd.js';

const MAIN = join(fileURLToPath(new URL('..', import.meta.url)), 'dist/cli/main.js');

describe('herd with server pushback', () => {
  it('load-aware: within 5% of the 3975-call / 0.80 s bound', () => {
    const r = runHerd({ pushback: 'load-aware' });
    expect(r.calls).toBeGreaterThanOrEqual(3975); // nobody beats the bound
    expect(r.calls).toBeLessThanOrEqual(4175);
    expect(r.doneAfterSeconds).toBeGreaterThanOrEqual(0.8);
    expect(r.doneAfterSeconds).toBeLessThanOrEqual(0.88);
    expect(r).toEqual({ calls: 3997, busiestSlot: 47, doneAfterSeconds: 0.8 });
  });

  it('spread and fixed, and no pushback leaves the founding figures unchanged', () => {
    expect(runHerd({ pushback: 'spread' })).toEqual({
      calls: 3975,
      busiestSlot: 13,
      doneAfterSeconds: 5.01,
    });
    expect(runHerd({ pushback: 'fixed' })).toEqual({
      calls: 5816,
      busiestSlot: 116,
      doneAfterSeconds: 7.18,
    });
    expect(runHerd({ pushback: 'none' })).toEqual({
      calls: 6487,
      busiestSlot: 205,
      doneAfterSeconds: 3.45,
    });
    expect(runHerd()).toEqual({ calls: 6487, busiestSlot: 205, doneAfterSeconds: 3.45 });
  });

  it('load-aware keeps the returning clients at the service capacity', () => {
    let busiest = 0;
    runHerd({
      pushback: 'load-aware',
      onSlot: (ms, served, failed) => {
        if (ms > 0) busiest = Math.max(busiest, served + failed);
      },
    });
    // 25 per slot is the capacity; the first returning slot also gets the waits shorter than a slot.
    expect(busiest).toBeLessThanOrEqual(50);
  });

  it('names a bad pushback', () => {
    expect(() => runHerd({ pushback: 'smart' as never })).toThrow(
      "runHerd pushback must be one of 'none', 'load-aware', 'spread', 'fixed', got \"smart\"",
    );
  });

  it('is printed by stormproof sim herd --pushback', () => {
    const run = (p: string) =>
      JSON.parse(
        execFileSync(process.execPath, [MAIN, 'sim', 'herd', '--pushback', p, '--json'], {
          encoding: 'utf8',
        }),
      );
    expect(run('load-aware')).toEqual({ calls: 3997, busiestSlot: 47, doneAfterSeconds: 0.8 });
    expect(run('spread').calls).toBe(3975);
    expect(run('fixed').calls).toBe(5816);
  });
});
