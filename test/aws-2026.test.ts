// The AWS SDKs' 2026 retry defaults (aws-sdk-js-v3 #8037; `@smithy/util-retry` 4.6.2 with
// SMITHY_NEW_RETRIES_2026), in the engine: a retry quota that charges a retry by the kind of
// failure it retries and refunds it on success (RetryQuota), the engine telling every budget that
// kind, the per-kind backoff base (50 ms, 1 s for a throttle), and x-amz-retry-after against
// AWS's clamp to [backoff, backoff + 5 s]. Engine tests run on a virtual clock, exact and late.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type BudgetMessage, channels } from '../src/core/instrument.js';
import {
  type AttemptContext,
  type Budget,
  createRetryPolicy,
  type FailureKind,
  getRetryReport,
  type RetryPolicyOptions,
  RetryQuota,
} from '../src/index.js';
import { httpError, ManualClock } from './helpers/clocks.js';

const KINDS: readonly FailureKind[] = [
  'timeout',
  'network',
  'unavailable',
  'throttled',
  'internal',
  'do-not-retry',
  'permanent',
];

describe('RetryQuota', () => {
  it("starts full with the AWS SDKs' 2026 values", () => {
    const q = new RetryQuota();
    expect([q.maxTokens, q.retryCost, q.throttledRetryCost, q.successTokens, q.tokens]).toEqual([
      500, 14, 5, 1, 500,
    ]);
  });

  it('charges a retry of a throttle 5 tokens, of any other failure (or a hedge) 14', () => {
    for (const kind of [...KINDS, undefined]) {
      const q = new RetryQuota();
      expect(q.tryRetry(0, kind)).toBe(true);
      expect(q.tokens).toBe(kind === 'throttled' ? 495 : 486);
    }
  });

  it('refuses a retry that costs more than is left, and spends nothing then', () => {
    const q = new RetryQuota({ maxTokens: 24 });
    expect(q.tryRetry(0, 'timeout')).toBe(true);
    expect(q.tokens).toBe(10);
    expect(q.tryRetry(0, 'unavailable')).toBe(false);
    expect(q.tokens).toBe(10);
    // A throttle's retry is cheaper and still fits.
    expect(q.tryRetry(0, 'throttled')).toBe(true);
    expect(q.tryRetry(0, 'throttled')).toBe(true);
    expect(q.tokens).toBe(0);
    expect(q.tryRetry(0, 'throttled')).toBe(false);
    expect(q.tokens).toBe(0);
  });

  it("gives back a successful retry's cost, 1 for a first attempt, never above maxTokens", () => {
    const q = new RetryQuota();
    q.tryRetry(0, 'network');
    q.tryRetry(0, 'throttled');
    expect(q.tokens).toBe(481);
    q.recordSuccess('network');
    expect(q.tokens).toBe(495);
    q.recordSuccess('throttled');
    expect(q.tokens).toBe(500);
    q.recordSuccess('throttled');
    q.recordSuccess();
    expect(q.tokens).toBe(500);
    q.tryRetry(0, 'timeout');
    q.recordSuccess();
    expect(q.tokens).toBe(487);
  });

  it('reports each answer on stormproof:budget with the tokens left', () => {
    const q = new RetryQuota({ maxTokens: 20 });
    const heard: unknown[] = [];
    const listen = (m: BudgetMessage) => heard.push(m);
    channels.budget.subscribe(listen);
    try {
      q.tryRetry(0, 'timeout');
      q.tryRetry(0, 'timeout');
      q.tryRetry(0, 'throttled');
    } finally {
      channels.budget.unsubscribe(listen);
    }
    expect(heard).toEqual([
      { type: 'allowed', budget: q, tokens: 6 },
      { type: 'refused', budget: q, tokens: 6 },
      { type: 'allowed', budget: q, tokens: 1 },
    ]);
  });

  it('ignores time, new requests and failures', () => {
    const q = new RetryQuota();
    q.tryRetry(5, 'timeout');
    q.recordRequest(1e9);
    q.recordFailure(1e9, true);
    q.recordFailure(-1, false);
    expect(q.tokens).toBe(486);
  });

  it('lets 1,000 always-failing calls of 3 attempts retry 35 times (transient), 100 (throttled)', () => {
    const count = (kind: FailureKind) => {
      const q = new RetryQuota();
      let attempts = 0;
      for (let call = 0; call < 1000; call++) {
        for (let attempt = 1; ; attempt++) {
          attempts++;
          if (attempt === 3 || !q.tryRetry(call, kind)) break;
        }
      }
      return attempts;
    };
    // 500 / 14: 35 retries leave 10 tokens; 500 / 5: 100 retries leave none.
    expect(count('unavailable')).toBe(1035);
    expect(count('throttled')).toBe(1100);
  });

  it.each([
    [{ maxTokens: 0 }, /RetryQuota maxTokens/],
    [{ maxTokens: 1.5 }, /RetryQuota maxTokens/],
    [{ maxTokens: null }, /RetryQuota maxTokens/],
    [{ retryCost: 0 }, /RetryQuota retryCost/],
    [{ retryCost: 501 }, /RetryQuota retryCost/],
    [{ retryCost: '14' }, /RetryQuota retryCost/],
    [{ throttledRetryCost: 2.5 }, /RetryQuota throttledRetryCost/],
    [{ throttledRetryCost: 11, retryCost: 10, maxTokens: 10 }, /RetryQuota throttledRetryCost/],
    // The default cost (14) above a smaller quota is named too.
    [{ maxTokens: 10 }, /RetryQuota retryCost must be >= 1 and <= 10, got 14/],
    [{ successTokens: -1 }, /RetryQuota successTokens/],
    [{ successTokens: Number.NaN }, /RetryQuota successTokens/],
    [{ cost: 5 }, /RetryQuota.*cost/],
    [null, /RetryQuota/],
  ])('rejects %o, naming the option', (options, message) => {
    expect(() => new RetryQuota(options as never)).toThrow(message);
  });

  it('accepts successTokens 0, costs equal to maxTokens and explicit undefined', () => {
    const q = new RetryQuota({
      maxTokens: 7,
      retryCost: 7,
      throttledRetryCost: 7,
      successTokens: 0,
    });
    expect(q.tryRetry(0, 'timeout')).toBe(true);
    q.recordSuccess();
    expect(q.tokens).toBe(0);
    expect(new RetryQuota({ maxTokens: undefined }).maxTokens).toBe(500);
  });

  it('keeps whole tokens in [0, maxTokens] and allows exactly the retries a simple count allows', () => {
    const kind = fc.option(fc.constantFrom(...KINDS), { nil: undefined });
    const op = fc.oneof(
      fc.record({ op: fc.constant('retry' as const), kind }),
      fc.record({ op: fc.constant('success' as const), kind }),
      fc.record({ op: fc.constant('other' as const), kind }),
    );
    const config = fc.record({
      maxTokens: fc.integer({ min: 20, max: 600 }),
      retryCost: fc.integer({ min: 1, max: 20 }),
      throttledRetryCost: fc.integer({ min: 1, max: 20 }),
      successTokens: fc.integer({ min: 0, max: 3 }),
    });
    fc.assert(
      fc.property(config, fc.array(op, { maxLength: 300 }), (options, ops) => {
        const q = new RetryQuota(options);
        let tokens = options.maxTokens;
        const cost = (k: FailureKind | undefined) =>
          k === 'throttled' ? options.throttledRetryCost : options.retryCost;
        for (const { op: o, kind: k } of ops) {
          if (o === 'retry') {
            const allowed = tokens >= cost(k);
            expect(q.tryRetry(0, k)).toBe(allowed);
            if (allowed) tokens -= cost(k);
          } else if (o === 'success') {
            q.recordSuccess(k);
            tokens = Math.min(
              options.maxTokens,
              tokens + (k === undefined ? options.successTokens : cost(k)),
            );
          } else {
            q.recordRequest(0);
            q.recordFailure(0, true);
          }
          expect(q.tokens).toBe(tokens);
          expect(Number.isInteger(q.tokens)).toBe(true);
          expect(q.tokens).toBeGreaterThanOrEqual(0);
          expect(q.tokens).toBeLessThanOrEqual(options.maxTokens);
        }
      }),
    );
  });
});

/** A budget that allows everything and writes down what the engine tells it. */
function listening(): Budget & { heard: string[] } {
  const heard: string[] = [];
  return {
    heard,
    recordRequest: () => {},
    recordFailure: () => {},
    recordSuccess: (retried) => {
      heard.push(`success after ${retried ?? 'nothing'}`);
    },
    tryRetry: (_now, kind) => {
      heard.push(`retry of ${kind ?? 'nothing (a hedge)'}`);
      return true;
    },
  };
}

/** An attempt that fails at once with each error of `errors` in turn, then answers 'ok'. */
function failingWith(...errors: unknown[]) {
  let n = 0;
  return async () => {
    const error = errors[n++];
    if (error !== undefined) throw error;
    return 'ok';
  };
}

/** Runs a call to its end on the clock: its value or error, and when it settled. */
async function settle<T>(clock: ManualClock, promise: Promise<T>) {
  let done: { value?: T; error?: unknown; at: number } | undefined;
  promise.then(
    (value) => {
      done = { value, at: clock.t };
    },
    (error: unknown) => {
      done = { error, at: clock.t };
    },
  );
  for (let i = 0; i < 10_000 && done === undefined; i++) await clock.advance(10);
  await clock.advance(100_000);
  expect(clock.pending).toEqual({ timers: 0, listeners: 0 });
  return done!;
}

const timedOut = () => Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' });

/** The AWS SDKs' 2026 schedule through the engine. */
const AWS_2026: RetryPolicyOptions = {
  maxAttempts: 3,
  baseDelayMs: 50,
  throttledDelayMultiplier: 20,
  maxDelayMs: 20_000,
  jitter: 'full',
  deadlineMs: 60_000,
  random: () => 0.5,
};

for (const lateMs of [0, 3]) {
  describe(`the engine tells the budget each retry's kind (clock ${lateMs} ms late)`, () => {
    it('asks for each retry with its failure kind, and tells a success what it retried', async () => {
      const clock = new ManualClock({ lateMs });
      const budget = listening();
      const policy = createRetryPolicy({ clock, budget, random: () => 0.5, deadlineMs: 60_000 });
      const run = await settle(
        clock,
        policy.retry(failingWith(httpError(503), httpError(429), timedOut())),
      );
      expect(run.value).toBe('ok');
      expect(budget.heard).toEqual([
        'retry of unavailable',
        'retry of throttled',
        'retry of timeout',
        'success after timeout',
      ]);
      budget.heard.length = 0;
      await settle(clock, policy.retry(failingWith()));
      expect(budget.heard).toEqual(['success after nothing']);
    });

    it('asks for a hedge with no kind', async () => {
      const clock = new ManualClock({ lateMs });
      const budget = listening();
      const policy = createRetryPolicy({ clock, budget, hedge: { delayMs: 50 } });
      const run = await settle(
        clock,
        policy.retry(
          (ctx: AttemptContext) =>
            new Promise<string>((resolve) => {
              if (ctx.hedge === 1) clock.setTimer(5, () => resolve('hedge'));
            }),
        ),
      );
      expect(run.value).toBe('hedge');
      expect(budget.heard).toEqual(['retry of nothing (a hedge)', 'success after nothing']);
    });

    it("charges RetryQuota by kind through a call, and refunds the successful retry's cost", async () => {
      const clock = new ManualClock({ lateMs });
      const budget = new RetryQuota();
      const policy = createRetryPolicy({ ...AWS_2026, clock, budget });
      await settle(clock, policy.retry(failingWith(httpError(503), httpError(429))));
      // 500 - 14 (the 503's retry) - 5 (the 429's) + 5 (the retry of the 429 succeeded).
      expect(budget.tokens).toBe(486);
      const failed = await settle(
        clock,
        policy.retry(failingWith(timedOut(), httpError(502), httpError(504))),
      );
      expect(getRetryReport(failed.error)?.reason).toBe('max-attempts');
      expect(budget.tokens).toBe(486 - 28);
      await settle(clock, policy.retry(failingWith()));
      expect(budget.tokens).toBe(486 - 28 + 1);
    });

    it('gives up with reason budget once the quota holds less than the retry costs', async () => {
      const clock = new ManualClock({ lateMs });
      const budget = new RetryQuota({ maxTokens: 20 });
      const policy = createRetryPolicy({ ...AWS_2026, clock, budget });
      const first = await settle(clock, policy.retry(failingWith(httpError(503), httpError(503))));
      expect(getRetryReport(first.error)).toMatchObject({ reason: 'budget', attempts: 2 });
      expect(budget.tokens).toBe(6);
      // A throttle's retry (5) still fits in 6 tokens; the next one does not.
      const second = await settle(clock, policy.retry(failingWith(httpError(429), httpError(429))));
      expect(getRetryReport(second.error)).toMatchObject({ reason: 'budget', attempts: 2 });
      expect(budget.tokens).toBe(1);
    });
  });

  describe(`the AWS 2026 backoff, one base per kind (clock ${lateMs} ms late)`, () => {
    const waits = async (errors: unknown[], extra: RetryPolicyOptions = {}) => {
      const clock = new ManualClock({ lateMs });
      const policy = createRetryPolicy({ ...AWS_2026, budget: false, clock, ...extra });
      const run = await settle(clock, policy.retry(failingWith(...errors)));
      const slept = clock.sleeps.reduce((a, b) => a + b, 0);
      // Each wait ends lateMs late; the attempts themselves take no time.
      expect(run.at).toBe(slept + clock.sleeps.length * lateMs);
      return clock.sleeps;
    };

    it('waits half of 50 ms x 2^n for a transient failure (random 0.5)', async () => {
      expect(await waits([httpError(503), timedOut()])).toEqual([25, 50]);
    });

    it('waits half of 1 s x 2^n for a throttle', async () => {
      expect(await waits([httpError(429), httpError(429)])).toEqual([500, 1000]);
    });

    it("counts every retry in n, whatever the kinds: a 429 after a 503 waits from the throttle's 2 s ceiling", async () => {
      expect(await waits([httpError(503), httpError(429)])).toEqual([25, 1000]);
      expect(await waits([httpError(429), httpError(503)])).toEqual([500, 50]);
    });

    it('caps the ceiling at 20 s', async () => {
      const errors = Array.from({ length: 6 }, () => httpError(429));
      expect(await waits(errors, { maxAttempts: 7, deadlineMs: 200_000 })).toEqual([
        500, 1000, 2000, 4000, 8000, 10_000,
      ]);
    });
  });

  describe(`x-amz-retry-after against AWS's clamp (clock ${lateMs} ms late)`, () => {
    // AWS (smithy's StandardRetryStrategy, 2026): max(backoff, min(value, backoff + 5 s)).
    const awsWait = (backoffMs: number, valueMs: number) =>
      Math.max(backoffMs, Math.min(valueMs, backoffMs + 5000));

    const firstWait = async (value: string) => {
      const clock = new ManualClock({ lateMs });
      const policy = createRetryPolicy({ ...AWS_2026, budget: false, clock, deadlineMs: 20_000 });
      const run = await settle(
        clock,
        policy.retry(failingWith(httpError(503, { 'x-amz-retry-after': value }))),
      );
      return { sleeps: clock.sleeps, run };
    };

    it.each([
      // value ms, stormproof's wait: the backoff (25 ms at random 0.5) plus the value
      [10, 35],
      [1500, 1525],
      [9000, 9025],
    ])('x-amz-retry-after: %i waits %i ms, never less than AWS', async (value, expected) => {
      const { sleeps, run } = await firstWait(String(value));
      expect(run.value).toBe('ok');
      expect(sleeps).toEqual([expected]);
      // Added, not clamped: a value below the backoff still adds to it (AWS waits the backoff),
      // and a value past backoff + 5 s is honoured (AWS comes back after backoff + 5 s).
      expect(expected).toBeGreaterThanOrEqual(awsWait(25, value));
    });

    it('a value that alone reaches the deadline ends the call at once (AWS would wait backoff + 5 s)', async () => {
      const { sleeps, run } = await firstWait('40000');
      expect(sleeps).toEqual([]);
      expect(getRetryReport(run.error)).toMatchObject({
        reason: 'retry-after-beyond-deadline',
        attempts: 1,
      });
      expect(awsWait(25, 40_000)).toBe(5025);
    });
  });
}
