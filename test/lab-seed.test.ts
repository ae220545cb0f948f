// Issue 25: `lab --live` had no --seed, and its fleet drew from Math.random, so two runs differed
// in their dice as well as in what the machine did (old stack 15.17x one run, 14.32x the next).
// The fleet's draws now come from the lab's seed; checked here without running the live storm.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Clock } from '../src/core/clock.js';
import { fleetClients, fleetRandom } from '../src/lab/fleet-random.js';
import { liveParameters } from '../src/lab/params.js';
import { runCli as cli, root } from './helpers/cli.js';

/** The first `n` arrivals of a fleet worker: gap, instance and forecast of each tap. */
function arrivals(seed: number, worker: number, n = 200): number[][] {
  const dice = fleetRandom(seed, worker, 30, 6, 300);
  return Array.from({ length: n }, () => [dice.nextGapMs(), dice.instance(), dice.forecast()]);
}

/**
 * The jitter schedule of a fleet: every client's waits, on virtual time, when each of its calls
 * fails with a 503 until it gives up.
 */
async function jitterSchedule(seed: number): Promise<number[][]> {
  const dice = fleetRandom(seed, 0, 30, 6, 300);
  const schedule: number[][] = [];
  let t = 0;
  let waits: number[] = [];
  const clock: Clock = {
    now: () => t,
    sleep: async (ms) => {
      waits.push(ms);
      t += ms;
    },
  };
  const failing = async () => new Response('down', { status: 503 });
  const clients = fleetClients(dice, 6, failing, clock);
  for (const client of clients) {
    waits = [];
    for (let call = 0; call < 3; call++) await client(`http://127.0.0.1:9/forecast/${call}`);
    schedule.push(waits);
  }
  return schedule;
}

describe('the live lab fleet is seeded', () => {
  it('the same seed draws the same arrivals, instances and forecasts; another seed others', () => {
    expect(arrivals(1, 0)).toEqual(arrivals(1, 0));
    expect(arrivals(2, 0)).not.toEqual(arrivals(1, 0));
    // Each worker has its own draws.
    expect(arrivals(1, 1)).not.toEqual(arrivals(1, 0));
    const taps = arrivals(1, 0, 5000);
    const meanGap = taps.reduce((a, [gap]) => a + gap!, 0) / taps.length;
    expect(meanGap).toBeGreaterThan(1000 / 30 - 3);
    expect(meanGap).toBeLessThan(1000 / 30 + 3);
    expect(new Set(taps.map(([, instance]) => instance))).toEqual(new Set([0, 1, 2, 3, 4, 5]));
  });

  it("the seed reaches the clients' jitter: the fleet's schedule repeats for a seed", async () => {
    const a = await jitterSchedule(7);
    expect(a.flat().length).toBeGreaterThan(6);
    expect(a.flat().every((ms) => ms > 0)).toBe(true);
    expect(await jitterSchedule(7)).toEqual(a);
    expect(await jitterSchedule(8)).not.toEqual(a);
  });

  it('the fleet worker draws nothing from Math.random', () => {
    const source = readFileSync(`${root}/src/lab/fleet-worker.ts`, 'utf8');
    expect(source).not.toMatch(/Math\.random/);
    expect(source).toMatch(/fleetRandom\(job\.seed, job\.worker/);
  });

  it('runLiveLab takes a seed, checked as the lab checks it', () => {
    expect(liveParameters({ seed: 42 }).parameters.seed).toBe(42);
    expect(liveParameters().parameters.seed).toBe(1);
    expect(() => liveParameters({ seed: -1 })).toThrow(/runLiveLab seed must be an integer from 0/);
    expect(() => liveParameters({ seed: 1.5 })).toThrow(/runLiveLab seed .* got 1\.5/);
  });

  it.each([
    [
      ['--seed', '1.5'],
      'stormproof lab --live: --seed must be an integer from 0 to 9007199254740991, got "1.5"',
    ],
    [
      ['--seed', '99999999999999999999'],
      'stormproof lab --live: --seed must be an integer from 0 to 9007199254740991, got "99999999999999999999"',
    ],
    [['--seed'], 'stormproof lab --live: option --seed needs a value'],
  ])('lab --live %j: exit 2, one line', async (args, message) => {
    const r = await cli(['lab', '--live', ...args]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`${message}\n`);
  });

  it('lab --live --help lists --seed', async () => {
    const r = await cli(['lab', '--live', '--help']);
    expect(r.stdout).toMatch(/--seed N\s+seed of the fleet's draws.*\(default 1\)/);
  });
});
