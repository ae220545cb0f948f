// `stormproof sim timers`: partner apps refreshing at 06:00 against a daily timer per device.

import { PALETTE } from '../../sim/palette.js';
import type { LineChart } from '../../sim/plot.js';
import type { TimersResult } from '../../sim/timers.js';
import { num, table } from '../output.js';
import { type Scenario, seedOption } from '../scenario.js';

function clock(t: number): string {
  const s = 6 * 3600 + t;
  const hh = String(Math.floor(s / 3600)).padStart(2, '0');
  const mm = String(Math.floor((s % 3600) / 60)).padStart(2, '0');
  const ss = String(s % 60).padStart(2, '0');
  return `${hh}:${mm}:${ss}`;
}

export const timers: Scenario = {
  name: 'timers',
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
      lines: [{ label: 'requests', y: load.series.map((s) => s.requests), color: PALETTE[0] }],
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
