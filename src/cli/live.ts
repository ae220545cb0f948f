// `stormproof lab --live`: parses its options, runs the live lab (src/lab) with a progress bar,
// prints the comparison and writes the same report as the simulated lab, from measured curves.
import { resolve } from 'node:path';
import { type LiveLabResult, type LiveRun, runLiveLab } from '../lab/index.js';
import { PALETTE } from '../sim/palette.js';
import { type LineChart, type Report, renderReportHtml, renderReportSvg } from '../sim/plot.js';
import { type OptionSpec, optionsHelp, parse } from './args.js';
import { JSON_OPTION, num, table } from './output.js';
import { PROGRESS_OPTION, ProgressBar, type ProgressMode } from './progress.js';
import { STORM_MODEL_OPTIONS } from './scenarios/storm.js';
import { writeWhole } from './write.js';

/** What the live lab needs from the program: output streams and Ctrl-C. */
export interface LiveIo {
  out(text: string): void;
  err(text: string): void;
  readonly interrupt: AbortSignal;
}

export const LIVE_OPTIONS: readonly OptionSpec[] = [
  {
    flag: 'scale',
    key: 'scale',
    kind: { type: 'number', min: 1, max: 30 },
    default: 3,
    help: 'divide the story\u2019s times (30 s failover, 20 s cache TTL, the run\u2019s phases) by N',
  },
  {
    flag: 'out',
    key: 'out',
    kind: { type: 'file', extensions: ['.html', '.htm', '.svg'] },
    default: 'reports/storm-lab-live.html',
    help: 'where to write the report (.html or .svg)',
  },
  // The virtual-time lab's --seed, with its validation: an integer from 0 to 2^53 - 1.
  {
    ...STORM_MODEL_OPTIONS.find((spec) => spec.flag === 'seed')!,
    help: "seed of the fleet's draws: arrivals, instances, forecasts, client jitter",
  },
  JSON_OPTION,
  PROGRESS_OPTION,
];

const NAMES: Record<string, string> = {
  'old-stack': 'old stack',
  'stormproof-clients': 'stormproof clients',
  'stormproof-server': 'stormproof clients + server',
};

function recovered(run: LiveRun): string {
  const s = run.figures.recoveredAfterSeconds;
  return s === null ? 'not by the end' : `${num(s)} s`;
}

/** The rows of the comparison, shared by the printed table and the report's. */
function rows(result: LiveLabResult): (string | number)[][] {
  const f = result.runs.map((r) => r.figures);
  return [
    ['normal load at the edge (requests/s)', ...f.map((x) => x.normalRps)],
    ['peak at the edge after the database was back', ...f.map((x) => x.peakAfterDbBackRps)],
    ['  times normal', ...f.map((x) => `${num(x.peakOverNormal)}x`)],
    ['offered at the edge at the end (requests/s)', ...f.map((x) => x.offeredAfterRps)],
    ['served at the end (user requests/s)', ...f.map((x) => x.servedAfterRps)],
    ['recovered after the database', ...result.runs.map(recovered)],
    ['user requests', ...f.map((x) => x.userRequests)],
    ['user requests that failed', ...f.map((x) => x.failedUserRequests)],
    ['  still under way at the end (not counted)', ...f.map((x) => x.unfinishedUserRequests)],
    ['calls at the edge per user request', ...f.map((x) => x.edgeCallsPerUserRequest)],
    ['calls at the API server per user request', ...f.map((x) => x.apiCallsPerUserRequest)],
    ['API calls rejected at once (no free connection)', ...f.map((x) => x.apiRejected)],
    ['answers thrown away (caller gone)', ...f.map((x) => x.wastedAnswers)],
    ['shed at the edge', ...f.map((x) => x.shed)],
  ];
}

function parametersText(result: LiveLabResult): string {
  const p = result.parameters;
  return `${num(p.rps)} user requests/s from ${p.instances} partner instances in ${p.workers} worker threads; the database fails over ${num(p.faultSeconds)} s (the story's 30 s / ${num(p.scale)}) after ${num(p.warmupSeconds)} s, then ${num(p.afterSeconds)} s more. API server: ${p.apiConnections} connections, ${p.apiThreads} threads of ${p.serviceMs} ms (${num(Math.round((p.apiThreads * 1000) / p.serviceMs))} requests/s), cache TTL ${num(p.cacheTtlMs / 1000)} s; database pool ${p.dbPool}, ${p.dbQueryMs} ms a query, ${p.dbFailMs} ms to fail during the failover. Old stack: ${p.oldStackTries} tries at each layer, ${p.clientTimeoutMs} ms per client attempt; gateway ${p.gatewayTimeoutMs} ms per call. Seed ${p.seed}.`;
}

function chart(run: LiveRun): LineChart {
  const s = run.series;
  return {
    kind: 'line',
    title: `${NAMES[run.name]}: ${num(run.figures.peakAfterDbBackRps)}/s after the failover, recovered ${recovered(run)}`,
    xLabel: 'seconds since the start of the run',
    yLabel: 'requests per second',
    x: s.map((x) => x.t),
    lines: [
      { label: 'offered', y: s.map((x) => x.offered) },
      { label: 'succeeded', y: s.map((x) => x.succeeded) },
      { label: 'failed', y: s.map((x) => x.failed) },
      { label: 'calls at the API server', y: s.map((x) => x.apiCalls), color: PALETTE[4] },
    ],
    bands: [{ from: run.faultFromSeconds, to: run.faultUntilSeconds, label: 'database failover' }],
  };
}

/** The live lab's report: the simulated lab's layout, with measured curves. */
export function liveReport(result: LiveLabResult): Report {
  return {
    title: 'The live storm lab: real servers and clients on 127.0.0.1',
    intro: [
      `The weather API of the storm story, run for real on this machine: an API server and a gateway (node:http) and a fleet of clients (worker threads, fetch over keep-alive connections). ${parametersText(result)}`,
      'offered: client attempts arriving at the edge each second. succeeded and failed: user requests that ended that second with a forecast or an error. calls at the API server: every call the gateway made. The shaded stretch is the database failover. Measured, not simulated: the figures change a little from run to run and machine to machine.',
    ],
    sections: [
      {
        heading: result.runs.map((r) => NAMES[r.name]).join(' versus '),
        text: result.runs.map((r) => `${NAMES[r.name]}: ${r.setup}.`),
        table: {
          head: ['', ...result.runs.map((r) => NAMES[r.name]!)],
          rows: rows(result),
        },
        charts: result.runs.map(chart),
      },
    ],
    footer:
      'Made by stormproof (npm start -- --live, or stormproof lab --live). The model and its scaled parameters: docs/live-lab.md.',
  };
}

/** Runs `stormproof lab --live` with `args` (without `--live`). Returns the exit code. */
export async function liveLab(args: readonly string[], io: LiveIo): Promise<number> {
  const command = 'stormproof lab --live';
  const parsed = parse(command, args, LIVE_OPTIONS);
  if (parsed.help) {
    io.out(
      `Usage: ${command} [options]\n\nThe storm for real: an API server, a gateway and a fleet of clients on 127.0.0.1, three runs\n(the old stack, stormproof clients, stormproof clients and server) of about 35 s each at the\ndefault scale. Prints a comparison and writes a report with the measured curves.\n\nOptions:\n${optionsHelp(LIVE_OPTIONS)}\n`,
    );
    return 0;
  }
  const values = parsed.values;
  const bar = new ProgressBar(process.stderr, 'live storm lab', values.progress as ProgressMode);
  bar.update(0);
  let result: LiveLabResult;
  try {
    result = await runLiveLab({
      scale: values.scale as number,
      seed: values.seed as number,
      onProgress: (f) => bar.update(f),
      signal: io.interrupt,
    });
  } finally {
    bar.clear();
  }
  const out = String(values.out);
  const report = liveReport(result);
  writeWhole(out, /\.svg$/i.test(out) ? renderReportSvg(report) : renderReportHtml(report));
  if (values.json === true) {
    io.out(
      `${JSON.stringify({
        parameters: result.parameters,
        runs: Object.fromEntries(
          result.runs.map((r) => [
            r.name,
            { setup: r.setup, ...r.figures, wallMs: r.wallMs, series: r.series },
          ]),
        ),
        report: out,
      })}\n`,
    );
  } else {
    io.out(
      [
        'The live storm lab: the weather API on 127.0.0.1, measured',
        parametersText(result),
        '',
        table([
          ['', ...result.runs.map((r) => NAMES[r.name]!)],
          ...rows(result).map((row) =>
            row.map((cell) => (typeof cell === 'number' ? num(cell) : cell)),
          ),
        ]),
        '',
        `Report with the charts: ${out} (open it in a browser: file://${resolve(out)})`,
        '',
      ].join('\n'),
    );
  }
  return 0;
}
