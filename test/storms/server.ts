// The storm's server rows: the same storm with the API servers protected by the real
// stormproof/server engine (one per server, on the simulator's clock and random source) or by an
// all-or-nothing shedder in the style of Fastify's under-pressure. Every figure asserted here is
// read from the simulator's output; docs/storm-model.md ("The server rows") gives the numbers.
import { describe, expect, it } from 'vitest';
import { runStorm, type StormOptions, type StormServerRampStep } from '../../src/sim/storm.js';
import { FULL_STORM_TIMEOUT, runStormOnce } from '../helpers/fixtures.js';

/** The moves of one server's ramp after its last step back to the floor (or its last trip). */
function lastClimb(ramp: readonly StormServerRampStep[], server: number): StormServerRampStep[] {
  const moves = ramp.filter((e) => e.server === server);
  let from = 0;
  moves.forEach((e, i) => {
    if (e.reason === 'error-rate' || e.reason === 'latency' || e.reason === 'errors') from = i + 1;
  });
  return moves.slice(from);
}

describe('naive clients, the storm story stack, by server protection', () => {
  it(
    'none: stays down, as in the storm story',
    () => {
      const r = runStormOnce({ policy: 'naive' });
      expect(r.server).toBeNull();
      expect(r.recoveredAfterFaultSeconds).toBeNull();
      expect(r.goodputRecoveredAfterFaultSeconds).toBeNull();
    },
    FULL_STORM_TIMEOUT,
  );

  it(
    'stormproof/server: goodput back to 95% of demand within 10 s of the database, then a ramp of checked 20% steps',
    () => {
      const r = runStormOnce({ policy: 'naive', server: 'stormproof' });
      const none = runStormOnce({ policy: 'naive' });
      const server = r.server!;
      expect(server.kind).toBe('stormproof');
      const goodput = r.goodputRecoveredAfterFaultSeconds;
      expect(goodput).not.toBeNull();
      expect(goodput!).toBeLessThanOrEqual(10);
      expect(r.recoveredAfterFaultSeconds).not.toBeNull();
      // Each second from then on: forecasts for at least 95% of the taps started.
      for (const s of r.series.slice(r.dbHealthyAtSeconds + goodput!)) {
        expect(s.succeeded).toBeGreaterThanOrEqual(0.95 * s.userRequests);
      }
      expect(r.peakRpsAfterFailover).toBeLessThan(none.peakRpsAfterFailover / 2);
      // The fault tripped every server's ramp; each climbed back 20, 40, 60, 80, 100%, each step
      // after a window whose error rate and latency were checked, and opened after the database.
      for (let i = 0; i < r.parameters.apiServers; i++) {
        const moves = server.ramp.filter((e) => e.server === i);
        expect(moves.some((e) => e.reason === 'errors')).toBe(true);
        const climb = lastClimb(server.ramp, i);
        expect(climb.map((e) => e.share)).toEqual([0.2, 0.4, 0.6, 0.8, 1, 1]);
        expect(climb.map((e) => e.reason)).toEqual([
          'passed',
          'passed',
          'passed',
          'passed',
          'passed',
          'open',
        ]);
        for (const e of climb) {
          expect(e.errorRate).toBeLessThanOrEqual(0.05);
          expect(e.meanLatencyMs).toBeGreaterThan(0);
          expect(e.atSeconds).toBeGreaterThanOrEqual(r.dbHealthyAtSeconds);
        }
      }
      expect(server.reopenedAtSeconds).toBeGreaterThan(r.dbHealthyAtSeconds);
      expect(server.reopenedAtSeconds).toBeLessThan(r.dbHealthyAtSeconds + 30);
      // The engine shed: by its ramp, and by its queue's time limit.
      expect(server.shed.ramp).toBeGreaterThan(0);
      expect(server.shed['queue-timeout']).toBeGreaterThan(0);
      expect(server.admittedShare.at(-1)).toBe(1);
    },
    FULL_STORM_TIMEOUT,
  );

  it(
    'all-or-nothing, Retry-After: 10 to everyone: flaps during the fault; in this model it too ends the storm',
    () => {
      const r = runStormOnce({ policy: 'naive', server: 'all-or-nothing' });
      const server = r.server!;
      expect(server.kind).toBe('all-or-nothing');
      expect(server.ramp).toEqual([]);
      expect(server.shed.pressure).toBeGreaterThan(0);
      // Under pressure it rejects everything, then lets everything in: 0, 1, 0, ...
      const duringFault = server.admittedShare.slice(10, r.dbHealthyAtSeconds);
      expect(duringFault).toContain(0);
      expect(duringFault).toContain(1);
      // Rejecting everything for a second empties the queue of work for callers that hung up,
      // and the naive clients, which ignore Retry-After, fail their taps fast instead of
      // queueing: the loop that sustains the storm is broken (see docs/storm-model.md).
      expect(r.recoveredAfterFaultSeconds).not.toBeNull();
    },
    FULL_STORM_TIMEOUT,
  );
});

describe('stormproof clients, by server protection', () => {
  it(
    'stormproof/server: recovers as each server reopens in steps, judged against the cold cache’s own latency',
    () => {
      const r = runStormOnce({ policy: 'stormproof', server: 'stormproof' });
      const alone = runStormOnce({ policy: 'stormproof' });
      expect(r.recoveredAfterFaultSeconds).not.toBeNull();
      expect(r.goodputRecoveredAfterFaultSeconds).not.toBeNull();
      // The ramp caps how many run at once, and these clients, obeying their pushback, come back
      // a few at a time: each step ends as soon as enough requests in it were all served. No
      // later than the clients alone (it was 5 s later while the ramp admitted a random share of
      // requests, and a second later while each step waited out its whole window).
      expect(r.recoveredAfterFaultSeconds!).toBeLessThanOrEqual(alone.recoveredAfterFaultSeconds!);
      // Once the database is back, no server steps back for latency: the cold cache makes every
      // request slower than before the fault at any load, and the floor's window says so.
      const after = r.server!.ramp.filter((e) => e.atSeconds >= r.dbHealthyAtSeconds + 1);
      expect(after.some((e) => e.reason === 'latency')).toBe(false);
      // Server 0 climbs step by step to fully open, never stepping back (within a second of
      // the database: each step ends early once enough requests in it were all served).
      const server0 = r
        .server!.ramp.filter((e) => e.atSeconds >= r.dbHealthyAtSeconds && e.server === 0)
        .map((e) => e.share);
      expect(server0.at(-1)).toBe(1);
      expect(server0.every((share, i) => i === 0 || share >= server0[i - 1]!)).toBe(true);
      expect(new Set(server0).size).toBeGreaterThanOrEqual(3);
      expect(r.server!.reopenedAtSeconds).not.toBeNull();
      expect(r.peakRpsAfterFailover).toBeLessThan(1.5 * r.normalRps);
    },
    FULL_STORM_TIMEOUT,
  );
});

describe('stormproof clients with a circuit breaker, by server protection', () => {
  it(
    'stormproof/server: recovers too (it never did while the ramp refused a random share of the breakers’ probes)',
    () => {
      const r = runStormOnce({ policy: 'stormproof', breaker: true, server: 'stormproof' });
      const alone = runStormOnce({ policy: 'stormproof', breaker: true });
      expect(alone.recoveredAfterFaultSeconds).not.toBeNull();
      expect(r.recoveredAfterFaultSeconds).not.toBeNull();
      expect(r.server!.reopenedAtSeconds).not.toBeNull();
      // Within 5 s of the breakers alone (38 against 35 s, seed 1).
      expect(r.recoveredAfterFaultSeconds!).toBeLessThanOrEqual(
        alone.recoveredAfterFaultSeconds! + 5,
      );
    },
    FULL_STORM_TIMEOUT,
  );
});

describe('the server option', () => {
  const short: StormOptions = {
    rps: 500,
    partnerInstances: 50,
    durationSeconds: 30,
    faultAtSeconds: 5,
    faultSeconds: 5,
    forecastKeys: 5_000,
  };

  it('gives the same run for the same seed', () => {
    const a = runStorm({ ...short, server: 'stormproof' });
    const b = runStorm({ ...short, server: 'stormproof' });
    expect(b).toEqual(a);
    expect(a.parameters.server).toBe('stormproof');
  });

  it('changes nothing when none, the default', () => {
    expect(runStorm({ ...short, server: 'none' })).toEqual(runStorm(short));
  });

  it('names the option and the value at fault', () => {
    expect(() => runStorm({ server: 'fastify' as 'none' })).toThrow(TypeError);
    expect(() => runStorm({ server: 'fastify' as 'none' })).toThrow(/server .*"fastify"/);
    expect(() => runStorm({ server: null as unknown as 'none' })).toThrow(/server .*null/);
    expect(() => runStorm({ apiServers: 0 })).toThrow(/apiServers .*0/);
    expect(() => runStorm({ apiServers: 2.5 })).toThrow(/apiServers .*2\.5/);
  });
});
