// The client fleet's randomness, seeded: when taps arrive, which partner instance sends each and
// which forecast it asks for, and the jitter of each instance's stormproof client. Two runs with the
// same seed draw the same numbers in the same order, so what still differs between them is what the
// machine does (timers firing late, the order sockets answer in), not the dice.
import type { Clock } from '../core/clock.js';
import { createFetch, type FetchFunction } from '../fetch/index.js';
import { PythonRandom } from '../sim/python-random.js';

/** The seed of the live lab when none is given: the virtual-time lab's (`stormproof lab`). */
export const LIVE_DEFAULT_SEED = 1;

/** A fleet worker's seeded random sources. */
export interface FleetRandom {
  /** The gap before the next tap, ms: exponential, for Poisson arrivals at `rps` a second. */
  nextGapMs(): number;
  /** The partner instance that sends the next tap, from 0 to `instances - 1`. */
  instance(): number;
  /** The forecast the next tap asks for, from 0 (Zipf, exponent 1: the k-th in proportion to 1/k). */
  forecast(): number;
  /** Instance `i`'s stormproof client's random source (its jitter), uniform in [0, 1). */
  clientRandom(i: number): () => number;
}

/**
 * The sources of worker `worker` of a fleet seeded with `seed`. Arrivals, instances and forecasts
 * come from one generator (seeded with `seed` and the worker), drawn in the order the taps
 * arrive; each instance's client has a generator of its own (seeded with `seed`, the worker and
 * the instance), so that how often one client retries does not move another's draws or the
 * arrivals. Every run of the lab (old stack, stormproof clients, stormproof server) gets the same
 * arrivals for a seed.
 */
export function fleetRandom(
  seed: number,
  worker: number,
  rps: number,
  instances: number,
  forecasts: number,
): FleetRandom {
  // Distinct seeds for each stream: the lab's seed, then which worker and which instance.
  const stream = (instance: number) =>
    new PythonRandom((BigInt(seed) << 32n) | (BigInt(worker) << 20n) | BigInt(instance + 1));
  const taps = stream(-1);
  const cumulative: number[] = [];
  let total = 0;
  for (let k = 1; k <= forecasts; k++) {
    total += 1 / k;
    cumulative.push(total);
  }
  return {
    nextGapMs: () => (-Math.log(1 - taps.random()) * 1000) / rps,
    instance: () => Math.floor(taps.random() * instances),
    forecast: () => {
      const u = taps.random() * total;
      let lo = 0;
      let hi = cumulative.length - 1;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (cumulative[mid]! < u) lo = mid + 1;
        else hi = mid;
      }
      return lo;
    },
    clientRandom: (i: number) => {
      const rng = stream(i);
      return () => rng.random();
    },
  };
}

/**
 * One stormproof client per partner instance, with its defaults (its own budget per origin) and
 * its jitter drawn from `dice.clientRandom(instance)`. `clock` is for tests (virtual time).
 */
export function fleetClients(
  dice: FleetRandom,
  instances: number,
  fetch: FetchFunction,
  clock?: Clock,
): FetchFunction[] {
  return Array.from({ length: instances }, (_, i) =>
    createFetch({ fetch, random: dice.clientRandom(i), ...(clock === undefined ? {} : { clock }) }),
  );
}
