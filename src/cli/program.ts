// The `stormproof` program: the storm lab (`lab`), its scenarios (`sim <name>`) and the stack
// checker (`check <file>`). Models run on virtual time, long runs in worker threads; this thread
// parses the options, draws the progress bar, prints the figures and writes the charts. Each
// command imports its own modules when it runs (`import()`), so that a small run starts as fast
// as node itself: `sim herd` loads the herd and none of the storm, map, lab or server code.
// main.ts runs it as the process (the bin); apart from it, with its output gathered, it is what
// the tests of what the program prints run, without a process each.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { StackReport } from '../sim/check.js';
import type { Report } from '../sim/plot.js';
import type { StormResult } from '../sim/storm.js';
import { type OptionSpec, optionsHelp, parse, UsageError } from './args.js';
import { InterruptedError, JobError, runJobs } from './jobs.js';
import { duration, JSON_OPTION, num, table } from './output.js';
import { PROGRESS_OPTION, ProgressBar, type ProgressMode } from './progress.js';
import type { Job } from './runners.js';
import type { Values } from './scenario.js';
import { SCENARIOS } from './scenarios.js';
import { writeWhole } from './write.js';

/** Exit codes. */
export const OK = 0;
const FAILED = 1;
const USAGE = 2;
export const INTERRUPTED = 130;

const COMMON: readonly OptionSpec[] = [JSON_OPTION, PROGRESS_OPTION];
const PLOT: OptionSpec = {
  flag: 'plot',
  key: 'plot',
  kind: { type: 'file', extensions: ['.html', '.htm', '.svg'] },
  help: 'write charts to FILE: a self-contained .html page or an .svg picture',
  defaultHelp: 'no chart',
};
const labOptions = (stormModelOptions: readonly OptionSpec[]): readonly OptionSpec[] => [
  {
    flag: 'out',
    key: 'out',
    kind: { type: 'file', extensions: ['.html', '.htm', '.svg'] },
    default: 'reports/storm-lab.html',
    help: 'where to write the report (.html or .svg)',
  },
  {
    flag: PLOT.flag,
    key: PLOT.key,
    kind: PLOT.kind,
    defaultHelp: 'the file of --out',
    help: "the same as --out: the report is the lab's chart",
  },
  ...stormModelOptions.map((spec) =>
    spec.flag === 'manual-recovery'
      ? { ...spec, help: "also run naive with the on-call engineer's manual recovery" }
      : spec,
  ),
  ...COMMON,
];
const CHECK_OPTIONS: readonly OptionSpec[] = [
  { flag: 'json', key: 'json', kind: { type: 'flag' }, help: 'print the report as JSON' },
  {
    flag: 'strict',
    key: 'strict',
    kind: { type: 'flag' },
    help: 'exit with code 1 when there are warnings (for CI)',
  },
];

function mainHelp(): string {
  const scenarios = [...SCENARIOS].map(([name, s]) => [`  ${name}`, s.summary]);
  const width = Math.max(...scenarios.map(([n]) => n!.length)) + 3;
  return `stormproof: retries that never become the outage. The storm lab and its tools.

Usage:
  stormproof lab [options]                   naive versus stormproof on the weather API: prints a
                                             comparison and writes a report with charts
  stormproof lab --live [options]            the same storm for real on 127.0.0.1 (about 2 min)
  stormproof lab --serve [--port N]          the storm lab in a page, on 127.0.0.1, until Ctrl-C
  stormproof sim <scenario> [options]        runs one scenario of the simulator
  stormproof check <stack.json> [options]    worst case of a stack's retry layers, and warnings
  stormproof map [options]                   the metastability map of every retry policy, or a
                                             published scenario (stormproof map --help)
  stormproof --help | --version

Scenarios:
${scenarios.map(([n, s]) => n!.padEnd(width) + s).join('\n')}

Options of sim and lab:
${optionsHelp([...COMMON, PLOT])}

'stormproof sim <scenario> --help' lists a scenario's options. The models: docs/simulator.md.
Exit codes: 0 done, 1 failed (or check --strict found warnings), 2 bad usage, 130 interrupted.
`;
}

/** Where the program writes, and its Ctrl-C. */
export interface Io {
  out(text: string): void;
  err(text: string): void;
  readonly interrupt: AbortSignal;
}

/** The program. Returns the exit code; throws only UsageError (exit 2) and unexpected errors. */
async function main(argv: readonly string[], io: Io): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined) {
    io.err(mainHelp());
    return USAGE;
  }
  if (command === '--help' || command === '-h' || command === 'help') {
    io.out(mainHelp());
    return OK;
  }
  if (command === '--version' || command === '-v') {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    io.out(`${pkg.version}\n`);
    return OK;
  }
  switch (command) {
    case 'sim':
      return sim(rest, io);
    case 'lab':
      return lab(rest, io);
    case 'check':
      return check(rest, io);
    case 'map':
      return (await import('./map.js')).mapCommand(rest, io);
    default:
      throw new UsageError(
        `stormproof: unknown command ${JSON.stringify(command)}; expected lab, sim, check or map (see stormproof --help)`,
      );
  }
}

/**
 * The storm's failover must fit in the run: `--fault-at` + `--fault-seconds` <= `--duration`.
 * Checked here, before the model runs, so the error names the flags and says what would work.
 */
function checkStormFlags(command: string, args: readonly string[], values: Values): void {
  const typed = new Set(args.map((arg) => arg.replace(/^--?/, '').split('=')[0]));
  const show = (flag: string, value: unknown) =>
    `--${flag} ${value}${typed.has(flag) ? '' : ' (the default)'}`;
  const duration = values.durationSeconds as number;
  const faultAt = values.faultAtSeconds as number;
  const faultSeconds = values.faultSeconds as number;
  if (values.breaker === true && values.policy !== 'stormproof') {
    throw new UsageError(
      `${command}: --breaker needs --policy stormproof (the naive stack has no breaker), got ${show('policy', values.policy)}`,
    );
  }
  if (faultAt + faultSeconds > duration) {
    throw new UsageError(
      `${command}: the run ends before the failover does: ${show('fault-at', faultAt)} and ${show('fault-seconds', faultSeconds)} need ${show('duration', duration)} to be at least ${faultAt + faultSeconds}; give --duration ${faultAt + faultSeconds} or more, or a smaller --fault-at or --fault-seconds`,
    );
  }
}

/**
 * The layers model makes every call at the bottom one by one: `--attempts` to the power
 * `--layers` must stay within its limit. Checked here, so the error names the flags.
 */
async function checkLayersFlags(command: string, values: Values): Promise<void> {
  const { MAX_BOTTOM_CALLS } = await import('../sim/layers.js');
  const layers = values.layers as number;
  const attempts = values.attempts as number;
  if (values.retryAt !== 'all' || attempts ** layers <= MAX_BOTTOM_CALLS) return;
  const maxLayers = Math.floor(Math.log(MAX_BOTTOM_CALLS) / Math.log(attempts) + 1e-9);
  let maxAttempts = Math.floor(MAX_BOTTOM_CALLS ** (1 / layers) + 1e-9);
  while ((maxAttempts + 1) ** layers <= MAX_BOTTOM_CALLS) maxAttempts++;
  while (maxAttempts ** layers > MAX_BOTTOM_CALLS) maxAttempts--;
  throw new UsageError(
    `${command}: --layers ${layers} of --attempts ${attempts} would make ${num(attempts ** layers)} calls at the bottom, and the model makes them one by one up to ${num(MAX_BOTTOM_CALLS)}; give --layers ${maxLayers} or fewer, or --attempts ${maxAttempts} or fewer, or --retry-at top`,
  );
}

/** Runs jobs with a progress bar; returns their results. */
async function runWithProgress(
  label: string,
  jobs: readonly Job[],
  mode: ProgressMode,
  io: Io,
): Promise<unknown[]> {
  const bar = new ProgressBar(process.stderr, label, mode);
  bar.update(0);
  try {
    return await runJobs(jobs, (fraction) => bar.update(fraction), io.interrupt);
  } finally {
    bar.clear();
  }
}

/** Writes a report to `file` as HTML or SVG, by its extension. */
async function writeReport(file: string, report: Report): Promise<string> {
  const { renderReportHtml, renderReportSvg } = await import('../sim/plot.js');
  const text = /\.svg$/i.test(file) ? renderReportSvg(report) : renderReportHtml(report);
  writeWhole(file, text);
  return file;
}

async function sim(args: readonly string[], io: Io): Promise<number> {
  const [name, ...rest] = args;
  const names = [...SCENARIOS.keys()].join(', ');
  if (name === undefined || name === '--help' || name === '-h') {
    const text = `Usage: stormproof sim <scenario> [options]\n\nScenarios: ${names}\n'stormproof sim <scenario> --help' lists a scenario's options.\n`;
    if (name === undefined) {
      throw new UsageError(`stormproof sim: which scenario? One of ${names}`);
    }
    io.out(text);
    return OK;
  }
  const entry = SCENARIOS.get(name);
  if (entry === undefined) {
    throw new UsageError(
      `stormproof sim: unknown scenario ${JSON.stringify(name)}; expected one of ${names}`,
    );
  }
  const command = `stormproof sim ${name}`;
  const scenario = await entry.load();
  const specs = [...scenario.options, ...COMMON, PLOT];
  const parsed = parse(command, rest, specs);
  if (parsed.help) {
    const summary = entry.summary.charAt(0).toUpperCase() + entry.summary.slice(1);
    io.out(`Usage: ${command} [options]\n\n${summary}.\n\nOptions:\n${optionsHelp(specs)}\n`);
    return OK;
  }
  const values = parsed.values;
  if (name === 'storm') checkStormFlags(command, rest, values);
  if (name === 'layers') await checkLayersFlags(command, values);
  scenario.check?.(command, values);
  const plot = values.plot as string | undefined;
  const results = await runWithProgress(
    command,
    scenario.jobs(values, plot !== undefined),
    values.progress as ProgressMode,
    io,
  );
  if (values.json === true) io.out(`${JSON.stringify(scenario.json(results, values))}\n`);
  else io.out(`${scenario.text(results, values)}\n`);
  if (plot !== undefined) {
    await writeReport(plot, scenario.report(results, values));
    io.err(`chart written to ${plot}\n`);
  }
  return OK;
}

const withoutLive = (args: readonly string[]) => args.filter((arg) => arg !== '--live');

async function lab(args: readonly string[], io: Io): Promise<number> {
  if (args.includes('--serve')) {
    if (args.includes('--live')) {
      throw new UsageError('stormproof lab: --serve and --live are two programs; give one of them');
    }
    return (await import('./serve.js')).serveLab(
      args.filter((arg) => arg !== '--serve'),
      io,
    );
  }
  if (args.includes('--live')) return (await import('./live.js')).liveLab(withoutLive(args), io);
  const command = 'stormproof lab';
  const { STORM_MODEL_OPTIONS, stormFigures, stormReport, stormTable } = await import(
    './scenarios/storm.js'
  );
  const { labKey, labSetups } = await import('./storm-server.js');
  const options = labOptions(STORM_MODEL_OPTIONS);
  const parsed = parse(command, args, options);
  const { plot, out: outFlag } = parsed.values;
  if (plot !== undefined && args.some((arg) => /^--out(=|$)/.test(arg)) && plot !== outFlag) {
    throw new UsageError(
      `${command}: --out ${outFlag} and --plot ${plot} name two files for the one report; give one of them`,
    );
  }
  if (parsed.help) {
    io.out(
      `Usage: ${command} [options]\n\nThe storm lab: the weather API's 30 s database failover, naive retries versus stormproof,\neach also with its API servers protected (stormproof/server, or an all-or-nothing shedder),\nside by side. Prints a comparison and writes a self-contained report with the charts.\n\nOptions:\n${optionsHelp(options)}\n`,
    );
    return OK;
  }
  const values: Values = parsed.values;
  checkStormFlags(command, args, values);
  const model = {
    seed: values.seed,
    rps: values.rps,
    durationSeconds: values.durationSeconds,
    faultAtSeconds: values.faultAtSeconds,
    faultSeconds: values.faultSeconds,
  };
  const setups = labSetups(values.manualRecovery === true);
  const jobs: Job[] = setups.map((setup) => ({
    runner: 'storm',
    options: Object.fromEntries(
      Object.entries({ ...model, ...setup }).filter(([, v]) => v !== undefined),
    ),
  }));
  const runs = (await runWithProgress(
    'storm lab',
    jobs,
    values.progress as ProgressMode,
    io,
  )) as StormResult[];
  const out = String(values.plot ?? values.out);
  await writeReport(out, stormReport(runs, 'The storm lab: naive retries versus stormproof'));
  if (values.json === true) {
    const figures = Object.fromEntries(runs.map((r) => [labKey(r), stormFigures(r)]));
    io.out(`${JSON.stringify({ ...figures, report: out })}\n`);
  } else {
    const p = runs[0]!.parameters;
    io.out(
      [
        `The storm lab: the weather API at ${num(p.rps)} requests/s; the database fails over at ${num(p.faultAtSeconds)} s for ${num(p.faultSeconds)} s (${num(p.durationSeconds)} s simulated, seed ${p.seed})`,
        '',
        stormTable(runs),
        '',
        `Report with the charts: ${out} (open it in a browser: file://${resolve(out)})`,
        '',
      ].join('\n'),
    );
  }
  return OK;
}

function checkText(file: string, report: StackReport): string {
  const ms = (n: number | null) => (n === null ? 'unbounded' : duration(n));
  const lines = [
    `${report.name ?? 'stack'} (${file})`,
    '',
    table([
      ['layer (top first)', 'attempts', 'calls in', 'max backoff', 'worst latency'],
      ...report.layers.map((l) => [
        l.name,
        num(l.attempts),
        num(l.worstCaseCallsReceived),
        ms(l.maxTotalBackoffMs),
        ms(l.worstCaseLatencyMs),
      ]),
    ]),
    '',
    `Worst case per user request: ${num(report.worstCaseBottomCalls)} calls at the bottom, latency ${ms(report.worstCaseLatencyMs)}.`,
  ];
  for (const l of report.layers) {
    const b = l.breaker;
    if (b === undefined) continue;
    lines.push(
      `${l.name}'s circuit breaker opens after ${b.opensAfter}; once open in a long outage it sends ${num(b.bottomCallsWhileOpen)} calls per user request, only ${num(b.bottomCallsPerOpenPeriod)} at the bottom per open period (${num(b.firstOpenMs[0])} to ${num(b.firstOpenMs[1])} ms at first, growing to ${num(b.longestOpenMs[0])} to ${num(b.longestOpenMs[1])} ms): at most ${num(b.maxProbesIn10Minutes)} probes in 10 minutes, per breaker.`,
    );
  }
  if (report.warnings.length === 0) lines.push('No warnings.');
  else {
    lines.push('', `Warnings (${report.warnings.length}):`);
    for (const w of report.warnings) lines.push(`  - ${w}`);
  }
  if (report.notes.length > 0) {
    lines.push('', `Notes (${report.notes.length}):`);
    for (const n of report.notes) lines.push(`  - ${n}`);
  }
  return `${lines.join('\n')}\n`;
}

async function check(args: readonly string[], io: Io): Promise<number> {
  const command = 'stormproof check';
  const parsed = parse(command, args, CHECK_OPTIONS, {
    min: 1,
    max: 1,
    name: 'stack file (JSON)',
  });
  if (parsed.help) {
    io.out(
      `Usage: ${command} <stack.json> [options]\n\nReads the retry layers of a stack (format: docs/simulator.md, example: examples/stack.json)\nand prints the worst-case calls at the bottom per user request, the worst-case latency\nand warnings.\n\nOptions:\n${optionsHelp(CHECK_OPTIONS)}\n`,
    );
    return OK;
  }
  const file = parsed.positionals[0]!;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as { code?: string }).code;
    throw new UsageError(
      `${command}: cannot read ${file}: ${code === 'ENOENT' ? 'no such file' : ((error as Error).message ?? code)}`,
    );
  }
  let stack: unknown;
  try {
    stack = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${command}: ${file} is not valid JSON: ${(error as Error).message}`);
  }
  const { checkStack } = await import('../sim/check.js');
  let report: StackReport;
  try {
    report = checkStack(stack);
  } catch (error) {
    throw new UsageError(
      `${command}: ${file}: ${(error as Error).message.replace(/^stormproof: /, '')}`,
    );
  }
  if (parsed.values.json === true) {
    io.out(
      `${JSON.stringify({
        worstCaseBottomCalls: report.worstCaseBottomCalls,
        worstCaseLatencyMs: report.worstCaseLatencyMs,
        warnings: report.warnings,
        notes: report.notes,
        layers: report.layers,
      })}\n`,
    );
  } else {
    io.out(checkText(file, report));
  }
  return parsed.values.strict === true && report.warnings.length > 0 ? FAILED : OK;
}

/**
 * Runs the program on `argv` (the arguments after the program's name) and returns its exit code;
 * a usage error, a model's refusal or a failure is said in one line on `io.err`.
 */
export async function runProgram(argv: readonly string[], io: Io): Promise<number> {
  let code: number;
  try {
    code = await main(argv, io);
  } catch (error) {
    if (error instanceof InterruptedError || io.interrupt.aborted) {
      io.err('stormproof: interrupted\n');
      return INTERRUPTED;
    }
    if (error instanceof UsageError) {
      io.err(`${error.message}\n`);
      return USAGE;
    }
    if (
      error instanceof JobError &&
      (error.errorName === 'TypeError' || error.errorName === 'RangeError') &&
      error.message.startsWith('stormproof:')
    ) {
      // A model refused an option value: the user's to fix.
      io.err(`${error.message}\n`);
      return USAGE;
    }
    const message = error instanceof Error ? error.message : String(error);
    io.err(`stormproof: ${message}\n`);
    if (process.env.STORMPROOF_DEBUG) io.err(`${(error as Error)?.stack ?? ''}\n`);
    return FAILED;
  }
  if (io.interrupt.aborted) {
    io.err('stormproof: interrupted\n');
    return INTERRUPTED;
  }
  return code;
}
