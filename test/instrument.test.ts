// The one event source (src/core/instrument.ts): what the engine reports into `stormproof:call`,
// `stormproof:attempt` and `stormproof:hedge`, that Node's diagnostics_channel carries the same
// messages, and that watching changes nothing: the same random scenarios give the same result,
// report, attempts, waits and settle time with subscribers as without.
import diagnostics from 'node:diagnostics_channel';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type AttemptMessage,
  type CallMessage,
  channels,
  createRetryPolicy,
  getRetryReport,
  type HedgeMessage,
  type RetryOptions,
  retry,
  usesDiagnosticsChannel,
  wrapAttempts,
} from '../src/index.js';
import { httpError, ManualClock } from './helpers/clocks.js';

type Seen = Array<{ channel: string; message: CallMessage | AttemptMessage | HedgeMessage }>;

/** Subscribes to the engine's channels; returns what they saw and how to stop. */
function watch(): { seen: Seen; stop: () => void } {
  const seen: Seen = [];
  const onCall = (m: CallMessage) => seen.push({ channel: 'call', message: m });
  const onAttempt = (m: AttemptMessage) => seen.push({ channel: 'attempt', message: m });
  const onHedge = (m: HedgeMessage) => seen.push({ channel: 'hedge', message: m });
  channels.call.subscribe(onCall);
  channels.attempt.subscribe(onAttempt);
  channels.hedge.subscribe(onHedge);
  return {
    seen,
    stop: () => {
      channels.call.unsubscribe(onCall);
      channels.attempt.unsubscribe(onAttempt);
      channels.hedge.unsubscribe(onHedge);
    },
  };
}

const stops: Array<() => void> = [];
afterEach(() => {
  for (const stop of stops.splice(0)) stop();
});

describe('the event source', () => {
  it('is diagnostics_channel on Node: a subscriber there sees the same messages', async () => {
    expect(usesDiagnosticsChannel).toBe(true);
    const viaNode: unknown[] = [];
    const onMessage = (m: unknown) => viaNode.push(m);
    diagnostics.subscribe('stormproof:call', onMessage);
    try {
      expect(channels.call.hasSubscribers).toBe(true);
      await retry(() => 'ok', { budget: false });
    } finally {
      diagnostics.unsubscribe('stormproof:call', onMessage);
    }
    expect(channels.call.hasSubscribers).toBe(false);
    expect(viaNode.map((m) => (m as CallMessage).type)).toEqual(['start', 'end']);
  });

  it('reports a call, its attempts, its retry and its end, on the policy clock', async () => {
    const { seen, stop } = watch();
    stops.push(stop);
    const clock = new ManualClock();
    const policy = createRetryPolicy({
      name: 'inventory',
      clock,
      random: () => 0.5,
      budget: false,
    });
    let n = 0;
    const call = policy.retry(
      () =>
        new Promise<string>((resolve, reject) =>
          clock.setTimer(10, () => (++n === 1 ? reject(httpError(503)) : resolve('ok'))),
        ),
    );
    for (let i = 0; i < 20; i++) await clock.advance(50);
    await expect(call).resolves.toBe('ok');
    const lines = seen.map(({ channel, message: m }) => {
      const at = 'atMs' in m ? ` @${m.atMs}` : '';
      if (m.type === 'end' && channel === 'attempt') {
        const a = m as Extract<AttemptMessage, { type: 'end' }>;
        return `attempt end ${a.attempt} ${a.outcome} ${a.durationMs}ms${at}`;
      }
      if (m.type === 'end') {
        const c = m as Extract<CallMessage, { type: 'end' }>;
        return `call end ${c.outcome} attempts=${c.attempts} delay=${c.totalDelayMs}${at}`;
      }
      if (m.type === 'retry') return `call retry ${m.attempt} ${m.kind} wait=${m.delayMs}${at}`;
      if (channel === 'attempt') return `attempt start ${(m as { attempt: number }).attempt}${at}`;
      return `${channel} ${m.type}${at}`;
    });
    // Full jitter at 0.5 of a 200 ms ceiling: a 100 ms wait.
    expect(lines).toEqual([
      'call start @0',
      'attempt start 1 @0',
      'attempt end 1 failure 10ms @10',
      'call retry 1 unavailable wait=100 @10',
      'attempt start 2 @110',
      'attempt end 2 success 10ms @120',
      'call end success attempts=2 delay=100 @120',
    ]);
    const refs = new Set(seen.map(({ message }) => message.call));
    expect(refs.size).toBe(1);
    expect([...refs][0]).toMatchObject({ policy: 'inventory' });
  });

  it('reports a refused retry and why, then the end with the give-up reason', async () => {
    const { seen, stop } = watch();
    stops.push(stop);
    const error = httpError(503);
    await expect(
      retry(
        () => {
          throw error;
        },
        { maxAttempts: 1, budget: false },
      ),
    ).rejects.toBe(error);
    const calls = seen.filter((s) => s.channel === 'call').map((s) => s.message as CallMessage);
    expect(calls.map((m) => m.type)).toEqual(['start', 'refused', 'end']);
    expect(calls[1]).toMatchObject({ reason: 'max-attempts', attempt: 1 });
    expect(calls[2]).toMatchObject({ outcome: 'failure', reason: 'max-attempts', error });
  });

  it('reports hedges sent, won and cancelled', async () => {
    const { seen, stop } = watch();
    stops.push(stop);
    const clock = new ManualClock();
    const policy = createRetryPolicy({
      clock,
      budget: false,
      hedge: { delayMs: 20 },
    });
    const call = policy.retry(({ hedge }) =>
      hedge === 0
        ? new Promise<string>(() => {})
        : new Promise<string>((resolve) => clock.setTimer(5, () => resolve('hedge'))),
    );
    for (let i = 0; i < 10; i++) await clock.advance(10);
    await expect(call).resolves.toBe('hedge');
    const hedges = seen.filter((s) => s.channel === 'hedge').map((s) => s.message.type);
    expect(hedges).toEqual(['sent', 'won', 'cancelled']);
  });

  it('runs each attempt inside the registered wrappers, only while attempts are watched', async () => {
    const inside: number[] = [];
    let depth = 0;
    const unwrap = wrapAttempts((_call, attempt, run) => {
      inside.push(attempt);
      depth++;
      try {
        return run();
      } finally {
        depth--;
      }
    });
    stops.push(unwrap);
    let depthSeen = -1;
    await retry(() => {
      depthSeen = depth;
    });
    expect(inside).toEqual([]); // nobody watches `stormproof:attempt`
    const { stop } = watch();
    stops.push(stop);
    await retry(() => {
      depthSeen = depth;
    });
    expect(inside).toEqual([1]);
    expect(depthSeen).toBe(1);
  });

  it('a subscriber that aborts a call at its start: the call rejects with the reason, no attempt runs', async () => {
    const controller = new AbortController();
    const ends: CallMessage[] = [];
    const onCall = (m: CallMessage) => {
      if (m.type === 'start') controller.abort(new Error('stop at start'));
      else ends.push(m);
    };
    channels.call.subscribe(onCall);
    stops.push(() => channels.call.unsubscribe(onCall));
    let attempts = 0;
    const policy = createRetryPolicy({ budget: false });
    const call = policy.retry(
      () => {
        attempts++;
        return 'ran';
      },
      { signal: controller.signal },
    );
    const error = await call.then(
      () => undefined,
      (e: unknown) => e,
    );
    // A settled call is not run afterwards, and nothing is thrown at the subscriber.
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect((error as Error).message).toBe('stop at start');
    expect(getRetryReport(error)).toMatchObject({ reason: 'aborted', attempts: 0 });
    expect(attempts).toBe(0);
    expect(ends.map((m) => m.type)).toEqual(['end']);
  });
  it('rejects a wrapper that is not a function, naming it', () => {
    expect(() => wrapAttempts(null as never)).toThrow(/wrapAttempts\(wrapper\)/);
  });

  it('rejects a bad policy name, naming the option', () => {
    expect(() => createRetryPolicy({ name: null as never })).toThrow(/name must be/);
    expect(() => createRetryPolicy({ name: '' })).toThrow(/name must be/);
  });
});

// ---------------------------------------------------------------------------------------------
// Watching changes nothing: the same scenario with and without subscribers (and a wrapper).

const behaviour = fc.record({
  kind: fc.constantFrom('ok', '503', '404', '429', 'reset', 'hang'),
  afterMs: fc.integer({ min: 0, max: 700 }),
});
const scenarioArb = fc.record({
  attempts: fc.array(behaviour, { minLength: 1, maxLength: 5 }),
  deadlineMs: fc.integer({ min: 200, max: 4000 }),
  maxAttempts: fc.integer({ min: 1, max: 5 }),
  attemptTimeoutMs: fc.option(fc.integer({ min: 50, max: 2000 }), { nil: undefined }),
  hedgeMs: fc.option(fc.integer({ min: 10, max: 500 }), { nil: undefined }),
  abortAtMs: fc.option(fc.integer({ min: 0, max: 4000 }), { nil: undefined }),
  draws: fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), {
    minLength: 1,
    maxLength: 6,
  }),
});
type Scenario = typeof scenarioArb extends fc.Arbitrary<infer S> ? S : never;

async function run(scenario: Scenario, watched: boolean) {
  const clock = new ManualClock();
  let draw = 0;
  const random = () => scenario.draws[draw++ % scenario.draws.length]!;
  const controller = new AbortController();
  let calls = 0;
  const options: RetryOptions = {
    clock,
    random,
    deadlineMs: scenario.deadlineMs,
    maxAttempts: scenario.maxAttempts,
    budget: false,
    signal: controller.signal,
  };
  if (scenario.attemptTimeoutMs !== undefined) options.attemptTimeoutMs = scenario.attemptTimeoutMs;
  if (scenario.hedgeMs !== undefined) options.hedge = { delayMs: scenario.hedgeMs };
  const watching = watched ? watch() : undefined;
  const unwrap = watched ? wrapAttempts((_c, _a, go) => go()) : undefined;
  let settledAt = Number.NaN;
  let outcome = '';
  let report: unknown;
  try {
    const call = retry(({ attempt, signal }) => {
      calls++;
      const b = scenario.attempts[Math.min(attempt, scenario.attempts.length) - 1]!;
      return new Promise<string>((resolve, reject) => {
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
        if (b.kind === 'hang') return;
        clock.setTimer(b.afterMs, () => {
          if (b.kind === 'ok') resolve(`ok@${attempt}`);
          else if (b.kind === '503') reject(httpError(503));
          else if (b.kind === '404') reject(httpError(404));
          else if (b.kind === '429') reject(httpError(429, { 'retry-after': '1' }));
          else reject(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }));
        });
      });
    }, options).then(
      (value) => {
        settledAt = clock.t;
        outcome = value;
      },
      (error: unknown) => {
        settledAt = clock.t;
        outcome = String((error as Error).message);
        report = getRetryReport(error);
      },
    );
    if (scenario.abortAtMs !== undefined) {
      clock.setTimer(scenario.abortAtMs, () => controller.abort(new Error('caller left')));
    }
    for (let t = 0; t < 20_000 && Number.isNaN(settledAt); t += 50) await clock.advance(50);
    await call;
    await clock.advance(30_000);
  } finally {
    watching?.stop();
    unwrap?.();
  }
  return {
    result: { outcome, report, calls, sleeps: clock.sleeps, settledAt, leftover: clock.pending },
    seen: watching?.seen ?? [],
  };
}

describe('watching changes nothing', () => {
  it('the same scenario gives the same result, report, attempts, waits and settle time', async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, async (scenario) => {
        const plain = await run(scenario, false);
        const watched = await run(scenario, true);
        expect(watched.result).toEqual(plain.result);
        expect(plain.result.leftover).toEqual({ timers: 0, listeners: 0 });
        // One start and one end per call; every attempt that started ended.
        const calls = watched.seen.filter((s) => s.channel === 'call').map((s) => s.message);
        expect(calls[0]!.type).toBe('start');
        expect(calls.at(-1)!.type).toBe('end');
        expect(calls.filter((m) => m.type === 'start' || m.type === 'end')).toHaveLength(2);
        const attempts = watched.seen.filter((s) => s.channel === 'attempt');
        const starts = attempts.filter((s) => s.message.type === 'start').length;
        expect(attempts.filter((s) => s.message.type === 'end').length).toBe(starts);
        const end = calls.at(-1) as Extract<CallMessage, { type: 'end' }>;
        expect(end.attempts).toBe(starts);
        const retries = calls.filter((m) => m.type === 'retry').length;
        // Each attempt after the first follows a retry; a call can end during a retry's wait.
        expect(retries === starts - 1 || retries === starts).toBe(true);
        const sent = watched.seen.filter((s) => s.message.type === 'sent').length;
        expect(end.hedges).toBe(sent);
      }),
      { numRuns: 120 },
    );
  });
});

describe('the server reports into stormproof:server', () => {
  it('admitted, shed by reason with its Retry-After, finished; the same answers as unwatched', async () => {
    const { createShedder } = await import('../src/server/index.js');
    const { channels: ch } = await import('../src/index.js');
    const drive = (watched: boolean) => {
      const seen: string[] = [];
      const onServer = (m: import('../src/index.js').ServerMessage) =>
        seen.push(
          m.type === 'shed'
            ? `shed ${m.reason} ${m.kind} ${m.waitMs !== undefined}`
            : m.type === 'admitted'
              ? `admitted inflight=${m.inflight}`
              : m.type,
        );
      if (watched) ch.server.subscribe(onServer);
      try {
        let t = 0;
        const s = createShedder({
          limit: 2,
          queue: false,
          ramp: false,
          clock: { now: () => t, sleep: async () => {} },
          random: () => 0.5,
        });
        const header = () => null;
        const answers = [s.admit(header), s.admit(header), s.admit(header)] as Array<
          import('../src/server/index.js').Admission
        >;
        t = 5;
        for (const a of answers) if ('finish' in a) a.finish(200);
        return {
          answers: answers.map((a) =>
            'finish' in a ? 'admitted' : `${a.status} ${JSON.stringify(a.headers)}`,
          ),
          seen,
          stats: s.stats(),
        };
      } finally {
        ch.server.unsubscribe(onServer);
      }
    };
    const plain = drive(false);
    const watched = drive(true);
    expect(watched.answers).toEqual(plain.answers);
    expect(watched.stats).toEqual(plain.stats);
    expect(watched.seen).toEqual([
      'admitted inflight=1',
      'admitted inflight=2',
      'shed limit come-back-later true',
      'finished',
      'finished',
    ]);
  });
});

describe('the server reports queueing and the ramp into stormproof:server', () => {
  it('queued, with the queue length; ramp, with the share and step; the queued one admitted after', async () => {
    const { createShedder } = await import('../src/server/index.js');
    const seen: string[] = [];
    const onServer = (m: import('../src/index.js').ServerMessage) =>
      seen.push(
        m.type === 'queued'
          ? `queued ${m.queued} retry=${m.retry}`
          : m.type === 'ramp'
            ? `ramp share=${m.share} step=${m.step}`
            : m.type === 'admitted'
              ? `admitted queuedMs=${m.queuedMs}`
              : m.type,
      );
    channels.server.subscribe(onServer);
    stops.push(() => channels.server.unsubscribe(onServer));
    const clock = new ManualClock();
    const s = createShedder({ limit: 1, queue: { capacity: 4 }, clock, random: () => 0.5 });
    const header = () => null;
    const first = s.admit(header) as import('../src/server/index.js').Admission;
    const second = s.admit(header);
    expect(second).toBeInstanceOf(Promise);
    s.reopen(); // a dependency is back: the ramp starts from its first step, a fifth of the limit
    expect(s.stats()).toMatchObject({ queued: 1, rampShare: 0.2, rampStep: 0 });
    clock.t = 3;
    if ('finish' in first) first.finish(200);
    expect('finish' in (await second)).toBe(true);
    expect(seen).toEqual([
      'admitted queuedMs=0',
      'queued 1 retry=false',
      'ramp share=0.2 step=0',
      'finished',
      'admitted queuedMs=3',
    ]);
  });
});

describe('breakers report into stormproof:breaker', () => {
  it('state changes, refusals and probes', async () => {
    const { CircuitBreaker } = await import('../src/index.js');
    const seen: string[] = [];
    const onBreaker = (m: import('../src/index.js').BreakerMessage) =>
      seen.push(m.type === 'state' ? `${m.key} ${m.from}->${m.to}` : `${m.key} ${m.type}`);
    channels.breaker.subscribe(onBreaker);
    stops.push(() => channels.breaker.unsubscribe(onBreaker));
    let t = 0;
    const b = new CircuitBreaker('db', {
      consecutiveFailures: 1,
      openMs: 100,
      clock: { now: () => t, sleep: async () => {} },
      random: () => 0,
    });
    b.record(b.admit(), 'failure');
    expect(b.admit().admitted).toBe(false);
    t = 10_000;
    b.record(b.admit(), 'success');
    expect(seen[0]).toBe('db closed->open');
    expect(seen[1]).toBe('db refused');
    expect(seen).toContain('db open->half-open');
    expect(seen).toContain('db probe');
    expect(seen.at(-1)).toBe('db half-open->closed');
  });
});

describe('timers report into stormproof:timer', () => {
  it('a failed run, with its error', async () => {
    const { every } = await import('../src/index.js');
    const seen: Array<import('../src/index.js').TimerMessage> = [];
    const onTimer = (m: import('../src/index.js').TimerMessage) => seen.push(m);
    channels.timer.subscribe(onTimer);
    stops.push(() => channels.timer.unsubscribe(onTimer));
    const clock = new ManualClock();
    const stop = new AbortController();
    const boom = new Error('boom');
    let errors = 0;
    const done = every(
      1000,
      () => {
        throw boom;
      },
      { key: 'k', clock, wallClock: () => clock.t, signal: stop.signal, onError: () => errors++ },
    );
    await clock.advance(2500);
    stop.abort();
    await done;
    expect(errors).toBeGreaterThan(0);
    expect(seen.filter((m) => m.type === 'error')).toHaveLength(errors);
    expect(seen[0]).toMatchObject({ type: 'error', error: boom });
  });
});

describe('timers report skipped runs into stormproof:timer', () => {
  it('late (a wake after several slots) and overlap (a run still going), with the count', async () => {
    const { every } = await import('../src/index.js');
    const seen: Array<import('../src/index.js').TimerMessage> = [];
    const onTimer = (m: import('../src/index.js').TimerMessage) => seen.push(m);
    channels.timer.subscribe(onTimer);
    stops.push(() => channels.timer.unsubscribe(onTimer));
    const skips: Array<{ reason: string; skipped: number }> = [];
    const run = async (clock: ManualClock, task: () => Promise<void>) => {
      const stop = new AbortController();
      const done = every(1000, task, {
        clock,
        wallClock: () => clock.t,
        signal: stop.signal,
        jitter: 0,
        onSkip: ({ reason, skipped }) => skips.push({ reason, skipped }),
      });
      await clock.advance(5000);
      stop.abort();
      await done;
    };
    // Every timer fires 2.5 s late: slots go by unrun.
    await run(new ManualClock({ lateMs: 2500 }), async () => {});
    // The first run takes 2.5 s: the slots during it are skipped.
    const slow = new ManualClock();
    let runs = 0;
    await run(slow, async () => {
      if (++runs === 1) await slow.sleep(2500);
    });
    expect(skips.map((k) => k.reason)).toContain('late');
    expect(skips.map((k) => k.reason)).toContain('overlap');
    expect(
      seen.filter((m) => m.type === 'skip').map((m) => ({ reason: m.reason, skipped: m.skipped })),
    ).toEqual(skips);
  });
});

describe('the portable channel (browsers, workerd)', () => {
  it('subscribes once, unsubscribes, and a throwing subscriber reaches neither the others nor the publisher', async () => {
    const { PortableChannel } = await import('../src/core/instrument.js');
    const c = new PortableChannel<number>('stormproof:test');
    expect(c.hasSubscribers).toBe(false);
    const got: number[] = [];
    const keep = (m: number) => got.push(m);
    const boom = new Error('subscriber bug');
    const broken = () => {
      throw boom;
    };
    c.subscribe(broken);
    c.subscribe(keep);
    c.subscribe(keep);
    expect(c.hasSubscribers).toBe(true);
    const reported: unknown[] = [];
    const onUncaught = (error: unknown) => reported.push(error);
    process.prependListener('uncaughtException', onUncaught);
    try {
      c.publish(1);
      await new Promise((resolve) => setTimeout(resolve, 0));
    } finally {
      process.removeListener('uncaughtException', onUncaught);
    }
    expect(got).toEqual([1]);
    expect(reported).toEqual([boom]);
    expect(c.unsubscribe(broken)).toBe(true);
    expect(c.unsubscribe(broken)).toBe(false);
    expect(c.unsubscribe(keep)).toBe(true);
    expect(c.hasSubscribers).toBe(false);
    c.publish(2);
    expect(got).toEqual([1]);
  });
});
