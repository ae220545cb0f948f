// The circuit breaker in the engine: an open breaker fails a call at once, is not retried,
// spends no retry, and shows in the report; every attempt's outcome is recorded.
import { describe, expect, it, vi } from 'vitest';
import { createFetch } from '../src/fetch/index.js';
import {
  BreakerOpenError,
  CircuitBreaker,
  createRetryPolicy,
  getRetryReport,
  isBreakerOpenError,
  RetryBudget,
} from '../src/index.js';
import { httpError, ManualClock } from './helpers/clocks.js';

function setup(consecutiveFailures = 3) {
  const clock = new ManualClock();
  const breaker = new CircuitBreaker('forecast-db', {
    clock,
    random: () => 0,
    consecutiveFailures,
  });
  return { clock, breaker };
}

describe('a policy with a breaker', () => {
  it('opens mid-call: the retry is refused, and the call gives up with its last failure', async () => {
    const { clock, breaker } = setup(3);
    const policy = createRetryPolicy({
      clock,
      breaker,
      baseDelayMs: 0,
      maxDelayMs: 0,
      budget: false,
    });
    const op = vi.fn(async () => {
      throw httpError(503);
    });
    const error = await policy.retry(op).catch((e: unknown) => e);
    expect(op).toHaveBeenCalledTimes(3);
    expect((error as { status: number }).status).toBe(503);
    expect(getRetryReport(error)).toMatchObject({ reason: 'breaker-open', attempts: 3 });
    expect(clock.pending).toEqual({ timers: 0, listeners: 0 });
    // The next call is refused before its first attempt, with a clear error.
    const refused = await policy.retry(op).catch((e: unknown) => e);
    expect(op).toHaveBeenCalledTimes(3);
    expect(refused).toBeInstanceOf(BreakerOpenError);
    expect(isBreakerOpenError(refused)).toBe(true);
    expect((refused as BreakerOpenError).code).toBe('STORMPROOF_BREAKER_OPEN');
    expect((refused as BreakerOpenError).retryAfterMs).toBe(2500);
    expect(getRetryReport(refused)).toMatchObject({ reason: 'breaker-open', attempts: 0 });
  });

  it('while open, a call fails before its first attempt and spends no retry', async () => {
    const { clock, breaker } = setup(1);
    const budget = new RetryBudget({ maxCredits: 20, cost: 10 });
    const tryRetry = vi.spyOn(budget, 'tryRetry');
    const policy = createRetryPolicy({ clock, breaker, budget, baseDelayMs: 0, maxDelayMs: 0 });
    await policy.retry(async () => Promise.reject(httpError(503))).catch(() => {});
    expect(breaker.state).toBe('open');
    tryRetry.mockClear();
    const op = vi.fn(async () => 'never');
    const error = await policy.retry(op).catch((e: unknown) => e);
    expect(op).not.toHaveBeenCalled();
    expect(tryRetry).not.toHaveBeenCalled();
    expect(getRetryReport(error)).toMatchObject({ reason: 'breaker-open', attempts: 0 });
  });

  it('a 4xx does not open it; a probe after the open period closes it again', async () => {
    const { clock, breaker } = setup(2);
    const policy = createRetryPolicy({ clock, breaker, budget: false });
    for (let i = 0; i < 5; i++)
      await policy.retry(async () => Promise.reject(httpError(404))).catch(() => {});
    expect(breaker.state).toBe('closed');
    const down = createRetryPolicy({ clock, breaker, maxAttempts: 1, budget: false });
    for (let i = 0; i < 2; i++)
      await down.retry(async () => Promise.reject(httpError(503))).catch(() => {});
    expect(breaker.state).toBe('open');
    await clock.advance(2500);
    await expect(policy.retry(async () => 'back')).resolves.toBe('back');
    expect(breaker.state).toBe('closed');
  });

  it('a per-call breaker replaces the policy one, so one bad key cannot open another', async () => {
    const { clock } = setup();
    const a = new CircuitBreaker('GET /a', { clock, consecutiveFailures: 1 });
    const b = new CircuitBreaker('GET /b', { clock, consecutiveFailures: 1 });
    const policy = createRetryPolicy({ clock, maxAttempts: 1, budget: false });
    await policy.retry(async () => Promise.reject(httpError(503)), { breaker: a }).catch(() => {});
    expect(a.state).toBe('open');
    await expect(policy.retry(async () => 'fine', { breaker: b })).resolves.toBe('fine');
  });

  it('a caller abort is not counted against the service', async () => {
    const { clock, breaker } = setup(1);
    const policy = createRetryPolicy({ clock, breaker, budget: false });
    const controller = new AbortController();
    const call = policy.retry(() => new Promise(() => {}), { signal: controller.signal });
    controller.abort(new Error('left'));
    await call.catch(() => {});
    expect(breaker.state).toBe('closed');
  });

  it('a breaker option must be a breaker: null and a plain object are errors naming it', () => {
    expect(() => createRetryPolicy({ breaker: null as never })).toThrow(/breaker/);
    expect(() => createRetryPolicy({ breaker: {} as never })).toThrow(
      /breaker must be a CircuitBreaker/,
    );
  });
});

describe('createFetch({ breaker })', () => {
  it('keeps one breaker per origin: a down host opens its own, a healthy host is untouched', async () => {
    const clock = new ManualClock();
    const seen: string[] = [];
    const double = async (input: string | URL | Request) => {
      const url = String(input);
      seen.push(url);
      return new Response(null, { status: url.startsWith('https://down.example') ? 503 : 200 });
    };
    const fetch = createFetch({
      fetch: double,
      clock,
      breaker: { consecutiveFailures: 3, random: () => 0 },
      baseDelayMs: 0,
      maxDelayMs: 0,
      budget: false,
    });
    // A status still ends with the last Response, as with fetch; the report says why.
    const first = await fetch('https://down.example/a');
    expect(first.status).toBe(503);
    expect(getRetryReport(first)?.reason).toBe('breaker-open');
    expect(seen).toHaveLength(3); // the third failure opened it: the fourth attempt was refused
    seen.length = 0;
    const refused = await fetch('https://down.example/b').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(BreakerOpenError);
    expect((refused as BreakerOpenError).key).toBe('https://down.example');
    expect(getRetryReport(refused)?.reason).toBe('breaker-open');
    expect(seen).toEqual([]);
    expect((await fetch('https://up.example/c')).status).toBe(200);
  });

  it('is off by default, and a bad value is an error naming it', () => {
    expect(() => createFetch({ breaker: 'yes' as never })).toThrow(/breaker must be/);
    expect(() => createFetch({ breaker: null as never })).toThrow(/breaker/);
  });
});

describe('a refused retry returns the last failed value whole', () => {
  it('createFetch: when the breaker refuses the retry, the last 503 is returned with its body unread', async () => {
    const clock = new ManualClock();
    const fetch = createFetch({
      fetch: async () => new Response('busy, try later', { status: 503 }),
      clock,
      breaker: { consecutiveFailures: 1, random: () => 0 },
      baseDelayMs: 0,
      maxDelayMs: 0,
      budget: false,
    });
    const res = await fetch('https://down.example/a');
    expect(getRetryReport(res)).toMatchObject({ reason: 'breaker-open', attempts: 1 });
    expect(await res.text()).toBe('busy, try later');
  });
});
