// `stormproof sim hedge`: the Tail at Scale fan-out, with and without hedging.
import type { HedgeSimResult } from '../../sim/hedge.js';
import { PALETTE } from '../../sim/palette.js';
import type { BarChart } from '../../sim/plot.js';
import { num, table } from '../output.js';
import { type Scenario, seedOption } from '../scenario.js';

const ms = (x: number) => `${x.toFixed(1)} ms`;
const pct = (x: number) => `${(x * 100).toFixed(2)}%`;

function row(name: string, r: HedgeSimResult): string[] {
  return [
    name,
    ms(r.p50Ms),
    ms(r.p99Ms),
    ms(r.p999Ms),
    num(r.failedRequests),
    pct(r.extraRequests),
    pct(r.extraWork),
  ];
}

const HEAD = ['', 'p50', 'p99', 'p99.9', 'failed requests', 'extra requests', 'extra work'];

function refusals(r: HedgeSimResult): string {
  const parts = Object.entries(r.refused).map(([reason, n]) => `${reason} ${num(n)}`);
  return parts.length === 0 ? 'none' : parts.join(', ');
}

const PLAIN = PALETTE[1];
const HEDGED = PALETTE[0];

/** The tail side by side: each percentile without and with hedging. */
function tailChart(p: HedgeSimResult, h: HedgeSimResult): BarChart {
  const pair = (name: string, plain: number, hedged: number) => [
    { label: `${name} plain`, value: plain, color: PLAIN },
    { label: `${name} hedged`, value: hedged, color: HEDGED },
  ];
  return {
    kind: 'bar',
    title: `user request latency: p99.9 ${(p.p999Ms / h.p999Ms).toFixed(1)}x lower for ${pct(h.extraRequests)} more requests`,
    yLabel: 'ms',
    bars: [
      ...pair('p50', p.p50Ms, h.p50Ms),
      ...pair('p99', p.p99Ms, h.p99Ms),
      ...pair('p99.9', p.p999Ms, h.p999Ms),
    ],
  };
}

export const hedge: Scenario = {
  name: 'hedge',
  options: [
    {
      flag: 'requests',
      key: 'requests',
      kind: { type: 'int', min: 1, max: 1_000_000 },
      default: 10_000,
      help: 'user requests, each fanned out to every shard',
    },
    {
      flag: 'fan-out',
      key: 'fanOut',
      kind: { type: 'int', min: 1, max: 1000 },
      default: 100,
      help: 'shards a request waits for, one leaf each',
    },
    {
      flag: 'load',
      key: 'load',
      kind: { type: 'number', min: 0.01, max: 10 },
      default: 0.3,
      help: 'offered load on each replica as a share of its capacity (above 1: overloaded)',
    },
    seedOption(1),
  ],
  jobs(values) {
    const base = {
      requests: values.requests,
      fanOut: values.fanOut,
      load: values.load,
      seed: values.seed,
    };
    return [
      { runner: 'hedge', options: { ...base, hedge: false } },
      { runner: 'hedge', options: { ...base, hedge: true } },
    ];
  },
  json([plain, hedged]) {
    const strip = (r: HedgeSimResult) => ({ ...r, options: undefined });
    return { plain: strip(plain as HedgeSimResult), hedged: strip(hedged as HedgeSimResult) };
  },
  text([plain, hedged], values) {
    const p = plain as HedgeSimResult;
    const h = hedged as HedgeSimResult;
    return [
      `hedge: ${num(values.requests as number)} requests, each waiting for one leaf in each of ${values.fanOut} shards (2 replicas each, 1 leaf in 1,000 slow), load ${values.load}`,
      table([HEAD, row('no hedging', p), row('hedge: {} (the engine)', h)]),
      `hedges: ${num(h.hedgesSent)} sent, ${num(h.hedgesWon)} won; refused: ${refusals(h)}`,
      `p99.9 ${(p.p999Ms / h.p999Ms).toFixed(1)}x lower, p99 ${(p.p99Ms / h.p99Ms).toFixed(1)}x lower, for ${pct(h.extraRequests)} more requests`,
    ].join('\n');
  },
  report([plain, hedged], values) {
    const p = plain as HedgeSimResult;
    const h = hedged as HedgeSimResult;
    return {
      title: 'Hedged requests: the Tail at Scale',
      intro: [
        `${num(values.requests as number)} user requests, each waiting for one leaf in each of ${values.fanOut} shards; each shard has two replicas serving 8 leaves at a time; one leaf in 1,000 is slow (250 to 750 ms). Offered load ${values.load} of each replica's capacity. With hedging, a slow leaf gets a copy at the other replica by the engine's rules (docs/hedging.md).`,
      ],
      sections: [
        {
          heading: 'user request latency',
          table: { head: HEAD, rows: [row('no hedging', p), row('hedge: {}', h)] },
          charts: [tailChart(p, h)],
          text: [
            `hedges: ${num(h.hedgesSent)} sent, ${num(h.hedgesWon)} won; refused: ${refusals(h)}`,
          ],
        },
      ],
    };
  },
};
