// `stormproof sim brooker`: Brooker's optimistic-concurrency model, per backoff strategy.
import { BROOKER_STRATEGIES, type BrookerResult, type BrookerStrategy } from '../../sim/brooker.js';
import type { Chart } from '../../sim/plot.js';
import { num, round, table } from '../output.js';
import { type Scenario, seedOption } from '../scenario.js';

export const brooker: Scenario = {
  name: 'brooker',
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
