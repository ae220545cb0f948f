// `stormproof sim layers`: retries at several layers over an always-failing service.
import type { LayersResult } from '../../sim/layers.js';
import { PALETTE } from '../../sim/palette.js';
import { num, table } from '../output.js';
import type { Scenario } from '../scenario.js';

const RETRY_AT = ['all', 'top', 'bottom'] as const;

function layerLabels(n: number): string[] {
  const labels = Array.from({ length: n }, (_, i) =>
    i === 0 ? 'top layer' : i === n - 1 ? 'bottom layer' : `layer ${i + 1}`,
  );
  labels.push('service');
  return labels;
}

export const layers: Scenario = {
  name: 'layers',
  options: [
    {
      flag: 'layers',
      key: 'layers',
      kind: { type: 'int', min: 1, max: 20 },
      default: 3,
      help: 'layers above the service',
    },
    {
      flag: 'attempts',
      key: 'attempts',
      kind: { type: 'int', min: 1, max: 100 },
      default: 4,
      help: 'attempts per retrying layer, the first included',
    },
    {
      flag: 'retry-at',
      key: 'retryAt',
      kind: { type: 'enum', values: RETRY_AT },
      default: 'all',
      help: 'which layers retry',
    },
  ],
  jobs(values, plot) {
    const modes = plot
      ? [String(values.retryAt), ...RETRY_AT.filter((m) => m !== values.retryAt)]
      : [String(values.retryAt)];
    return modes.map((retryAt) => ({
      runner: 'layers' as const,
      options: { layers: values.layers, attempts: values.attempts, retryAt },
    }));
  },
  json([result]) {
    const r = result as LayersResult;
    return { bottomCalls: r.bottomCalls, callsPerLevel: r.callsPerLevel };
  },
  text([result], values) {
    const r = result as LayersResult;
    const labels = layerLabels(values.layers as number);
    return [
      `layers: ${values.layers} layers over a service that always fails; ${values.retryAt === 'all' ? 'every layer retries' : `only the ${values.retryAt} layer retries`}, ${values.attempts} attempts each`,
      table([
        ['', 'calls per user request'],
        ...r.callsPerLevel.map((n, i) => [labels[i]!, num(n)]),
      ]),
    ].join('\n');
  },
  report(results, values) {
    const labels = layerLabels(values.layers as number);
    const runs = results as LayersResult[];
    const modes = this.jobs(values, true).map((j) => String(j.options.retryAt));
    return {
      title: 'Retries at several layers',
      intro: [
        `One user request through ${values.layers} layers over a service that always fails. Each retrying layer makes up to ${values.attempts} attempts with the library's retry(), and repeats the whole call below it.`,
      ],
      sections: [
        {
          heading: 'Calls each level receives per user request',
          table: {
            head: ['retrying layers', ...labels],
            rows: runs.map((r, i) => [modes[i]!, ...r.callsPerLevel]),
          },
          charts: runs.map((r, i) => ({
            kind: 'bar' as const,
            title: `retry at ${modes[i]}: ${num(r.bottomCalls)} calls at the service`,
            yLabel: 'calls per user request',
            bars: r.callsPerLevel.map((value, j) => ({
              label: labels[j]!,
              value,
              color: j === labels.length - 1 ? PALETTE[1] : PALETTE[0],
            })),
          })),
        },
      ],
    };
  },
};
