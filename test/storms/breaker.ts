// Circuit breakers in the simulator: what `checkStack` says a layer's breaker changes in a long
// outage, and what the engine's real CircuitBreaker, one per partner instance on the model's
// virtual clock and seeded generator, changes in the storm model. The storm figures are exact
// for seed 1; the run without a breaker is pinned too, so the breaker's code cannot move it.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { checkStack } from '../../src/sim/check.js';
import { runStorm, type StormResult } from '../../src/sim/storm.js';
import {
  CLIENT_LIBRARY_LAYER,
  FULL_STORM_TIMEOUT,
  runStormOnce,
  SMALL_STORM,
} from '../helpers/fixtures.js';

const example = JSON.parse(
  readFileSync(new URL('../../examples/stack.json', import.meta.url), 'utf8'),
) as { layers: Record<string, unknown>[] };

/** The example stack (3 layers of 4 attempts, no budget) with `breaker` on layer `at`. */
function exampleWith(at: number, breaker: unknown) {
  return { ...example, layers: example.layers.map((l, i) => (i === at ? { ...l, breaker } : l)) };
}

const fixed = {
  layers: [
    { name: 'partner backend', attempts: 1 },
    CLIENT_LIBRARY_LAYER,
    { name: 'API gateway', attempts: 1, timeoutMs: 1000 },
  ],
};

describe('checkStack with a circuit breaker', () => {
  it("reports what a layer's breaker changes once open: no calls, one probe per open period", () => {
    const withBreaker = {
      layers: fixed.layers.map((l) => (l.name === 'client library' ? { ...l, breaker: true } : l)),
    };
    const r = checkStack(withBreaker);
    // The worst case while closed is unchanged: a breaker only acts once it has opened.
    expect(r.worstCaseBottomCalls).toBe(4);
    expect(r.worstCaseLatencyMs).toBe(3000);
    expect(r.warnings).toEqual([]);
    expect(r.notes).toEqual([]);
    expect(r.layers[0]!.breaker).toBeUndefined();
    expect(r.layers[1]!.breaker).toEqual({
      opensAfter: '5 failures in a row',
      bottomCallsWhileOpen: 0,
      bottomCallsPerOpenPeriod: 1,
      firstOpenMs: [2500, 5000],
      longestOpenMs: [150_000, 300_000],
      // Shortest periods 2.5, 5, 10, 20, 40, 80, 150, 150 s end by 457.5 s; the next at 607.5 s.
      maxProbesIn10Minutes: 8,
    });
  });

  it('says, as a note and not a warning, that a stack without a breaker calls for the whole outage', () => {
    const r = checkStack(fixed);
    expect(r.warnings).toEqual([]);
    expect(r.notes).toEqual([
      'No layer has a circuit breaker: for as long as an outage lasts, minutes or hours, every user request still sends at least 1 call, and up to 4, to the failing service. A breaker at one layer sends none once open, only a probe now and then.',
    ]);
    expect(checkStack(example).notes).toHaveLength(1);
    expect(checkStack(example).notes[0]).toContain('up to 64');
    // A stack that never retries is not told.
    expect(checkStack({ layers: [{ name: 'client', attempts: 1 }] }).notes).toEqual([]);
  });

  it('multiplies a probe by the retrying layers below the breaker', () => {
    const r = checkStack(
      exampleWith(0, { consecutiveFailures: 10, openMs: 1000, maxOpenMs: 60_000, probes: 2 }),
    );
    expect(r.worstCaseBottomCalls).toBe(64);
    expect(r.layers[0]!.breaker).toEqual({
      opensAfter: '10 failures in a row',
      bottomCallsWhileOpen: 0,
      // Two probes, each one attempt of the top layer: 4 x 4 calls below it.
      bottomCallsPerOpenPeriod: 32,
      firstOpenMs: [500, 1000],
      longestOpenMs: [30_000, 60_000],
      // Shortest periods 0.5, 1, 2, 4, 8, 16, 30 s (61.5 s), then 30 s each: 24 periods, 2 probes.
      maxProbesIn10Minutes: 48,
    });
  });

  it('softens the no-budget warning only for the layers a breaker stops, and says what it misses', () => {
    const plain = checkStack(example).warnings.filter((w) => /no retry budget/.test(w));
    expect(plain).toHaveLength(3);
    expect(plain.every((w) => /in a long outage every call makes all 4 attempts/.test(w))).toBe(
      true,
    );

    // A breaker at the top stops every layer's calls once open.
    const top = checkStack(exampleWith(0, true)).warnings;
    expect(top).toHaveLength(7);
    const softened = top.filter((w) => /no retry budget/.test(w));
    expect(softened).toEqual([
      'partner backend retries with no retry budget: its circuit breaker stops its calls in a long outage once open, but while it is closed every failing call makes all 4 attempts, and a partial outage never opens it, since any success resets its count of 5 failures in a row. Add a budget of about 10 percent.',
      'client library retries with no retry budget: the circuit breaker of partner backend stops its calls in a long outage once open, but while it is closed every failing call makes all 4 attempts, and a partial outage never opens it, since any success resets its count of 5 failures in a row. Add a budget of about 10 percent.',
      'API gateway retries with no retry budget: the circuit breaker of partner backend stops its calls in a long outage once open, but while it is closed every failing call makes all 4 attempts, and a partial outage never opens it, since any success resets its count of 5 failures in a row. Add a budget of about 10 percent.',
    ]);

    // A breaker at the bottom does not stop the layers above it from retrying.
    const bottom = checkStack(exampleWith(2, { failureRatio: 0.5 }));
    const budgetWarnings = bottom.warnings.filter((w) => /no retry budget/.test(w));
    expect(budgetWarnings.slice(0, 2)).toEqual(plain.slice(0, 2));
    expect(budgetWarnings[2]).toBe(
      'API gateway retries with no retry budget: its circuit breaker stops its calls in a long outage once open, but while it is closed every failing call makes all 4 attempts, and failures under 50% never open it. Add a budget of about 10 percent.',
    );
    expect(bottom.layers[2]!.breaker).toMatchObject({
      opensAfter: 'a failure ratio of 50% over at least 100 calls in 30000 ms',
      bottomCallsPerOpenPeriod: 1,
    });
  });

  it('takes a breaker on a gRPC layer too', () => {
    const r = checkStack({
      layers: [
        {
          name: 'gRPC client',
          breaker: { openMs: 2000 },
          grpc: {
            methodConfig: [
              {
                name: [{ service: 'weather.Forecast' }],
                retryPolicy: {
                  maxAttempts: 3,
                  initialBackoff: '0.1s',
                  maxBackoff: '1s',
                  backoffMultiplier: 2,
                  retryableStatusCodes: ['UNAVAILABLE'],
                },
              },
            ],
            retryThrottling: { maxTokens: 10, tokenRatio: 0.1 },
          },
        },
      ],
    });
    expect(r.layers[0]!.breaker?.firstOpenMs).toEqual([1000, 2000]);
    expect(r.notes).toEqual([]);
  });

  it('names the field at fault', () => {
    const bad = (breaker: unknown) => () => checkStack(exampleWith(1, breaker));
    expect(bad(null)).toThrow(TypeError);
    expect(bad(null)).toThrow(
      /stack layers\[1\]\.breaker must be true, false or an object of breaker options, got null/,
    );
    expect(bad('yes')).toThrow(/layers\[1\]\.breaker must be true, false or an object/);
    expect(bad([])).toThrow(/layers\[1\]\.breaker must be true, false or an object/);
    expect(bad({ opnMs: 1000 })).toThrow(
      /stack layers\[1\]\.breaker has no field "opnMs" \(did you mean "openMs"\?\)/,
    );
    // Hooks, clocks and stores are code, not a stack file's business.
    expect(bad({ store: {} })).toThrow(/stack layers\[1\]\.breaker has no field "store"/);
    expect(bad({ openMs: 0 })).toThrow(RangeError);
    expect(bad({ openMs: 0 })).toThrow(/stack layers\[1\]\.breaker openMs must be >= 1/);
    expect(bad({ openMs: 10_000, maxOpenMs: 5000 })).toThrow(
      /stack layers\[1\]\.breaker maxOpenMs must be >= openMs \(10000\), got 5000/,
    );
    expect(bad({ failureRatio: 1.5 })).toThrow(/breaker failureRatio must be .*<= 1, got 1\.5/);
    expect(bad({ probes: 1.5 })).toThrow(/breaker probes must be an integer, got 1\.5/);
    // false is no breaker, as leaving it out.
    expect(checkStack(exampleWith(1, false))).toEqual(checkStack(example));
  });
});

/** The sum of a per-second figure over seconds [from, to). */
function total(
  r: StormResult,
  key: 'apiCalls' | 'load' | 'failed' | 'refused',
  from: number,
  to: number,
) {
  return r.series.slice(from, to).reduce((sum, s) => sum + s[key], 0);
}

/** The figures a breaker changes: load on the API during the failover and the recovery after. */
function figures(r: StormResult) {
  const fault = r.parameters.faultAtSeconds;
  const back = r.dbHealthyAtSeconds;
  return {
    apiCallsDuringFailover: total(r, 'apiCalls', fault, back),
    apiCallsInItsLast10Seconds: total(r, 'apiCalls', back - 10, back),
    peakRpsAfterFailover: r.peakRpsAfterFailover,
    recoveredAfterFaultSeconds: r.recoveredAfterFaultSeconds,
    failedUserRequests: r.totals.failed,
    breakerRefusals: r.totals.breakerRefusals,
    breakerOpenings: r.totals.breakerOpenings,
  };
}

describe('runStorm with a circuit breaker per partner instance', {
  timeout: FULL_STORM_TIMEOUT,
}, () => {
  it('without a breaker: the figures are as before the breaker existed', () => {
    const r = runStormOnce({ policy: 'stormproof' });
    expect(r.parameters.breaker).toBe(false);
    expect(figures(r)).toEqual({
      apiCallsDuringFailover: 134_973,
      apiCallsInItsLast10Seconds: 44_406,
      peakRpsAfterFailover: 4434,
      recoveredAfterFaultSeconds: 1,
      failedUserRequests: 85_519,
      breakerRefusals: 0,
      breakerOpenings: 0,
    });
    expect(r.totals).toMatchObject({
      userRequests: 721_740,
      edgeRequests: 737_255,
      retries: { wrapper: 0, library: 15_595, gateway: 0 },
      budgetRefusals: 71_003,
    });
    expect(r.series.every((s) => s.refused === 0)).toBe(true);
  });

  it("with stormproof's default breaker: 72% fewer calls in the failover, recovery 35 s instead of 1 s", () => {
    const r = runStormOnce({ policy: 'stormproof', breaker: true });
    expect(r.parameters.breaker).toEqual({
      consecutiveFailures: 5,
      failureRatio: undefined,
      windowMs: 30_000,
      minimumCalls: 100,
      openMs: 5000,
      maxOpenMs: 300_000,
      probes: 1,
      successesToClose: 1,
    });
    expect(figures(r)).toEqual({
      apiCallsDuringFailover: 37_949,
      apiCallsInItsLast10Seconds: 329,
      peakRpsAfterFailover: 4176,
      // Breakers that failed three or four probes wait out periods of 10 to 40 s after the
      // database is back, refusing their instance's requests meanwhile.
      recoveredAfterFaultSeconds: 35,
      failedUserRequests: 134_923,
      breakerRefusals: 125_978,
      breakerOpenings: 1409,
    });
    // The normal load is untouched: a closed breaker refuses nothing.
    expect(r.normalRps).toBe(runStormOnce({ policy: 'stormproof' }).normalRps);
    expect(total(r, 'refused', 0, r.parameters.faultAtSeconds)).toBe(0);
    // Refused calls never reach the edge, and each one fails its user request.
    expect(r.totals.failed).toBeGreaterThanOrEqual(r.totals.breakerRefusals);
  });

  it('with short open periods (1 s growing to 5 s): most of the saving, recovery in 5 s', () => {
    const r = runStormOnce({ policy: 'stormproof', breaker: { openMs: 1000, maxOpenMs: 5000 } });
    expect(figures(r)).toEqual({
      apiCallsDuringFailover: 47_881,
      apiCallsInItsLast10Seconds: 987,
      peakRpsAfterFailover: 4129,
      recoveredAfterFaultSeconds: 5,
      failedUserRequests: 105_504,
      breakerRefusals: 91_900,
      breakerOpenings: 3166,
    });
  });

  it('a breaker that never opens changes nothing: no extra random draw, no refusal', () => {
    const without = runStorm(SMALL_STORM);
    const closed = runStorm({ ...SMALL_STORM, breaker: { consecutiveFailures: 1_000_000 } });
    expect(closed.totals.breakerOpenings).toBe(0);
    expect(closed.series).toEqual(without.series);
    expect(closed.totals).toEqual(without.totals);
  });

  it('is deterministic for a seed', () => {
    const a = runStorm({ ...SMALL_STORM, breaker: true, seed: 7 });
    const b = runStorm({ ...SMALL_STORM, breaker: true, seed: 7 });
    expect(b).toEqual(a);
    expect(a.totals.breakerOpenings).toBeGreaterThan(0);
  });

  it('validates the breaker option, naming the field at fault', () => {
    expect(() => runStorm({ breaker: true })).toThrow(
      /runStorm breaker needs policy 'stormproof' .*got policy "naive"/,
    );
    expect(() => runStorm({ policy: 'stormproof', breaker: null as unknown as boolean })).toThrow(
      /runStorm breaker must be true, false or an object of breaker options, got null/,
    );
    expect(() =>
      runStorm({ policy: 'stormproof', breaker: { opnMs: 1 } as unknown as { openMs: number } }),
    ).toThrow(/runStorm breaker has no option "opnMs"/);
    expect(() => runStorm({ policy: 'stormproof', breaker: { openMs: 0 } })).toThrow(RangeError);
    expect(() => runStorm({ policy: 'stormproof', breaker: { openMs: 0 } })).toThrow(
      /runStorm breaker openMs must be >= 1/,
    );
    // false is no breaker, with either policy.
    expect(
      runStorm({ ...SMALL_STORM, durationSeconds: 12, faultSeconds: 1, breaker: false }).parameters
        .breaker,
    ).toBe(false);
  });
});
