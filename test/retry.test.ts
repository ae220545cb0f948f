import { getEventListeners } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import {
  type AttemptContext,
  AttemptTimeoutError,
  createRetryPolicy,
  DeadlineExceededError,
  getRetryReport,
  RetryBudget,
  type RetryOptions,
  retry,
} from '../src/index.js';
import { flush, httpError, instantClock, ManualClock } from './helpers/clocks.js';

/** An operation that fails with each of `failures` in turn, then resolves with 'ok'. */
function failing(...failures: unknown[]) {
  const op = vi.fn(async () => {
    const next = failures.shift();
    if (next !== undefined) throw next;
    return 'ok';
  });
  return op;
}

describe('retry: what is retried', () => {
  it('returns the value of a first attempt that succeeds, without sleeping', async () => {
    const clock = instantClock();
    await expect(retry(async () => 42, { clock })).resolves.toBe(42);
    expect(clock.sleeps).toEqual([]);
  });

  it('retries 503, 503 then succeeds, with full-jitter waits below 200 and 400 ms', async () => {
    const clock = instantClock();
    const op = failing(httpError(503), httpError(503));
    await expect(retry(op, { clock, random: () => 0.5 })).resolves.toBe('ok');
    expect(op).toHaveBeenCalledTimes(3);
    expect(clock.sleeps).toEqual([100, 200]);
  });

  it('passes the attempt number from 1', async () => {
    const seen: number[] = [];
    await retry(
      async ({ attempt }) => {
        seen.push(attempt);
        if (attempt < 3) throw httpError(502);
      },
      { clock: instantClock() },
    );
    expect(seen).toEqual([1, 2, 3]);
  });

  it.each([400, 401, 403, 404, 409, 422])(
    'fails at once on %i, rejecting with the error itself',
    async (status) => {
      const clock = instantClock();
      const error = httpError(status);
      const op = failing(error);
      const rejection = await retry(op, { clock }).catch((e: unknown) => e);
      expect(rejection).toBe(error);
      expect(op).toHaveBeenCalledTimes(1);
      expect(getRetryReport(error)).toMatchObject({
        reason: 'not-retryable',
        attempts: 1,
        totalDelayMs: 0,
      });
    },
  );

  it('retries a 500 once per call by default, and never with maxInternalErrorRetries: 0', async () => {
    const op = failing(httpError(500), httpError(500), httpError(500));
    const error = await retry(op, { clock: instantClock() }).catch((e: unknown) => e);
    expect(op).toHaveBeenCalledTimes(2);
    expect(getRetryReport(error)?.reason).toBe('not-retryable');

    const once = failing(httpError(500));
    await expect(
      retry(once, { clock: instantClock(), maxInternalErrorRetries: 0 }),
    ).rejects.toMatchObject({
      status: 500,
    });
    expect(once).toHaveBeenCalledTimes(1);
  });

  it('retries 429 with a ceiling five times larger', async () => {
    const clock = instantClock();
    await retry(failing(httpError(429), httpError(429)), { clock, random: () => 0.5 });
    expect(clock.sleeps).toEqual([500, 1000]);
  });

  it('never retries a thrown non-error or an unknown error', async () => {
    for (const thrown of ['boom', 42, null, new Error('unknown')]) {
      const op = vi.fn(async () => {
        throw thrown;
      });
      await expect(retry(op, { clock: instantClock() })).rejects.toBe(thrown);
      expect(op).toHaveBeenCalledTimes(1);
    }
  });

  it('retries network errors and timeouts', async () => {
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    const fetchFailed = new TypeError('fetch failed', { cause: { code: 'UND_ERR_SOCKET' } });
    const timeout = new DOMException('The operation timed out', 'TimeoutError');
    const op = failing(reset, fetchFailed, timeout);
    await expect(retry(op, { clock: instantClock(), maxAttempts: 4 })).resolves.toBe('ok');
    expect(op).toHaveBeenCalledTimes(4);
  });
});

describe('retry: limits', () => {
  it('stops after maxAttempts with reason max-attempts and the last error', async () => {
    const clock = instantClock();
    const errors = [httpError(503), httpError(503), httpError(503), httpError(503)];
    const last = errors[3];
    const rejection = await retry(failing(...errors), { clock, random: () => 0.5 }).catch(
      (e: unknown) => e,
    );
    expect(rejection).toBe(last);
    expect(clock.sleeps).toEqual([100, 200, 400]);
    expect(getRetryReport(last)).toEqual({
      reason: 'max-attempts',
      attempts: 4,
      totalDelayMs: 700,
      elapsedMs: 700,
      verdict: { retryable: true, kind: 'unavailable', status: 503 },
    });
  });

  it('sleeps at most 1.4 s in total with the defaults', async () => {
    const clock = instantClock();
    await retry(failing(httpError(503), httpError(503), httpError(503), httpError(503)), {
      clock,
      random: () => 0.999_999,
    }).catch(() => {});
    expect(clock.sleeps.reduce((a, b) => a + b)).toBeLessThan(1400);
  });

  it('gives up at once, without sleeping, when the next wait would pass the deadline', async () => {
    const clock = instantClock();
    const op = vi.fn(async () => {
      clock.t += 2900; // a slow attempt
      throw httpError(503);
    });
    const error = await retry(op, { clock, random: () => 0.9 }).catch((e: unknown) => e);
    expect(op).toHaveBeenCalledTimes(1);
    expect(clock.sleeps).toEqual([]);
    expect(getRetryReport(error)).toMatchObject({
      reason: 'deadline',
      attempts: 1,
      elapsedMs: 2900,
    });
  });

  it('adds the server Retry-After to the jittered wait', async () => {
    const clock = instantClock();
    await retry(failing(httpError(503, { 'retry-after': '1' })), { clock, random: () => 0.5 });
    expect(clock.sleeps).toEqual([1100]);
  });

  it('prefers retry-after-ms and reads an explicit retryAfterMs', async () => {
    const clock = instantClock();
    const both = httpError(503, { 'retry-after': '2', 'retry-after-ms': '250' });
    const explicit = Object.assign(httpError(503), { retryAfterMs: 300 });
    await retry(failing(both, explicit), { clock, random: () => 0 });
    expect(clock.sleeps).toEqual([250, 300]);
  });

  it('ignores Retry-After with honorRetryAfter: false', async () => {
    const clock = instantClock();
    await retry(failing(httpError(503, { 'retry-after': '1' })), {
      clock,
      random: () => 0.5,
      honorRetryAfter: false,
    });
    expect(clock.sleeps).toEqual([100]);
  });

  it('gives up at once on a Retry-After beyond the deadline instead of hanging', async () => {
    const clock = instantClock();
    const error = httpError(503, { 'retry-after': '3600' });
    await expect(retry(failing(error), { clock })).rejects.toBe(error);
    expect(clock.sleeps).toEqual([]);
    expect(getRetryReport(error)?.reason).toBe('retry-after-beyond-deadline');
  });

  it('ignores a malformed Retry-After', async () => {
    const clock = instantClock();
    await retry(failing(httpError(503, { 'retry-after': 'soon' })), { clock, random: () => 0.5 });
    expect(clock.sleeps).toEqual([100]);
  });

  it('arms no timer for a zero wait', async () => {
    const clock = instantClock();
    await retry(failing(httpError(503), httpError(503)), { clock, random: () => 0 });
    expect(clock.sleeps).toEqual([]);
  });
});

describe('retry: jitter', () => {
  const run = async (
    jitter: Parameters<typeof retry>[1] extends infer O
      ? O extends { jitter?: infer J }
        ? J
        : never
      : never,
    random: () => number,
  ) => {
    const clock = instantClock();
    await retry(failing(httpError(503), httpError(503), httpError(503), httpError(503)), {
      clock,
      random,
      jitter,
      maxAttempts: 5,
      deadlineMs: 60_000,
      maxDelayMs: 1000,
    }).catch(() => {});
    return clock.sleeps;
  };

  it('none waits the ceiling: 200, 400, 800, then the 1000 ms cap', async () => {
    expect(await run('none', () => 0.3)).toEqual([200, 400, 800, 1000]);
  });
  it('equal waits half the ceiling plus up to half', async () => {
    expect(await run('equal', () => 0.5)).toEqual([150, 300, 600, 750]);
  });
  it('full waits uniform below the ceiling', async () => {
    expect(await run('full', () => 0.25)).toEqual([50, 100, 200, 250]);
  });
  it("decorrelated is Brooker's min(cap, uniform(base, previous * 3))", async () => {
    // previous starts at the base (200): 200 + (600 - 200) * 0.5 = 400, then 200 + (1200 - 200) * 0.5 = 700, ...
    expect(await run('decorrelated', () => 0.5)).toEqual([400, 700, 1000, 1000]);
  });
  it('band multiplies the ceiling by uniform(0.8, 1.2)', async () => {
    const sleeps = await run('band', () => 0.5);
    expect(sleeps).toEqual([200, 400, 800, 1000].map((c) => c * (0.8 + 0.4 * 0.5)));
    expect(await run({ band: [0.5, 1] }, () => 0)).toEqual([100, 200, 400, 500]);
  });
});

describe('budgets', () => {
  it('reproduces the storm story: 1000 always-503 calls make 4000 calls, 1109 with a RetryBudget', async () => {
    for (const [budget, expected] of [
      [undefined, 4000],
      [new RetryBudget(), 1109],
    ] as const) {
      let calls = 0;
      const clock = instantClock();
      const op = async () => {
        calls++;
        throw httpError(503);
      };
      for (let i = 0; i < 1000; i++) {
        await retry(op, { clock, ...(budget ? { budget } : {}) }).catch(() => {});
        clock.t += 10_000;
      }
      expect(calls).toBe(expected);
    }
  });

  it('a policy has its own RetryBudget unless told otherwise; a one-off retry has none', async () => {
    expect(createRetryPolicy().budget).toBeInstanceOf(RetryBudget);
    expect(createRetryPolicy({ budget: false }).budget).toBeUndefined();
    const shared = new RetryBudget();
    expect(createRetryPolicy({ budget: shared }).budget).toBe(shared);
  });

  it('a spent budget gives up at once with reason budget', async () => {
    const policy = createRetryPolicy({
      clock: instantClock(),
      budget: new RetryBudget({ maxCredits: 10, cost: 10 }),
    });
    await expect(policy.retry(failing(httpError(503)))).resolves.toBe('ok');
    const error = httpError(503);
    await expect(policy.retry(failing(error))).rejects.toBe(error);
    expect(getRetryReport(error)).toMatchObject({ reason: 'budget', attempts: 1 });
  });
});

describe('cancellation', () => {
  it('rejects with the reason before the first attempt when already aborted', async () => {
    const op = vi.fn(async () => 1);
    const reason = new Error('stop');
    await expect(retry(op, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect(op).not.toHaveBeenCalled();
  });

  it('an abort during the backoff wait rejects at once, clears the timer and removes listeners', async () => {
    const clock = new ManualClock();
    const controller = new AbortController();
    const op = vi.fn(async () => {
      throw httpError(503);
    });
    const result = retry(op, { clock, signal: controller.signal, random: () => 0.5 }).catch(
      (e: unknown) => e,
    );
    await flush();
    expect(clock.pending.timers).toBe(2); // the wait, and the call's deadline
    const reason = new Error('user left');
    controller.abort(reason);
    expect(await result).toBe(reason);
    expect(op).toHaveBeenCalledTimes(1);
    expect(clock.pending).toEqual({ timers: 0, listeners: 0 });
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    expect(getRetryReport(reason)?.reason).toBe('aborted');
  });

  it('an abort during an attempt aborts its signal and rejects at once, even if the operation ignores it', async () => {
    const controller = new AbortController();
    let seen: AbortSignal | undefined;
    const result = retry(
      ({ signal }) => {
        seen = signal;
        return new Promise(() => {}); // never settles
      },
      { signal: controller.signal, clock: new ManualClock() },
    ).catch((e: unknown) => e);
    await flush();
    controller.abort('bye');
    expect(await result).toBe('bye');
    expect(seen?.aborted).toBe(true);
    expect(seen?.reason).toBe('bye');
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('a caller abort is never retried, whatever the operation throws', async () => {
    const controller = new AbortController();
    const op = vi.fn(async () => {
      controller.abort();
      throw httpError(503);
    });
    await expect(
      retry(op, { signal: controller.signal, clock: instantClock() }),
    ).rejects.toMatchObject({
      name: 'AbortError',
    });
    expect(op).toHaveBeenCalledTimes(1);
  });
});

describe('timeouts', () => {
  it('times out a stalled attempt, aborts its signal, and retries', async () => {
    const clock = new ManualClock();
    const signals: AbortSignal[] = [];
    const result = retry(
      ({ signal, attempt }) => {
        signals.push(signal);
        return attempt === 1 ? new Promise(() => {}) : 'second';
      },
      { clock, attemptTimeoutMs: 500, random: () => 0.5 },
    );
    await clock.advance(500);
    await clock.advance(100);
    await expect(result).resolves.toBe('second');
    expect(signals[0]?.reason).toBeInstanceOf(AttemptTimeoutError);
    expect(signals[1]?.aborted).toBe(false);
    expect(clock.pending).toEqual({ timers: 0, listeners: 0 });
  });

  // The call's own record is its first attempt's context (one object fewer a call): that context
  // must behave as every later attempt's does.
  it.each([0, 30])(
    "gives the first attempt a context that behaves as a later attempt's (timers %i ms late)",
    async (lateMs) => {
      const clock = new ManualClock({ lateMs });
      const contexts: AttemptContext[] = [];
      const result = retry(
        (context) => {
          contexts.push(context);
          // Attempts 1 and 2 stall until their timeout; attempt 3 answers.
          return context.attempt < 3 ? new Promise(() => {}) : 'third';
        },
        { clock, attemptTimeoutMs: 500, random: () => 0 },
      );
      for (let i = 0; i < 4; i++) await clock.advance(600);
      await expect(result).resolves.toBe('third');
      expect(contexts.map((c) => c.attempt)).toEqual([1, 2, 3]);
      expect(contexts.map((c) => ({ ...c }).attempt)).toEqual([1, 2, 3]);
      // Read for the first time after the attempt ended: already aborted, by its timeout.
      for (const ended of contexts.slice(0, 2)) {
        expect(ended.signal).toBe(ended.signal);
        expect(ended.signal.aborted).toBe(true);
        expect(ended.signal.reason).toBeInstanceOf(AttemptTimeoutError);
      }
      expect(contexts[2]!.signal.aborted).toBe(false);
      expect(clock.pending).toEqual({ timers: 0, listeners: 0 });
    },
  );

  it("a caller's abort aborts the running attempt's signal, not the ended first attempt's", async () => {
    const clock = new ManualClock();
    const controller = new AbortController();
    const seen: AbortSignal[] = [];
    const result = retry(
      ({ signal, attempt }) => {
        seen.push(signal);
        return attempt === 1 ? Promise.reject(httpError(503)) : new Promise(() => {});
      },
      { clock, signal: controller.signal, random: () => 0 },
    ).catch((e: unknown) => e);
    await clock.advance(1000);
    expect(seen).toHaveLength(2);
    expect(seen.map((s) => s.aborted)).toEqual([false, false]);
    controller.abort(new Error('stop'));
    expect(((await result) as Error).message).toBe('stop');
    // The first attempt had ended already (it failed): only the running one is aborted.
    expect(seen.map((s) => s.aborted)).toEqual([false, true]);
    expect(clock.pending).toEqual({ timers: 0, listeners: 0 });
  });

  it('ends an attempt that would outlast the deadline at the deadline', async () => {
    const clock = new ManualClock();
    const ends: { reason: unknown; at: number }[] = [];
    const result = retry(
      ({ signal }) =>
        new Promise((_, reject) => {
          signal.addEventListener('abort', () => {
            ends.push({ reason: signal.reason, at: clock.t });
            reject(signal.reason);
          });
        }),
      { clock, attemptTimeoutMs: 2000, deadlineMs: 3000, random: () => 0 },
    ).catch((e: unknown) => e);
    await clock.advance(5000);
    const error = await result;
    expect(ends.map((e) => e.at)).toEqual([2000, 3000]);
    expect(ends[0]?.reason).toBeInstanceOf(AttemptTimeoutError);
    expect(ends[1]?.reason).toBeInstanceOf(DeadlineExceededError);
    expect(error).toBe(ends[1]?.reason);
    expect(getRetryReport(error)).toMatchObject({
      reason: 'deadline',
      attempts: 2,
      elapsedMs: 3000,
    });
    expect(clock.pending).toEqual({ timers: 0, listeners: 0 });
  });

  it("aborts an attempt's signal at the deadline when there is no attempt timeout", async () => {
    const clock = new ManualClock();
    let signal: AbortSignal | undefined;
    const result = retry(
      (context) =>
        new Promise((_, reject) => {
          signal = context.signal;
          signal.addEventListener('abort', () => reject(signal?.reason));
        }),
      { clock, deadlineMs: 1000 },
    ).catch((e: unknown) => e);
    await clock.advance(1000);
    expect(await result).toBeInstanceOf(DeadlineExceededError);
    expect(getRetryReport(await result)?.reason).toBe('deadline');
    expect(clock.pending).toEqual({ timers: 0, listeners: 0 });
  });
});

describe('hooks', () => {
  it('reports retries, give-ups and successes', async () => {
    const events: string[] = [];
    const policy = createRetryPolicy({
      clock: instantClock(),
      random: () => 0.5,
      onRetry: (e) => events.push(`retry ${e.attempt} ${e.verdict.kind} ${e.delayMs}`),
      onGiveUp: (e) => events.push(`give-up ${e.reason} ${e.attempts}`),
      onSuccess: (e) => events.push(`success ${e.attempts} ${e.totalDelayMs}`),
    });
    await policy.retry(failing(httpError(503)));
    await policy.retry(failing(httpError(404))).catch(() => {});
    expect(events).toEqual(['retry 1 unavailable 100', 'success 2 100', 'give-up not-retryable 1']);
  });

  it('a hook that throws or rejects changes nothing and leaves no unhandled rejection', async () => {
    const policy = createRetryPolicy({
      clock: instantClock(),
      onRetry: () => {
        throw new Error('hook bug');
      },
      onSuccess: async () => {
        throw new Error('async hook bug');
      },
    });
    await expect(
      policy.retry(failing(httpError(503)), { onGiveUp: () => Promise.reject(new Error('x')) }),
    ).resolves.toBe('ok');
    await flush();
  });

  it('per-call hooks run after the policy hooks', async () => {
    const order: string[] = [];
    const policy = createRetryPolicy({
      clock: instantClock(),
      onSuccess: () => order.push('policy'),
    });
    await policy.retry(async () => 1, { onSuccess: () => order.push('call') });
    expect(order).toEqual(['policy', 'call']);
  });
});

describe('shouldRetry', () => {
  it('sees the error, the attempt, the elapsed time and the default verdict', async () => {
    const clock = instantClock();
    const shouldRetry = vi.fn(() => true);
    const error = new Error('lock conflict');
    await retry(failing(error), { clock, shouldRetry });
    expect(shouldRetry).toHaveBeenCalledWith({
      error,
      attempt: 1,
      elapsedMs: 0,
      verdict: { retryable: false, kind: 'permanent' },
    });
  });

  it('can refuse what the default would retry, or return a verdict of its own', async () => {
    const no = failing(httpError(503));
    await expect(
      retry(no, { clock: instantClock(), shouldRetry: () => false }),
    ).rejects.toMatchObject({ status: 503 });
    expect(no).toHaveBeenCalledTimes(1);

    const clock = instantClock();
    await retry(failing(new Error('x')), {
      clock,
      random: () => 0,
      shouldRetry: () => ({ retryable: true, kind: 'unavailable', retryAfterMs: 50 }),
    });
    expect(clock.sleeps).toEqual([50]);
  });

  it('still obeys the attempt limit', async () => {
    const op = vi.fn(async () => {
      throw new Error('x');
    });
    await expect(
      retry(op, { clock: instantClock(), shouldRetry: () => true, maxAttempts: 2 }),
    ).rejects.toThrow('x');
    expect(op).toHaveBeenCalledTimes(2);
  });
});

describe('reports do not touch the error', () => {
  it('leaves a frozen error as it was', async () => {
    const error = Object.freeze(httpError(404));
    const keys = Reflect.ownKeys(error);
    await expect(retry(failing(error), { clock: instantClock() })).rejects.toBe(error);
    expect(Reflect.ownKeys(error)).toEqual(keys);
    expect(getRetryReport(error)?.reason).toBe('not-retryable');
    expect(getRetryReport(new Error('other'))).toBeUndefined();
    expect(getRetryReport('text')).toBeUndefined();
  });
});

describe('validation', () => {
  const bad: [string, unknown, RegExp][] = [
    ['maxAttempts', 0, /maxAttempts must be >= 1, got 0/],
    ['maxAttempts', 2.5, /maxAttempts must be an integer, got 2.5/],
    ['maxAttempts', Number.NaN, /maxAttempts must be an integer, got NaN/],
    ['baseDelayMs', -1, /baseDelayMs must be >= 0, got -1/],
    ['baseDelayMs', Number.POSITIVE_INFINITY, /baseDelayMs must be a finite number, got Infinity/],
    ['deadlineMs', 0, /deadlineMs must be > 0, got 0/],
    ['deadlineMs', '3000', /deadlineMs must be a finite number, got "3000"/],
    ['attemptTimeoutMs', -5, /attemptTimeoutMs must be > 0, got -5/],
    [
      'jitter',
      'random',
      /jitter must be one of 'full', 'equal', 'decorrelated', 'none', 'band'.*got "random"/,
    ],
    ['jitter', { band: [1.2, 0.8] }, /jitter.band\[1\] must be >= 1.2, got 0.8/],
    ['throttledDelayMultiplier', 0.5, /throttledDelayMultiplier must be >= 1, got 0.5/],
    ['maxInternalErrorRetries', -1, /maxInternalErrorRetries must be >= 0, got -1/],
    ['honorRetryAfter', 'yes', /honorRetryAfter must be a boolean, got "yes"/],
    ['budget', {}, /budget must be a Budget/],
    ['budget', true, /budget must be a Budget.*got true/],
    ['clock', { now: () => 0 }, /clock must have now\(\) and sleep/],
    ['random', 0.5, /random must be a function, got 0.5/],
    ['onRetry', 'log', /onRetry must be a function, got "log"/],
    ['maxAttempt', 3, /has no option "maxAttempt" \(did you mean maxAttempts\?\)/],
  ];
  it.each(bad)('createRetryPolicy rejects %s = %o', (name, value, message) => {
    expect(() => createRetryPolicy({ [name]: value } as never)).toThrow(message);
  });

  it('rejects maxDelayMs below baseDelayMs', () => {
    expect(() => createRetryPolicy({ baseDelayMs: 500, maxDelayMs: 100 })).toThrow(
      new RangeError('stormproof: createRetryPolicy maxDelayMs must be >= 500, got 100'),
    );
  });

  it('throws a TypeError or RangeError', () => {
    expect(() => createRetryPolicy({ maxAttempts: 0 })).toThrow(RangeError);
    expect(() => createRetryPolicy({ jitter: 'x' as never })).toThrow(TypeError);
    expect(() => createRetryPolicy(null as never)).toThrow(/options must be an object, got null/);
  });

  it('a one-off retry rejects bad options and a non-function operation', async () => {
    await expect(retry(async () => 1, { maxAttempts: -1 })).rejects.toThrow(/maxAttempts/);
    await expect(retry('nope' as never)).rejects.toThrow(/operation must be a function/);
    await expect(
      createRetryPolicy().retry(async () => 1, { maxAttempts: 5 } as never),
    ).rejects.toThrow(/policy.retry has no option "maxAttempts"/);
  });

  it('fills defaults once into frozen options', () => {
    const { options } = createRetryPolicy();
    expect(Object.isFrozen(options)).toBe(true);
    expect(options).toMatchObject({
      maxAttempts: 4,
      baseDelayMs: 200,
      maxDelayMs: 5000,
      deadlineMs: 3000,
      jitter: { kind: 'full' },
      attemptTimeoutMs: undefined,
      honorRetryAfter: true,
      maxInternalErrorRetries: 1,
      throttledDelayMultiplier: 5,
    });
  });
});

describe('regression: a context read after its attempt settled', () => {
  it('arms no timer and adds no listener', async () => {
    const clock = new ManualClock();
    const controller = new AbortController();
    let stashed: { signal: AbortSignal } | undefined;
    await retry(
      async (context) => {
        stashed = context;
        return 1;
      },
      { clock, signal: controller.signal },
    );
    expect(stashed?.signal.aborted).toBe(false);
    expect(clock.pending).toEqual({ timers: 0, listeners: 0 });
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });
});

describe('regression: a caller abort during a zero wait', () => {
  it('never starts the next attempt, even when the operation ignores its signal', async () => {
    const controller = new AbortController();
    const op = vi.fn(({ attempt }: { attempt: number }) =>
      attempt === 1 ? Promise.reject(httpError(503)) : new Promise(() => {}),
    );
    const result = retry(op, {
      clock: new ManualClock(),
      random: () => 0, // a zero wait: no sleep to notice the abort
      signal: controller.signal,
      onRetry: () => controller.abort('stop'),
    }).catch((e: unknown) => e);
    expect(await result).toBe('stop');
    expect(op).toHaveBeenCalledTimes(1);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  // After a zero wait the next attempt starts in a promise job of its own: an abort that comes
  // in between (a job queued by a hook, by the operation, by anyone) still ends the call there.
  it.each([0, 30])(
    'never starts the next attempt when the abort comes in the job before it (timers %i ms late)',
    async (lateMs) => {
      const clock = new ManualClock({ lateMs });
      const controller = new AbortController();
      const stop = new Error('stop');
      const op = vi.fn(({ attempt }: { attempt: number }) =>
        attempt === 1 ? Promise.reject(httpError(503)) : 'second',
      );
      const result = retry(op, {
        clock,
        random: () => 0,
        signal: controller.signal,
        onRetry: () => queueMicrotask(() => controller.abort(stop)),
      }).catch((e: unknown) => e);
      const error = await result;
      await flush();
      expect(error).toBe(stop);
      expect(getRetryReport(error)).toMatchObject({ reason: 'aborted', attempts: 1 });
      expect(op).toHaveBeenCalledTimes(1);
      expect(clock.pending).toEqual({ timers: 0, listeners: 0 });
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    },
  );
});

// Capturing a stack costs V8 about 0.3 us a frame (up to `Error.stackTraceLimit`, 10): most of a
// failed attempt's cost. The engine keeps its own frames under the operation few.
describe('regression: the frames under an attempt', () => {
  /** The engine's frames (this repository's src/) under the operation, for each attempt. */
  async function engineFrames(options: RetryOptions): Promise<string[][]> {
    const stacks: string[] = [];
    await retry(async ({ attempt }) => {
      const error = Object.assign(new Error('unavailable'), { status: 503 });
      stacks.push(error.stack ?? '');
      if (attempt < 3) throw error;
      return 'ok';
    }, options);
    return stacks.map((stack) =>
      stack
        .split('\n')
        .slice(2) // the message, and the operation's own frame
        .filter((line) => line.includes('/src/'))
        .map((line) => line.trim().split(' ')[1]!),
    );
  }

  it('a retry after a zero wait starts from a promise job: two engine frames, not the chain that decided it', async () => {
    const frames = await engineFrames({ clock: instantClock(), random: () => 0, budget: false });
    expect(frames[1]).toEqual(['Call.runAttempt', 'Call.waited']);
    expect(frames[2]).toEqual(['Call.runAttempt', 'Call.waited']);
  });

  it('the operation is called as a plain function, never as a method of the call', async () => {
    const seen: unknown[] = [];
    await retry(
      function (this: unknown, { attempt }) {
        seen.push(this);
        if (attempt < 2) throw Object.assign(new Error('unavailable'), { status: 503 });
        return 'ok';
      },
      { clock: instantClock(), random: () => 0, budget: false },
    );
    expect(seen).toEqual([undefined, undefined]);
  });
});

describe("a call's own deadline", () => {
  it("replaces the policy's: the call settles by it, and waits are checked against it", async () => {
    const clock = new ManualClock();
    const policy = createRetryPolicy({ clock, deadlineMs: 10_000, budget: false });
    const result = policy
      .retry(
        ({ signal }) =>
          new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
        {
          deadlineMs: 250,
        },
      )
      .catch((e: unknown) => e);
    await clock.advance(250);
    const error = await result;
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect((error as DeadlineExceededError).deadlineMs).toBe(250);
    expect(getRetryReport(error)).toMatchObject({ reason: 'deadline', elapsedMs: 250 });
    expect(clock.pending).toEqual({ timers: 0, listeners: 0 });

    // A 503 at 100 ms: a wait of 180 ms cannot fit in what is left of 250 ms.
    const slow = createRetryPolicy({ clock, deadlineMs: 10_000, budget: false, random: () => 0.9 });
    const busy = slow
      .retry(
        () =>
          new Promise((_, reject) => {
            clock.setTimer(100, () => reject(httpError(503)));
          }),
        { deadlineMs: 250 },
      )
      .catch((e: unknown) => e);
    await clock.advance(100);
    expect(getRetryReport(await busy)?.reason).toBe('deadline');
  });

  it('is checked like every option: null or 0 is an error naming it', async () => {
    const policy = createRetryPolicy();
    await expect(policy.retry(async () => 1, { deadlineMs: null as never })).rejects.toThrow(
      /deadlineMs/,
    );
    await expect(policy.retry(async () => 1, { deadlineMs: 0 })).rejects.toThrow(RangeError);
  });
});

describe('retry(fn, options): an inline literal resolved once while its values stay the same', () => {
  it('honours a changed value, an added or removed key, and a new signal', async () => {
    const attemptsWith = async (options: RetryOptions) => {
      const op = failing(httpError(503), httpError(503), httpError(503), httpError(503));
      await retry(op, options).catch(() => {});
      return op.mock.calls.length;
    };
    const clock = instantClock();
    expect(await attemptsWith({ clock, maxAttempts: 2, budget: false })).toBe(2);
    expect(await attemptsWith({ clock, maxAttempts: 2, budget: false })).toBe(2);
    expect(await attemptsWith({ clock, maxAttempts: 3, budget: false })).toBe(3);
    expect(await attemptsWith({ clock, budget: false })).toBe(4);
    expect(await attemptsWith({ clock, budget: false, maxAttempts: 1 })).toBe(1);
    const reason = new Error('gone');
    await expect(
      retry(async () => 1, {
        clock,
        budget: false,
        maxAttempts: 1,
        signal: AbortSignal.abort(reason),
      }),
    ).rejects.toBe(reason);
    await expect(
      retry(async () => 1, {
        clock,
        budget: false,
        maxAttempts: 1,
        signal: 'not a signal' as unknown as AbortSignal,
      }),
    ).rejects.toThrow(/retry signal must be an AbortSignal/);
  });

  it('reads a jitter band again on every call: its array may have changed', async () => {
    const band: [number, number] = [1, 1];
    const options: RetryOptions = { jitter: { band }, baseDelayMs: 100, budget: false };
    const sleepsWith = async () => {
      const clock = instantClock();
      await retry(failing(httpError(503)), { ...options, clock });
      return clock.sleeps;
    };
    expect(await sleepsWith()).toEqual([100]);
    band[0] = 2;
    band[1] = 2;
    expect(await sleepsWith()).toEqual([200]);
  });

  it('resolves one options object again after it is mutated: no stale policy, bad values still throw', async () => {
    const clock = instantClock();
    const options: RetryOptions = { clock, maxAttempts: 2, budget: false };
    const attempts = async () => {
      const op = failing(httpError(503), httpError(503), httpError(503), httpError(503));
      await retry(op, options).catch(() => {});
      return op.mock.calls.length;
    };
    expect(await attempts()).toBe(2);
    expect(await attempts()).toBe(2);
    options.maxAttempts = 3;
    expect(await attempts()).toBe(3);
    options.maxAttempts = 0;
    await expect(retry(async () => 1, options)).rejects.toThrow(RangeError);
    options.maxAttempts = null as unknown as number;
    await expect(retry(async () => 1, options)).rejects.toThrow(/maxAttempts/);
    options.maxAttempts = 1;
    (options as Record<string, unknown>).maxAtempts = 2;
    await expect(retry(async () => 1, options)).rejects.toThrow(
      /has no option "maxAtempts" \(did you mean maxAttempts\?\)/,
    );
  });

  it('checks the signal in a reused literal on every call', async () => {
    const clock = instantClock();
    const call = (signal?: AbortSignal) => retry(async () => 1, { clock, budget: false, signal });
    await expect(call()).resolves.toBe(1);
    await expect(call(new AbortController().signal)).resolves.toBe(1);
    const reason = new Error('gone');
    await expect(call(AbortSignal.abort(reason))).rejects.toBe(reason);
    await expect(call({} as AbortSignal)).rejects.toThrow(/retry signal must be an AbortSignal/);
    await expect(call()).resolves.toBe(1);
  });

  it('reads a plain object by its enumerable own options, the same cached or not: a hidden one neither counts nor leaks', async () => {
    const clock = instantClock();
    const attempts = async (options: RetryOptions) => {
      const op = failing(httpError(503), httpError(503), httpError(503), httpError(503));
      await retry(op, options).catch(() => {});
      return op.mock.calls.length;
    };
    const hiding = () =>
      Object.defineProperty({ clock, budget: false }, 'maxAttempts', {
        value: 1,
        enumerable: false,
      }) as RetryOptions;
    // Before: resolved with its hidden maxAttempts, then kept under its visible keys, so the
    // next literal with those keys was served one attempt instead of its default four.
    expect(await attempts(hiding())).toBe(4);
    expect(await attempts({ clock, budget: false })).toBe(4);
    // Cached or resolved afresh, the hidden option is read the same: not at all, as a spread.
    expect(await attempts(hiding())).toBe(4);
    expect(await attempts({ ...hiding(), maxAttempts: 2 })).toBe(2);
    expect(await attempts(hiding())).toBe(4);
    expect(createRetryPolicy(hiding()).options.maxAttempts).toBe(4);
  });

  it('compares only plain objects: an array or a class with accessors after an equal-looking literal', async () => {
    await expect(retry(async () => 1, {})).resolves.toBe(1);
    await expect(retry(async () => 1, [] as RetryOptions)).rejects.toThrow(
      /options must be an object/,
    );
    class Options {
      get maxAttempts() {
        return 0;
      }
    }
    await expect(retry(async () => 1, new Options() as RetryOptions)).rejects.toThrow(
      /maxAttempts/,
    );
  });
});
