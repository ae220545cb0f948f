// Invariants of the engine, checked over many generated policies and failure sequences.
import { getEventListeners } from 'node:events';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createRetryPolicy,
  getRetryReport,
  RetryBudget,
  type RetryPolicyOptions,
} from '../src/index.js';
import { httpError, ManualClock } from './helpers/clocks.js';

const failure = fc.oneof(
  fc
    .constantFrom(500, 502, 503, 504, 429, 400, 401, 403, 404, 409, 422)
    .map((status) => ({ status })),
  fc
    .record({ status: fc.constantFrom(503, 429), retryAfter: fc.integer({ min: 0, max: 5 }) })
    .map(({ status, retryAfter }) => ({ status, headers: { 'retry-after': String(retryAfter) } })),
  fc.constantFrom('ECONNRESET', 'ETIMEDOUT', 'EAI_AGAIN').map((code) => ({ code })),
  fc.constant({ code: 'E_UNKNOWN' }),
);

const options = fc.record({
  maxAttempts: fc.integer({ min: 1, max: 8 }),
  baseDelayMs: fc.integer({ min: 0, max: 500 }),
  extraCapMs: fc.integer({ min: 0, max: 5000 }),
  deadlineMs: fc.integer({ min: 1, max: 20_000 }),
  jitter: fc.constantFrom('full', 'equal', 'decorrelated', 'none', 'band'),
  attemptMs: fc.integer({ min: 0, max: 1500 }),
});

type Scenario = {
  policy: RetryPolicyOptions;
  failures: Array<{ status?: number; code?: string; headers?: Record<string, string> }>;
  attemptMs: number;
  seed: number;
};

const scenario: fc.Arbitrary<Scenario> = fc
  .record({
    o: options,
    failures: fc.array(failure as fc.Arbitrary<Scenario['failures'][number]>, { maxLength: 10 }),
    seed: fc.integer(),
  })
  .map(({ o, failures, seed }) => ({
    policy: {
      maxAttempts: o.maxAttempts,
      baseDelayMs: o.baseDelayMs,
      maxDelayMs: o.baseDelayMs + o.extraCapMs,
      deadlineMs: o.deadlineMs,
      jitter: o.jitter as RetryPolicyOptions['jitter'],
    },
    failures,
    attemptMs: o.attemptMs,
    seed,
  }));

/** A small seeded generator so each run is repeatable from fast-check's seed. */
function seeded(seed: number) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

interface Run {
  attempts: number;
  sleeps: number[];
  retried: Array<{
    failure: Scenario['failures'][number];
    delayMs: number;
    ceilingMs: number;
    pauseMs: number;
  }>;
  outcome: 'ok' | 'error';
  clock: ManualClock;
  signal: AbortSignal;
}

async function run(s: Scenario, budget?: RetryBudget): Promise<Run> {
  const clock = new ManualClock();
  const failures = [...s.failures];
  const controller = new AbortController();
  const retried: Run['retried'] = [];
  let attempts = 0;
  let current: Scenario['failures'][number] | undefined;
  const policy = createRetryPolicy({
    ...s.policy,
    clock,
    random: seeded(s.seed),
    budget: budget ?? false,
    onRetry: (e) => {
      const throttled = current?.status === 429;
      const base = (s.policy.baseDelayMs ?? 0) * (throttled ? 5 : 1);
      const cap = s.policy.maxDelayMs ?? 0;
      const ceilingMs = Math.min(cap, base * 2 ** (e.attempt - 1));
      retried.push({
        failure: current!,
        delayMs: e.delayMs,
        ceilingMs,
        pauseMs: e.verdict.retryAfterMs ?? 0,
      });
    },
  });
  const promise = policy
    .retry(
      async () => {
        attempts++;
        await clock.sleep(s.attemptMs);
        current = failures.shift();
        if (current) throw Object.assign(httpError(current.status ?? 0), current);
        return 'ok';
      },
      { signal: controller.signal },
    )
    .then(
      () => 'ok' as const,
      () => 'error' as const,
    );
  // Drive virtual time until the call settles.
  let settled: Run['outcome'] | undefined;
  promise.then((o) => {
    settled = o;
  });
  for (let i = 0; i < 1000 && settled === undefined; i++) await clock.advance(50);
  return {
    attempts,
    sleeps: clock.sleeps,
    retried,
    outcome: (await promise) as Run['outcome'],
    clock,
    signal: controller.signal,
  };
}

describe('engine invariants', () => {
  it('never makes more than maxAttempts attempts', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const r = await run(s);
        expect(r.attempts).toBeLessThanOrEqual(s.policy.maxAttempts!);
      }),
      { numRuns: 150 },
    );
  });

  it('keeps the total sleep within the deadline', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const r = await run(s);
        const slept = r.retried.reduce((sum, x) => sum + x.delayMs, 0);
        expect(slept).toBeLessThanOrEqual(s.policy.deadlineMs!);
      }),
      { numRuns: 150 },
    );
  });

  it('draws each wait within [0, ceiling] (x1.2 for band) plus the Retry-After', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const r = await run(s);
        for (const x of r.retried) {
          const backoff = x.delayMs - x.pauseMs;
          expect(backoff).toBeGreaterThanOrEqual(0);
          if (s.policy.jitter === 'decorrelated') {
            expect(backoff).toBeLessThanOrEqual(s.policy.maxDelayMs!);
          } else {
            expect(backoff).toBeLessThanOrEqual(
              x.ceilingMs * (s.policy.jitter === 'band' ? 1.2 : 1) + 1e-9,
            );
          }
        }
      }),
      { numRuns: 150 },
    );
  });

  it('never retries a 4xx other than 429', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const r = await run(s);
        for (const x of r.retried) {
          const status = x.failure.status;
          if (status !== undefined && status >= 400 && status < 500) expect(status).toBe(429);
        }
      }),
      { numRuns: 150 },
    );
  });

  it('keeps budget credits whole and within [0, max] across calls', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(scenario, { minLength: 1, maxLength: 8 }),
        fc.integer({ min: 1, max: 20 }),
        async (calls, cost) => {
          const budget = new RetryBudget({ maxCredits: 20, cost });
          for (const s of calls) {
            await run(s, budget);
            expect(Number.isInteger(budget.credits)).toBe(true);
            expect(budget.credits).toBeGreaterThanOrEqual(0);
            expect(budget.credits).toBeLessThanOrEqual(20);
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it('leaves no pending timer or listener after any outcome, aborts included', async () => {
    await fc.assert(
      fc.asyncProperty(
        scenario,
        fc.option(fc.integer({ min: 0, max: 3000 })),
        async (s, abortAfter) => {
          const clock = new ManualClock();
          const controller = new AbortController();
          const failures = [...s.failures];
          const policy = createRetryPolicy({
            ...s.policy,
            clock,
            random: seeded(s.seed),
            attemptTimeoutMs: 700,
          });
          const promise = policy
            .retry(
              async ({ signal }) => {
                await clock.sleep(s.attemptMs, signal);
                const f = failures.shift();
                if (f) throw Object.assign(httpError(f.status ?? 0), f);
                return 'ok';
              },
              { signal: controller.signal },
            )
            .catch((e: unknown) => e);
          let settled = false;
          promise.then(() => {
            settled = true;
          });
          for (let t = 0; t < 60_000 && !settled; t += 50) {
            if (abortAfter !== null && t >= abortAfter && !controller.signal.aborted)
              controller.abort(new Error('abort'));
            await clock.advance(50);
          }
          const result = await promise;
          expect(settled).toBe(true);
          expect(clock.pending).toEqual({ timers: 0, listeners: 0 });
          expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
          if (controller.signal.aborted && result === controller.signal.reason) {
            expect(getRetryReport(result)?.reason).toBe('aborted');
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});
