// `stormproof sim herd`: the storm story's toy model, and its chart against no jitter.
import type { HerdResult } from '../../sim/herd.js';
import type { LineChart } from '../../sim/plot.js';
import { UsageError } from '../args.js';
import type { HerdTimeline } from '../herd-timeline.js';
import { num, table } from '../output.js';
import type { Job } from '../runners.js';
import { INT32, type Scenario, seedOption, type Values } from '../scenario.js';

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
  const { slotMs, slotsPerPoint } = timeline;
  const x = timeline.served.map((_, i) => (i * slotsPerPoint * slotMs) / 1000);
  const offered = timeline.served.map((s, i) => s + timeline.failed[i]!);
  const done = (timeline.slots * slotMs) / 1000;
  const span =
    slotsPerPoint === 1 ? '' : `, the busiest of each ${num((slotsPerPoint * slotMs) / 1000)} s`;
  return {
    kind: 'line',
    title: `jitter ${jitter}: ${num(timeline.calls)} calls, busiest ${num(timeline.busiestSlot)}, ${num(done)} s`,
    xLabel: 'seconds since every client failed',
    yLabel: `calls per ${slotMs} ms slot${span}`,
    x,
    lines: [
      { label: 'offered', y: offered },
      { label: 'succeeded', y: timeline.served },
      { label: 'failed', y: timeline.failed },
    ],
  };
}

export const herd: Scenario = {
  name: 'herd',
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
  check(command, values) {
    if (values.mode !== 'counted') return;
    const why =
      values.jitter === 'decorrelated'
        ? ['--jitter decorrelated', 'every client remembers its own last wait', '--jitter']
        : values.pushback === 'load-aware'
          ? ['--pushback load-aware', 'every rejected call gets its own slot', '--pushback']
          : undefined;
    if (why === undefined) return;
    const [what, because, flag] = why;
    throw new UsageError(
      `${command}: --mode counted cannot count ${what} (${because}); give --mode exact or auto, or another ${flag}`,
    );
  },
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
            ...(timelines.some((t) => t.slotsPerPoint > 1)
              ? [
                  'A herd this long has more slots than a chart can show: each point is the busiest slot of a span of slots (the span is on the y axis).',
                ]
              : []),
          ],
          charts: [herdChart(a, timelines[0]!), herdChart(b, timelines[1]!)],
        },
      ],
    };
  },
};
