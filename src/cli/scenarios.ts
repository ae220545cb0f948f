// The `stormproof sim` scenarios and the storm lab: for each, its options, the runs it needs, and
// how its results are printed (JSON or text) and drawn (a report of charts).
import type {
  BrookerResult,
  BrookerStrategy,
  BudgetTestResult,
  Chart,
  HerdResult,
  LayersResult,
  LineChart,
  Report,
  ReportSection,
  StormResult,
  TimersResult,
} from '../sim/index.js';
import { BROOKER_STRATEGIES } from '../sim/index.js';
import {
  LIMIT_CONTENDERS,
  type LimitContender,
  type LimitsSweepResult,
} from '../sim/limits/sweep.js';
import { STORM_DEFAULTS } from '../sim/storm.js';
import type { OptionSpec } from './args.js';
import type { HerdTimeline } from './herd-timeline.js';
import { num, round, table } from './output.js';
import type { Job } from './runners.js';
import { goodputBack, SERVER_OPTION, serverSection, serverSuffix } from './storm-server.js';

/** Parsed option values by key. */
export type Values = Readonly<Record<string, string | number | bigint | boolean | undefined>>;

/** A `stormproof sim` scenario. */
export interface Scenario {
  readonly name: string;
  /** One line for the help. */
  readonly summary: string;
  /** Its own options (the common ones are added by the CLI). */
  readonly options: readonly OptionSpec[];
  /** The runs it needs; `plot` asks for what its chart compares too. */
  jobs(values: Values, plot: boolean): Job[];
  /** What `--json` prints. */
  json(results: readonly unknown[], values: Values): unknown;
  /** What it prints for people. */
  text(results: readonly unknown[], values: Values): string;
  /** What `--plot` draws. */
  report(results: readonly unknown[], values: Values): Report;
}

const INT32 = 2 ** 31 - 1;
const seedOption = (fallback: number): OptionSpec => ({
  flag: 'seed',
  key: 'seed',
  kind: { type: 'seed' },
  default: fallback,
  help: 'seed of the CPython-compatible random generator',
});

/** Drops undefined values, so a model fills its own defaults. */
function defined(values: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined));
}

// --- herd -----------------------------------------------------------------------------------

const HERD_JITTERS = ['none', 'full', 'equal', 'decorrelated', 'band'] as const;

function herdOptions(values: Values, jitter = values.jitter): Record<string, unknown> {
  return {
    clients: values.clients,
    perSlot: values.perSlot,
    slotMs: values.slotMs,
    baseMs: values.baseMs,
    capMs: values.capMs,
    seed: values.seed,
    jitter,
    pushback: values.pushback,
    mode: values.mode,
  };
}

/** What the herd's chart compares the chosen jitter with: no jitter (or full, if that was it). */
function herdPair(values: Values): [string, string] {
  const chosen = String(values.jitter);
  return chosen === 'none' ? ['none', 'full'] : ['none', chosen];
}

function herdChart(jitter: string, timeline: HerdTimeline): LineChart {
  const x = timeline.served.map((_, i) => (i * timeline.slotMs) / 1000);
  const offered = timeline.served.map((s, i) => s + timeline.failed[i]!);
  let busiest = 0;
  for (let i = 1; i < offered.length; i++) busiest = Math.max(busiest, offered[i]!);
  const done = (offered.length * timeline.slotMs) / 1000;
  return {
    kind: 'line',
    title: `jitter ${jitter}: ${num(timeline.calls)} calls, busiest ${num(busiest)}, ${num(done)} s`,
    xLabel: 'seconds since every client failed',
    yLabel: `calls per ${timeline.slotMs} ms slot`,
    x,
    lines: [
      { label: 'offered', y: offered },
      { label: 'succeeded', y: timeline.served },
      { label: 'failed', y: timeline.failed },
    ],
  };
}

const herd: Scenario = {
  name: 'herd',
  summary: "the storm story's toy model: 2000 clients that failed together",
  options: [
    {
      flag: 'clients',
      key: 'clients',
      kind: { type: 'int', min: 0, max: INT32 },
      default: 2000,
      help: 'clients that failed together at time 0',
    },
    {
      flag: 'per-slot',
      key: 'perSlot',
      kind: { type: 'int', min: 1, max: INT32 },
      default: 25,
      help: 'calls the service answers per slot',
    },
    {
      flag: 'slot-ms',
      key: 'slotMs',
      kind: { type: 'int', min: 1, max: 3_600_000 },
      default: 10,
      help: 'width of one slot in ms',
    },
    {
      flag: 'base-ms',
      key: 'baseMs',
      kind: { type: 'number', min: 0, max: 86_400_000 },
      default: 200,
      help: 'backoff base in ms',
    },
    {
      flag: 'cap-ms',
      key: 'capMs',
      kind: { type: 'number', min: 0, max: 86_400_000 },
      default: 5000,
      help: 'backoff cap in ms',
    },
    seedOption(7),
    {
      flag: 'jitter',
      key: 'jitter',
      kind: { type: 'enum', values: HERD_JITTERS },
      default: 'full',
      help: 'how a wait is drawn below its ceiling',
    },
    {
      flag: 'pushback',
      key: 'pushback',
      kind: { type: 'enum', values: ['none', 'load-aware', 'spread', 'fixed'] },
      default: 'none',
      help: 'what stormproof/server tells each rejected call: load-aware or spread waits (obeyed exactly), or the same 2 s for all (fixed)',
    },
    {
      flag: 'mode',
      key: 'mode',
      kind: { type: 'enum', values: ['auto', 'exact', 'counted'] },
      default: 'auto',
      help: 'exact: client by client, the published figures bit for bit; counted: clients as counts per slot, the same in distribution, in seconds at 10^9 clients; auto: exact up to 100,000 clients (10,000 with --jitter none), counted above',
    },
  ],
  jobs(values, plot) {
    const jobs: Job[] = [{ runner: 'herd', options: herdOptions(values) }];
    if (plot) {
      for (const jitter of herdPair(values)) {
        jobs.push({ runner: 'herdTimeline', options: herdOptions(values, jitter) });
      }
    }
    return jobs;
  },
  json([result]) {
    const r = result as HerdResult;
    return { calls: r.calls, busiestSlot: r.busiestSlot, doneAfterSeconds: r.doneAfterSeconds };
  },
  text([result], values) {
    const r = result as HerdResult;
    return [
      `herd: ${num(values.clients as number)} clients failed together; the service answers ${num(values.perSlot as number)} calls per ${num(values.slotMs as number)} ms slot; backoff ${num(values.baseMs as number)} ms doubling to ${num(values.capMs as number)} ms, jitter ${values.jitter}, seed ${values.seed}${values.pushback === 'none' ? '' : `, server pushback ${values.pushback}`}`,
      table([
        ['calls', num(r.calls)],
        ['busiest slot (after the first)', num(r.busiestSlot)],
        ['all done after', `${r.doneAfterSeconds.toFixed(2)} s`],
      ]),
    ].join('\n');
  },
  report(results, values) {
    const [a, b] = herdPair(values);
    const timelines = results.slice(1) as HerdTimeline[];
    return {
      title: 'The herd: clients that failed together',
      intro: [
        `${num(values.clients as number)} clients fail at time 0; the service answers ${num(values.perSlot as number)} calls per ${num(values.slotMs as number)} ms slot and fails the rest, which retry after a capped exponential backoff (base ${num(values.baseMs as number)} ms, cap ${num(values.capMs as number)} ms). The storm story's toy model, seed ${values.seed}.`,
      ],
      sections: [
        {
          heading: `jitter ${a} versus jitter ${b}`,
          text: [
            'Each chart shows the calls in each slot: offered (all calls), succeeded (served) and failed. Without jitter the clients move in lockstep, so every wave brings almost all of them back at once.',
          ],
          charts: [herdChart(a, timelines[0]!), herdChart(b, timelines[1]!)],
        },
      ],
    };
  },
};

// --- budget ---------------------------------------------------------------------------------

function cumulativeChart(title: string, perRequest: readonly number[]): LineChart {
  const x = perRequest.map((_, i) => i + 1);
  let calls = 0;
  const cumulative = perRequest.map((n) => {
    calls += n;
    return calls;
  });
  return {
    kind: 'line',
    title: `${title}: ${num(calls)} calls`,
    xLabel: 'requests sent',
    yLabel: 'calls to the service, cumulative',
    x,
    lines: [
      { label: 'calls', y: cumulative, color: '#dc2626' },
      { label: 'first tries', y: x, color: '#2563eb' },
    ],
  };
}

const budget: Scenario = {
  name: 'budget',
  summary: "the storm story's retry budget test: requests to an always-503 service",
  options: [
    {
      flag: 'requests',
      key: 'requests',
      kind: { type: 'int', min: 0, max: 1_000_000 },
      default: 1000,
      help: 'requests sent, one after another',
    },
    {
      flag: 'attempts',
      key: 'maxAttempts',
      kind: { type: 'int', min: 1, max: 100 },
      default: 4,
      help: 'attempts per request, the first included',
    },
    seedOption(7),
  ],
  jobs(values) {
    return [
      {
        runner: 'budget',
        options: { requests: values.requests, maxAttempts: values.maxAttempts, seed: values.seed },
      },
    ];
  },
  json([result]) {
    const r = result as BudgetTestResult;
    return {
      withoutBudget: { calls: r.withoutBudget.calls },
      withBudget: { calls: r.withBudget.calls },
    };
  },
  text([result], values) {
    const r = result as BudgetTestResult;
    return [
      `budget: ${num(values.requests as number)} requests to a service that always answers 503, up to ${values.maxAttempts} attempts each, through retry()`,
      table([
        ['', 'calls', 'retries'],
        ['without a budget', num(r.withoutBudget.calls), num(r.withoutBudget.retries)],
        ['with RetryBudget()', num(r.withBudget.calls), num(r.withBudget.retries)],
      ]),
    ].join('\n');
  },
  report([result], values) {
    const r = result as BudgetTestResult;
    return {
      title: 'The retry budget test',
      intro: [
        `${num(values.requests as number)} requests, one after another, to a service that always answers 503, each through the library's retry() with up to ${values.maxAttempts} attempts: first without a budget, then sharing one RetryBudget (1 credit per request, 10 per retry, at most 100).`,
      ],
      sections: [
        {
          heading: 'without a budget versus with RetryBudget()',
          table: {
            head: ['', 'calls', 'retries'],
            rows: [
              ['without a budget', r.withoutBudget.calls, r.withoutBudget.retries],
              ['with RetryBudget()', r.withBudget.calls, r.withBudget.retries],
            ],
          },
          charts: [
            cumulativeChart('without a budget', r.withoutBudget.callsPerRequest),
            cumulativeChart('with RetryBudget()', r.withBudget.callsPerRequest),
          ],
        },
      ],
    };
  },
};

// --- brooker --------------------------------------------------------------------------------

const brooker: Scenario = {
  name: 'brooker',
  summary: "Brooker's 2015 optimistic-concurrency model: calls and time per backoff strategy",
  options: [
    {
      flag: 'clients',
      key: 'clients',
      kind: { type: 'int', min: 1, max: 100_000 },
      default: 100,
      help: 'clients racing to update one row',
    },
    {
      flag: 'runs',
      key: 'runs',
      kind: { type: 'int', min: 1, max: 1_000_000 },
      default: 100,
      help: 'runs averaged per strategy',
    },
    seedOption(7),
  ],
  jobs(values) {
    return [
      {
        runner: 'brooker',
        options: { clients: values.clients, runs: values.runs, seed: values.seed },
      },
    ];
  },
  json([result]) {
    const r = result as BrookerResult;
    return Object.fromEntries(
      BROOKER_STRATEGIES.map((s) => [s, { calls: round(r[s].calls), timeMs: round(r[s].timeMs) }]),
    );
  },
  text([result], values) {
    const r = result as BrookerResult;
    return [
      `brooker: ${num(values.clients as number)} clients, averages of ${num(values.runs as number)} runs (writes counted as calls)`,
      table([
        ['strategy', 'calls', 'time (ms)'],
        ...BROOKER_STRATEGIES.map((s) => [
          s,
          num(round(r[s].calls, 1)),
          num(round(r[s].timeMs, 1)),
        ]),
      ]),
    ].join('\n');
  },
  report([result], values) {
    const r = result as BrookerResult;
    const bars = (pick: (s: BrookerStrategy) => number) =>
      BROOKER_STRATEGIES.map((s) => ({ label: s, value: round(pick(s), 1) }));
    const timelines: Chart[] = BROOKER_STRATEGIES.map((s) => ({
      kind: 'line',
      title: `${s}: writes in the first run`,
      xLabel: 'ms since the clients started',
      yLabel: 'writes per 10 ms',
      x: r[s].timeline.map((b) => b.tMs),
      lines: [
        { label: 'succeeded', y: r[s].timeline.map((b) => b.succeeded) },
        { label: 'failed', y: r[s].timeline.map((b) => b.failed) },
      ],
    }));
    return {
      title: "Brooker's optimistic-concurrency model",
      intro: [
        `${num(values.clients as number)} clients each update one row once: read the version, write with it; a stale write fails and the client backs off, then reads again. Network hops take |N(10 ms, 2 ms)|; base 5 ms, cap 2000 ms; averages of ${num(values.runs as number)} runs, seed ${values.seed}. exponential is backoff without jitter; none retries at once.`,
      ],
      sections: [
        {
          heading: 'Work and time per strategy',
          table: {
            head: ['strategy', 'calls (writes per run)', 'time per run (ms)'],
            rows: BROOKER_STRATEGIES.map((s) => [s, round(r[s].calls, 2), round(r[s].timeMs, 1)]),
          },
          charts: [
            {
              kind: 'bar',
              title: 'calls per run (writes)',
              yLabel: 'writes',
              bars: bars((s) => r[s].calls),
            },
            { kind: 'bar', title: 'time per run', yLabel: 'ms', bars: bars((s) => r[s].timeMs) },
          ],
          shareY: false,
        },
        {
          heading: 'Writes over time, first run of each strategy',
          charts: timelines,
        },
      ],
    };
  },
};

// --- layers ---------------------------------------------------------------------------------

const RETRY_AT = ['all', 'top', 'bottom'] as const;

function layerLabels(n: number): string[] {
  const labels = Array.from({ length: n }, (_, i) =>
    i === 0 ? 'top layer' : i === n - 1 ? 'bottom layer' : `layer ${i + 1}`,
  );
  labels.push('service');
  return labels;
}

const layers: Scenario = {
  name: 'layers',
  summary: 'retries at several layers over an always-failing service: how the calls multiply',
  options: [
    {
      flag: 'layers',
      key: 'layers',
      kind: { type: 'int', min: 1, max: 20 },
      default: 3,
      help: 'layers above the service',
    },
    {
      flag: 'attempts',
      key: 'attempts',
      kind: { type: 'int', min: 1, max: 100 },
      default: 4,
      help: 'attempts per retrying layer, the first included',
    },
    {
      flag: 'retry-at',
      key: 'retryAt',
      kind: { type: 'enum', values: RETRY_AT },
      default: 'all',
      help: 'which layers retry',
    },
  ],
  jobs(values, plot) {
    const modes = plot
      ? [String(values.retryAt), ...RETRY_AT.filter((m) => m !== values.retryAt)]
      : [String(values.retryAt)];
    return modes.map((retryAt) => ({
      runner: 'layers' as const,
      options: { layers: values.layers, attempts: values.attempts, retryAt },
    }));
  },
  json([result]) {
    const r = result as LayersResult;
    return { bottomCalls: r.bottomCalls, callsPerLevel: r.callsPerLevel };
  },
  text([result], values) {
    const r = result as LayersResult;
    const labels = layerLabels(values.layers as number);
    return [
      `layers: ${values.layers} layers over a service that always fails; ${values.retryAt === 'all' ? 'every layer retries' : `only the ${values.retryAt} layer retries`}, ${values.attempts} attempts each`,
      table([
        ['', 'calls per user request'],
        ...r.callsPerLevel.map((n, i) => [labels[i]!, num(n)]),
      ]),
    ].join('\n');
  },
  report(results, values) {
    const labels = layerLabels(values.layers as number);
    const runs = results as LayersResult[];
    const modes = this.jobs(values, true).map((j) => String(j.options.retryAt));
    return {
      title: 'Retries at several layers',
      intro: [
        `One user request through ${values.layers} layers over a service that always fails. Each retrying layer makes up to ${values.attempts} attempts with the library's retry(), and repeats the whole call below it.`,
      ],
      sections: [
        {
          heading: 'Calls each level receives per user request',
          table: {
            head: ['retrying layers', ...labels],
            rows: runs.map((r, i) => [modes[i]!, ...r.callsPerLevel]),
          },
          charts: runs.map((r, i) => ({
            kind: 'bar' as const,
            title: `retry at ${modes[i]}: ${num(r.bottomCalls)} calls at the service`,
            yLabel: 'calls per user request',
            bars: r.callsPerLevel.map((value, j) => ({
              label: labels[j]!,
              value,
              color: j === labels.length - 1 ? '#dc2626' : '#2563eb',
            })),
          })),
        },
      ],
    };
  },
};

// --- storm ----------------------------------------------------------------------------------

/** The storm model's options that the CLI offers (the rest keep the model's defaults). */
export const STORM_MODEL_OPTIONS: readonly OptionSpec[] = [
  {
    flag: 'manual-recovery',
    key: 'manualRecovery',
    kind: { type: 'flag' },
    default: false,
    help: 'the on-call engineer sheds load at the edge, then reopens in steps',
  },
  {
    flag: 'seed',
    key: 'seed',
    kind: { type: 'int', min: 0, max: Number.MAX_SAFE_INTEGER },
    default: STORM_DEFAULTS.seed,
    help: "seed of the model's random generator",
  },
  {
    flag: 'rps',
    key: 'rps',
    kind: { type: 'number', min: 1, max: 1_000_000 },
    default: STORM_DEFAULTS.rps,
    help: 'user requests per second',
  },
  {
    flag: 'duration',
    key: 'durationSeconds',
    kind: { type: 'int', min: 1, max: 86_400 },
    default: STORM_DEFAULTS.durationSeconds,
    help: 'seconds of virtual time simulated',
  },
  {
    flag: 'fault-at',
    key: 'faultAtSeconds',
    // The model needs two seconds of normal load before the failover to measure it.
    kind: { type: 'int', min: 2, max: 86_400 },
    default: STORM_DEFAULTS.faultAtSeconds,
    help: 'second at which the database fails over',
  },
  {
    flag: 'fault-seconds',
    key: 'faultSeconds',
    kind: { type: 'int', min: 0, max: 86_400 },
    default: STORM_DEFAULTS.faultSeconds,
    help: 'how long the failover lasts',
  },
];

function stormOptions(
  values: Values,
  policy: string,
  manualRecovery: boolean,
  breaker = false,
  server: unknown = 'none',
) {
  return defined({
    policy,
    manualRecovery,
    breaker,
    server,
    seed: values.seed,
    rps: values.rps,
    durationSeconds: values.durationSeconds,
    faultAtSeconds: values.faultAtSeconds,
    faultSeconds: values.faultSeconds,
  });
}

/** The figures `--json` prints for one storm run. */
export function stormFigures(r: StormResult) {
  return {
    policy: r.parameters.policy,
    manualRecovery: r.parameters.manualRecovery,
    breaker: r.parameters.breaker !== false,
    normalRps: r.normalRps,
    peakRpsAfterFailover: r.peakRpsAfterFailover,
    peakEdgeRps: r.peakEdgeRps,
    peakApiRps: r.peakApiRps,
    recoveredAfterFaultSeconds: r.recoveredAfterFaultSeconds,
    server: r.parameters.server,
    goodputRecoveredAfterFaultSeconds: r.goodputRecoveredAfterFaultSeconds,
    serverReopenedAtSeconds: r.server?.reopenedAtSeconds ?? null,
    userRequests: r.totals.userRequests,
    failedUserRequests: r.totals.failed,
  };
}

/** A storm run's name for tables and charts. */
export function stormName(r: StormResult): string {
  const p = r.parameters;
  return `${p.policy}${p.breaker === false ? '' : ' + breaker'}${p.manualRecovery ? ' + manual recovery' : ''}${serverSuffix(p.server)}`;
}

function recovered(r: StormResult): string {
  return r.recoveredAfterFaultSeconds === null
    ? 'not by the end'
    : `${num(r.recoveredAfterFaultSeconds)} s`;
}

/** The comparison table of storm runs, for people. */
export function stormTable(runs: readonly StormResult[]): string {
  return table([
    ['', ...runs.map(stormName)],
    ['normal load (requests/s)', ...runs.map((r) => num(r.normalRps))],
    ['peak load after the database was back', ...runs.map((r) => num(r.peakRpsAfterFailover))],
    ['peak at the edge, failover included', ...runs.map((r) => num(r.peakEdgeRps))],
    ['peak on the API servers (calls/s)', ...runs.map((r) => num(r.peakApiRps))],
    ['recovered after the database', ...runs.map(recovered)],
    ['goodput back to 95% of demand', ...runs.map(goodputBack)],
    ['user requests that failed', ...runs.map((r) => num(r.totals.failed))],
  ]);
}

function stormChart(r: StormResult): LineChart {
  const p = r.parameters;
  const bands = [
    { from: p.faultAtSeconds, to: p.faultAtSeconds + p.faultSeconds, label: 'database failover' },
  ];
  if (r.recovery !== null) {
    bands.push({
      from: r.recovery.shedAtSeconds,
      to: r.recovery.reopenedAtSeconds ?? p.durationSeconds,
      label: 'shedding at the edge',
    });
  }
  return {
    kind: 'line',
    title: `${stormName(r)}: ${num(r.peakRpsAfterFailover)}/s after the failover, recovered ${recovered(r)}`,
    xLabel: 'seconds since the start of the run',
    yLabel: 'requests per second',
    x: r.series.map((s) => s.t),
    lines: [
      { label: 'offered', y: r.series.map((s) => s.offered) },
      { label: 'succeeded', y: r.series.map((s) => s.succeeded) },
      { label: 'failed', y: r.series.map((s) => s.failed) },
    ],
    bands,
  };
}

/** Seconds after the failover in which calls already under way when it ended still fail. */
const IN_FLIGHT_SECONDS = 5;

/**
 * When a run's failed user requests ended: while the database was down, in the few seconds
 * after (calls that were under way when it came back), or later (failures the retries made).
 */
export function failuresByPhase(r: StormResult): {
  down: number;
  justAfter: number;
  later: number;
} {
  const from = r.parameters.faultAtSeconds;
  const healthy = from + r.parameters.faultSeconds;
  let down = 0;
  let justAfter = 0;
  let later = 0;
  for (const second of r.series) {
    if (second.t < healthy) down += second.failed;
    else if (second.t < healthy + IN_FLIGHT_SECONDS) justAfter += second.failed;
    else later += second.failed;
  }
  return { down, justAfter, later };
}

/** The stormproof run on its own y scale, and where its failed requests fall. */
function ownScaleSection(r: StormResult): ReportSection {
  const { down, justAfter, later } = failuresByPhase(r);
  const p = r.parameters;
  const share = r.totals.failed === 0 ? 100 : (100 * (down + justAfter)) / r.totals.failed;
  return {
    heading: `${stormName(r)} on its own scale`,
    text: [
      `Beside the naive run, stormproof's lines lie near the floor of a shared scale. Here they have their own. Its ${num(r.totals.failed)} failed user requests are the failover's own: ${num(down)} ended while the database was down (seconds ${num(p.faultAtSeconds)} to ${num(p.faultAtSeconds + p.faultSeconds)}), ${num(justAfter)} in the ${IN_FLIGHT_SECONDS} s after it (calls that were under way when it came back), and ${num(later)} later: ${round(share, 1)}% fall while the database is down or as it comes back. A forecast cannot be served while its database is failing over; what stormproof saves is everything after.`,
    ],
    charts: [{ ...stormChart(r), title: `${stormName(r)}: its own scale` }],
    shareY: false,
  };
}

/** The storm report: the runs' charts side by side, and their figures. */
export function stormReport(runs: readonly StormResult[], title = 'The storm lab'): Report {
  const p = runs[0]!.parameters;
  const section: ReportSection = {
    heading: runs.map(stormName).join(' versus '),
    text: [
      'offered: requests arriving at the edge each second (client-library attempts, what the graphs showed). succeeded and failed: user requests (farmers\u2019 taps) that ended with a forecast or an error that second. The shaded stretches are the database failover and, with manual recovery, the shedding at the edge. Normal load is the mean before the failover; the peak after the failover is the busiest second once the database was healthy again (the storm story\u2019s 24,000 requests per second while the database was already healthy).',
    ],
    table: {
      head: ['', ...runs.map(stormName)],
      rows: [
        ['normal load (requests/s)', ...runs.map((r) => r.normalRps)],
        [
          'peak load after the database was back (requests/s)',
          ...runs.map((r) => r.peakRpsAfterFailover),
        ],
        ['peak at the edge, failover included (requests/s)', ...runs.map((r) => r.peakEdgeRps)],
        ['peak on the API servers (calls/s)', ...runs.map((r) => r.peakApiRps)],
        ['recovered after the database', ...runs.map(recovered)],
        ['goodput back to 95% of demand after the database', ...runs.map(goodputBack)],
        ['user requests', ...runs.map((r) => r.totals.userRequests)],
        ['user requests that failed', ...runs.map((r) => r.totals.failed)],
        ['  of them while the database was down', ...runs.map((r) => failuresByPhase(r).down)],
        [
          `  in the ${IN_FLIGHT_SECONDS} s after it (calls under way)`,
          ...runs.map((r) => failuresByPhase(r).justAfter),
        ],
        ['  later', ...runs.map((r) => failuresByPhase(r).later)],
      ],
    },
    charts: runs.map(stormChart),
  };
  const server = serverSection(runs, stormName);
  return {
    title,
    intro: [
      `The weather API of the storm story: ${num(p.rps)} forecast requests a second from partner apps, and a database that fails over for ${num(p.faultSeconds)} s at second ${num(p.faultAtSeconds)}. naive is the old stack (partner wrappers, the client library and the gateway each retry 3 times with no wait, no budget); stormproof retries at one layer, with capped exponential backoff, full jitter, a retry budget and Retry-After. ${num(p.durationSeconds)} s of virtual time, seed ${p.seed}. The model: docs/storm-model.md.`,
    ],
    sections: [
      section,
      ...runs
        .filter((r) => r.parameters.policy === 'stormproof' && r.parameters.server === 'none')
        .map(ownScaleSection),
      ...(server === undefined ? [] : [server]),
    ],
    footer:
      'Made by stormproof (npm start, or stormproof lab). Every client decides with the library\u2019s own engine on virtual time.',
  };
}

const storm: Scenario = {
  name: 'storm',
  summary: 'the weather API: a 30 s database failover and the retry storm after it',
  options: [
    {
      flag: 'policy',
      key: 'policy',
      kind: { type: 'enum', values: ['naive', 'stormproof'] },
      default: 'naive',
      help: 'the retry setup',
    },
    {
      flag: 'breaker',
      key: 'breaker',
      kind: { type: 'flag' },
      default: false,
      help: "a circuit breaker (stormproof's defaults) in each partner instance's client library; needs --policy stormproof",
    },
    SERVER_OPTION,
    ...STORM_MODEL_OPTIONS,
  ],
  jobs(values, plot) {
    const policy = String(values.policy);
    const jobs: Job[] = [
      {
        runner: 'storm',
        options: stormOptions(
          values,
          policy,
          values.manualRecovery === true,
          values.breaker === true,
          values.server,
        ),
      },
    ];
    if (plot) {
      const other = policy === 'naive' ? 'stormproof' : 'naive';
      jobs.push({ runner: 'storm', options: stormOptions(values, other, false) });
    }
    return jobs;
  },
  json([result]) {
    return stormFigures(result as StormResult);
  },
  text([result]) {
    const r = result as StormResult;
    const lines = [
      `storm: ${stormName(r)}, ${num(r.parameters.rps)} requests/s, database failover at ${r.parameters.faultAtSeconds} s for ${r.parameters.faultSeconds} s`,
      stormTable([r]),
    ];
    if (r.parameters.breaker !== false) {
      lines.push(
        `The breakers opened ${num(r.totals.breakerOpenings)} times and refused ${num(r.totals.breakerRefusals)} calls.`,
      );
    }
    return lines.join('\n');
  },
  report(results) {
    const runs = results as StormResult[];
    const ordered = runs[0]!.parameters.policy === 'naive' ? runs : [...runs].reverse();
    return stormReport(ordered, 'The storm');
  },
};

// --- timers ---------------------------------------------------------------------------------

function clock(t: number): string {
  const s = 6 * 3600 + t;
  const hh = String(Math.floor(s / 3600)).padStart(2, '0');
  const mm = String(Math.floor((s % 3600) / 60)).padStart(2, '0');
  const ss = String(s % 60).padStart(2, '0');
  return `${hh}:${mm}:${ss}`;
}

const timers: Scenario = {
  name: 'timers',
  summary: 'partner apps refreshing at exactly 06:00 versus a daily timer per device',
  options: [
    {
      flag: 'devices',
      key: 'devices',
      kind: { type: 'int', min: 0, max: 1_000_000 },
      default: 10_000,
      help: 'devices refreshing once a morning',
    },
    {
      flag: 'spread-seconds',
      key: 'spreadSeconds',
      kind: { type: 'int', min: 2, max: 43_200 },
      default: 1200,
      help: 'width of the window (even), centred on 06:00',
    },
    {
      flag: 'ids',
      key: 'ids',
      kind: { type: 'enum', values: ['numbered', 'named', 'random'] },
      default: 'numbered',
      help: "each timer's key: the device's number, its name (hashed), or none",
    },
    seedOption(7),
  ],
  jobs(values) {
    return [
      {
        runner: 'timers',
        options: {
          devices: values.devices,
          spreadSeconds: values.spreadSeconds,
          ids: values.ids,
          seed: values.seed,
        },
      },
    ];
  },
  json([result]) {
    const r = result as TimersResult;
    return {
      aligned: { peakRps: r.aligned.peakRps },
      offset: { peakRps: r.offset.peakRps },
      uniformRps: r.uniformRps,
    };
  },
  text([result], values) {
    const r = result as TimersResult;
    const half = (values.spreadSeconds as number) / 2;
    return [
      `timers: ${num(values.devices as number)} devices refresh once a morning`,
      table([
        ['', 'peak requests/s'],
        ['all at exactly 06:00:00', num(r.aligned.peakRps)],
        [
          `daily window ${clock(-half)} to ${clock(half)}, ${values.ids} keys`,
          num(r.offset.peakRps),
        ],
        ['uniform over the window', r.uniformRps.toFixed(1)],
      ]),
    ].join('\n');
  },
  report([result], values) {
    const r = result as TimersResult;
    const chart = (title: string, load: TimersResult['aligned']): LineChart => ({
      kind: 'line',
      title: `${title}: peak ${num(load.peakRps)} requests/s`,
      xLabel: 'seconds from 06:00:00',
      yLabel: 'requests per second',
      x: load.series.map((s) => s.t),
      lines: [{ label: 'requests', y: load.series.map((s) => s.requests), color: '#2563eb' }],
    });
    return {
      title: 'Jitter your timers too',
      intro: [
        `${num(values.devices as number)} partner devices refresh forecasts once a morning through stormproof's daily timer on virtual time: all set to 06:00:00, or each set to a window of ${num(values.spreadSeconds as number)} s centred on 06:00 with ${values.ids} keys. A perfectly even spread would be ${r.uniformRps.toFixed(1)} requests/s. The two charts have their own y scales.`,
      ],
      sections: [
        {
          heading: 'aligned versus a fixed offset per device',
          table: {
            head: ['', 'peak requests/s'],
            rows: [
              ['all at exactly 06:00:00', r.aligned.peakRps],
              ['daily window per device', r.offset.peakRps],
            ],
          },
          charts: [chart('all at 06:00:00', r.aligned), chart('daily window per device', r.offset)],
          shareY: false,
        },
      ],
    };
  },
};

// --- limits ---------------------------------------------------------------------------------

/** Comma-separated numbers (checked by the parser) as numbers. */
const numbersOf = (value: unknown): number[] => String(value).split(',').map(Number);

function limitsContenders(values: Values): LimitContender[] {
  return values.contender === 'all' ? [...LIMIT_CONTENDERS] : [values.contender as LimitContender];
}

/** A cell in a few characters: when the limit entered the band, and whether it passed. */
function limitsCellText(c: LimitsSweepResult['cells'][number]): string {
  if (c.skipped) return 'skipped';
  const entry = c.bandEntryMs === null ? 'never' : `${(c.bandEntryMs / 1000).toFixed(1)} s`;
  return `${c.pass ? 'pass' : 'miss'} ${entry} ${Math.round(c.goodput * 100)}% ${c.admittedP99.toFixed(1)}S`;
}

function limitsSummary(r: LimitsSweepResult): string {
  const run = r.cells.filter((c) => !c.skipped);
  const skipped = r.cells.length - run.length;
  return `${run.filter((c) => c.pass).length} of ${run.length}${skipped > 0 ? ` (${skipped} skipped)` : ''}`;
}

function stepText(ms: number | null): string {
  return ms === null ? 'never' : `${(ms / 1000).toFixed(2)} s`;
}

const limits: Scenario = {
  name: 'limits',
  summary:
    "concurrency limits in front of backends of known concurrency: the knee limit and the anchors' ports",
  options: [
    {
      flag: 'contender',
      key: 'contender',
      kind: { type: 'enum', values: ['all', ...LIMIT_CONTENDERS] },
      default: 'all',
      help: "the limit to run: stormproof's knee and Gradient2, or a port of Netflix Vegas, Envoy's gradient controller, go-zero's estimator or failsafe-go's adaptive limiter",
    },
    {
      flag: 'concurrency',
      key: 'concurrency',
      kind: { type: 'numbers', min: 1, max: 100_000 },
      default: '1,4,10,32,100,1000',
      help: "the backends' true concurrencies",
    },
    {
      flag: 'service-ms',
      key: 'serviceMs',
      kind: { type: 'numbers', min: 0.1, max: 60_000 },
      default: '1,20,200',
      help: 'their service times, ms (each request takes 0.9 to 1.1 times it)',
    },
    {
      flag: 'loads',
      key: 'loads',
      kind: { type: 'numbers', min: 0.1, max: 100 },
      default: '2,5',
      help: "offered loads, as multiples of the backend's capacity",
    },
    {
      flag: 'max-requests',
      key: 'maxRequests',
      kind: { type: 'int', min: 1, max: 1_000_000_000 },
      default: 3_000_000,
      help: 'skip a cell that would offer more requests than this',
    },
    { flag: 'seed', key: 'seed', kind: { type: 'seed' }, default: 1, help: 'seed of every cell' },
  ],
  jobs(values) {
    return limitsContenders(values).map((contender) => ({
      runner: 'limits' as const,
      options: {
        contender,
        concurrencies: numbersOf(values.concurrency),
        servicesMs: numbersOf(values.serviceMs),
        loads: numbersOf(values.loads),
        maxRequests: values.maxRequests,
        seed: Number(values.seed),
      },
    }));
  },
  json(results) {
    return { contenders: results };
  },
  text(results) {
    const rs = results as LimitsSweepResult[];
    const first = rs[0]!;
    const rows: string[][] = [['C x S, load', ...rs.map((r) => r.contender)]];
    first.cells.forEach((c, i) => {
      rows.push([
        `${num(c.concurrency)} x ${c.serviceMs} ms, ${c.load}x`,
        ...rs.map((r) => limitsCellText(r.cells[i]!)),
      ]);
    });
    rows.push(['cells passed', ...rs.map(limitsSummary)]);
    return [
      'limits: each contender in front of a backend of true concurrency C whose requests take S;',
      'a cell passes when the limit is inside [C, 1.3 C + 1] for good within 3 s (or 20 x S),',
      'goodput is at least 95% of capacity and the admitted p99 at most 2 S',
      '(each cell: pass or miss, when it entered the band, goodput, admitted p99 over S)',
      table(rows),
      '',
      'failover: C from 32 to 4 at 3 s and back at 6 s, S = 20 ms, 2x the larger capacity;',
      'time to enter [4, 6.2] after the drop and [32, 42.6] after the return (target: 2 s each)',
      table([
        ['', 'down', 'up', ''],
        ...rs.map((r) => [
          r.contender,
          stepText(r.step.downMs),
          stepText(r.step.upMs),
          r.step.pass ? 'pass' : 'miss',
        ]),
      ]),
    ].join('\n');
  },
  report(results) {
    const rs = results as LimitsSweepResult[];
    const first = rs[0]!;
    return {
      title: 'Concurrency limits in front of backends of known concurrency',
      intro: [
        "Each contender runs inside stormproof/server's engine on virtual time, in front of a backend that serves C requests at once (the rest wait in its own queue, out of the shedder's reach), each taking S (0.9 to 1.1 times it), with Poisson arrivals at a multiple of its capacity. A cell passes when the limit is inside [C, 1.3 C + 1] for good within 3 s (or 20 x S), goodput is at least 95% of capacity and the admitted p99 at most 2 S.",
      ],
      sections: [
        {
          heading: 'cells',
          table: {
            head: ['C x S, load', ...rs.map((r) => r.contender)],
            rows: first.cells.map((c, i) => [
              `${c.concurrency} x ${c.serviceMs} ms, ${c.load}x`,
              ...rs.map((r) => limitsCellText(r.cells[i]!)),
            ]),
          },
        },
        {
          heading: 'failover: C from 32 to 4 at 3 s and back at 6 s (S = 20 ms)',
          charts: rs.map((r) => ({
            kind: 'line' as const,
            title: `${r.contender}: down ${stepText(r.step.downMs)}, up ${stepText(r.step.upMs)}`,
            xLabel: 'seconds',
            yLabel: 'limit',
            x: r.step.trace.map((p) => p.atMs / 1000),
            lines: [{ label: 'limit', y: r.step.trace.map((p) => p.limit) }],
          })),
          shareY: false,
        },
      ],
    };
  },
};

/** Every `stormproof sim` scenario, by name. */
export const SCENARIOS: ReadonlyMap<string, Scenario> = new Map(
  [herd, budget, brooker, layers, storm, timers, limits].map((s) => [s.name, s]),
);
