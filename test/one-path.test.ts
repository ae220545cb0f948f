// One path through the driver: the same random scenario (outcomes, timings, aborts, hooks), run
// through every combination of the options that chose a different path before (a caller signal
// or none, an attempt timeout or none, hooks or none, a budget or none) and of a breaker that
// always admits, and of hedging whose delay is never reached, must give the same result, report,
// attempts, waits, settle time and hook events. And whatever the operation does,
// the call settles by its deadline (within the clock's lateness) and leaves nothing behind.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type Budget,
  getRetryReport,
  type RetryOptions,
  type RetryReport,
  retry,
} from '../src/index.js';
import { httpError, ManualClock } from './helpers/clocks.js';

/** What one attempt does. */
type Behaviour =
  | { kind: 'ok' | '503' | '404' | '429-retry-after' | 'reset'; afterMs: number }
  | { kind: 'hang-ignoring' | 'hang-reading' | 'hang-honouring' };

const behaviour: fc.Arbitrary<Behaviour> = fc.oneof(
  fc.record({
    kind: fc.constantFrom('ok', '503', '404', '429-retry-after', 'reset'),
    afterMs: fc.integer({ min: 0, max: 700 }),
  }) as fc.Arbitrary<Behaviour>,
  fc.record({ kind: fc.constantFrom('hang-ignoring', 'hang-reading', 'hang-honouring') }),
);

const scenarioArb = fc.record({
  attempts: fc.array(behaviour, { minLength: 1, maxLength: 6 }),
  deadlineMs: fc.integer({ min: 200, max: 4000 }),
  maxAttempts: fc.integer({ min: 1, max: 5 }),
  abortAtMs: fc.option(fc.integer({ min: 0, max: 4000 }), { nil: undefined }),
  lateMs: fc.constantFrom(0, 1, 5, 37),
  draws: fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), {
    minLength: 1,
    maxLength: 8,
  }),
});
type Scenario = typeof scenarioArb extends fc.Arbitrary<infer S> ? S : never;

interface Variant {
  signal: 'none' | 'never-aborting' | 'aborting';
  attemptTimeout: boolean;
  hooks: boolean;
  budget: boolean;
  breaker: boolean;
  /** Hedging on, with a delay no scenario reaches: no hedge fires, so nothing may change. */
  hedge: boolean;
}

/** Longer than any scenario runs: the hedge's timer is armed on every attempt and never fires. */
const HEDGE_NEVER_MS = 10_000_000;

/** Every combination that applies: without an abort in the scenario, signals may be absent. */
function variants(scenario: Scenario): Variant[] {
  const signals: Variant['signal'][] =
    scenario.abortAtMs === undefined ? ['none', 'never-aborting'] : ['aborting'];
  const all: Variant[] = [];
  for (const signal of signals)
    for (const attemptTimeout of [false, true])
      for (const hooks of [false, true])
        for (const budget of [false, true])
          for (const breaker of [false, true])
            for (const hedge of [false, true])
              all.push({ signal, attemptTimeout, hooks, budget, breaker, hedge });
  return all;
}

/** A breaker that always admits: present, asked and told, but never the reason for anything. */
const admitting = () => ({
  key: 'always-closed',
  admit: () => ({ admitted: true as const, probe: false }),
  record: () => {},
});

/** A budget that always allows: present, asked, but never the reason for anything. */
const permissive = (): Budget => ({
  recordRequest: () => {},
  recordSuccess: () => {},
  recordFailure: () => {},
  tryRetry: () => true,
});

interface Observed {
  outcome: string;
  report: RetryReport | undefined;
  calls: number;
  sleeps: number[];
  settledAt: number;
  events: string[];
}

function describeOutcome(value: unknown): string {
  if (typeof value === 'string') return `value:${value}`;
  const e = value as { name?: string; status?: number; code?: string; message?: string };
  return `error:${e.name}:${e.status ?? ''}:${e.code ?? ''}:${e.message ?? ''}`;
}

async function run(
  scenario: Scenario,
  variant: Variant,
): Promise<Observed & { leftover: unknown }> {
  const clock = new ManualClock({ lateMs: scenario.lateMs });
  let draw = 0;
  const random = () => scenario.draws[draw++ % scenario.draws.length]!;
  const controller = new AbortController();
  const events: string[] = [];
  let calls = 0;
  const operation = ({ attempt, signal }: { attempt: number; signal: AbortSignal }) => {
    calls++;
    const b = scenario.attempts[Math.min(attempt, scenario.attempts.length) - 1]!;
    if (b.kind === 'hang-ignoring') return new Promise<string>(() => {});
    if (b.kind === 'hang-reading') {
      void signal.aborted;
      return new Promise<string>(() => {});
    }
    if (!('afterMs' in b)) {
      return new Promise<string>((_, reject) => {
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
    }
    // Settles on its own after afterMs, on a timer the engine does not own.
    return new Promise<string>((resolve, reject) => {
      clock.setTimer(b.afterMs, () => {
        if (b.kind === 'ok') resolve(`ok@${attempt}`);
        else if (b.kind === '503') reject(httpError(503));
        else if (b.kind === '404') reject(httpError(404));
        else if (b.kind === '429-retry-after') reject(httpError(429, { 'retry-after': '1' }));
        else reject(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }));
      });
    });
  };
  const options: RetryOptions = {
    clock,
    random,
    deadlineMs: scenario.deadlineMs,
    maxAttempts: scenario.maxAttempts,
    budget: variant.budget ? permissive() : false,
  };
  if (variant.breaker) options.breaker = admitting() as unknown as RetryOptions['breaker'];
  if (variant.signal !== 'none') options.signal = controller.signal;
  if (variant.hedge) options.hedge = { delayMs: HEDGE_NEVER_MS };
  // Longer than the deadline: it must change nothing.
  if (variant.attemptTimeout) options.attemptTimeoutMs = scenario.deadlineMs * 3;
  if (variant.hooks) {
    options.onRetry = (e) => events.push(`retry ${e.attempt} ${e.delayMs} ${e.elapsedMs}`);
    options.onGiveUp = (e) => events.push(`give-up ${e.reason} ${e.attempts} ${e.elapsedMs}`);
    options.onSuccess = (e) => events.push(`success ${e.attempts} ${e.elapsedMs}`);
  }
  let settledAt = Number.NaN;
  let outcome = '';
  let report: RetryReport | undefined;
  const call = retry(operation, options).then(
    (value) => {
      settledAt = clock.t;
      outcome = describeOutcome(value);
    },
    (error: unknown) => {
      settledAt = clock.t;
      outcome = describeOutcome(error);
      const full = getRetryReport(error);
      if (full !== undefined) {
        // What hedging did is reported only where it is on: compare the rest.
        const { hedges, ...rest } = full;
        if (variant.hedge) expect(hedges).toMatchObject({ sent: 0, won: 0, cancelled: 0 });
        report = rest;
      }
    },
  );
  if (variant.signal === 'aborting') {
    clock.setTimer(scenario.abortAtMs!, () => controller.abort(new Error('caller left')));
  }
  for (let t = 0; t < 20_000 && Number.isNaN(settledAt); t += 50) await clock.advance(50);
  await call;
  // Let every timer of the scenario's own run out; the engine must have left none.
  await clock.advance(30_000);
  return {
    outcome,
    report,
    calls,
    sleeps: clock.sleeps.filter((ms) => ms !== HEDGE_NEVER_MS),
    settledAt,
    events,
    leftover: clock.pending,
  };
}

describe('one path through the driver', () => {
  it('every option combination gives the same result, report, attempts, waits, time and events', async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, async (scenario) => {
        const runs = [];
        for (const variant of variants(scenario))
          runs.push({ variant, ...(await run(scenario, variant)) });
        const first = runs[0]!;
        const withHooks = runs.find((r) => r.variant.hooks)!;
        for (const r of runs) {
          expect(r.leftover).toEqual({ timers: 0, listeners: 0 });
          expect({ ...r, variant: undefined, events: undefined, leftover: undefined }).toEqual({
            ...first,
            variant: undefined,
            events: undefined,
            leftover: undefined,
          });
          if (r.variant.hooks) expect(r.events).toEqual(withHooks.events);
        }
        // The deadline is a promise: settled by it (or by the abort), give or take late timers.
        const due = Math.min(scenario.deadlineMs, scenario.abortAtMs ?? Number.POSITIVE_INFINITY);
        expect(first.settledAt).toBeLessThanOrEqual(due + scenario.lateMs);
      }),
      { numRuns: 150 },
    );
  });
});
