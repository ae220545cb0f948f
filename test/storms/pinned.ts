// Pins the storm lab's figures bit for bit: the runs the lab and the docs show, each result
// (every per-second entry, the totals, the recovery and the parameters) hashed whole. The model
// may be reorganised freely; a change to any figure fails here, with the run's headline figures
// and the new hash printed, so a deliberate change is seen and explained.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { StormOptions, StormResult } from '../../src/sim/storm.js';
import { FULL_STORM_TIMEOUT, runStormOnce } from '../helpers/fixtures.js';

/**
 * The SHA-256 of the result's JSON (every field in the order the model writes them), without the
 * fields added after the pin for the server rows: those are checked to be neutral instead.
 */
function digest(result: StormResult): string {
  const { server, goodputRecoveredAfterFaultSeconds, parameters, ...rest } = result;
  const { server: serverOption, apiServers, ...pinnedParameters } = parameters;
  expect(server).toBeNull();
  expect(serverOption).toBe('none');
  expect(apiServers).toBe(16);
  expect(goodputRecoveredAfterFaultSeconds === null || goodputRecoveredAfterFaultSeconds >= 0).toBe(
    true,
  );
  const pinned = { ...rest, parameters: pinnedParameters };
  // The pinned JSON had the keys in this order: put them back (the new ones were between).
  const ordered = Object.fromEntries(
    [
      'normalRps',
      'peakRpsAfterFailover',
      'peakEdgeRps',
      'peakApiRps',
      'recoveredAfterFaultSeconds',
      'dbHealthyAtSeconds',
      'recovery',
      'totals',
      'series',
      'parameters',
    ].map((k) => [k, pinned[k as keyof typeof pinned]]),
  );
  return createHash('sha256').update(JSON.stringify(ordered)).digest('hex');
}

const PINNED: readonly {
  readonly name: string;
  readonly options: StormOptions;
  readonly figures: string;
  readonly sha256: string;
}[] = [
  {
    name: 'naive',
    options: { policy: 'naive' },
    figures:
      'normal 4011, peak 36304, edge 65186, api 242582, recovered null, users 720051/53667/651887, calls 4645760/12055436, retries 487288/3438925/7409676, wasted 2093103',
    sha256: '4d3fffbe2e2428746fb019fd5c1d13c805148b4b55a2983d2f1c28616a4a64b4',
  },
  {
    name: 'stormproof',
    options: { policy: 'stormproof' },
    figures:
      'normal 4011, peak 4434, edge 5163, api 5163, recovered 1, users 721740/636056/85519, calls 737255/737255, retries 0/15595/0, wasted 14516',
    sha256: '8336d8dd83634af4a72a15c8548838c8c1302f233dfffe8d4e0b0bd975217305',
  },
  {
    name: 'naive, manual recovery',
    options: { policy: 'naive', manualRecovery: true },
    figures:
      'normal 4011, peak 36304, edge 72698, api 242582, recovered 100, users 720258/295585/424532, calls 3268606/6680941, retries 317137/2231278/4028892, wasted 1016245',
    sha256: 'db7bcf4a9d18ab5d97c6fa10faebbb7a7a4f746a9ed0cf8503f3a9e719737cd7',
  },
  {
    name: 'stormproof, breaker',
    options: { policy: 'stormproof', breaker: true },
    figures:
      'normal 4011, peak 4176, edge 4752, api 4752, recovered 35, users 719650/584561/134923, calls 601923/601923, retries 0/8334/0, wasted 4349',
    sha256: '3f10f74255abee93ea767c1ef7edc0e7f8cb4a1a2944d10190a9ca9434c0f166',
  },
  {
    name: 'naive, short and half wrapped',
    options: { policy: 'naive', rps: 1000, durationSeconds: 60, wrappedShare: 0.5 },
    figures:
      'normal 1009, peak 6610, edge 34038, api 120618, recovered 4, users 60286/40282/19964, calls 255253/435109, retries 31328/163658/179856, wasted 161765',
    sha256: '5b1edfc6ef9cf6eeff926156768cabf866fca749716f5346b720978248fbc729',
  },
];

/** The figures a reader checks first, as one line. */
function headline(r: StormResult): string {
  const t = r.totals;
  return [
    `normal ${r.normalRps}`,
    `peak ${r.peakRpsAfterFailover}`,
    `edge ${r.peakEdgeRps}`,
    `api ${r.peakApiRps}`,
    `recovered ${r.recoveredAfterFaultSeconds}`,
    `users ${t.userRequests}/${t.succeeded}/${t.failed}`,
    `calls ${t.edgeRequests}/${t.apiCalls}`,
    `retries ${t.retries.wrapper}/${t.retries.library}/${t.retries.gateway}`,
    `wasted ${t.wasted}`,
  ].join(', ');
}

describe('the storm lab figures stay exactly as pinned', { timeout: FULL_STORM_TIMEOUT }, () => {
  for (const pin of PINNED) {
    it(pin.name, () => {
      const result = runStormOnce(pin.options);
      expect({ figures: headline(result), sha256: digest(result) }).toEqual({
        figures: pin.figures,
        sha256: pin.sha256,
      });
    });
  }
});
