// `stormproof sim storm` and what the storm lab shares with it: the storm model's options, its
// figures, its table and its report.
import type { LineChart, Report, ReportSection } from '../../sim/plot.js';
import { STORM_DEFAULTS, type StormResult } from '../../sim/storm.js';
import type { OptionSpec } from '../args.js';
import { num, round, table } from '../output.js';
import type { Job } from '../runners.js';
import { defined, type Scenario, type Values } from '../scenario.js';
import { goodputBack, SERVER_OPTION, serverSection, serverSuffix } from '../storm-server.js';

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

export const storm: Scenario = {
  name: 'storm',
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
