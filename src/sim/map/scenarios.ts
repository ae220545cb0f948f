// Named scenarios: the map's model set up as a published experiment, run over several seeds, with
// the published outcome checked from the model's output. Sources: Brooker's collapse simulation
// (mbrooker/simulator_example, simple_collapse_sim), Huang et al. OSDI 2022 (the retry case of
// the lexiangh/Metastability artifact), and the storm story's weather API (the storm model).
import { checkKnownKeys, checkNumber, checkOptionsObject, show } from '../../core/validate.js';
import { runStorm, type StormResult } from '../storm.js';
import { classifyRun, MAP_RULE, type MapClass } from './classify.js';
import type { MapSeries } from './measure.js';
import { type MapModelOptions, runMapModel } from './model.js';

/** The names of the scenarios. */
export type MapScenarioName = 'brooker-collapse' | 'huang2022-retry' | 'weather-api';

/** Every scenario, by name, with its source. */
export const MAP_SCENARIOS: Readonly<Record<MapScenarioName, string>> = {
  'brooker-collapse':
    "Brooker's collapse simulation (mbrooker/simulator_example, simple_collapse_sim): a 5 s load spike; immediate retries stay collapsed, backoff with jitter recovers",
  'huang2022-retry':
    'Huang et al., "Metastable Failures in the Wild", OSDI 2022, retry case: a capacity cut of 78% or 80% for 9 or 10 s under 5 eager attempts',
  'weather-api':
    "the storm story's weather API (the storm model): where its default pool of 32,000 connections and 30 s failover sits",
};

/** Options of a scenario run. Every field is optional. */
export interface MapScenarioOptions {
  /**
   * Seeds per setup (seeds 1 to n).
   * @default 10 for brooker-collapse, 5 for huang2022-retry, 1 for weather-api
   * @example
   * ```ts
   * runMapScenario('huang2022-retry', { seeds: 10 })
   * ```
   */
  seeds?: number | undefined;
  /**
   * huang2022-retry only: the share of the paper's request rate and capacity simulated (both
   * scaled alike, so the model is the same queue in fewer, larger steps).
   * @default 0.1
   * @example
   * ```ts
   * runMapScenario('huang2022-retry', { scale: 1 }) // 13,333 requests/s, as the paper
   * ```
   */
  scale?: number | undefined;
  /**
   * Called after each run with the runs done and the total.
   * @default undefined
   * @example
   * ```ts
   * runMapScenario('brooker-collapse', { onProgress: (done, total) => console.log(done, total) })
   * ```
   */
  onProgress?: ((done: number, total: number) => void) | undefined;
}

/** One setup of a scenario over its seeds. */
export interface MapScenarioSetup {
  /** The setup's name (`immediate`, `(a) 78% for 10 s`, ...). */
  readonly name: string;
  /** The published outcome: the class the setup must have (null: no published outcome). */
  readonly expected: MapClass | null;
  /**
   * How the setup is judged: by most of its seeds (ties go to the worse class), or, as Brooker
   * plotted his runs, by the goodput share of the last 20 s averaged over the seeds (>= 95%:
   * stable, < 50%: metastable, else vulnerable).
   */
  readonly judgedBy: 'seeds' | 'average';
  /** The setup's class, judged as `judgedBy` says. */
  readonly class: MapClass;
  /** The share of seeds in each class. */
  readonly probability: Readonly<Record<MapClass, number>>;
  /** Goodput over offered load over the last 20 s of the runs, all seeds together. */
  readonly finalShare: number;
  /** Mean calls per user request at the server. */
  readonly amplification: number;
  /** Whether the setup has its published outcome (true when there is none). */
  readonly holds: boolean;
}

/** The outcome of a scenario. */
export interface MapScenarioResult {
  readonly scenario: MapScenarioName;
  readonly source: string;
  /** What was simulated, in words (the constants, the scaling). */
  readonly model: string;
  readonly setups: readonly MapScenarioSetup[];
  /** Whether every setup has its published outcome. */
  readonly holds: boolean;
}

/** One run of a scenario, as plain data a worker thread can make. */
export type MapScenarioRun =
  | { readonly kind: 'model'; readonly options: MapModelOptions }
  | { readonly kind: 'storm'; readonly options: Readonly<Record<string, unknown>> };

/** What a run of a scenario reports. */
export interface MapScenarioRunSummary {
  readonly class: MapClass;
  /** Goodput and offered user requests over the last 20 s. */
  readonly lastGood: number;
  readonly lastOffered: number;
  readonly amplification: number;
}

interface Setup {
  readonly name: string;
  readonly expected: MapClass | null;
  readonly judgedBy: 'seeds' | 'average';
  readonly runs: readonly MapScenarioRun[];
}

// Brooker's simple_collapse_sim: service 1 s + 0.01 s per request in service, unbounded
// concurrency, exponential network delay of mean 0.1 s each way, timeout 3 s, 3 tries, Poisson
// 40/s with 80/s from t = 20 s for 5 s, 80 s runs. His backoff doubles from 10 s before each
// wait: 20 s, then 40 s, with full jitter; the engine's ceilings base * 2^n from 20 s are the same.
const BROOKER: MapModelOptions = {
  workers: Number.POSITIVE_INFINITY,
  serviceMs: 1000,
  serviceTime: 'fixed',
  concurrencySlopeMs: 10,
  networkMs: 100,
  attemptTimeoutMs: 3000,
  maxAttempts: 3,
  ratePerSecond: 40,
  triggerKind: 'load-spike',
  triggerMagnitude: 2,
  warmupSeconds: 20,
  triggerSeconds: 5,
  horizonSeconds: 55,
};

/**
 * The one calibrated constant of the Huang et al. scenario: the capacity of the MongoDB primary
 * at its full 2 CPUs, in requests per second. Found once by a search over 25,000 to 50,000 (see
 * docs/simulator.md); the four outcomes hold from about 35,000 to 36,000.
 */
export const HUANG_CAPACITY = 36_000;
/** Requests served at once by the model of the primary (chosen, not calibrated). */
const HUANG_WORKERS = 8;

function huangRun(
  scale: number,
  rate: number,
  loss: number,
  seconds: number,
  seed: number,
): MapModelOptions {
  return {
    policy: 'naive',
    maxAttempts: 5,
    attemptTimeoutMs: 3000,
    workers: HUANG_WORKERS,
    serviceMs: (HUANG_WORKERS * 1000) / (HUANG_CAPACITY * scale),
    serviceTime: 'exponential',
    ratePerSecond: rate * scale,
    triggerKind: 'capacity-loss',
    triggerMagnitude: loss,
    triggerSeconds: seconds,
    warmupSeconds: 20,
    horizonSeconds: 60,
    networkMs: 0.5,
    seed,
  };
}

/** The weather API grid: pool sizes and failover lengths, naive and stormproof. */
export const WEATHER_CONNECTIONS: readonly number[] = [
  8000, 12_000, 16_000, 20_000, 24_000, 32_000,
];
export const WEATHER_FAULT_SECONDS: readonly number[] = [10, 30];

/**
 * The published outcomes, all for the 30 s failover: the lab's own (stormproof recovers with the
 * default 32,000 connections) and an outside review's of the storm model (naive recovers by itself
 * with pools of 12,000 or 16,000 connections and stays down from about 20,000). Other cells have
 * none.
 */
function weatherExpected(
  policy: 'naive' | 'stormproof',
  connections: number,
  faultSeconds: number,
): MapClass | null {
  if (faultSeconds !== 30) return null;
  if (policy === 'stormproof') return connections === 32_000 ? 'stable' : null;
  if (connections === 12_000 || connections === 16_000) return 'stable';
  return connections >= 20_000 ? 'metastable' : null;
}

function setupsOf(name: MapScenarioName, seeds: number, scale: number): Setup[] {
  const seedList = Array.from({ length: seeds }, (_, i) => i + 1);
  switch (name) {
    case 'brooker-collapse':
      return [
        {
          name: 'immediate retries',
          expected: 'metastable',
          judgedBy: 'average',
          runs: seedList.map((seed) => ({
            kind: 'model',
            options: { ...BROOKER, policy: 'naive', seed },
          })),
        },
        {
          name: 'backoff with full jitter',
          expected: 'stable',
          judgedBy: 'average',
          runs: seedList.map((seed) => ({
            kind: 'model',
            options: {
              ...BROOKER,
              policy: 'full-jitter',
              baseDelayMs: 20_000,
              maxDelayMs: 3_600_000,
              seed,
            },
          })),
        },
      ];
    case 'huang2022-retry': {
      const cases: [string, number, number, number, MapClass][] = [
        ['(a) 78% loss for 10 s at 13,333/s', 13_333, 0.78, 10, 'stable'],
        ['(b) 80% loss for 10 s at 13,333/s', 13_333, 0.8, 10, 'metastable'],
        ['(c) 80% loss for 9 s at 13,333/s', 13_333, 0.8, 9, 'stable'],
        ['(d) 80% loss for 10 s at 10,000/s', 10_000, 0.8, 10, 'stable'],
      ];
      return cases.map(([n, rate, loss, secs, expected]) => ({
        name: n,
        expected,
        judgedBy: 'seeds' as const,
        runs: seedList.map((seed) => ({
          kind: 'model',
          options: huangRun(scale, rate, loss, secs, seed),
        })),
      }));
    }
    case 'weather-api': {
      const setups: Setup[] = [];
      for (const policy of ['naive', 'stormproof'] as const)
        for (const faultSeconds of WEATHER_FAULT_SECONDS)
          for (const apiConnections of WEATHER_CONNECTIONS)
            setups.push({
              name: `${policy}, ${apiConnections} connections, ${faultSeconds} s failover`,
              expected: weatherExpected(policy, apiConnections, faultSeconds),
              judgedBy: 'seeds',
              runs: seedList.map((seed) => ({
                kind: 'storm',
                options: { policy, apiConnections, faultSeconds, seed },
              })),
            });
      return setups;
    }
  }
}

/** The scenario's model, in words. */
function modelText(name: MapScenarioName, scale: number): string {
  switch (name) {
    case 'brooker-collapse':
      return 'service 1 s + 0.01 s per request in service, no concurrency limit, no cancellation; network exp(mean 0.1 s) each way; timeout 3 s; 3 tries; Poisson 40/s, 80/s from t = 20 s for 5 s; 80 s runs; backoff: full jitter below 20 s, then 40 s';
    case 'huang2022-retry':
      return `open-loop Poisson at ${scale} x the paper's rate; a FIFO server of ${HUANG_WORKERS} workers with exponential service and capacity ${scale} x ${HUANG_CAPACITY.toLocaleString('en-US')} requests/s (the calibrated constant), slowed by the CPU cut; timeout 3 s per attempt, immediate resend, 5 attempts, no cancellation; 20 s warm-up, 60 s horizon`;
    case 'weather-api':
      return "the storm model (runStorm, docs/storm-model.md) with its defaults (4,000 requests/s, 180 s runs, fault at 10 s), apiConnections and faultSeconds varied; classified by the map's rule on the user requests answered per second";
  }
}

/** The runs of a scenario, in order, for a caller that spreads them over threads. */
export function scenarioRuns(
  name: MapScenarioName,
  options?: MapScenarioOptions,
): MapScenarioRun[] {
  const { seeds, scale } = resolveScenario(name, options);
  return setupsOf(name, seeds, scale).flatMap((s) => s.runs);
}

function resolveScenario(name: unknown, options: unknown): { seeds: number; scale: number } {
  if (typeof name !== 'string' || !(name in MAP_SCENARIOS)) {
    throw new TypeError(
      `stormproof: runMapScenario scenario must be one of ${Object.keys(MAP_SCENARIOS).join(', ')}, got ${show(name)}`,
    );
  }
  const o = checkOptionsObject('runMapScenario', options);
  checkKnownKeys('runMapScenario', o, ['seeds', 'scale', 'onProgress']);
  const fallback = name === 'brooker-collapse' ? 10 : name === 'huang2022-retry' ? 5 : 1;
  const seeds =
    o.seeds === undefined
      ? fallback
      : checkNumber('runMapScenario', 'seeds', o.seeds, { min: 1, max: 1000, integer: true });
  const scale =
    o.scale === undefined
      ? 0.1
      : checkNumber('runMapScenario', 'scale', o.scale, { min: 0.001, max: 1 });
  if (o.onProgress !== undefined && typeof o.onProgress !== 'function') {
    throw new TypeError(
      `stormproof: runMapScenario onProgress must be a function, got ${show(o.onProgress)}`,
    );
  }
  return { seeds, scale };
}

function lastSeconds(
  series: MapSeries,
  from: number,
  to: number,
): { good: number; offered: number } {
  let good = 0;
  let offered = 0;
  for (let s = Math.max(0, from); s < to; s++) {
    good += series.goodput[s]!;
    offered += series.offered[s]!;
  }
  return { good, offered };
}

/** The storm model's run, judged by the map's rule from the database's return to the end. */
function stormSummary(r: StormResult): MapScenarioRunSummary {
  const series: MapSeries = {
    offered: r.series.map((s) => s.userRequests),
    goodput: r.series.map((s) => s.succeeded),
    failed: r.series.map((s) => s.failed),
    calls: r.series.map((s) => s.load),
    wasted: r.series.map((s) => s.wasted),
  };
  const end = series.offered.length;
  const last = lastSeconds(series, end - 20, end);
  return {
    class: classifyRun(series, r.dbHealthyAtSeconds, end).class,
    lastGood: last.good,
    lastOffered: last.offered,
    amplification: r.totals.userRequests === 0 ? 0 : r.totals.edgeRequests / r.totals.userRequests,
  };
}

/** Makes one run of a scenario. */
export async function runScenarioRun(run: MapScenarioRun): Promise<MapScenarioRunSummary> {
  if (run.kind === 'storm') return stormSummary(runStorm(run.options));
  const r = await runMapModel(run.options);
  const end = r.triggerEndSecond + Math.ceil(r.parameters.horizonSeconds);
  const last = lastSeconds(r.series, end - 20, end);
  return {
    class: r.class.class,
    lastGood: last.good,
    lastOffered: last.offered,
    amplification: r.totals.amplification,
  };
}

const ORDER: readonly MapClass[] = ['stable', 'vulnerable', 'metastable'];

/** Puts a scenario together from its runs' summaries, in `scenarioRuns` order. */
export function assembleScenario(
  name: MapScenarioName,
  summaries: readonly MapScenarioRunSummary[],
  options?: MapScenarioOptions,
): MapScenarioResult {
  const { seeds, scale } = resolveScenario(name, options);
  const setups = setupsOf(name, seeds, scale).map((s, i): MapScenarioSetup => {
    const runs = summaries.slice(i * seeds, (i + 1) * seeds);
    const count: Record<MapClass, number> = { stable: 0, vulnerable: 0, metastable: 0 };
    for (const r of runs) count[r.class]++;
    const good = runs.reduce((a, r) => a + r.lastGood, 0);
    const offered = runs.reduce((a, r) => a + r.lastOffered, 0);
    const finalShare = offered === 0 ? 1 : good / offered;
    let cls: MapClass = 'stable';
    if (s.judgedBy === 'seeds') {
      for (const c of ORDER) if (count[c] >= count[cls]) cls = c;
    } else {
      cls =
        finalShare >= MAP_RULE.recoveredShare
          ? 'stable'
          : finalShare < MAP_RULE.collapsedShare
            ? 'metastable'
            : 'vulnerable';
    }
    return {
      name: s.name,
      expected: s.expected,
      judgedBy: s.judgedBy,
      class: cls,
      probability: {
        stable: count.stable / seeds,
        vulnerable: count.vulnerable / seeds,
        metastable: count.metastable / seeds,
      },
      finalShare,
      amplification: runs.reduce((a, r) => a + r.amplification, 0) / seeds,
      holds: s.expected === null || cls === s.expected,
    };
  });
  return {
    scenario: name,
    source: MAP_SCENARIOS[name],
    model: modelText(name, scale),
    setups,
    holds: setups.every((s) => s.holds),
  };
}

/**
 * Runs a named scenario in this thread and checks each setup against its published outcome.
 *
 * @example
 * ```ts
 * const r = await runMapScenario('huang2022-retry');
 * r.holds; // true: (b) metastable, (a), (c), (d) recover
 * ```
 */
export async function runMapScenario(
  name: MapScenarioName,
  options?: MapScenarioOptions,
): Promise<MapScenarioResult> {
  const runs = scenarioRuns(name, options);
  const summaries: MapScenarioRunSummary[] = [];
  for (const run of runs) {
    summaries.push(await runScenarioRun(run));
    options?.onProgress?.(summaries.length, runs.length);
  }
  return assembleScenario(name, summaries, options);
}
