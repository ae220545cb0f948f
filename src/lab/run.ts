// The live lab: for each run, an API server, a gateway (with stormproof/server in front for the
// last run) and a fleet of client workers, all on 127.0.0.1; the database fails over on a
// schedule; then everything is closed and the counts become per-second curves and figures.
import { Worker } from 'node:worker_threads';
import { nodeMiddleware } from '../server/index.js';
import { startApiServer } from './api-server.js';
import type { FleetCounts, FleetJob } from './fleet-worker.js';
import { startGateway } from './gateway.js';
import { type LiveFigures, type LiveSecond, liveFigures } from './measure.js';
import {
  type LiveLabOptions,
  type LiveParameters,
  type LiveRunName,
  liveParameters,
} from './params.js';
import { sum } from './series.js';
import { epochMs, TimerSet } from './timers.js';

/** One run of the live lab, measured. */
export interface LiveRun {
  readonly name: LiveRunName;
  /** What ran: the clients, the gateway, the edge. */
  readonly setup: string;
  /** Seconds since the run's start at which the database failed over and was back. */
  readonly faultFromSeconds: number;
  readonly faultUntilSeconds: number;
  /** One entry per second of taps arriving. */
  readonly series: readonly LiveSecond[];
  readonly figures: LiveFigures;
  /** Wall time of the run, ms. */
  readonly wallMs: number;
}

/** The live lab's result. */
export interface LiveLabResult {
  readonly parameters: LiveParameters;
  readonly runs: readonly LiveRun[];
}

const SETUPS: Record<LiveRunName, string> = {
  'old-stack':
    'client library, partner wrapper (a quarter of the instances) and gateway each try 4 times (3 retries) with no wait',
  'stormproof-clients':
    'createFetch with its defaults, one retry layer; the gateway does not retry',
  'stormproof-server':
    'the same clients, and stormproof/server at the edge: nodeMiddleware() with its defaults in front of the gateway, told (reopen) when the database is back if its ramp is at the floor',
};

/** Time the workers get to start before the first tap, ms. */
const START_MS = 300;
const WORKER = new URL('./fleet-worker.js', import.meta.url);

/** The length of one run, s: the story's phases, scaled. */
function runSeconds(p: LiveParameters): number {
  return p.warmupSeconds + p.faultSeconds + p.afterSeconds;
}

/** Runs one fleet worker; resolves with its counts, rejects if it fails or `signal` aborts. */
function runWorker(job: FleetJob, signal: AbortSignal, timeoutMs: number): Promise<FleetCounts> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(WORKER, { workerData: job });
    let settled = false;
    const finish = (error: Error | undefined, counts?: FleetCounts) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      // Terminated in every case: a worker never outlives its run.
      void worker.terminate().then(() => (error ? reject(error) : resolve(counts!)));
    };
    const onAbort = () => finish(new Error('stormproof: the live lab was stopped'));
    const timer = setTimeout(
      () => finish(new Error(`stormproof: a fleet worker ran past ${timeoutMs} ms`)),
      timeoutMs,
    );
    signal.addEventListener('abort', onAbort, { once: true });
    worker.once('message', (counts: FleetCounts) => finish(undefined, counts));
    worker.once('error', (error) => finish(error));
    worker.once('exit', (code) => finish(new Error(`a fleet worker stopped with code ${code}`)));
  });
}

async function runOne(
  name: LiveRunName,
  p: LiveParameters,
  signal: AbortSignal,
  onProgress: (fraction: number) => void,
): Promise<LiveRun> {
  const began = epochMs();
  const startMs = began + START_MS;
  const arrivalsMs = runSeconds(p) * 1000;
  const seconds = (arrivalsMs + p.drainSeconds * 1000) / 1000 + 1;
  const downFrom = startMs + p.warmupSeconds * 1000;
  const downUntil = downFrom + p.faultSeconds * 1000;
  const api = await startApiServer(p, startMs, seconds, downFrom, downUntil);
  const shed = name === 'stormproof-server' ? nodeMiddleware() : undefined;
  const gateway = await startGateway(
    api.url,
    { tries: name === 'old-stack' ? p.oldStackTries : 1, timeoutMs: p.gatewayTimeoutMs, shed },
    startMs,
    seconds,
  ).catch(async (error) => {
    await api.close();
    throw error;
  });
  const timers = new TimerSet();
  // The edge is told when the database is healthy again, as its docs advise, when its ramp sits
  // at the floor: it then starts at the first step instead of waiting out a window there. A ramp
  // that is open or climbing is left alone (reopen would pull it back to the first step).
  if (shed !== undefined) {
    timers.after(downUntil - epochMs(), () => {
      if (shed.shedder.stats().rampStep === -1) shed.shedder.reopen();
    });
  }
  const tick = () => {
    onProgress(Math.min(1, (epochMs() - began) / (arrivalsMs + START_MS)));
    timers.after(250, tick);
  };
  tick();
  try {
    const jobs: FleetJob[] = Array.from({ length: p.workers }, (_, i) => {
      const instances = Math.floor(p.instances / p.workers) + (i < p.instances % p.workers ? 1 : 0);
      return {
        gatewayUrl: gateway.url,
        clients: name === 'old-stack' ? 'old-stack' : 'stormproof',
        rps: p.rps / p.workers,
        instances,
        wrappedInstances: Math.round(instances * p.wrappedShare),
        forecasts: p.forecasts,
        startMs,
        arrivalsMs,
        drainMs: p.drainSeconds * 1000,
        clientTimeoutMs: p.clientTimeoutMs,
        tries: p.oldStackTries,
        seed: p.seed,
        worker: i,
      };
    });
    const timeoutMs = START_MS + arrivalsMs + p.drainSeconds * 1000 + 10_000;
    const fleets = await Promise.all(jobs.map((job) => runWorker(job, signal, timeoutMs)));
    const fromSeconds = (downFrom - startMs) / 1000;
    const untilSeconds = (downUntil - startMs) / 1000;
    // Whole seconds of arrivals only: a last, partial second would draw a false drop.
    const length = Math.floor(arrivalsMs / 1000);
    const cut = (a: readonly number[]) => a.slice(0, length);
    const series = liveSeries(
      length,
      cut(sum(fleets.map((f) => f.offered))),
      cut(sum(fleets.map((f) => f.arrived))),
      cut(sum(fleets.map((f) => f.okByArrival))),
      cut(sum(fleets.map((f) => f.succeeded))),
      cut(sum(fleets.map((f) => f.failed))),
      cut(api.counts.calls),
      cut(gateway.counts.shed),
    );
    // Taps that ended after the arrivals stopped still count in the totals.
    const totals = {
      failed: fleets.reduce((n, f) => n + f.failed.reduce((a, b) => a + b, 0), 0),
      unfinished: fleets.reduce((n, f) => n + f.unfinished, 0),
      offered: fleets.reduce((n, f) => n + f.offered.reduce((a, b) => a + b, 0), 0),
      apiCalls: api.counts.calls.reduce((a, b) => a + b, 0),
      apiRejected: api.counts.rejected.reduce((a, b) => a + b, 0),
      wasted: gateway.counts.wasted.reduce((a, b) => a + b, 0),
      shed: gateway.counts.shed.reduce((a, b) => a + b, 0),
    };
    return {
      name,
      setup: SETUPS[name],
      faultFromSeconds: fromSeconds,
      faultUntilSeconds: untilSeconds,
      series,
      figures: liveFigures(series, totals, fromSeconds, untilSeconds, p.recoveryThreshold),
      wallMs: Math.round(epochMs() - began),
    };
  } finally {
    timers.clear();
    await gateway.close();
    await api.close();
    shed?.shedder.close();
  }
}

function liveSeries(
  length: number,
  offered: readonly number[],
  arrived: readonly number[],
  okByArrival: readonly number[],
  succeeded: readonly number[],
  failed: readonly number[],
  apiCalls: readonly number[],
  shed: readonly number[],
): LiveSecond[] {
  return Array.from({ length }, (_, t) => ({
    t,
    offered: offered[t] ?? 0,
    arrived: arrived[t] ?? 0,
    okByArrival: okByArrival[t] ?? 0,
    succeeded: succeeded[t] ?? 0,
    failed: failed[t] ?? 0,
    apiCalls: apiCalls[t] ?? 0,
    shed: shed[t] ?? 0,
  }));
}

/**
 * Runs the live lab: each run's servers and fleet on 127.0.0.1, one run after another. Every
 * server is closed and every worker terminated before it resolves (or rejects).
 *
 * @example
 * ```ts
 * const { runs } = await runLiveLab({ scale: 10, runs: ['old-stack'] });
 * console.log(runs[0].figures.peakAfterDbBackRps);
 * ```
 */
export async function runLiveLab(options: LiveLabOptions = {}): Promise<LiveLabResult> {
  const { parameters: p, runs: names } = liveParameters(options);
  const signal = options.signal ?? new AbortController().signal;
  const onProgress = options.onProgress ?? (() => {});
  const runs: LiveRun[] = [];
  for (const [i, name] of names.entries()) {
    if (signal.aborted) throw new Error('stormproof: the live lab was stopped');
    runs.push(await runOne(name, p, signal, (f) => onProgress((i + f) / names.length)));
  }
  onProgress(1);
  return { parameters: p, runs };
}
