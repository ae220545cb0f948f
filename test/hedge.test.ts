// Hedged attempts in the engine, on a virtual clock (exact, and one whose timers fire late): the
// first success wins and the others are aborted, a loser that ignores its signal never delays
// the answer, the deadline covers every copy, and no hedge goes out when the budget refuses,
// the service pushes back, the breaker is not closed, or hedges stop winning.
import { describe, expect, it } from 'vitest';
import { Hedging } from '../src/core/hedge.js';
import {
  type AttemptContext,
  type Budget,
  CircuitBreaker,
  createRetryPolicy,
  getRetryReport,
  HedgeLostError,
  type RetryPolicyOptions,
  retry,
} from '../src/index.js';
import { httpError, ManualClock } from './helpers/clocks.js';

/** A copy that answers `value` after `ms` on the clock, or fails with `error`. */
function answerAfter(clock: ManualClock, ms: number, value: string | Error): Promise<string> {
  return new Promise((resolve, reject) => {
    clock.setTimer(ms, () => (value instanceof Error ? reject(value) : resolve(value)));
  });
}

const never = <T>() => new Promise<T>(() => {});

const refusing = (): Budget => ({
  recordRequest: () => {},
  recordSuccess: () => {},
  recordFailure: () => {},
  tryRetry: () => false,
});

/** Runs `promise` to its end on the clock; returns its outcome and when it came. */
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
  for (let i = 0; i < 400 && done === undefined; i++) await clock.advance(10);
  return done!;
}

for (const lateMs of [0, 3]) {
  describe(`hedging (clock ${lateMs} ms late)`, () => {
    const policyOn = (clock: ManualClock, extra: RetryPolicyOptions = {}) =>
      createRetryPolicy({ clock, budget: false, hedge: { delayMs: 50 }, ...extra });

    it('takes the first success: a hedge that answers first wins, the slow copy is aborted', async () => {
      const clock = new ManualClock({ lateMs });
      const seen: AttemptContext[] = [];
      let successEvent: unknown;
      const policy = policyOn(clock, { onSuccess: (e) => (successEvent = e) });
      const result = await settle(
        clock,
        policy.retry((ctx) => {
          seen.push(ctx);
          return ctx.hedge === 0 ? never<string>() : answerAfter(clock, 5, 'hedge');
        }),
      );
      expect(result.value).toBe('hedge');
      // The hedge left after 50 ms (+ lateness) and answered 5 ms (+ lateness) later.
      expect(result.at).toBe(50 + 5 + 2 * lateMs);
      expect(seen.map((c) => [c.attempt, c.hedge])).toEqual([
        [1, 0],
        [1, 1],
      ]);
      expect(seen[0]!.signal.aborted).toBe(true);
      expect(seen[0]!.signal.reason).toBeInstanceOf(HedgeLostError);
      expect(seen[1]!.signal.aborted).toBe(false);
      expect(successEvent).toMatchObject({
        attempts: 1,
        hedges: { sent: 1, won: 1, cancelled: 1, refused: {} },
      });
      await clock.advance(10_000);
      expect(clock.pending).toEqual({ timers: 0, listeners: 0 });
    });

    it('sends no hedge when the first copy answers before the delay, and settles as without hedging', async () => {
      const runOnce = async (hedge: boolean) => {
        const clock = new ManualClock({ lateMs });
        let calls = 0;
        const policy = createRetryPolicy({
          clock,
          budget: false,
          random: () => 0.5,
          ...(hedge ? { hedge: { delayMs: 50 } } : {}),
        });
        const result = await settle(
          clock,
          policy.retry(({ attempt }) => {
            calls++;
            return attempt === 1
              ? answerAfter(clock, 30, httpError(503))
              : answerAfter(clock, 20, 'ok');
          }),
        );
        await clock.advance(10_000);
        return { result, calls, pending: clock.pending };
      };
      const without = await runOnce(false);
      const withHedge = await runOnce(true);
      expect(withHedge).toEqual(without);
      expect(withHedge.calls).toBe(2); // a retry after the 503, no hedge
    });

    it('waits for a running hedge when the first copy fails, and fails only when all have', async () => {
      const clock = new ManualClock({ lateMs });
      let calls = 0;
      const policy = policyOn(clock, { maxAttempts: 2, random: () => 0 });
      const result = await settle(
        clock,
        policy.retry((ctx) => {
          calls++;
          if (ctx.attempt === 1 && ctx.hedge === 0) return answerAfter(clock, 80, httpError(500));
          if (ctx.attempt === 1) return answerAfter(clock, 60, httpError(502));
          return answerAfter(clock, 10, 'second attempt');
        }),
      );
      expect(result.value).toBe('second attempt');
      // Attempt 1: the first copy fails at 80 but the hedge (sent at 50) runs to 110: the
      // attempt fails then, with the hedge's 502; the retry waits 0 ms (random 0).
      expect(calls).toBe(3);
      expect(result.at).toBe(50 + 60 + 10 + 3 * lateMs);
    });

    it('never lets a copy that ignores its signal hold the answer, and its late value is dropped', async () => {
      const clock = new ManualClock({ lateMs });
      const policy = policyOn(clock);
      let late: Promise<string> | undefined;
      const result = await settle(
        clock,
        policy.retry((ctx) => {
          if (ctx.hedge === 0) {
            late = answerAfter(clock, 500, 'late'); // ignores its signal
            return late;
          }
          return answerAfter(clock, 1, 'fast');
        }),
      );
      expect(result.value).toBe('fast');
      await clock.advance(1000);
      await expect(late).resolves.toBe('late'); // it ran out on its own, unseen
    });

    it('keeps the deadline for every copy: both hang, the call ends at its deadline', async () => {
      const clock = new ManualClock({ lateMs });
      const contexts: AttemptContext[] = [];
      const policy = policyOn(clock, { deadlineMs: 300 });
      const result = await settle(
        clock,
        policy.retry((ctx) => {
          contexts.push(ctx);
          return new Promise<string>((_, reject) =>
            ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)),
          );
        }),
      );
      expect(result.at).toBeLessThanOrEqual(300 + lateMs);
      expect(getRetryReport(result.error)).toMatchObject({
        reason: 'deadline',
        hedges: { sent: 1, won: 0, cancelled: 0 },
      });
      expect(contexts.map((c) => c.signal.aborted)).toEqual([true, true]);
      await clock.advance(10_000);
      expect(clock.pending).toEqual({ timers: 0, listeners: 0 });
    });

    it('sends no hedge when the budget refuses, and the call still succeeds', async () => {
      const clock = new ManualClock({ lateMs });
      let successEvent: unknown;
      const policy = createRetryPolicy({
        clock,
        budget: refusing(),
        hedge: { delayMs: 50 },
        onSuccess: (e) => (successEvent = e),
      });
      let calls = 0;
      const result = await settle(
        clock,
        policy.retry(() => {
          calls++;
          return answerAfter(clock, 200, 'slow');
        }),
      );
      expect(result.value).toBe('slow');
      expect(calls).toBe(1);
      expect(successEvent).toMatchObject({ hedges: { sent: 0, refused: { budget: 1 } } });
    });

    it('sends no hedge while the service pushes back (a 503 pauses hedging for a while)', async () => {
      const clock = new ManualClock({ lateMs });
      const events: unknown[] = [];
      const policy = policyOn(clock, { maxAttempts: 1, onSuccess: (e) => events.push(e) });
      await settle(
        clock,
        policy.retry(() => answerAfter(clock, 5, httpError(503))),
      ).catch(() => {});
      let calls = 0;
      const result = await settle(
        clock,
        policy.retry(() => {
          calls++;
          return answerAfter(clock, 200, 'slow but whole');
        }),
      );
      expect(result.value).toBe('slow but whole');
      expect(calls).toBe(1);
      expect(events.at(-1)).toMatchObject({ hedges: { sent: 0, refused: { pushback: 1 } } });
      // A Retry-After longer than the pause holds hedging that long.
      const later = createRetryPolicy({
        clock,
        budget: false,
        hedge: { delayMs: 50 },
        maxAttempts: 1,
      });
      await settle(
        clock,
        later.retry(() => answerAfter(clock, 5, httpError(429, { 'retry-after': '3' }))),
      ).catch(() => {});
      await clock.advance(2000);
      let hedged = 0;
      await settle(
        clock,
        later.retry((ctx) => {
          if ((ctx.hedge ?? 0) > 0) hedged++;
          return answerAfter(clock, 200, 'x');
        }),
      );
      expect(hedged).toBe(0);
      await clock.advance(2000);
      await settle(
        clock,
        later.retry((ctx) => {
          if ((ctx.hedge ?? 0) > 0) hedged++;
          return answerAfter(clock, 200, 'x');
        }),
      );
      expect(hedged).toBe(1);
    });

    it('sends no hedge while the breaker is not closed', async () => {
      const clock = new ManualClock({ lateMs });
      const breaker = new CircuitBreaker('db', { clock, random: () => 0.5 });
      breaker.isolate();
      breaker.reset(); // closed again
      const policy = policyOn(clock, { breaker, maxAttempts: 1 });
      // Trip it: failures until it opens, then wait for the half-open probe.
      for (let i = 0; i < 30 && breaker.state === 'closed'; i++) {
        await settle(
          clock,
          policy.retry(() => answerAfter(clock, 1, httpError(500))),
        ).catch(() => {});
      }
      expect(breaker.state).toBe('open');
      await clock.advance(120_000);
      let hedged = 0;
      const events: unknown[] = [];
      const probe = createRetryPolicy({
        clock,
        budget: false,
        breaker,
        hedge: { delayMs: 50 },
        onSuccess: (e) => events.push(e),
      });
      await settle(
        clock,
        probe.retry((ctx) => {
          if ((ctx.hedge ?? 0) > 0) hedged++;
          return answerAfter(clock, 200, 'probe');
        }),
      );
      expect(hedged).toBe(0);
      expect(events.at(-1)).toMatchObject({ hedges: { sent: 0, refused: { breaker: 1 } } });
    });

    it('learns its delay: none before 20 successful attempts, then the p96 of the last 1,024', async () => {
      const clock = new ManualClock({ lateMs });
      const events: Array<{ hedges?: { sent: number; refused: Record<string, number> } }> = [];
      const policy = createRetryPolicy({
        clock,
        budget: false,
        hedge: {},
        onSuccess: (e) => events.push(e),
      });
      // 19 attempts of 100 ms: still learning, no hedge.
      for (let i = 0; i < 19; i++)
        await settle(
          clock,
          policy.retry(() => answerAfter(clock, 100, 'ok')),
        );
      expect(events.at(-1)?.hedges).toMatchObject({ sent: 0, refused: { learning: 1 } });
      // The 20th teaches it: latencies of 100 ms (+ lateness): the delay is that.
      await settle(
        clock,
        policy.retry(() => answerAfter(clock, 100, 'ok')),
      );
      const seen: number[] = [];
      const result = await settle(
        clock,
        policy.retry((ctx) => {
          seen.push(clock.t);
          return ctx.hedge === 0 ? never<string>() : answerAfter(clock, 1, 'hedge');
        }),
      );
      expect(result.value).toBe('hedge');
      expect(seen[1]! - seen[0]!).toBe(100 + 2 * lateMs);
    });

    it('stops hedging when hedges stop winning, and probes one in 16', async () => {
      const clock = new ManualClock({ lateMs });
      const events: Array<{ hedges?: { sent: number } }> = [];
      const policy = policyOn(clock, { onSuccess: (e) => events.push(e) });
      // Every copy is slow alike (a saturated service): the first copy always wins.
      const saturated = (ctx: AttemptContext) =>
        answerAfter(clock, ctx.hedge === 0 ? 100 : 100, 'ok');
      for (let i = 0; i < 16; i++) await settle(clock, policy.retry(saturated));
      expect(events.every((e) => e.hedges?.sent === 1)).toBe(true);
      events.length = 0;
      for (let i = 0; i < 32; i++) await settle(clock, policy.retry(saturated));
      expect(events.filter((e) => e.hedges?.sent === 1).length).toBe(2);
    });

    it('judges a hedged attempt that ends with no success as a hedge that did not win (timed out, or every copy failed), but not one the caller gave up on', async () => {
      // A saturated service makes every copy slow, and its attempts time out rather than
      // succeed: before, only successes were judged, so there the rule never saw a hedge lose.
      const ends = {
        'timed out': { options: { attemptTimeoutMs: 200 }, op: () => () => never<string>() },
        'every copy failed': {
          options: {},
          op: (clock: ManualClock) => (ctx: AttemptContext) =>
            answerAfter(clock, ctx.hedge === 0 ? 80 : 20, new Error('connection reset')),
        },
      } as const;
      for (const [end, { options, op }] of Object.entries(ends)) {
        const clock = new ManualClock({ lateMs });
        const policy = policyOn(clock, { maxAttempts: 1, ...options });
        const reports = [];
        for (let i = 0; i < 32; i++) {
          const result = await settle(clock, policy.retry(op(clock)));
          reports.push(getRetryReport(result.error)!.hedges!);
        }
        // The first 16 hedges go and lose; then one due hedge in 16 goes, to see.
        expect(
          reports.slice(0, 16).every((h) => h.sent === 1),
          end,
        ).toBe(true);
        expect(reports.slice(16).filter((h) => h.sent === 1).length, end).toBe(1);
        expect(reports.slice(16).filter((h) => h.refused['not-winning'] === 1).length, end).toBe(
          15,
        );
        await clock.advance(10_000);
        expect(clock.pending, end).toEqual({ timers: 0, listeners: 0 });
      }
      // A caller that aborts says nothing about the service: hedging goes on.
      const clock = new ManualClock({ lateMs });
      const policy = policyOn(clock, { maxAttempts: 1 });
      let sent = 0;
      for (let i = 0; i < 20; i++) {
        const caller = new AbortController();
        clock.setTimer(80, () => caller.abort());
        const result = await settle(
          clock,
          policy.retry(() => never<string>(), { signal: caller.signal }),
        );
        sent += getRetryReport(result.error)!.hedges!.sent;
      }
      expect(sent).toBe(20);
    });

    it("sends no hedge when its attempt has less time left than nine in ten attempts take ('too-late')", async () => {
      // The copy would be cut off with its attempt: load and nothing else. Near saturation the
      // latency climbs toward the attempt's timeout, and this is where hedging stops first.
      for (const [limit, ends] of [
        [{ attemptTimeoutMs: 150 }, 'too-late'],
        [{ deadlineMs: 150 }, 'too-late'],
        [{ attemptTimeoutMs: 250 }, 'sent'],
        [{ deadlineMs: 250 }, 'sent'],
      ] as const) {
        const clock = new ManualClock({ lateMs });
        const policy = createRetryPolicy({
          clock,
          budget: false,
          hedge: {},
          maxAttempts: 1,
          ...limit,
        });
        // 20 attempts of 100 ms teach it: the delay and the time nine in ten take are both 100 ms.
        for (let i = 0; i < 20; i++)
          await settle(
            clock,
            policy.retry(() => answerAfter(clock, 100, 'ok')),
          );
        const result = await settle(
          clock,
          policy.retry((ctx) =>
            ctx.hedge === 0 ? never<string>() : answerAfter(clock, 20, 'hedge'),
          ),
        );
        const label = JSON.stringify(limit);
        if (ends === 'too-late') {
          expect(getRetryReport(result.error)!.hedges, label).toMatchObject({
            sent: 0,
            refused: { 'too-late': 1 },
          });
        } else expect(result.value, label).toBe('hedge');
        await clock.advance(10_000);
        expect(clock.pending, label).toEqual({ timers: 0, listeners: 0 });
      }
    });

    it('keeps hedges within maxExtraLoad of attempts over time (a window of them in hand at first)', async () => {
      const clock = new ManualClock({ lateMs });
      let sent = 0;
      const policy = createRetryPolicy({
        clock,
        budget: false,
        hedge: { delayMs: 10, maxExtraLoad: 0.1 },
        onSuccess: (e) => {
          sent += e.hedges?.sent ?? 0;
        },
      });
      // Every first copy is slow (every attempt is due a hedge), and every hedge wins.
      const slowFirst = (ctx: AttemptContext) => answerAfter(clock, ctx.hedge === 0 ? 50 : 1, 'ok');
      for (let i = 0; i < 400; i++) await settle(clock, policy.retry(slowFirst));
      // 102.4 in hand (0.1 x the 1,024-attempt window), then 0.1 earned per attempt.
      expect(sent).toBeGreaterThanOrEqual(141);
      expect(sent).toBeLessThanOrEqual(143);
    });

    it('does not hedge a one-off retry() without a fixed delay (no history)', async () => {
      const clock = new ManualClock({ lateMs });
      let calls = 0;
      await settle(
        clock,
        retry(
          () => {
            calls++;
            return answerAfter(clock, 500, 'ok');
          },
          { clock, hedge: {} },
        ),
      );
      expect(calls).toBe(1);
    });
  });
}

describe('hedge options', () => {
  it('reject bad values at construction, naming the option', () => {
    expect(() => createRetryPolicy({ hedge: null as never })).toThrow(/hedge/);
    expect(() => createRetryPolicy({ hedge: { maxHedges: 0 } })).toThrow(/hedge\.maxHedges/);
    expect(() => createRetryPolicy({ hedge: { maxHedges: 5 } })).toThrow(/hedge\.maxHedges/);
    expect(() => createRetryPolicy({ hedge: { maxExtraLoad: 0 } })).toThrow(/hedge\.maxExtraLoad/);
    expect(() => createRetryPolicy({ hedge: { delayMs: -1 } })).toThrow(/hedge\.delayMs/);
    expect(() => createRetryPolicy({ hedge: { minDelayMs: Number.NaN } })).toThrow(
      /hedge\.minDelayMs/,
    );
    expect(() => createRetryPolicy({ hedge: { delay: 5 } as never })).toThrow(/delay/);
    expect(() => createRetryPolicy({ hedge: false })).not.toThrow();
  });
});

describe('the learned delay', () => {
  /** 1, 2, ..., n ms in a shuffled order (a fixed stride through them), so none is in place. */
  const spread = (n: number) => Array.from({ length: n }, (_, i) => ((i * 389) % n) + 1);

  it('is the p96 of a known spread at the default maxExtraLoad (0.8 x 5 %), over 1,012 attempts', () => {
    // Recomputed at 20 samples and every 32 after: 1,012 is one of those counts, all in the
    // 1,024 window. Sorted, the p96 is the value at index floor(0.96 x 1,012) = 971: 972 ms (the
    // p95 would be 962 ms, the p99 1,002 ms; a window of the last 256 would say 964 ms).
    const hedging = new Hedging('test', { minDelayMs: 0 });
    for (const ms of spread(1012)) hedging.learn(ms);
    expect(hedging.delayMs()).toBe(972);
    // maxExtraLoad 0.1: four fifths of it, the p92 (index 931).
    const wider = new Hedging('test', { minDelayMs: 0, maxExtraLoad: 0.1 });
    for (const ms of spread(1012)) wider.learn(ms);
    expect(wider.delayMs()).toBe(932);
  });

  it('learns nothing before 20 attempts, then only from the last 1,024, never below minDelayMs', () => {
    const hedging = new Hedging('test', {});
    for (let i = 0; i < 19; i++) hedging.learn(500);
    expect(hedging.delayMs()).toBeUndefined();
    for (let i = 19; i < 52; i++) hedging.learn(500);
    expect(hedging.delayMs()).toBe(500);
    // 992 fast attempts: 1,044 in all, the 1,024 kept hold 32 slow ones (3.1 %, below the 4 %
    // tail); a window that kept all 52 (5 %) would still say 500.
    for (let i = 0; i < 992; i++) hedging.learn(2);
    expect(hedging.delayMs()).toBe(10); // 2 ms, raised to the 10 ms floor
  });

  it('is the quantile of the window as a sort of it says, at every recompute, for any latencies', () => {
    // The window is kept in order as it changes, not sorted at each recompute: the delay must be
    // the one a sort of the last 1,024 latencies gives, whatever they are (repeats, zeros,
    // fractions, values that sort differently as text), through thousands of evictions.
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    const draws: Array<() => number> = [
      () => Math.floor(random() * 2000) / 10, // fractions, 0 to 200 ms
      () => Math.floor(random() * 8), // few distinct values, many repeats, zeros
      () => (random() < 0.05 ? 500 + random() * 500 : 1 + random() * 9), // a slow tail
    ];
    for (const draw of draws) {
      for (const maxExtraLoad of [0.05, 0.3]) {
        const hedging = new Hedging('test', { minDelayMs: 0, maxExtraLoad });
        const seen: number[] = [];
        for (let n = 1; n <= 5000; n++) {
          const ms = draw();
          seen.push(ms);
          hedging.learn(ms);
          if (n < 20 || (n - 20) % 32 !== 0) continue;
          const window = Float64Array.from(seen.slice(-1024)).sort();
          const at = Math.min(
            window.length - 1,
            Math.floor((1 - 0.8 * maxExtraLoad) * window.length),
          );
          expect(hedging.delayMs(), `after ${n} latencies`).toBe(window[at]);
        }
      }
    }
  });
});
