// Regression tests for the defects found when the engine was tried from outside (issue 8). Each
// is named after the defect it pins; each failed before its fix.
import { describe, expect, it, vi } from 'vitest';
import { createFetch } from '../src/fetch/index.js';
import {
  createRetryPolicy,
  DeadlineExceededError,
  getRetryReport,
  RatioBudget,
  RetryBudget,
  retry,
  startState,
  step,
  TokenBucket,
} from '../src/index.js';
import { flush, httpError, ManualClock } from './helpers/clocks.js';

/** An operation that never settles by itself, but rejects when its signal aborts. */
const hangsUntilAborted = ({ signal }: { signal: AbortSignal }) =>
  new Promise<never>((_, reject) => {
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });

describe('defect 1: a deadline give-up is never reported as the server pause', () => {
  it("reports 'deadline' when the deadline timer fires late and no Retry-After was sent", async () => {
    for (const lateMs of [0, 1, 7, 40]) {
      const clock = new ManualClock({ lateMs });
      const result = retry(hangsUntilAborted, { clock, deadlineMs: 1000 }).catch((e: unknown) => e);
      await clock.advance(1000 + lateMs);
      const error = await result;
      expect(error).toBeInstanceOf(DeadlineExceededError);
      expect(getRetryReport(error)?.reason).toBe('deadline');
      expect(clock.pending).toEqual({ timers: 0, listeners: 0 });
    }
  });

  it("step: an attempt that ends past the deadline gives up with 'deadline', pause or not", () => {
    const policy = createRetryPolicy({ deadlineMs: 1000, budget: false }).options;
    const state = startState(policy, 0);
    for (const headers of [undefined, { 'retry-after': '0' }, { 'retry-after': '1' }]) {
      const decision = step(policy, state, { ok: false, error: httpError(503, headers) }, 1003);
      expect(decision).toMatchObject({ action: 'give-up', reason: 'deadline' });
    }
  });

  it("keeps 'retry-after-beyond-deadline' for a pause that alone reaches past the deadline", () => {
    const policy = createRetryPolicy({ deadlineMs: 3000, budget: false }).options;
    const error = httpError(503, { 'retry-after': '5' });
    const decision = step(policy, startState(policy, 0), { ok: false, error }, 10);
    expect(decision).toMatchObject({ action: 'give-up', reason: 'retry-after-beyond-deadline' });
  });
});

describe('defect 2: a wait longer than 2^31-1 ms is never turned into a burst', () => {
  it('a 30-day deadline does not abort an attempt after about 1 ms', async () => {
    const controller = new AbortController();
    let signal: AbortSignal | undefined;
    const call = retry(
      (context) => {
        signal = context.signal;
        return hangsUntilAborted(context);
      },
      { deadlineMs: 30 * 86_400_000, signal: controller.signal },
    ).catch((e: unknown) => e);
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(signal?.aborted).toBe(false);
    controller.abort(new Error('test over'));
    expect(getRetryReport(await call)?.reason).toBe('aborted');
  });

  it('a 25-day Retry-After under a 60-day deadline waits instead of retrying at once', async () => {
    const controller = new AbortController();
    const op = vi.fn(async () => {
      throw httpError(503, { 'retry-after': String(25 * 86_400) });
    });
    const call = retry(op, {
      deadlineMs: 60 * 86_400_000,
      signal: controller.signal,
    }).catch((e: unknown) => e);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(op).toHaveBeenCalledTimes(1);
    controller.abort(new Error('test over'));
    expect(getRetryReport(await call)).toMatchObject({ reason: 'aborted', attempts: 1 });
  });
});

describe('defect 3: null is a TypeError naming the option, everywhere', () => {
  const numeric = [
    'maxAttempts',
    'baseDelayMs',
    'maxDelayMs',
    'deadlineMs',
    'attemptTimeoutMs',
    'throttledDelayMultiplier',
    'maxInternalErrorRetries',
  ];
  const other = [
    'honorRetryAfter',
    'allowNestedRetries',
    'jitter',
    'shouldRetry',
    'budget',
    'clock',
    'random',
    'onRetry',
    'onGiveUp',
    'onSuccess',
  ];
  const entryPoints: [string, (options: Record<string, unknown>) => unknown][] = [
    ['createRetryPolicy', (o) => createRetryPolicy(o)],
    ['createFetch', (o) => createFetch(o)],
    [
      'retry',
      (o) => {
        // retry() reports a bad option through its promise; surface it synchronously here.
        let thrown: unknown;
        retry(async () => 1, o).catch((e: unknown) => {
          thrown = e;
        });
        return Promise.resolve().then(() => {
          if (thrown) throw thrown;
        });
      },
    ],
  ];
  for (const [name, make] of entryPoints) {
    for (const option of [...numeric, ...other]) {
      it(`${name}({ ${option}: null })`, async () => {
        const attempt = async () => make({ [option]: null });
        await expect(attempt()).rejects.toThrow(TypeError);
        await expect(attempt()).rejects.toThrow(option);
      });
    }
  }
  const budgets: [string, (o: Record<string, unknown>) => unknown, string[]][] = [
    ['RetryBudget', (o) => new RetryBudget(o), ['maxCredits', 'cost']],
    ['TokenBucket', (o) => new TokenBucket(o), ['maxTokens', 'tokenRatio']],
    ['RatioBudget', (o) => new RatioBudget(o), ['retryRatio', 'minRetriesPerSecond', 'ttlMs']],
  ];
  for (const [name, make, options] of budgets) {
    for (const option of options) {
      it(`new ${name}({ ${option}: null })`, () => {
        expect(() => make({ [option]: null })).toThrow(TypeError);
        expect(() => make({ [option]: null })).toThrow(option);
      });
    }
  }
  it('undefined still means the default', () => {
    expect(createRetryPolicy({ maxAttempts: undefined }).options.maxAttempts).toBe(4);
    expect(new RetryBudget({ cost: undefined }).cost).toBe(10);
  });
});

describe('defect 4: an abort during a wait reports what happened', () => {
  it('one attempt and the 50 ms actually waited, not the next attempt and the whole plan', async () => {
    const clock = new ManualClock();
    const controller = new AbortController();
    const reason = new Error('user left');
    const call = retry(
      async () => {
        throw httpError(503);
      },
      { clock, signal: controller.signal, random: () => 0.99 },
    ).catch((e: unknown) => e);
    await clock.advance(50);
    controller.abort(reason);
    expect(await call).toBe(reason);
    expect(getRetryReport(reason)).toEqual({
      reason: 'aborted',
      attempts: 1,
      totalDelayMs: 50,
      elapsedMs: 50,
    });
    expect(clock.pending).toEqual({ timers: 0, listeners: 0 });
  });
});

describe('defect 5: shouldRetry answers undefined, a promise, or throws', () => {
  it('undefined falls back to the default verdict', async () => {
    const op = vi.fn().mockRejectedValueOnce(httpError(503)).mockResolvedValue('ok');
    await expect(
      retry(op, { shouldRetry: () => undefined, clock: new ManualClock(), baseDelayMs: 0 }),
    ).resolves.toBe('ok');
    await expect(
      retry(async () => Promise.reject(httpError(404)), { shouldRetry: () => undefined }),
    ).rejects.toMatchObject({ status: 404 });
  });

  it('a promise is awaited: async yes retries, async no stops', async () => {
    const yes = vi.fn().mockRejectedValueOnce(new Error('lock conflict')).mockResolvedValue('ok');
    await expect(
      retry(yes, { shouldRetry: async () => true, baseDelayMs: 0, maxDelayMs: 0 }),
    ).resolves.toBe('ok');
    const no = vi.fn().mockRejectedValue(httpError(503));
    const error = await retry(no, { shouldRetry: async () => false }).catch((e: unknown) => e);
    expect(no).toHaveBeenCalledTimes(1);
    expect(getRetryReport(error)?.reason).toBe('not-retryable');
  });

  it('a throw ends the call with what it threw, the operation error as its cause', async () => {
    const failure = httpError(503);
    const bug = new Error('bug in shouldRetry');
    const op = vi.fn().mockRejectedValue(failure);
    const error = await retry(op, {
      shouldRetry: () => {
        throw bug;
      },
    }).catch((e: unknown) => e);
    expect(error).toBe(bug);
    expect(bug.cause).toBe(failure);
    expect(op).toHaveBeenCalledTimes(1);
    expect(getRetryReport(bug)?.reason).toBe('should-retry-failed');
  });

  it('a rejection ends the call the same way and never becomes an unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const listen = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', listen);
    try {
      const bug = new Error('async bug');
      const onGiveUp = vi.fn();
      const error = await retry(async () => Promise.reject(httpError(503)), {
        shouldRetry: async () => {
          throw bug;
        },
        onGiveUp,
      }).catch((e: unknown) => e);
      expect(error).toBe(bug);
      expect(onGiveUp).toHaveBeenCalledWith(
        expect.objectContaining({ reason: 'should-retry-failed', error: bug }),
      );
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', listen);
    }
  });

  it('an answer that is not yes, no, undefined or a verdict is a bug, reported the same way', async () => {
    const error = await retry(async () => Promise.reject(httpError(503)), {
      shouldRetry: () => 'yes' as unknown as boolean,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect(getRetryReport(error)?.reason).toBe('should-retry-failed');
  });
});

describe('defect 6: decorrelated jitter after a 429 starts its own sequence', () => {
  it('draws the first throttled wait from [base * multiplier, 3 * that], never an inverted range', () => {
    for (const r of [0, 0.25, 0.5, 0.999]) {
      const policy = createRetryPolicy({
        jitter: 'decorrelated',
        random: () => r,
        budget: false,
      }).options;
      const decision = step(policy, startState(policy, 0), { ok: false, error: httpError(429) }, 0);
      expect(decision.action).toBe('retry');
      if (decision.action !== 'retry') return;
      expect(decision.delayMs).toBeGreaterThanOrEqual(1000);
      expect(decision.delayMs).toBeLessThanOrEqual(3000);
    }
  });
});

describe('defect 9: a pushback past the deadline has a reason of its own', () => {
  it("gives up with 'pushback-beyond-deadline', not the Retry-After reason", () => {
    const policy = createRetryPolicy({ deadlineMs: 3000, budget: false }).options;
    const error = httpError(503, { 'stormproof-pushback-ms': '5000' });
    const decision = step(policy, startState(policy, 0), { ok: false, error }, 10);
    expect(decision).toMatchObject({ action: 'give-up', reason: 'pushback-beyond-deadline' });
  });

  it('waits exactly a pushback that fits, with no jitter, and restarts the backoff', async () => {
    const clock = new ManualClock();
    const op = vi
      .fn()
      .mockRejectedValueOnce(httpError(503))
      .mockRejectedValueOnce(httpError(503, { 'stormproof-pushback-ms': '700' }))
      .mockResolvedValue('ok');
    const call = retry(op, { clock, random: () => 0.5, deadlineMs: 5000 });
    await clock.advance(5000);
    await expect(call).resolves.toBe('ok');
    expect(clock.sleeps).toEqual([100, 700]);
  });
});

describe('one retry layer inside one process (RFC 9110 9.2.2)', () => {
  it('an outer policy passes an inner retrying call up: 4 calls, not 16', async () => {
    let calls = 0;
    const service = async () => {
      calls++;
      throw httpError(503);
    };
    const inner = createRetryPolicy({ baseDelayMs: 0, maxDelayMs: 0, budget: false });
    const outer = createRetryPolicy({ baseDelayMs: 0, maxDelayMs: 0, budget: false });
    const error = await outer.retry(() => inner.retry(service)).catch((e: unknown) => e);
    expect(calls).toBe(4);
    const report = getRetryReport(error);
    expect(report).toMatchObject({ reason: 'already-retried', attempts: 1 });
    expect(report?.inner).toMatchObject({ reason: 'max-attempts', attempts: 4 });
  });

  it('allowNestedRetries: true multiplies again, on purpose', async () => {
    let calls = 0;
    const service = async () => {
      calls++;
      throw httpError(503);
    };
    const options = { baseDelayMs: 0, maxDelayMs: 0, budget: false as const };
    const inner = createRetryPolicy(options);
    const outer = createRetryPolicy({ ...options, allowNestedRetries: true });
    await outer.retry(() => inner.retry(service)).catch(() => {});
    expect(calls).toBe(16);
  });

  it('an inner call that was never meant to retry (maxAttempts: 1) leaves retrying to the outer one', async () => {
    let calls = 0;
    const service = async () => {
      calls++;
      throw httpError(503);
    };
    const inner = createRetryPolicy({ maxAttempts: 1, budget: false });
    const outer = createRetryPolicy({ baseDelayMs: 0, maxDelayMs: 0, budget: false });
    await outer.retry(() => inner.retry(service)).catch(() => {});
    expect(calls).toBe(4);
  });

  it("an inner call aborted by the outer attempt's timeout does not stop the outer retries", async () => {
    const clock = new ManualClock();
    let calls = 0;
    const inner = createRetryPolicy({ clock, budget: false });
    const outer = createRetryPolicy({
      clock,
      attemptTimeoutMs: 100,
      budget: false,
      random: () => 0,
    });
    const call = outer.retry(({ signal }) =>
      inner.retry(() => (++calls === 1 ? new Promise(() => {}) : 'ok'), { signal }),
    );
    await clock.advance(200);
    await flush();
    await expect(call).resolves.toBe('ok');
    expect(calls).toBe(2);
  });
});
