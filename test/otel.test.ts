// stormproof/otel against the real OpenTelemetry SDK: metrics through the SDK's
// InMemoryMetricExporter, spans through InMemorySpanExporter; the end-to-end runs (a shedding server scraped
// through exporter-prometheus, a fetch client against a failing server) are in
// test/otel.integration.test.ts.
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  AggregationTemporality,
  type DataPoint,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CircuitBreaker, createRetryPolicy, retry } from '../src/index.js';
import { instrument, undiciRequestHook, undiciStartSpanHook } from '../src/otel/index.js';
import { createShedder } from '../src/server/index.js';
import { httpError, ManualClock } from './helpers/clocks.js';

/** The SDK's in-memory metric exporter, behind a reader that exports only when flushed. */
class MetricSink {
  readonly exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  readonly reader = new PeriodicExportingMetricReader({
    exporter: this.exporter,
    exportIntervalMillis: 2 ** 31 - 1,
  });
}

/** Every data point of every metric, by metric name, as the exporter got them on a flush. */
async function read(sink: MetricSink) {
  sink.exporter.reset();
  await sink.reader.forceFlush();
  const resourceMetrics = sink.exporter.getMetrics().at(-1);
  if (resourceMetrics === undefined) throw new Error('the flush exported nothing');
  const out = new Map<string, { unit: string; points: DataPoint<unknown>[] }>();
  for (const scope of resourceMetrics.scopeMetrics) {
    for (const metric of scope.metrics) {
      out.set(metric.descriptor.name, {
        unit: metric.descriptor.unit,
        points: metric.dataPoints as DataPoint<unknown>[],
      });
    }
  }
  return out;
}

const contextManager = new AsyncLocalStorageContextManager();
beforeAll(() => {
  context.setGlobalContextManager(contextManager.enable());
});
afterAll(() => {
  context.disable();
});

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function setup(options: { maxKeys?: number } = {}) {
  const reader = new MetricSink();
  const meterProvider = new MeterProvider({ readers: [reader.reader] });
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  const handle = instrument({ meterProvider, tracerProvider, ...options });
  cleanups.push(
    () => handle.stop(),
    () => meterProvider.shutdown(),
    () => tracerProvider.shutdown(),
  );
  return { reader, exporter, tracerProvider };
}

/** A policy on a manual clock whose operation fails `failures` times with 503, then succeeds. */
async function flaky(failures: number, name = 'inventory', maxAttempts = 4) {
  const clock = new ManualClock();
  const policy = createRetryPolicy({ name, clock, random: () => 0.5, budget: false, maxAttempts });
  let n = 0;
  const call = policy.retry(
    () =>
      new Promise<string>((resolve, reject) =>
        clock.setTimer(10, () => (++n <= failures ? reject(httpError(503)) : resolve('ok'))),
      ),
  );
  const settled = call.then(
    () => 'ok',
    () => 'failed',
  );
  for (let i = 0; i < 200; i++) await clock.advance(50);
  return settled;
}

describe('stormproof/otel metrics', () => {
  it('per call and per attempt, in seconds, with low-cardinality attributes', async () => {
    const { reader } = setup();
    expect(await flaky(2)).toBe('ok');
    expect(await flaky(0)).toBe('ok');
    expect(await flaky(9, 'inventory', 2)).toBe('failed');
    const m = await read(reader);
    const duration = m.get('stormproof.call.duration')!;
    expect(duration.unit).toBe('s');
    const byKind = Object.fromEntries(
      duration.points.map((p) => [p.attributes['stormproof.kind'], p]),
    );
    expect(Object.keys(byKind).sort()).toEqual([
      'failed_with_retry',
      'successful_with_retry',
      'successful_without_retry',
    ]);
    // Two 10 ms attempts with a 100 ms wait and 10 ms, then 10 + 200 + 10... in seconds.
    const ok2 = byKind.successful_with_retry!.value as { sum: number; count: number };
    expect(ok2.count).toBe(1);
    expect(ok2.sum).toBeCloseTo((10 + 100 + 10 + 200 + 10) / 1000, 6);
    const failed = byKind.failed_with_retry!;
    expect(failed.attributes).toMatchObject({
      'stormproof.policy': 'inventory',
      'stormproof.outcome': 'failure',
      'stormproof.give_up.reason': 'max-attempts',
      'error.type': '503',
    });
    // A96: retries recorded only for calls that retried (2 and 1).
    const retries = m.get('stormproof.call.retries')!.points[0]!.value as {
      sum: number;
      count: number;
    };
    expect({ sum: retries.sum, count: retries.count }).toEqual({ sum: 3, count: 2 });
    const delay = m.get('stormproof.call.retry_delay')!;
    expect(delay.unit).toBe('s');
    const attempts = m.get('stormproof.attempt.duration')!;
    const handled = attempts.points.filter((p) => p.attributes['stormproof.attempt.handled']);
    expect(handled.reduce((s, p) => s + (p.value as { count: number }).count, 0)).toBe(4);
    const refused = m.get('stormproof.retry.refused')!.points;
    expect(refused.map((p) => [p.attributes['stormproof.refusal.reason'], p.value])).toEqual([
      ['max-attempts', 1],
    ]);
    // 3 + 1 + 2 attempts over 3 calls.
    const ratio = m.get('stormproof.retry.amplification')!.points;
    expect(ratio.map((p) => p.value)).toEqual([2]);
    for (const [, metric] of m) {
      for (const p of metric.points) {
        for (const value of Object.values(p.attributes)) expect(String(value)).not.toMatch(/:\/\//);
      }
    }
  });

  it('breaker state and transitions; server limit, shed by reason, Retry-After', async () => {
    const { reader } = setup();
    const t = 0;
    const clock = { now: () => t, sleep: async () => {} };
    const breaker = new CircuitBreaker('db', {
      consecutiveFailures: 1,
      openMs: 100,
      clock,
      random: () => 0,
    });
    breaker.record(breaker.admit(), 'failure');
    breaker.admit();
    const shedder = createShedder({
      limit: 2,
      queue: false,
      ramp: false,
      clock,
      random: () => 0.5,
    });
    for (let i = 0; i < 5; i++) shedder.admit(() => null);
    const m = await read(reader);
    expect(m.get('stormproof.breaker.state')!.points.map((p) => p.value)).toEqual([1]);
    expect(m.get('stormproof.breaker.transitions')!.points[0]!.attributes).toMatchObject({
      'stormproof.breaker.from': 'closed',
      'stormproof.breaker.to': 'open',
    });
    expect(m.get('stormproof.breaker.refused')!.points[0]!.value).toBe(1);
    expect(m.get('stormproof.server.limit')!.points.map((p) => p.value)).toEqual([2]);
    expect(m.get('stormproof.server.inflight')!.points.map((p) => p.value)).toEqual([2]);
    const shed = m.get('stormproof.server.shed')!.points;
    expect(shed.map((p) => [p.attributes['stormproof.shed.reason'], p.value])).toEqual([
      ['limit', 3],
    ]);
    const retryAfter = m.get('stormproof.server.retry_after')!;
    expect(retryAfter.unit).toBe('s');
    expect((retryAfter.points[0]!.value as { count: number }).count).toBe(3);
  });
  it('a breaker keyed by origin is named by server.address and server.port, never the URL', async () => {
    const { reader } = setup();
    const clock = { now: () => 0, sleep: async () => {} };
    const keys = [
      'payments-db',
      'https://api.example.com',
      'http://127.0.0.1:8080',
      'http://[::1]:3000',
      'ftp://files.example.com',
    ];
    for (const key of keys) {
      const breaker = new CircuitBreaker(key, { consecutiveFailures: 1, clock, random: () => 0 });
      breaker.record(breaker.admit(), 'failure');
    }
    const m = await read(reader);
    for (const name of ['stormproof.breaker.state', 'stormproof.breaker.transitions']) {
      const named = m
        .get(name)!
        .points.map(({ attributes: a }) =>
          Object.fromEntries(
            Object.entries(a).filter(
              ([k]) => !k.startsWith('stormproof.breaker.') || k.endsWith('.key'),
            ),
          ),
        );
      expect(named, name).toEqual([
        { 'stormproof.breaker.key': 'payments-db' },
        { 'server.address': 'api.example.com', 'server.port': 443 },
        { 'server.address': '127.0.0.1', 'server.port': 8080 },
        { 'server.address': '[::1]', 'server.port': 3000 },
        { 'server.address': 'files.example.com' },
      ]);
    }
  });

  it('the ramp: its share as a gauge, requests past it shed with reason ramp; the queue as a gauge', async () => {
    const { reader } = setup();
    const clock = new ManualClock();
    const ramped = createShedder({ limit: 10, queue: { capacity: 4 }, clock, random: () => 0.5 });
    const queueing = createShedder({ limit: 1, queue: { capacity: 4 }, clock, random: () => 0.5 });
    ramped.reopen(); // a dependency is back: a fifth of the limit of 10 runs at once, 2
    const answers = [1, 2, 3].map(() => ramped.admit(() => null));
    expect(answers.map((a) => 'finish' in a)).toEqual([true, true, false]);
    queueing.admit(() => null);
    const waiting = queueing.admit(() => null);
    expect(waiting).toBeInstanceOf(Promise);
    const m = await read(reader);
    const byServer = (name: string) =>
      m.get(name)!.points.map((p) => [p.attributes['stormproof.server.id'], p.value]);
    expect(byServer('stormproof.server.ramp.share')).toEqual([
      [0, ramped.stats().rampShare],
      [1, 1],
    ]);
    expect(ramped.stats().rampShare).toBe(0.2);
    expect(m.get('stormproof.server.ramp.share')!.unit).toBe('1');
    expect(byServer('stormproof.server.queued')).toEqual([
      [0, 0],
      [1, 1],
    ]);
    expect(
      m
        .get('stormproof.server.shed')!
        .points.map((p) => [p.attributes['stormproof.shed.reason'], p.value]),
    ).toEqual([['ramp', 1]]);
    queueing.close();
    await waiting;
  });

  it('timer runs skipped, by reason, counted by how many', async () => {
    const { reader } = setup();
    const { every } = await import('../src/index.js');
    const clock = new ManualClock({ lateMs: 2500 });
    const stop = new AbortController();
    const skips: number[] = [];
    const done = every(1000, () => {}, {
      clock,
      wallClock: () => clock.t,
      signal: stop.signal,
      jitter: 0,
      onSkip: ({ skipped }) => skips.push(skipped),
    });
    await clock.advance(5000);
    stop.abort();
    await done;
    expect(skips.length).toBeGreaterThan(0);
    const m = await read(reader);
    const skipped = m.get('stormproof.timer.skipped')!;
    expect(skipped.unit).toBe('{run}');
    expect(skipped.points.map((p) => [p.attributes, p.value])).toEqual([
      [{ 'stormproof.timer.skip.reason': 'late' }, skips.reduce((a, b) => a + b, 0)],
    ]);
  });

  it("gateway mode: the throttle's probability of rejecting locally, for gateways only", async () => {
    const { reader } = setup();
    const clock = { now: () => 0, sleep: async () => {} };
    const gateway = createShedder({
      gateway: {},
      queue: false,
      ramp: false,
      clock,
      random: () => 0.99,
    });
    const plain = createShedder({ queue: false, ramp: false, clock, random: () => 0.99 });
    plain.admit(() => null);
    // Fifty requests sent downstream, every one failed: the throttle starts rejecting locally.
    for (let i = 0; i < 50; i++) {
      const ticket = gateway.admit(() => null);
      // With no queue an answer comes at once, and the throttle does not refuse before it has seen enough.
      if (ticket instanceof Promise || !ticket.admitted) continue;
      ticket.finish(503);
    }
    const probability = gateway.stats().throttleProbability;
    expect(probability).toBeGreaterThan(0.5);
    const m = await read(reader);
    const points = m.get('stormproof.server.throttle.probability')!.points;
    expect(points.map((p) => p.value)).toEqual([probability]);
    expect(m.get('stormproof.server.throttle.probability')!.unit).toBe('1');
  });
});

describe('stormproof/otel budgets', () => {
  it('budget answers and tokens; a refused retry counted by reason budget', async () => {
    const { reader } = setup();
    const { TokenBucket } = await import('../src/index.js');
    const budget = new TokenBucket({ maxTokens: 2, tokenRatio: 0.1 });
    const error = httpError(503);
    await expect(
      retry(
        () => {
          throw error;
        },
        { budget, baseDelayMs: 1 },
      ),
    ).rejects.toBe(error);
    const m = await read(reader);
    expect(m.get('stormproof.budget.tokens')!.points.map((p) => [p.value, p.attributes])).toEqual([
      [1, { 'stormproof.budget.id': 0, 'stormproof.budget.type': 'TokenBucket' }],
    ]);
    expect(
      m
        .get('stormproof.budget.decisions')!
        .points.map((p) => [p.attributes['stormproof.budget.decision'], p.value]),
    ).toEqual([['refused', 1]]);
    expect(
      m
        .get('stormproof.retry.refused')!
        .points.map((p) => [p.attributes['stormproof.refusal.reason'], p.value]),
    ).toEqual([['budget', 1]]);
  });
});

describe('stormproof/otel gauges per key, bounded', () => {
  const clock = { now: () => 0, sleep: async () => {} };
  const open = (key: string) => {
    const breaker = new CircuitBreaker(key, { consecutiveFailures: 1, clock, random: () => 0 });
    breaker.record(breaker.admit(), 'failure');
    return breaker;
  };

  it('the breaker-state gauge keeps the maxKeys breakers heard from most recently', async () => {
    const { reader } = setup({ maxKeys: 3 });
    const held = ['a', 'b', 'c'].map(open);
    // 'b' is heard from again (a refused attempt): 'a' and then 'c' go first.
    held[1]!.admit();
    held.push(open('d'), open('e'));
    const m = await read(reader);
    const keys = m
      .get('stormproof.breaker.state')!
      .points.map((p) => p.attributes['stormproof.breaker.key']);
    expect(keys.sort()).toEqual(['b', 'd', 'e']);
    expect(held).toHaveLength(5); // all still held: forgotten by the bound alone
  });

  it('by default it keeps 1000, as BreakerRegistry and createFetch do', async () => {
    const { reader } = setup();
    const held = Array.from({ length: 1005 }, (_, i) => open(`origin-${i}`));
    const m = await read(reader);
    const keys = m
      .get('stormproof.breaker.state')!
      .points.map((p) => p.attributes['stormproof.breaker.key']);
    expect(keys).toHaveLength(1000);
    expect(keys).not.toContain('origin-4');
    expect(keys).toContain('origin-5');
    expect(held).toHaveLength(1005);
  });

  it('the budget-token gauge keeps maxKeys budgets, and hands a forgotten id to the next', async () => {
    const { reader } = setup({ maxKeys: 3 });
    const { RetryBudget } = await import('../src/index.js');
    const budgets = Array.from({ length: 5 }, () => new RetryBudget({ maxCredits: 20, cost: 10 }));
    budgets.forEach((budget, i) => {
      for (let n = 0; n <= i % 2; n++) budget.tryRetry(0); // tokens: 10 or 0
    });
    const m = await read(reader);
    const points = m.get('stormproof.budget.tokens')!.points;
    // Budgets 2, 3 and 4 (heard from last), with ids 0 to 2: the ids of 0 and 1 were reused.
    expect(points.map((p) => [p.attributes['stormproof.budget.id'], p.value])).toEqual([
      [2, 10],
      [0, 0],
      [1, 10],
    ]);
    expect(budgets).toHaveLength(5);
  });
});

describe('stormproof/otel traces', () => {
  it('one span per logical call, with an event per retry and refusal, under the caller span', async () => {
    const { exporter, tracerProvider } = setup();
    const tracer = tracerProvider.getTracer('test');
    const parent = tracer.startSpan('request');
    await context.with(trace.setSpan(context.active(), parent), () => flaky(9, 'inventory', 3));
    parent.end();
    const spans = exporter.getFinishedSpans();
    const call = spans.find((s) => s.name === 'stormproof.call inventory')!;
    expect(call.parentSpanContext?.spanId).toBe(parent.spanContext().spanId);
    expect(call.events.map((e) => e.name)).toEqual([
      'stormproof.retry',
      'stormproof.retry',
      'stormproof.retry.refused',
    ]);
    expect(call.events[0]!.attributes).toMatchObject({
      'stormproof.attempt.number': 1,
      'stormproof.retry.delay': 0.1,
      'stormproof.failure.kind': 'unavailable',
    });
    expect(call.attributes).toMatchObject({
      'stormproof.attempts': 3,
      'stormproof.outcome': 'failure',
      'stormproof.give_up.reason': 'max-attempts',
    });
    expect(call.status.code).toBe(2); // ERROR
  });

  it('runs attempts with the call span active and the resend count for undici spans', async () => {
    const { exporter, tracerProvider } = setup();
    const tracer = tracerProvider.getTracer('test');
    const seen: Array<{ attrs: object; parent: string | undefined }> = [];
    let n = 0;
    await retry(
      async () => {
        // What instrumentation-undici does for each physical request.
        const span = tracer.startSpan('GET', { attributes: undiciStartSpanHook() });
        span.end();
        seen.push({ attrs: undiciStartSpanHook(), parent: undefined });
        if (++n < 3) throw httpError(503);
        return 'ok';
      },
      { baseDelayMs: 1, budget: false },
    );
    const spans = exporter.getFinishedSpans();
    const call = spans.find((s) => s.name === 'stormproof.call')!;
    const gets = spans.filter((s) => s.name === 'GET');
    expect(gets).toHaveLength(3);
    for (const get of gets) expect(get.parentSpanContext?.spanId).toBe(call.spanContext().spanId);
    expect(gets.map((s) => s.attributes['http.request.resend_count'])).toEqual([undefined, 1, 2]);
  });

  it('undiciRequestHook sets the resend count on the span of each re-send, and nothing else', async () => {
    setup();
    // What instrumentation-undici does with its requestHook: calls it with the request's span.
    const set: Array<Array<[string, unknown]>> = [];
    const hook = () => {
      const calls: Array<[string, unknown]> = [];
      undiciRequestHook({
        setAttribute: (key: string, value: unknown) => calls.push([key, value]),
      } as never);
      set.push(calls);
    };
    hook(); // outside any call: not a resend
    let n = 0;
    await retry(
      async () => {
        hook();
        if (++n < 3) throw httpError(503);
        return 'ok';
      },
      { baseDelayMs: 1, budget: false },
    );
    expect(set).toEqual([
      [],
      [],
      [['http.request.resend_count', 1]],
      [['http.request.resend_count', 2]],
    ]);
  });

  it('stop() unsubscribes; bad options throw naming the option', async () => {
    const { exporter } = setup();
    cleanups.pop()?.();
    cleanups.pop()?.();
    const handle = cleanups.pop() as () => void;
    handle();
    await retry(() => 'ok');
    expect(exporter.getFinishedSpans()).toHaveLength(0);
    expect(() => instrument(null as never)).toThrow(/instrument options must be an object/);
    expect(() => instrument({ meterProvider: null as never })).toThrow(/meterProvider/);
    expect(() => instrument({ tracerProvider: {} as never })).toThrow(/tracerProvider/);
    expect(() => instrument({ metrics: 'yes' as never })).toThrow(/metrics must be a boolean/);
    expect(() => instrument({ meters: true } as never)).toThrow(/no option "meters"/);
    expect(() => instrument({ maxKeys: 0 })).toThrow(/instrument maxKeys must be >= 1, got 0/);
    expect(() => instrument({ maxKeys: 1.5 })).toThrow(/instrument maxKeys must be an integer/);
  });
});
