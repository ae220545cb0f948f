// The herd with a retry schedule per client (herd-schedules.ts) and the peers' default schedules
// (peer-schedules.ts). The generic runner is pinned to the storm story's model through
// runHerd's figures: configured like the model, it must print the same numbers, bit for bit.
import { describe, expect, it } from 'vitest';
import { RetryBudget } from '../src/core/budgets/index.js';
import { runHerd } from '../src/sim/herd.js';
import {
  type HerdClientFactory,
  idealHerd,
  type RetrySchedule,
  runHerdSchedule,
} from '../src/sim/herd-schedules.js';
import {
  asyncRetrySchedule,
  awsStandardSchedule,
  axiosRetrySchedule,
  cockatielSchedule,
  exponentialBackoffSchedule,
  gotSchedule,
  grpcJsSchedule,
  herdOutcomes,
  kySchedule,
  PEER_SCHEDULES,
  pRetrySchedule,
  stormproofHerdClients,
  undiciRetryAgentSchedule,
} from '../src/sim/peer-schedules.js';

/** The storm story's backoff, in its own arithmetic: min(cap, base * 2 ** tries), seconds. */
const ceiling = (n: number, base = 0.2, cap = 5) => Math.min(cap, base * 2 ** n);

/** The storm story's full jitter with no limit: `uniform(0, ceiling)` is `0 + ceiling * random()`. */
const documentFullJitter: RetrySchedule = {
  maxRetries: Number.POSITIVE_INFINITY,
  waitSeconds: (n, random) => ceiling(n) * random(),
};

/** The storm story's `jitter=False`: the ceiling itself, no draw. */
const documentNoJitter: RetrySchedule = {
  maxRetries: Number.POSITIVE_INFINITY,
  waitSeconds: (n) => ceiling(n),
};

describe('runHerdSchedule is pinned to the storm story', () => {
  it('full jitter, no limit, no deadline: 6487 calls, busiest slot 205, 3.45 s, as runHerd', () => {
    const expected = { calls: 6487, busiestSlot: 205, doneAfterSeconds: 3.45 };
    expect(runHerd({ jitter: 'full' })).toEqual(expected);
    expect(runHerdSchedule({ schedule: documentFullJitter })).toEqual({ ...expected, gaveUp: 0 });
  });

  it('no jitter: 81000 calls, busiest slot 1975, 376.21 s, as runHerd', () => {
    expect(runHerdSchedule({ schedule: documentNoJitter })).toEqual({
      calls: 81000,
      busiestSlot: 1975,
      doneAfterSeconds: 376.21,
      gaveUp: 0,
    });
  });

  it('matches runHerd for other herds and seeds too', () => {
    const herds = [
      { clients: 500, perSlot: 10, seed: 1 },
      { clients: 400, seed: 2n ** 70n + 3n },
      { clients: 26 },
      { clients: 0 },
    ];
    for (const herd of herds) {
      for (const [jitter, schedule] of [
        ['full', documentFullJitter],
        ['none', documentNoJitter],
      ] as const) {
        expect(
          { ...runHerdSchedule({ ...herd, schedule }) },
          `${jitter} ${String(herd.seed)}`,
        ).toEqual({ ...runHerd({ ...herd, jitter }), gaveUp: 0 });
      }
    }
    // Other slot widths and backoffs, in the model's arithmetic (ceiling in seconds).
    const herd = { clients: 1000, perSlot: 20, slotMs: 25, seed: 42 };
    expect(
      runHerdSchedule({
        ...herd,
        schedule: {
          maxRetries: Number.POSITIVE_INFINITY,
          waitSeconds: (n, r) => ceiling(n, 0.1, 2) * r(),
        },
      }),
    ).toEqual({ ...runHerd({ ...herd, baseMs: 100, capMs: 2000 }), gaveUp: 0 });
  });

  it('a factory of stateful clients drawing the same waits gives the same figures', () => {
    const factory: HerdClientFactory = (_client, random) => {
      let tries = 0;
      return { failed: () => ceiling(tries++) * random() };
    };
    expect(runHerdSchedule({ schedule: factory })).toEqual({
      calls: 6487,
      busiestSlot: 205,
      doneAfterSeconds: 3.45,
      gaveUp: 0,
    });
  });
});

describe('limits of a schedule', () => {
  it('gives up after maxRetries, counting the clients that gave up', () => {
    // Every client fails in slot 0 but 25; with no retries, 1975 give up there.
    expect(runHerdSchedule({ schedule: { maxRetries: 0, waitSeconds: () => 1 } })).toEqual({
      calls: 2000,
      busiestSlot: 0,
      doneAfterSeconds: 0.01,
      gaveUp: 1975,
    });
    // One immediate retry: 1975 call again in slot 1, 25 are served, 1950 give up.
    expect(runHerdSchedule({ schedule: { maxRetries: 1, waitSeconds: () => 0 } })).toEqual({
      calls: 3975,
      busiestSlot: 1975,
      doneAfterSeconds: 0.02,
      gaveUp: 1950,
    });
  });

  it('gives up at once when the next wait would end past the deadline', () => {
    // Waits of 1 s with a 2.5 s deadline: retries at 1 s and 2 s, then 2 + 1 > 2.5.
    const result = runHerdSchedule({
      schedule: { maxRetries: 10, waitSeconds: () => 1, deadlineSeconds: 2.5 },
    });
    expect(result).toEqual({
      calls: 2000 + 1975 + 1950,
      busiestSlot: 1975,
      doneAfterSeconds: 2.01,
      gaveUp: 1925,
    });
  });

  it('rejects a wait that is not a finite number >= 0', () => {
    for (const wait of [-1, Number.NaN, Number.POSITIVE_INFINITY, '1']) {
      const schedule = { maxRetries: 1, waitSeconds: () => wait as number };
      expect(() => runHerdSchedule({ schedule })).toThrow(RangeError);
      expect(() => runHerdSchedule({ schedule: () => ({ failed: () => wait as number }) })).toThrow(
        RangeError,
      );
    }
  });

  it.each([
    [{}, TypeError, /schedule/],
    [{ schedule: null }, TypeError, /schedule/],
    [{ schedule: { maxRetries: -1, waitSeconds: () => 0 } }, RangeError, /maxRetries.*-1/],
    [{ schedule: { maxRetries: 1.5, waitSeconds: () => 0 } }, RangeError, /maxRetries.*1\.5/],
    [{ schedule: { maxRetries: 1, waitSeconds: 5 } }, TypeError, /waitSeconds/],
    [
      { schedule: { maxRetries: 1, waitSeconds: () => 0, deadlineSeconds: 0 } },
      RangeError,
      /deadlineSeconds/,
    ],
    [{ schedule: { maxRetries: 1, waitSecs: () => 0 } }, TypeError, /waitSecs/],
    [{ schedule: () => 5 }, TypeError, /HerdClient/],
    [{ schedule: documentFullJitter, clients: -1 }, RangeError, /clients.*-1/],
    [{ schedule: documentFullJitter, perSlot: 0 }, RangeError, /perSlot.*0/],
    [{ schedule: documentFullJitter, slotMs: 0.5 }, RangeError, /slotMs.*0\.5/],
    [{ schedule: documentFullJitter, seed: '7' }, TypeError, /seed.*"7"/],
    [{ schedule: documentFullJitter, clientz: 5 }, TypeError, /clientz/],
  ])('rejects %o', (options, type, message) => {
    const run = () => runHerdSchedule(options as never);
    expect(run).toThrow(type);
    expect(run).toThrow(message);
  });
});

describe('idealHerd', () => {
  it('is 2000 calls and 0.80 s at the defaults: everyone served once, in turn', () => {
    expect(idealHerd()).toEqual({ calls: 2000, busiestSlot: 25, doneAfterSeconds: 0.8, gaveUp: 0 });
    expect(idealHerd({ clients: 0 })).toEqual({
      calls: 0,
      busiestSlot: 0,
      doneAfterSeconds: 0,
      gaveUp: 0,
    });
    expect(idealHerd({ clients: 30 })).toEqual({
      calls: 30,
      busiestSlot: 5,
      doneAfterSeconds: 0.02,
      gaveUp: 0,
    });
    expect(idealHerd({ clients: 5, perSlot: 1, slotMs: 125 })).toEqual({
      calls: 5,
      busiestSlot: 1,
      doneAfterSeconds: 0.62, // 0.625 s, rounded half to even as Python prints it
      gaveUp: 0,
    });
  });

  it('is never beaten by a schedule in the herd', () => {
    const ideal = idealHerd();
    for (const row of herdOutcomes()) {
      expect(row.calls, row.library).toBeGreaterThanOrEqual(ideal.calls);
      if (row.gaveUp === 0) {
        expect(row.doneAfterSeconds, row.library).toBeGreaterThanOrEqual(ideal.doneAfterSeconds);
      }
    }
  });
});

describe("the peers' default schedules", () => {
  it('wait as their sources compute it', () => {
    const half = () => 0.5;
    const waits = (s: RetrySchedule, random = half) =>
      Array.from({ length: Math.min(s.maxRetries, 12) }, (_, n) => s.waitSeconds(n, random));
    expect(waits(pRetrySchedule)).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256, 512]);
    expect(waits(asyncRetrySchedule)).toEqual([1.5, 3, 6, 12, 24, 48, 96, 192, 384, 768]);
    expect(waits(asyncRetrySchedule, () => 0.9999999)).toEqual([
      2, 4, 8, 16, 32, 64, 128, 256, 512, 1024,
    ]);
    expect(waits(exponentialBackoffSchedule)).toEqual([
      0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6,
    ]);
    expect(waits(kySchedule)).toEqual([0.3, 0.6]);
    expect(waits(gotSchedule)).toEqual([1.05, 2.05]);
    expect(waits(axiosRetrySchedule)).toEqual([0, 0, 0]);
    expect(waits(undiciRetryAgentSchedule)).toEqual([0.5, 1, 2, 4, 8]);
    expect(waits(awsStandardSchedule(50))).toEqual([0.025, 0.05]);
    expect(waits(awsStandardSchedule(100))).toEqual([0.05, 0.1]);
    expect(waits(grpcJsSchedule)).toEqual([]);
    expect(cockatielSchedule.maxRetries).toBe(Number.POSITIVE_INFINITY);
    expect(cockatielSchedule.waitSeconds(1000, half)).toBe(0);
  });

  it('has the AWS SDK 2026 defaults (aws-sdk-js-v3 #8037) beside the smithy schedule before them', () => {
    const row = PEER_SCHEDULES.find((peer) => peer.library.startsWith('AWS SDK 2026 defaults'));
    const before = PEER_SCHEDULES.find((peer) => peer.library.includes('before 2026'));
    expect(row?.schedule).toContain('transient base 50 ms');
    const half = () => 0.5;
    // The herd's failures are transient (503): base 50 ms, 2 retries, full jitter.
    const schedule = row?.run() as RetrySchedule;
    expect(schedule.maxRetries).toBe(2);
    expect([0, 1].map((n) => schedule.waitSeconds(n, half))).toEqual([0.025, 0.05]);
    expect(before).toBeDefined();
    expect(herdOutcomes().map((r) => r.library)).toContain(row?.library);
  });

  it('caps where the source caps: undici at 30 s, smithy at 20 s', () => {
    expect(undiciRetryAgentSchedule.waitSeconds(10, () => 0.5)).toBe(30);
    expect(awsStandardSchedule(50).waitSeconds(20, () => 0.5)).toBe(10);
  });

  it('give the same row for the same seed, every time', () => {
    for (const peer of PEER_SCHEDULES) {
      const a = runHerdSchedule({ schedule: peer.run() });
      const b = runHerdSchedule({ schedule: peer.run() });
      expect(b, peer.library).toEqual(a);
    }
    expect(herdOutcomes()).toEqual(
      herdOutcomes({ clients: 2000, perSlot: 25, slotMs: 10, seed: 7 }),
    );
  });

  it('move in lockstep without jitter: each wave serves one slot and the rest give up', () => {
    // p-retry: 11 calls per client at most, 25 served per wave of 11, 1 + 2 + ... + 512 s.
    expect(runHerdSchedule({ schedule: pRetrySchedule })).toEqual({
      calls: 20625,
      busiestSlot: 1975,
      doneAfterSeconds: 1023.01,
      gaveUp: 2000 - 11 * 25,
    });
    // cockatiel: every client calls every slot until served, as the storm story's no-jitter count.
    expect(runHerdSchedule({ schedule: cockatielSchedule })).toEqual({
      calls: 81000,
      busiestSlot: 1975,
      doneAfterSeconds: 0.8,
      gaveUp: 0,
    });
    // grpc-js: no retries at all.
    expect(runHerdSchedule({ schedule: grpcJsSchedule })).toEqual({
      calls: 2000,
      busiestSlot: 0,
      doneAfterSeconds: 0.01,
      gaveUp: 1975,
    });
  });

  it('differ from one seed to another when they draw jitter', () => {
    for (const schedule of [asyncRetrySchedule, gotSchedule, awsStandardSchedule(50)]) {
      expect(runHerdSchedule({ schedule, seed: 1 })).not.toEqual(
        runHerdSchedule({ schedule, seed: 7 }),
      );
    }
  });
});

describe("stormproof's row comes through the engine", () => {
  it('with maxAttempts 1 there are no retries and 1975 clients give up', () => {
    expect(runHerdSchedule({ schedule: stormproofHerdClients({ maxAttempts: 1 }) })).toEqual({
      calls: 2000,
      busiestSlot: 0,
      doneAfterSeconds: 0.01,
      gaveUp: 1975,
    });
  });

  it('at the defaults, is full jitter with 3 retries: neither deadline nor budget binds here', () => {
    const engine = runHerdSchedule({ schedule: stormproofHerdClients() });
    // The engine's arithmetic: a ceiling in ms, `ceiling * random()`, then seconds.
    const plain = runHerdSchedule({
      schedule: {
        maxRetries: 3,
        waitSeconds: (n, r) => (Math.min(5000, 200 * 2 ** n) * r()) / 1000,
      },
    });
    expect(engine).toEqual(plain);
    expect(engine.gaveUp).toBeGreaterThan(0);
    expect(engine.calls).toBeLessThan(4 * 2000);
    expect(herdOutcomes().find((row) => row.library.startsWith('stormproof'))).toMatchObject(
      engine,
    );
  });

  it('obeys the deadline and the budget of the policy', () => {
    const byDefault = runHerdSchedule({ schedule: stormproofHerdClients() });
    // A 300 ms deadline: a retry whose wait would end past it is not made.
    const short = runHerdSchedule({ schedule: stormproofHerdClients({ deadlineMs: 300 }) });
    expect(short.gaveUp).toBeGreaterThan(byDefault.gaveUp);
    expect(short.doneAfterSeconds).toBeLessThanOrEqual(0.31);
    // A budget of one retry per client (10 credits, each retry costs 10): at most 2 calls each.
    const oneRetry = runHerdSchedule({
      schedule: stormproofHerdClients({ maxAttempts: 10 }),
    });
    const budgeted = runHerdSchedule({
      schedule: (client, random) =>
        stormproofHerdClients({
          maxAttempts: 10,
          budget: new RetryBudget({ maxCredits: 10, cost: 10 }),
        })(client, random),
    });
    expect(budgeted.calls).toBeLessThanOrEqual(2 * 2000);
    expect(budgeted.gaveUp).toBeGreaterThan(oneRetry.gaveUp);
    // A budget shared by the whole herd (one process): 10 retries in all, then everyone gives up.
    const shared = runHerdSchedule({
      schedule: stormproofHerdClients({ maxAttempts: 10, budget: new RetryBudget() }),
    });
    expect(shared.calls).toBe(2000 + 10);
  });

  it('rejects the options the herd supplies, and bad options as createRetryPolicy does', () => {
    expect(() => stormproofHerdClients({ clock: undefined } as never)).toThrow(/clock/);
    expect(() => stormproofHerdClients({ random: Math.random } as never)).toThrow(/random/);
    expect(() => stormproofHerdClients({ onRetry: () => {} } as never)).toThrow(/onRetry/);
    expect(() => stormproofHerdClients({ maxAttempts: 0 })).toThrow(RangeError);
    expect(() => stormproofHerdClients({ maxAttemps: 3 } as never)).toThrow(/maxAttemps/);
  });
});
