// A worker thread of the client fleet: partner backend instances sending farmers' taps to the
// gateway over real HTTP (fetch, keep-alive), open loop, with the old stack's clients or
// stormproof/fetch. It counts per second what it sent and how each tap ended, and posts the
// counts when its taps are done (or the drain time is up: the rest are counted unfinished).
import { parentPort, workerData } from 'node:worker_threads';
import type { FetchFunction } from '../fetch/index.js';
import { fleetClients, fleetRandom } from './fleet-random.js';
import { PerSecond } from './series.js';
import { epochMs, TimerSet } from './timers.js';

/** What the main thread gives a fleet worker. */
export interface FleetJob {
  readonly gatewayUrl: string;
  readonly clients: 'old-stack' | 'stormproof';
  /** Taps a second this worker sends. */
  readonly rps: number;
  readonly instances: number;
  /** Instances (the first ones) that wrap the client library in retries of their own. */
  readonly wrappedInstances: number;
  readonly forecasts: number;
  readonly startMs: number;
  /** Taps arrive from `startMs` for this long. */
  readonly arrivalsMs: number;
  readonly drainMs: number;
  readonly clientTimeoutMs: number;
  readonly tries: number;
  /** The lab's seed: arrivals, instances, forecasts and client jitter are drawn from it. */
  readonly seed: number;
  /** This worker's number, from 0: its draws are its own. */
  readonly worker: number;
}

/** What a fleet worker posts back: counts per second of the run. */
export interface FleetCounts {
  /** Client-library attempts sent to the edge. */
  readonly offered: number[];
  /** Taps, by the second they arrived. */
  readonly arrived: number[];
  /** Taps that got a forecast, by the second they arrived. */
  readonly okByArrival: number[];
  /** Taps that got a forecast, by the second they ended. */
  readonly succeeded: number[];
  /** Taps that failed, by the second they ended. */
  readonly failed: number[];
  /** Taps still under way when the drain time was up. */
  readonly unfinished: number;
}

/** Most taps a worker starts: twice its rate over the arrival time, and a few. */
function maxTaps(job: FleetJob): number {
  return Math.ceil(job.rps * (job.arrivalsMs / 1000) * 2) + 10;
}

/** Runs the fleet; resolves with its counts. */
export async function runFleet(job: FleetJob): Promise<FleetCounts> {
  const seconds = (job.arrivalsMs + job.drainMs) / 1000 + 1;
  const offered = new PerSecond(job.startMs, seconds);
  const arrived = new PerSecond(job.startMs, seconds);
  const okByArrival = new PerSecond(job.startMs, seconds);
  const succeeded = new PerSecond(job.startMs, seconds);
  const failed = new PerSecond(job.startMs, seconds);
  const stop = new AbortController();
  const timers = new TimerSet();
  const dice = fleetRandom(job.seed, job.worker, job.rps, job.instances, job.forecasts);

  const send: FetchFunction = (input, init) => {
    offered.add(epochMs());
    return fetch(input, init);
  };
  /** One attempt of the old client library: a forecast, or false. */
  const oldAttempt = async (url: string): Promise<boolean> => {
    try {
      const signal = AbortSignal.any([stop.signal, AbortSignal.timeout(job.clientTimeoutMs)]);
      const res = await send(url, { signal });
      await res.arrayBuffer();
      return res.ok;
    } catch {
      return false;
    }
  };
  /** The old stack's layers: `tries` calls of the layer below, no wait, no budget. */
  const retrying =
    (below: (url: string) => Promise<boolean>) =>
    async (url: string): Promise<boolean> => {
      for (let i = 0; i < job.tries && !stop.signal.aborted; i++) if (await below(url)) return true;
      return false;
    };
  const oldLibrary = retrying(oldAttempt);
  const oldWrapped = retrying(oldLibrary);
  // One stormproof client per partner instance, with its defaults: its own budget per origin, its
  // jitter from its own seeded generator.
  const clients = fleetClients(dice, job.instances, send);
  const stormproofTap = async (instance: number, url: string): Promise<boolean> => {
    try {
      const res = await clients[instance]!(url, { signal: stop.signal });
      await res.arrayBuffer();
      return res.ok;
    } catch {
      return false;
    }
  };

  const inFlight = new Set<Promise<void>>();
  const tap = (): void => {
    const start = epochMs();
    arrived.add(start);
    const instance = dice.instance();
    const url = `${job.gatewayUrl}/forecast/${dice.forecast()}`;
    const outcome =
      job.clients === 'stormproof'
        ? stormproofTap(instance, url)
        : instance < job.wrappedInstances
          ? oldWrapped(url)
          : oldLibrary(url);
    const done = outcome.then((ok) => {
      inFlight.delete(done);
      if (stop.signal.aborted) return;
      if (ok) {
        okByArrival.add(start);
        succeeded.add(epochMs());
      } else {
        failed.add(epochMs());
      }
    });
    inFlight.add(done);
  };

  // Open loop: exponential gaps (Poisson arrivals), bounded in time and in count.
  const endMs = job.startMs + job.arrivalsMs;
  const limit = maxTaps(job);
  let next = job.startMs;
  let count = 0;
  while (count < limit) {
    next += dice.nextGapMs();
    if (next >= endMs) break;
    const wait = next - epochMs();
    if (wait > 1) await timers.sleep(wait);
    tap();
    count++;
  }
  // Let the taps under way finish, up to the drain time; then abort the rest.
  const drained = Promise.all(inFlight).then(() => true);
  const late = new Promise<false>((resolve) => timers.after(job.drainMs, () => resolve(false)));
  await Promise.race([drained, late]);
  const unfinished = inFlight.size;
  stop.abort();
  timers.clear();
  await Promise.all(inFlight);
  return {
    offered: offered.counts,
    arrived: arrived.counts,
    okByArrival: okByArrival.counts,
    succeeded: succeeded.counts,
    failed: failed.counts,
    unfinished,
  };
}

const port = parentPort;
if (port !== null && workerData !== null && typeof workerData === 'object') {
  const counts = await runFleet(workerData as FleetJob);
  port.postMessage(counts);
}
