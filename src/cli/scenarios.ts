// The `stormproof sim` scenarios by name, with the one line the help shows. Each scenario's module
// (its options, runs, output and charts) is imported only when it is asked for, so that a small
// run loads its own model and nothing else.
import type { Scenario } from './scenario.js';

/** A scenario as the help lists it, and how to load it. */
export interface ScenarioEntry {
  /** One line for the help. */
  readonly summary: string;
  load(): Promise<Scenario>;
}

/** Every `stormproof sim` scenario, by name, in the help's order. */
export const SCENARIOS: ReadonlyMap<string, ScenarioEntry> = new Map([
  [
    'herd',
    {
      summary: "the storm story's toy model: 2000 clients that failed together",
      load: async () => (await import('./scenarios/herd.js')).herd,
    },
  ],
  [
    'budget',
    {
      summary: "the storm story's retry budget test: requests to an always-503 service",
      load: async () => (await import('./scenarios/budget.js')).budget,
    },
  ],
  [
    'brooker',
    {
      summary: "Brooker's 2015 optimistic-concurrency model: calls and time per backoff strategy",
      load: async () => (await import('./scenarios/brooker.js')).brooker,
    },
  ],
  [
    'layers',
    {
      summary: 'retries at several layers over an always-failing service: how the calls multiply',
      load: async () => (await import('./scenarios/layers.js')).layers,
    },
  ],
  [
    'storm',
    {
      summary: 'the weather API: a 30 s database failover and the retry storm after it',
      load: async () => (await import('./scenarios/storm.js')).storm,
    },
  ],
  [
    'timers',
    {
      summary: 'partner apps refreshing at exactly 06:00 versus a daily timer per device',
      load: async () => (await import('./scenarios/timers.js')).timers,
    },
  ],
  [
    'hedge',
    {
      summary: 'the Tail at Scale: a 100-way fan-out, its slow tail, and hedging under one budget',
      load: async () => (await import('./scenarios/hedge.js')).hedge,
    },
  ],
  [
    'limits',
    {
      summary:
        "concurrency limits in front of backends of known concurrency: the knee limit and the anchors' ports",
      load: async () => (await import('./scenarios/limits.js')).limits,
    },
  ],
]);
