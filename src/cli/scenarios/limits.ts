// `stormproof sim limits`: concurrency limits in front of backends of known concurrency.
import {
  LIMIT_CONTENDERS,
  type LimitContender,
  type LimitsSweepResult,
} from '../../sim/limits/sweep.js';
import { num, table } from '../output.js';
import type { Scenario, Values } from '../scenario.js';

/** Comma-separated numbers (checked by the parser) as numbers. */
const numbersOf = (value: unknown): number[] => String(value).split(',').map(Number);

function limitsContenders(values: Values): LimitContender[] {
  return values.contender === 'all' ? [...LIMIT_CONTENDERS] : [values.contender as LimitContender];
}

/**
 * A cell in a few characters: whether it passed (and if not, which targets it missed: a p99 of
 * 2.03 S prints as 2.0S), when the limit entered the band, goodput and admitted p99.
 */
function limitsCellText(c: LimitsSweepResult['cells'][number]): string {
  if (c.skipped) return 'skipped';
  const verdict = c.pass ? 'pass' : `miss (${c.missed.join(', ')})`;
  if (c.load < 1) {
    // Below capacity the backend could serve everything: what matters is what was shed.
    return `${verdict} ${(c.rejectedShare * 100).toFixed(1)}% shed, below C ${Math.round(c.belowShare * 100)}% of the time`;
  }
  const entry = c.bandEntryMs === null ? 'never' : `${(c.bandEntryMs / 1000).toFixed(1)} s`;
  return `${verdict} ${entry} ${Math.round(c.goodput * 100)}% ${c.admittedP99.toFixed(1)}S`;
}

function limitsSummary(r: LimitsSweepResult): string {
  const run = r.cells.filter((c) => !c.skipped);
  const skipped = r.cells.length - run.length;
  return `${run.filter((c) => c.pass).length} of ${run.length}${skipped > 0 ? ` (${skipped} skipped)` : ''}`;
}

function spreadText(service: LimitsSweepResult['service']): string {
  return service === 'exponential' ? 'exponential, as wide as S' : '0.9 to 1.1 times S';
}

/** The admitted-p99 target: twice the unloaded p99, which is 2 S for a steady service. */
function p99Text(service: LimitsSweepResult['service']): string {
  return service === 'exponential' ? '2 ln(100) S = 9.2 S (twice the unloaded p99)' : '2 S';
}

/** One contender's limit over a run, as a line chart. */
function limitChart(title: string, trace: LimitsSweepResult['step']['trace']) {
  return {
    kind: 'line' as const,
    title,
    xLabel: 'seconds',
    yLabel: 'limit',
    x: trace.map((p) => p.atMs / 1000),
    lines: [{ label: 'limit', y: trace.map((p) => p.limit) }],
  };
}

function stepText(ms: number | null): string {
  return ms === null ? 'never' : `${(ms / 1000).toFixed(2)} s`;
}

export const limits: Scenario = {
  name: 'limits',
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
      help: 'their mean service times, ms (how each request spreads around it: --service)',
    },
    {
      flag: 'service',
      key: 'service',
      kind: { type: 'enum', values: ['uniform', 'exponential'] },
      default: 'uniform',
      help: "how service times spread: uniform over 0.9 to 1.1 S, or exponential (as wide as S, as the map's server)",
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
        service: values.service as LimitsSweepResult['service'],
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
      `limits: each contender in front of a backend of true concurrency C whose requests take S (${spreadText(first.service)});`,
      'above capacity a cell passes when the limit is inside [C, 1.3 C + 1] for good within 3 s (or 20 x S),',
      `goodput is at least 95% of capacity and the admitted p99 at most ${p99Text(first.service)}`,
      '(each cell: pass, or miss and the targets missed; when it entered the band, goodput, admitted p99 over S);',
      'below capacity (a load under 1x) it passes when at most 1% of the requests were shed',
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
      '',
      'slowdown: every request 5 times slower from 3 s to 6 s (C = 32, S = 20 ms, 2x capacity);',
      'time to be in [32, 42.6] after it slowed and after it recovered (target: 2 s each),',
      'and goodput and admitted p99 over S from 7 s on',
      table([
        ['', 'slowed', 'recovered', 'goodput after', 'p99 after', ''],
        ...rs.map((r) => [
          r.contender,
          stepText(r.slowdown.slowMs),
          stepText(r.slowdown.backMs),
          `${Math.round(r.slowdown.goodputAfter * 100)}%`,
          `${r.slowdown.admittedP99After.toFixed(1)} S`,
          r.slowdown.pass ? 'pass' : 'miss',
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
        `Each contender runs inside stormproof/server's engine on virtual time, in front of a backend that serves C requests at once (the rest wait in its own queue, out of the shedder's reach), each taking S (${spreadText(first.service)}), with Poisson arrivals at a multiple of its capacity. Above capacity a cell passes when the limit is inside [C, 1.3 C + 1] for good within 3 s (or 20 x S), goodput is at least 95% of capacity and the admitted p99 at most ${p99Text(first.service)}; below capacity, when at most 1% of the requests were shed.`,
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
          charts: rs.map((r) =>
            limitChart(
              `${r.contender}: down ${stepText(r.step.downMs)}, up ${stepText(r.step.upMs)}`,
              r.step.trace,
            ),
          ),
          shareY: false,
        },
        {
          heading: 'slowdown: every request 5 times slower from 3 s to 6 s (C = 32, S = 20 ms)',
          charts: rs.map((r) =>
            limitChart(
              `${r.contender}: slowed ${stepText(r.slowdown.slowMs)}, recovered ${stepText(r.slowdown.backMs)}`,
              r.slowdown.trace,
            ),
          ),
          shareY: false,
        },
      ],
    };
  },
};
