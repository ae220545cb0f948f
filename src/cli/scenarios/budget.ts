// `stormproof sim budget`: the storm story's retry budget test.
import type { BudgetTestResult } from '../../sim/budget-test.js';
import { PALETTE } from '../../sim/palette.js';
import type { LineChart } from '../../sim/plot.js';
import { num, table } from '../output.js';
import { type Scenario, seedOption } from '../scenario.js';

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
      { label: 'calls', y: cumulative, color: PALETTE[1] },
      { label: 'first tries', y: x, color: PALETTE[0] },
    ],
  };
}

export const budget: Scenario = {
  name: 'budget',
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
