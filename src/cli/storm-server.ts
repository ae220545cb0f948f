// The storm's server rows in the CLI: the `--server` option of `stormproof sim storm`, the rows
// `stormproof lab` adds (naive clients with stormproof/server and with an all-or-nothing
// shedder, stormproof clients with stormproof/server), and the report's section on what the
// servers' protection did.
import type { LineChart, ReportSection, StormResult, StormServer } from '../sim/index.js';
import { STORM_DEFAULTS } from '../sim/storm.js';
import type { OptionSpec } from './args.js';
import { num } from './output.js';

/** `--server`: what protects the API servers. */
export const SERVER_OPTION: OptionSpec = {
  flag: 'server',
  key: 'server',
  kind: { type: 'enum', values: ['none', 'stormproof', 'all-or-nothing'] },
  default: STORM_DEFAULTS.server,
  help: 'what protects the API servers: nothing, stormproof/server in each, or an all-or-nothing shedder (Retry-After: 10 to all while under pressure)',
};

/** How a run's server protection shows in its name. */
export function serverSuffix(server: StormServer): string {
  if (server === 'stormproof') return ' + stormproof/server';
  if (server === 'all-or-nothing') return ' + all-or-nothing shedder';
  return '';
}

/** The lab's runs, in the order of its table: each client setup, then with server protection. */
export function labSetups(manualRecovery: boolean): Record<string, unknown>[] {
  return [
    { policy: 'naive', manualRecovery: false },
    ...(manualRecovery ? [{ policy: 'naive', manualRecovery: true }] : []),
    { policy: 'naive', server: 'stormproof' },
    { policy: 'naive', server: 'all-or-nothing' },
    { policy: 'stormproof', manualRecovery: false },
    { policy: 'stormproof', server: 'stormproof' },
  ];
}

/** A lab run's key in `--json`: naive, naiveManualRecovery, naiveServer, naiveAllOrNothing, stormproof, stormproofServer. */
export function labKey(r: StormResult): string {
  const p = r.parameters;
  if (p.manualRecovery) return `${p.policy}ManualRecovery`;
  if (p.server === 'stormproof') return `${p.policy}Server`;
  if (p.server === 'all-or-nothing') return `${p.policy}AllOrNothing`;
  return p.policy;
}

/** When goodput was back to 95% of demand after the database, for tables. */
export function goodputBack(r: StormResult): string {
  return r.goodputRecoveredAfterFaultSeconds === null
    ? 'not by the end'
    : `${num(r.goodputRecoveredAfterFaultSeconds)} s`;
}

/** The report's section on the servers' protection, when a run had one. */
export function serverSection(
  runs: readonly StormResult[],
  name: (r: StormResult) => string,
): ReportSection | undefined {
  const guarded = runs.filter((r) => r.server !== null);
  if (guarded.length === 0) return undefined;
  const p = guarded[0]!.parameters;
  const chart: LineChart = {
    kind: 'line',
    title: 'share of the concurrency limit the API servers let run at once',
    xLabel: 'seconds since the start of the run',
    yLabel: 'share admitted (mean over the servers)',
    x: guarded[0]!.series.map((s) => s.t),
    lines: guarded.map((r) => ({ label: name(r), y: [...r.server!.admittedShare] })),
    bands: [
      { from: p.faultAtSeconds, to: p.faultAtSeconds + p.faultSeconds, label: 'database failover' },
    ],
    yMax: 1,
  };
  const steps = (r: StormResult): string => {
    const s = r.server!;
    if (s.kind !== 'stormproof') return 'none: all or nothing';
    const climb = s.ramp.filter((e) => e.server === 0 && e.atSeconds >= r.dbHealthyAtSeconds);
    return climb.map((e) => `${e.atSeconds.toFixed(1)} s ${e.share * 100}% ${e.reason}`).join(', ');
  };
  return {
    heading: "What the API servers' protection did",
    text: [
      `stormproof/server: each of the ${num(p.apiServers)} API servers runs the real engine (createShedder with its defaults: a Gradient2 concurrency limit, a CoDel queue of 100, first attempts before retries, a spread Retry-After of 1 to 5 s, reopening in steps of 20% of its concurrency limit with an error and latency check per step) on the simulator's clock. The fault trips each server's ramp; it holds at its 10% floor while the database fails, then climbs back step by step. all-or-nothing: Fastify under-pressure's mechanism, a sample a second of how long the CPU queue's oldest request has waited, and while it is over 1 s every request gets a 503 with Retry-After: 10. Goodput is back when, every second to the end of the run, taps ending with a forecast are at least 95% of the taps started.`,
    ],
    table: {
      head: ['', ...guarded.map(name)],
      rows: [
        ['goodput back to 95% of demand after the database', ...guarded.map(goodputBack)],
        [
          'recovered after the database (99% success)',
          ...guarded.map((r) =>
            r.recoveredAfterFaultSeconds === null
              ? 'not by the end'
              : `${num(r.recoveredAfterFaultSeconds)} s`,
          ),
        ],
        [
          'rejected by the protection',
          ...guarded.map((r) => num(Object.values(r.server!.shed).reduce((a, b) => a + b, 0))),
        ],
        [
          'all servers fully open again at',
          ...guarded.map((r) =>
            r.server!.reopenedAtSeconds === null
              ? '-'
              : `${r.server!.reopenedAtSeconds.toFixed(1)} s`,
          ),
        ],
        ["server 0's ramp after the database", ...guarded.map(steps)],
      ],
    },
    charts: [chart],
  };
}
