import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Budget, RatioBudget, RetryBudget, TokenBucket } from '../src/core/budgets/index.js';

/**
 * The storm story's budget test at the budget level: 1,000 calls to an operation that
 * always fails retryably, at most 4 attempts each, the budget asked before each retry. The hooks
 * are called as the engine calls them. Returns the total number of attempts.
 */
function alwaysFailing(budget: Budget | undefined, calls = 1000, maxAttempts = 4): number {
  let attempts = 0;
  for (let call = 0; call < calls; call++) {
    const now = call; // 1 ms apart: all 1,000 calls fit in one RatioBudget window
    budget?.recordRequest(now);
    for (let attempt = 1; ; attempt++) {
      attempts++;
      budget?.recordFailure(now, true);
      if (attempt === maxAttempts) break;
      if (budget !== undefined && !budget.tryRetry(now)) break;
    }
  }
  return attempts;
}

describe('the storm story count', () => {
  it('makes 4000 attempts without a budget and 1109 with RetryBudget()', () => {
    expect(alwaysFailing(undefined)).toBe(4000);
    expect(alwaysFailing(new RetryBudget())).toBe(1109);
  });

  it('makes 1003 attempts with TokenBucket() and 1300 with RatioBudget()', () => {
    // TokenBucket: 10 tokens, 5 failures bring it to half: the first call retries 3 times, the
    // second fails at 5 tokens and nothing is retried again (nothing succeeds to refill it).
    expect(alwaysFailing(new TokenBucket())).toBe(1003);
    // RatioBudget: 100 reserve retries plus 0.2 x 1000 requests, all within one 10 s window.
    expect(alwaysFailing(new RatioBudget())).toBe(1300);
  });
});

describe('RetryBudget', () => {
  it('starts full with the storm story defaults', () => {
    const b = new RetryBudget();
    expect([b.maxCredits, b.cost, b.credits]).toEqual([100, 10, 100]);
  });

  it('allows a burst of maxCredits / cost retries, then one per cost requests', () => {
    const b = new RetryBudget();
    for (let i = 0; i < 10; i++) expect(b.tryRetry(0)).toBe(true);
    expect(b.credits).toBe(0);
    expect(b.tryRetry(0)).toBe(false);
    expect(b.credits).toBe(0);
    for (let i = 0; i < 9; i++) b.recordRequest(0);
    expect(b.credits).toBe(9);
    expect(b.tryRetry(0)).toBe(false);
    b.recordRequest(0);
    expect(b.tryRetry(0)).toBe(true);
    expect(b.credits).toBe(0);
  });

  it('caps credits at maxCredits', () => {
    const b = new RetryBudget({ maxCredits: 20, cost: 20 });
    for (let i = 0; i < 50; i++) b.recordRequest(0);
    expect(b.credits).toBe(20);
    expect(b.tryRetry(0)).toBe(true);
    expect(b.tryRetry(0)).toBe(false);
  });

  it('ignores successes and failures', () => {
    const b = new RetryBudget({ cost: 1 });
    b.tryRetry(0);
    b.recordSuccess();
    b.recordFailure(0, true);
    b.recordFailure(0, false);
    expect(b.credits).toBe(99);
  });

  it('accepts cost equal to maxCredits and explicit undefined', () => {
    const b = new RetryBudget({ maxCredits: 1, cost: 1 });
    expect(b.tryRetry(0)).toBe(true);
    expect(b.tryRetry(0)).toBe(false);
    expect(new RetryBudget({ maxCredits: undefined, cost: undefined }).cost).toBe(10);
  });
});

describe('TokenBucket', () => {
  it("starts full with gRFC A6's example values", () => {
    const b = new TokenBucket();
    expect([b.maxTokens, b.tokenRatio, b.tokens]).toEqual([10, 0.1, 10]);
    expect(b.tryRetry(0)).toBe(true);
  });

  it('stops retries once 5 retryable failures bring 10 tokens to 5', () => {
    const b = new TokenBucket({ maxTokens: 10, tokenRatio: 0.1 });
    for (let i = 0; i < 4; i++) b.recordFailure(0, true);
    expect(b.tokens).toBe(6);
    expect(b.tryRetry(0)).toBe(true);
    expect(b.tokens).toBe(6); // a retry spends nothing
    b.recordFailure(0, true);
    expect(b.tokens).toBe(5);
    expect(b.tryRetry(0)).toBe(false); // 5 <= 10 / 2
    b.recordSuccess();
    expect(b.tokens).toBe(5.1);
    expect(b.tryRetry(0)).toBe(true);
  });

  it('refills by exactly 0.1 per success, with no float drift', () => {
    const b = new TokenBucket();
    for (let i = 0; i < 5; i++) b.recordFailure(0, true);
    for (let i = 0; i < 10; i++) b.recordSuccess();
    expect(b.tokens).toBe(6);
    for (let i = 0; i < 100; i++) b.recordSuccess();
    expect(b.tokens).toBe(10);
  });

  it('does not count non-retryable failures or new requests', () => {
    const b = new TokenBucket();
    for (let i = 0; i < 20; i++) {
      b.recordFailure(0, false);
      b.recordRequest(0);
    }
    expect(b.tokens).toBe(10);
    expect(b.tryRetry(0)).toBe(true);
  });

  it('never goes below 0', () => {
    const b = new TokenBucket({ maxTokens: 3 });
    for (let i = 0; i < 10; i++) b.recordFailure(0, true);
    expect(b.tokens).toBe(0);
    b.recordSuccess();
    expect(b.tokens).toBe(0.1);
  });

  it('compares with an exact half for an odd maxTokens', () => {
    const b = new TokenBucket({ maxTokens: 3, tokenRatio: 0.5 });
    b.recordFailure(0, true);
    expect(b.tryRetry(0)).toBe(true); // 2 > 1.5
    b.recordFailure(0, true);
    expect(b.tryRetry(0)).toBe(false); // 1 <= 1.5
    b.recordSuccess();
    expect(b.tokens).toBe(1.5);
    expect(b.tryRetry(0)).toBe(false); // 1.5 <= 1.5
    b.recordSuccess();
    expect(b.tryRetry(0)).toBe(true); // 2 > 1.5
  });

  it('ignores tokenRatio digits past the third decimal: 0.5466 is 0.546', () => {
    const b = new TokenBucket({ tokenRatio: 0.5466 });
    expect(b.tokenRatio).toBe(0.546);
    b.recordFailure(0, true);
    b.recordSuccess();
    expect(b.tokens).toBe(9.546);
    b.recordSuccess();
    expect(b.tokens).toBe(10);
  });

  it('truncates the written decimal, not its binary value', () => {
    expect(new TokenBucket({ tokenRatio: 1.001 }).tokenRatio).toBe(1.001);
    expect(new TokenBucket({ tokenRatio: 0.0019 }).tokenRatio).toBe(0.001);
    expect(new TokenBucket({ tokenRatio: 2 }).tokenRatio).toBe(2);
    expect(new TokenBucket({ tokenRatio: 1e21 }).tokenRatio).toBe(1e21);
    const big = new TokenBucket({ maxTokens: 4, tokenRatio: 50 });
    big.recordFailure(0, true);
    big.recordSuccess();
    expect(big.tokens).toBe(4);
  });

  it('accepts maxTokens 1 and 1000', () => {
    const one = new TokenBucket({ maxTokens: 1 });
    expect(one.tryRetry(0)).toBe(true); // 1 > 0.5
    one.recordFailure(0, true);
    expect(one.tryRetry(0)).toBe(false);
    expect(new TokenBucket({ maxTokens: 1000 }).tokens).toBe(1000);
  });
});

describe('RatioBudget', () => {
  it("has Finagle's defaults: 100 reserve retries, each costing 5000 units", () => {
    const b = new RatioBudget();
    expect([b.retryRatio, b.minRetriesPerSecond, b.ttlMs]).toEqual([0.2, 10, 10_000]);
    expect([b.retryCost, b.reserve, b.balance]).toEqual([5000, 500_000, 500_000]);
    expect(b.retriesAvailable(0)).toBe(100);
  });

  it('allows exactly 100 retries with no requests, then 20 more for 100 requests', () => {
    const b = new RatioBudget();
    for (let i = 0; i < 100; i++) expect(b.tryRetry(0)).toBe(true);
    expect(b.tryRetry(0)).toBe(false);
    expect(b.balance).toBe(0);
    for (let i = 0; i < 100; i++) b.recordRequest(0);
    expect(b.retriesAvailable()).toBe(20);
    for (let i = 0; i < 20; i++) expect(b.tryRetry(0)).toBe(true);
    expect(b.tryRetry(0)).toBe(false);
  });

  it('lets deposits expire after ttlMs', () => {
    const b = new RatioBudget();
    for (let i = 0; i < 100; i++) b.recordRequest(0);
    expect(b.retriesAvailable(0)).toBe(120);
    expect(b.retriesAvailable(9_999)).toBe(120);
    expect(b.retriesAvailable(10_000)).toBe(100);
    expect(b.balance).toBe(500_000);
  });

  it('lets withdrawals expire after ttlMs, which refills the reserve', () => {
    const b = new RatioBudget();
    for (let i = 0; i < 100; i++) b.tryRetry(0);
    expect(b.tryRetry(9_999)).toBe(false);
    expect(b.tryRetry(10_000)).toBe(true);
    expect(b.retriesAvailable()).toBe(99);
  });

  it('counts an entry for between 0.9 and 1 ttlMs (10 aligned slices)', () => {
    const b = new RatioBudget({ minRetriesPerSecond: 0 });
    b.recordRequest(999); // slice 0 of 1000 ms slices
    expect(b.retriesAvailable(9_999)).toBe(0); // 1000 units, a retry costs 5000
    expect(b.balance).toBe(1000);
    expect(b.retriesAvailable(10_000)).toBe(0);
    expect(b.balance).toBe(0);
  });

  it('goes into debt when deposits expire before the withdrawals they paid for', () => {
    const b = new RatioBudget({ retryRatio: 1, minRetriesPerSecond: 0 });
    expect(b.retryCost).toBe(1000);
    b.recordRequest(0);
    expect(b.tryRetry(5_000)).toBe(true);
    expect(b.retriesAvailable(10_000)).toBe(0);
    expect(b.balance).toBe(-1000);
    b.recordRequest(10_000);
    expect(b.tryRetry(10_000)).toBe(false); // the debt eats the new deposit
    expect(b.tryRetry(15_000)).toBe(true); // the withdrawal has expired
  });

  it('with retryRatio 0 allows only the reserve, at 1 unit a retry', () => {
    const b = new RatioBudget({ retryRatio: 0, minRetriesPerSecond: 1, ttlMs: 1000 });
    expect([b.retryCost, b.reserve]).toEqual([1, 1]);
    for (let i = 0; i < 1000; i++) b.recordRequest(0);
    expect(b.tryRetry(0)).toBe(true);
    expect(b.tryRetry(0)).toBe(false);
    const never = new RatioBudget({ retryRatio: 0, minRetriesPerSecond: 0 });
    never.recordRequest(0);
    expect(never.tryRetry(0)).toBe(false);
  });

  it('rounds the retry cost down, and the reserve down to whole retries', () => {
    expect(new RatioBudget({ retryRatio: 0.3 }).retryCost).toBe(3333);
    expect(new RatioBudget({ retryRatio: 1 / 93 }).retryCost).toBe(93_000); // not 92_999
    expect(new RatioBudget({ retryRatio: 0.001 }).retryCost).toBe(1_000_000);
    const b = new RatioBudget({ retryRatio: 0.5, minRetriesPerSecond: 1, ttlMs: 1500 });
    expect([b.retryCost, b.reserve, b.retriesAvailable(0)]).toEqual([2000, 2000, 1]);
  });

  it('uses only the times it is given: late, early, negative and going back', () => {
    const t0 = 1_700_000_000_000;
    const b = new RatioBudget({ minRetriesPerSecond: 0 });
    for (let i = 0; i < 5; i++) b.recordRequest(t0);
    expect(b.tryRetry(t0 + 1)).toBe(true);
    b.recordRequest(t0 + 5_000);
    expect(b.retriesAvailable(t0 - 50_000)).toBe(0); // time going back expires nothing
    expect(b.balance).toBe(1000);
    expect(b.retriesAvailable(t0 + 10_000)).toBe(0);
    expect(b.balance).toBe(1000); // the first deposits and the withdrawal are gone
    const negative = new RatioBudget({ minRetriesPerSecond: 0, retryRatio: 1 });
    negative.recordRequest(-5_000);
    expect(negative.retriesAvailable(4_999)).toBe(1);
    expect(negative.retriesAvailable(5_000)).toBe(0);
  });

  it('accepts ttlMs 10 (1 ms slices)', () => {
    const b = new RatioBudget({ ttlMs: 10, minRetriesPerSecond: 0, retryRatio: 1 });
    b.recordRequest(0);
    expect(b.retriesAvailable(9)).toBe(1);
    expect(b.retriesAvailable(10)).toBe(0);
  });
});

describe('validation', () => {
  type Ctor = new (options?: never) => Budget;
  const cases: [Ctor, string, unknown, typeof TypeError | typeof RangeError, string][] = [
    [RetryBudget, 'maxCredits', 0, RangeError, '0'],
    [RetryBudget, 'maxCredits', -5, RangeError, '-5'],
    [RetryBudget, 'maxCredits', 1.5, RangeError, '1.5'],
    [RetryBudget, 'maxCredits', '100', TypeError, '"100"'],
    [RetryBudget, 'maxCredits', Number.NaN, TypeError, 'NaN'],
    [RetryBudget, 'maxCredits', Number.POSITIVE_INFINITY, TypeError, 'Infinity'],
    [RetryBudget, 'maxCredits', 2 ** 53, RangeError, String(2 ** 53)],
    [RetryBudget, 'cost', 0, RangeError, '0'],
    [RetryBudget, 'cost', 101, RangeError, '101'],
    [RetryBudget, 'cost', 2.5, RangeError, '2.5'],
    [RetryBudget, 'cost', true, TypeError, 'true'],
    [TokenBucket, 'maxTokens', 0, RangeError, '0'],
    [TokenBucket, 'maxTokens', -1, RangeError, '-1'],
    [TokenBucket, 'maxTokens', 1001, RangeError, '1001'],
    [TokenBucket, 'maxTokens', 2.5, RangeError, '2.5'],
    [TokenBucket, 'maxTokens', '10', TypeError, '"10"'],
    [TokenBucket, 'tokenRatio', 0, RangeError, '0'],
    [TokenBucket, 'tokenRatio', -0.1, RangeError, '-0.1'],
    [TokenBucket, 'tokenRatio', 0.0009, RangeError, '0.0009'],
    [TokenBucket, 'tokenRatio', Number.POSITIVE_INFINITY, TypeError, 'Infinity'],
    [TokenBucket, 'tokenRatio', Number.NaN, TypeError, 'NaN'],
    [TokenBucket, 'tokenRatio', '0.1', TypeError, '"0.1"'],
    [RatioBudget, 'retryRatio', -0.1, RangeError, '-0.1'],
    [RatioBudget, 'retryRatio', 1.5, RangeError, '1.5'],
    [RatioBudget, 'retryRatio', Number.NaN, TypeError, 'NaN'],
    [RatioBudget, 'retryRatio', '0.2', TypeError, '"0.2"'],
    [RatioBudget, 'retryRatio', 0.0009, RangeError, '0.0009'],
    [RatioBudget, 'retryRatio', 5e-324, RangeError, '5e-324'],
    [RatioBudget, 'minRetriesPerSecond', -1, RangeError, '-1'],
    [RatioBudget, 'minRetriesPerSecond', 1.5, RangeError, '1.5'],
    [RatioBudget, 'minRetriesPerSecond', Number.POSITIVE_INFINITY, TypeError, 'Infinity'],
    [RatioBudget, 'minRetriesPerSecond', 1_000_001, RangeError, '1000001'],
    [RatioBudget, 'ttlMs', 0, RangeError, '0'],
    [RatioBudget, 'ttlMs', 9, RangeError, '9'],
    [RatioBudget, 'ttlMs', 10.5, RangeError, '10.5'],
    [RatioBudget, 'ttlMs', 3_600_001, RangeError, '3600001'],
    [RatioBudget, 'ttlMs', Number.POSITIVE_INFINITY, TypeError, 'Infinity'],
    [RatioBudget, 'ttlMs', [10_000], TypeError, '[10000]'],
  ];

  it.each(cases)('%o rejects %s %o', (Kind, name, value, ErrorType, shown) => {
    const make = () => new Kind({ [name]: value } as never);
    expect(make).toThrow(ErrorType);
    expect(make).toThrow(`stormproof: ${Kind.name} ${name} must be`);
    expect(make).toThrow(`got ${shown}`);
  });

  it('rejects a default cost above a smaller maxCredits, naming cost', () => {
    expect(() => new RetryBudget({ maxCredits: 5 })).toThrow(
      new RangeError('stormproof: RetryBudget cost must be >= 1 and <= 5, got 10'),
    );
  });

  it.each([
    [RetryBudget, 'maxCredit', 'maxCredits'],
    [TokenBucket, 'maxToken', 'maxTokens'],
    [RatioBudget, 'ttl', 'ttlMs'],
    [RatioBudget, 'percentCanRetry', undefined],
    [RatioBudget, 'minRetriesPerSec', 'minRetriesPerSecond'],
  ] as [Ctor, string, string | undefined][])(
    '%o rejects the unknown option %s',
    (Kind, key, hint) => {
      const make = () => new Kind({ [key]: 1 } as never);
      expect(make).toThrow(TypeError);
      expect(make).toThrow(`stormproof: ${Kind.name} has no option "${key}"`);
      if (hint !== undefined) expect(make).toThrow(`did you mean ${hint}?`);
    },
  );

  it.each([
    [RetryBudget, 5],
    [TokenBucket, null],
    [RatioBudget, [1]],
    [RatioBudget, 'fast'],
  ] as [Ctor, unknown][])('%o rejects options %o', (Kind, options) => {
    expect(() => new Kind(options as never)).toThrow(TypeError);
    expect(() => new Kind(options as never)).toThrow(
      `stormproof: ${Kind.name} options must be an object`,
    );
  });
});

describe('properties', () => {
  const op = fc.constantFrom('request', 'success', 'failure', 'benign', 'retry');

  it('RetryBudget credits stay whole numbers in [0, maxCredits], spent only by allowed retries', () => {
    const config = fc.integer({ min: 1, max: 300 }).chain((maxCredits) =>
      fc.record({
        maxCredits: fc.constant(maxCredits),
        cost: fc.integer({ min: 1, max: maxCredits }),
      }),
    );
    fc.assert(
      fc.property(config, fc.array(op, { maxLength: 300 }), (options, ops) => {
        const b = new RetryBudget(options);
        let model = options.maxCredits;
        for (const o of ops) {
          if (o === 'request') {
            b.recordRequest(0);
            model = Math.min(options.maxCredits, model + 1);
          } else if (o === 'success') b.recordSuccess();
          else if (o === 'failure' || o === 'benign') b.recordFailure(0, o === 'failure');
          else {
            const allowed = b.tryRetry(0);
            expect(allowed).toBe(model >= options.cost);
            if (allowed) model -= options.cost;
          }
          expect(Number.isInteger(b.credits)).toBe(true);
          expect(b.credits).toBeGreaterThanOrEqual(0);
          expect(b.credits).toBeLessThanOrEqual(options.maxCredits);
          expect(b.credits).toBe(model);
        }
      }),
    );
  });

  it('TokenBucket tokens stay in [0, maxTokens], in whole thousandths, and gate retries at half', () => {
    const config = fc.record({
      maxTokens: fc.integer({ min: 1, max: 1000 }),
      tokenRatio: fc.double({ min: 0.001, max: 20, noNaN: true }),
    });
    fc.assert(
      fc.property(config, fc.array(op, { maxLength: 300 }), (options, ops) => {
        const b = new TokenBucket(options);
        for (const o of ops) {
          if (o === 'request') b.recordRequest(0);
          else if (o === 'success') b.recordSuccess();
          else if (o === 'failure' || o === 'benign') b.recordFailure(0, o === 'failure');
          else {
            const before = b.tokens;
            expect(b.tryRetry(0)).toBe(before > options.maxTokens / 2);
            expect(b.tokens).toBe(before);
          }
          expect(b.tokens).toBeGreaterThanOrEqual(0);
          expect(b.tokens).toBeLessThanOrEqual(options.maxTokens);
          const milli = b.tokens * 1000;
          expect(Math.abs(milli - Math.round(milli))).toBeLessThan(1e-6);
        }
      }),
    );
  });

  // The oracle keeps every event with its time and sums the ones in the window: the current
  // 1/10-of-ttl slice and the 9 before it.
  const ratioConfig = (ratio: fc.Arbitrary<number>) =>
    fc.record({
      retryRatio: ratio,
      minRetriesPerSecond: fc.integer({ min: 0, max: 20 }),
      ttlMs: fc.integer({ min: 10, max: 20_000 }),
    });
  const ratioOps = fc.array(
    fc.record({
      kind: fc.constantFrom('request', 'request', 'retry', 'retry', 'success', 'failure'),
      // Time steps in thousandths of ttlMs: often none, sometimes more than a whole window.
      step: fc.oneof(
        fc.constant(0),
        fc.integer({ min: 0, max: 150 }),
        fc.integer({ min: 0, max: 2500 }),
      ),
    }),
    { maxLength: 400 },
  );

  function checkRatioBudget(
    options: { retryRatio: number; minRetriesPerSecond: number; ttlMs: number },
    ops: { kind: string; step: number }[],
    bound: (reserveRetries: number, requests: number, retryCost: number) => number,
  ) {
    const b = new RatioBudget(options);
    const sliceMs = options.ttlMs / 10;
    const reserveRetries = Math.floor((options.minRetriesPerSecond * options.ttlMs) / 1000);
    const events: { slice: number; kind: 'request' | 'retry' }[] = [];
    let now = 0;
    for (const o of ops) {
      now += (options.ttlMs * o.step) / 1000;
      const slice = Math.floor(now / sliceMs);
      const inWindow = events.filter((e) => e.slice > slice - 10);
      const requests = inWindow.filter((e) => e.kind === 'request').length;
      const retries = inWindow.length - requests;
      if (o.kind === 'request') {
        b.recordRequest(now);
        events.push({ slice, kind: 'request' });
      } else if (o.kind === 'success') b.recordSuccess();
      else if (o.kind === 'failure') b.recordFailure(now, true);
      else {
        const deposits = options.retryRatio === 0 ? 0 : requests * 1000;
        const balance = reserveRetries * b.retryCost + deposits - retries * b.retryCost;
        const allowed = b.tryRetry(now);
        expect(allowed).toBe(balance >= b.retryCost);
        if (allowed) {
          events.push({ slice, kind: 'retry' });
          expect(retries + 1).toBeLessThanOrEqual(
            bound(reserveRetries, requests, b.retryCost) + 1e-9,
          );
        }
      }
    }
  }

  it('RatioBudget never allows more than reserve + retryRatio x requests in the window', () => {
    const exact = fc.constantFrom(0, 0.01, 0.05, 0.1, 0.2, 0.25, 0.5, 1);
    fc.assert(
      fc.property(ratioConfig(exact), ratioOps, (options, ops) =>
        checkRatioBudget(
          options,
          ops,
          (reserve, requests) => reserve + options.retryRatio * requests,
        ),
      ),
    );
  });

  it('RatioBudget with any ratio stays within reserve + requests x 1000 / retryCost', () => {
    const any = fc.oneof(fc.constant(0), fc.double({ min: 0.001, max: 1, noNaN: true }));
    fc.assert(
      fc.property(ratioConfig(any), ratioOps, (options, ops) =>
        checkRatioBudget(options, ops, (reserve, requests, cost) =>
          options.retryRatio === 0 ? reserve : reserve + (requests * 1000) / cost,
        ),
      ),
    );
  });
});
