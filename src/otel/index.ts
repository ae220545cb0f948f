/**
 * stormproof/otel: OpenTelemetry metrics and traces from stormproof's event source
 * (`stormproof:call`, `stormproof:attempt`, `stormproof:hedge`, `stormproof:breaker`,
 * `stormproof:server`). Depends on `@opentelemetry/api` alone (an optional peer); bring your own
 * SDK. `instrument()` is all you write; see docs/observability.md for every metric and span.
 *
 * @example
 * ```ts
 * import { instrument } from 'stormproof/otel';
 * const stop = instrument(); // the global meter and tracer providers
 * ```
 *
 * @module
 */
import {
  type Attributes,
  type Context,
  context,
  createContextKey,
  type Histogram,
  type MeterProvider,
  metrics,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TracerProvider,
  trace,
} from '@opentelemetry/api';
import {
  type AttemptMessage,
  type BreakerMessage,
  type BudgetMessage,
  type CallMessage,
  type CallRef,
  channels,
  type FetchMessage,
  type HedgeMessage,
  type ServerMessage,
  type TimerMessage,
  wrapAttempts,
} from '../core/instrument.js';
import { checkNumber, show } from '../core/validate.js';
import type { ShedderStats } from '../server/shedder.js';

/** The options of `instrument`. */
export interface InstrumentOptions {
  /**
   * Where metrics go.
   * @default the global meter provider (`metrics.getMeterProvider()`)
   * @example
   * ```ts
   * instrument({ meterProvider: new MeterProvider({ readers: [new PrometheusExporter()] }) })
   * ```
   */
  meterProvider?: MeterProvider | undefined;
  /**
   * Where spans go.
   * @default the global tracer provider (`trace.getTracerProvider()`)
   * @example
   * ```ts
   * instrument({ tracerProvider: provider })
   * ```
   */
  tracerProvider?: TracerProvider | undefined;
  /**
   * Whether to record metrics.
   * @default true
   * @example
   * ```ts
   * instrument({ metrics: false }) // traces only
   * ```
   */
  metrics?: boolean | undefined;
  /**
   * Whether to make a span per logical call (with span events for each retry, refusal and hedge)
   * and run each attempt with that span active, so that spans made underneath (undici's, a
   * database driver's) are its children.
   * @default true
   * @example
   * ```ts
   * instrument({ traces: false }) // metrics only
   * ```
   */
  traces?: boolean | undefined;
  /**
   * With traces: whether to make a CLIENT span for each physical request stormproof/fetch sends,
   * with `http.request.resend_count` on every re-send. Turn it off when
   * `@opentelemetry/instrumentation-undici` already makes one per request (Node's fetch), and
   * give it `undiciStartSpanHook` instead: one span per request, never two.
   * @default true
   * @example
   * ```ts
   * instrument({ fetchSpans: false }) // instrumentation-undici makes the HTTP spans
   * ```
   */
  fetchSpans?: boolean | undefined;
  /**
   * The most breakers (by key) and budgets the breaker-state and budget-token gauges report.
   * Past it, the one heard from least recently is forgotten (a budget's id is then given to the
   * next new budget), as `BreakerRegistry` and createFetch forget the origin used least
   * recently past their own bound (1000 by default): a client that calls ever new origins must
   * not grow a gauge without end. A breaker or budget no longer held anywhere is forgotten at
   * the next collection too. Raise it with your registry's `maxKeys` or createFetch's
   * `maxOrigins`.
   * @default 1000
   * @example
   * ```ts
   * instrument({ maxKeys: 10_000 }) // with createFetch({ maxOrigins: 10_000, breaker: { maxKeys: 10_000 } })
   * ```
   */
  maxKeys?: number | undefined;
}

/** What `instrument` returns: stops it (unsubscribes; instruments already made stay registered). */
export interface Instrumentation {
  /** Stops listening. Calling it again does nothing. */
  stop(): void;
}

/** What the server gauges read from each engine's `stats()`. */
type ServerStats = Pick<
  ShedderStats,
  'inflight' | 'limit' | 'queued' | 'rampShare' | 'throttleProbability'
>;

const SCOPE = 'stormproof';
const VERSION = '0.1.0';
/** Seconds: OpenTelemetry's HTTP and gRPC (A66) latency buckets, 5 ms to 100 s. */
const SECONDS = [
  0, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 30, 60, 100,
];
/** gRPC A96's buckets for counts per call. */
const COUNTS = [1, 2, 3, 4, 5];
const ATTEMPT_KEY = createContextKey('stormproof.attempt');

/** The attempt running in `ctx` (from 1), when a stormproof attempt is running there. */
export function attemptOf(ctx: Context = context.active()): number | undefined {
  const value = ctx.getValue(ATTEMPT_KEY);
  return typeof value === 'number' ? value : undefined;
}

/**
 * `http.request.resend_count` for a request made now: the attempt running in the active context
 * minus 1, or undefined on a first attempt (the convention sets it only on resends).
 */
export function resendCount(ctx: Context = context.active()): number | undefined {
  const attempt = attemptOf(ctx);
  return attempt === undefined || attempt <= 1 ? undefined : attempt - 1;
}

/**
 * For `@opentelemetry/instrumentation-undici`'s `startSpanHook` option: adds
 * `http.request.resend_count` to the span of each request a stormproof retry re-sends. undici
 * makes one span per physical request, stormproof none: nothing is doubled. Needs
 * `instrument()` (it runs each attempt with the attempt number in the active context).
 *
 * @example
 * ```ts
 * new UndiciInstrumentation({ startSpanHook: undiciStartSpanHook })
 * ```
 */
export function undiciStartSpanHook(_request?: unknown): Attributes {
  const count = resendCount();
  return count === undefined ? {} : { 'http.request.resend_count': count };
}

/**
 * The same as `undiciStartSpanHook`, for instrumentation-undici's `requestHook` option: sets
 * `http.request.resend_count` on the request's span.
 *
 * @example
 * ```ts
 * new UndiciInstrumentation({ requestHook: undiciRequestHook })
 * ```
 */
export function undiciRequestHook(span: Span, _request?: unknown): void {
  const count = resendCount();
  if (count !== undefined) span.setAttribute('http.request.resend_count', count);
}

const BREAKER_STATES: Readonly<Record<string, number>> = {
  closed: 0,
  open: 1,
  'half-open': 2,
  isolated: 3,
};

/**
 * An origin as `URL.origin` writes it (`https://api.example.com`, `http://127.0.0.1:8080`,
 * `http://[::1]:3000`): a scheme, a host and an optional port, nothing after.
 */
const ORIGIN = /^([a-z][a-z0-9+.-]*):\/\/(\[[0-9a-f:.]+\]|[^/?#@:[\]\s]+)(?::(\d{1,5}))?$/i;
const DEFAULT_PORTS: Readonly<Record<string, number>> = { http: 80, https: 443, ws: 80, wss: 443 };

/**
 * The attributes that name a breaker by its key. stormproof/fetch, stormproof/axios and
 * stormproof/undici key breakers by origin, and an origin is a URL: one series per scheme, host
 * and port, the host alone being what a dashboard groups by. So an origin becomes
 * OpenTelemetry's `server.address` and `server.port` (the port the scheme implies when none is
 * written), as on HTTP client spans, and no scheme or URL string is exported; any other key (a
 * name chosen by the user, `payments-db`) is `stormproof.breaker.key` as given.
 */
function breakerAttrs(key: string): Attributes {
  const origin = ORIGIN.exec(key);
  if (origin === null) return { 'stormproof.breaker.key': key };
  const port =
    origin[3] === undefined ? DEFAULT_PORTS[origin[1]!.toLowerCase()] : Number(origin[3]);
  return port === undefined
    ? { 'server.address': origin[2]!.toLowerCase() }
    : { 'server.address': origin[2]!.toLowerCase(), 'server.port': port };
}

/** resilience4j's four outcomes, so that dashboards built for it read stormproof too. */
function kindOf(success: boolean, attempts: number): string {
  if (success) return attempts > 1 ? 'successful_with_retry' : 'successful_without_retry';
  return attempts > 1 ? 'failed_with_retry' : 'failed_without_retry';
}

/** `error.type`: a status, a code or a class name, never a message (low cardinality). */
function errorType(error: unknown): string {
  if (typeof error !== 'object' || error === null) return typeof error;
  const e = error as { status?: unknown; code?: unknown; name?: unknown };
  if (typeof e.status === 'number') return String(e.status);
  if (typeof e.code === 'string' && e.code.length <= 40) return e.code;
  if (typeof e.name === 'string' && e.name.length <= 40) return e.name;
  return '_OTHER';
}

function policyAttrs(call: CallRef): Attributes {
  return call.policy === undefined ? {} : { 'stormproof.policy': call.policy };
}

function checkOptions(options: unknown): InstrumentOptions {
  if (options === undefined) return {};
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new TypeError(`stormproof: instrument options must be an object, got ${show(options)}`);
  }
  const o = options as Record<string, unknown>;
  const known = ['meterProvider', 'tracerProvider', 'metrics', 'traces', 'fetchSpans', 'maxKeys'];
  for (const key of Object.keys(o)) {
    if (!known.includes(key)) {
      throw new TypeError(
        `stormproof: instrument has no option ${JSON.stringify(key)}; known: ${known.join(', ')}`,
      );
    }
  }
  if (
    o.meterProvider !== undefined &&
    typeof (o.meterProvider as MeterProvider | null)?.getMeter !== 'function'
  ) {
    throw new TypeError(
      `stormproof: instrument meterProvider must be a MeterProvider (with getMeter), got ${show(o.meterProvider)}`,
    );
  }
  if (
    o.tracerProvider !== undefined &&
    typeof (o.tracerProvider as TracerProvider | null)?.getTracer !== 'function'
  ) {
    throw new TypeError(
      `stormproof: instrument tracerProvider must be a TracerProvider (with getTracer), got ${show(o.tracerProvider)}`,
    );
  }
  for (const key of ['metrics', 'traces', 'fetchSpans'] as const) {
    if (o[key] !== undefined && typeof o[key] !== 'boolean') {
      throw new TypeError(`stormproof: instrument ${key} must be a boolean, got ${show(o[key])}`);
    }
  }
  if (o.maxKeys !== undefined)
    checkNumber('instrument', 'maxKeys', o.maxKeys, { min: 1, integer: true });
  return o as InstrumentOptions;
}

/**
 * Subscribes OpenTelemetry metrics and traces to stormproof's event source. Call it once at
 * startup, before the calls you want to see; it returns a handle whose `stop()` unsubscribes.
 * Bad options throw a TypeError naming the option.
 *
 * @example
 * ```ts
 * import { instrument } from 'stormproof/otel';
 * const telemetry = instrument({ meterProvider, tracerProvider });
 * // ... on shutdown:
 * telemetry.stop();
 * ```
 */
export function instrument(options?: InstrumentOptions): Instrumentation {
  const o = checkOptions(options);
  const stops: Array<() => void> = [];
  const listen = <M>(
    channel: {
      subscribe(fn: (m: M, name: string) => void): void;
      unsubscribe(fn: (m: M, name: string) => void): boolean;
    },
    fn: (m: M) => void,
  ) => {
    const subscriber = (m: M) => fn(m);
    channel.subscribe(subscriber);
    stops.push(() => channel.unsubscribe(subscriber));
  };
  if (o.metrics !== false) {
    recordMetrics(o.meterProvider ?? metrics.getMeterProvider(), listen, o.maxKeys ?? 1000);
  }
  if (o.traces !== false) {
    recordTraces(
      o.tracerProvider ?? trace.getTracerProvider(),
      listen,
      stops,
      o.fetchSpans !== false,
    );
  }
  let stopped = false;
  return {
    stop() {
      if (stopped) return;
      stopped = true;
      for (const stop of stops.splice(0)) stop();
    },
  };
}

type Listen = <M>(
  channel: {
    subscribe(fn: (m: M, name: string) => void): void;
    unsubscribe(fn: (m: M, name: string) => void): boolean;
  },
  fn: (m: M) => void,
) => void;

function recordMetrics(provider: MeterProvider, listen: Listen, maxKeys: number): void {
  const meter = provider.getMeter(SCOPE, VERSION);
  const seconds = (name: string, description: string): Histogram =>
    meter.createHistogram(name, {
      unit: 's',
      description,
      advice: { explicitBucketBoundaries: SECONDS },
    });
  const count = (name: string, unit: string, description: string): Histogram =>
    meter.createHistogram(name, {
      unit,
      description,
      advice: { explicitBucketBoundaries: COUNTS },
    });

  // Per call.
  const callDuration = seconds(
    'stormproof.call.duration',
    'Duration of a logical call, all its attempts and waits included.',
  );
  const callAttempts = meter.createHistogram('stormproof.call.attempts', {
    unit: '{attempt}',
    description: 'Attempts per logical call, the first included.',
    advice: { explicitBucketBoundaries: [1, 2, 3, 4, 5, 10] },
  });
  const callRetries = count(
    'stormproof.call.retries',
    '{retry}',
    'Retries per call that retried (gRPC A96: nothing is recorded for a call with none).',
  );
  const callHedges = count(
    'stormproof.call.hedges',
    '{hedge}',
    'Hedges sent per call that hedged (gRPC A96: nothing for a call with none).',
  );
  const retryDelay = seconds(
    'stormproof.call.retry_delay',
    'Total time a call waited between attempts, when it waited (gRPC A96).',
  );
  const calls = meter.createCounter('stormproof.calls', {
    unit: '{call}',
    description: 'Logical calls that ended, by outcome.',
  });
  const attemptsCounter = meter.createCounter('stormproof.attempts', {
    unit: '{attempt}',
    description: 'Attempts that ended, by outcome: with stormproof.calls, the amplification ratio.',
  });
  // Per attempt.
  const attemptDuration = seconds('stormproof.attempt.duration', 'Duration of one attempt.');
  const refused = meter.createCounter('stormproof.retry.refused', {
    unit: '{refusal}',
    description:
      'Failures that could have passed but were not retried, by stormproof.refusal.reason.',
  });
  const hedgeEvents = meter.createCounter('stormproof.hedge.events', {
    unit: '{event}',
    description: 'Hedges sent, won, cancelled and refused (by reason).',
  });

  // The amplification ratio since the previous collection, per policy.
  const window = new Map<string, { calls: number; attempts: number }>();
  meter
    .createObservableGauge('stormproof.retry.amplification', {
      unit: '1',
      description:
        'Attempts per logical call over the last collection interval (1 = no retries): the storm indicator.',
    })
    .addCallback((result) => {
      for (const [policy, w] of window) {
        if (w.calls > 0) {
          result.observe(
            w.attempts / w.calls,
            policy === '' ? {} : { 'stormproof.policy': policy },
          );
        }
        w.calls = 0;
        w.attempts = 0;
      }
    });

  listen<CallMessage>(channels.call, (m) => {
    const attrs = policyAttrs(m.call);
    if (m.type === 'refused') {
      refused.add(1, { ...attrs, 'stormproof.refusal.reason': m.reason });
      return;
    }
    if (m.type !== 'end') return;
    const success = m.outcome === 'success';
    const outcomeAttrs: Attributes = {
      ...attrs,
      'stormproof.outcome': m.outcome,
      'stormproof.kind': kindOf(success, m.attempts),
    };
    if (!success) {
      outcomeAttrs['stormproof.give_up.reason'] = m.reason ?? 'unknown';
      outcomeAttrs['error.type'] = errorType(m.error);
    }
    callDuration.record(m.elapsedMs / 1000, outcomeAttrs);
    callAttempts.record(m.attempts, attrs);
    calls.add(1, outcomeAttrs);
    if (m.attempts > 1) callRetries.record(m.attempts - 1, attrs);
    if (m.hedges > 0) callHedges.record(m.hedges, attrs);
    if (m.totalDelayMs > 0) retryDelay.record(m.totalDelayMs / 1000, attrs);
    const key = m.call.policy ?? '';
    let w = window.get(key);
    if (w === undefined) {
      w = { calls: 0, attempts: 0 };
      window.set(key, w);
    }
    w.calls++;
    w.attempts += m.attempts;
  });
  listen<AttemptMessage>(channels.attempt, (m) => {
    if (m.type !== 'end') return;
    const attrs: Attributes = {
      ...policyAttrs(m.call),
      'stormproof.attempt.number': m.attempt,
      'stormproof.attempt.handled': m.outcome !== 'success',
      'stormproof.attempt.outcome': m.outcome,
    };
    if (m.outcome !== 'success') attrs['error.type'] = errorType(m.error);
    attemptDuration.record(m.durationMs / 1000, attrs);
    attemptsCounter.add(1, {
      ...policyAttrs(m.call),
      'stormproof.attempt.outcome': m.outcome,
    });
  });
  listen<HedgeMessage>(channels.hedge, (m) => {
    hedgeEvents.add(1, {
      ...policyAttrs(m.call),
      'stormproof.hedge.event': m.type,
      ...(m.reason === undefined ? {} : { 'stormproof.hedge.refusal': m.reason }),
    });
  });

  // Budgets: each answer, and the tokens left (as last seen) per budget.
  const budgetDecisions = meter.createCounter('stormproof.budget.decisions', {
    unit: '{decision}',
    description: 'Retry budget answers, by stormproof.budget.decision (allowed, refused).',
  });
  // The budgets heard from, least recently first, by id: at most maxKeys, and none no longer held
  // anywhere (a createFetch makes one per origin and forgets the origin used least recently).
  // A forgotten budget's id goes to the next new one, so the ids stay below maxKeys.
  interface BudgetEntry {
    readonly id: number;
    readonly ref: WeakRef<object>;
    readonly type: string;
    tokens: number;
  }
  const budgets = new Map<number, BudgetEntry>();
  const budgetEntries = new WeakMap<object, BudgetEntry>();
  const freeIds: number[] = [];
  const forgetBudget = (entry: BudgetEntry) => {
    budgets.delete(entry.id);
    freeIds.push(entry.id);
    const budget = entry.ref.deref();
    if (budget !== undefined) budgetEntries.delete(budget);
  };
  meter
    .createObservableGauge('stormproof.budget.tokens', {
      unit: '{token}',
      description:
        'Tokens (credits, balance) a retry budget holds, as of its last answer: 0 or below half of a TokenBucket means retries stop.',
    })
    .addCallback((result) => {
      for (const entry of budgets.values()) {
        if (entry.ref.deref() === undefined) {
          forgetBudget(entry);
          continue;
        }
        result.observe(entry.tokens, {
          'stormproof.budget.id': entry.id,
          'stormproof.budget.type': entry.type,
        });
      }
    });
  listen<BudgetMessage>(channels.budget, (m) => {
    const type = (m.budget as { constructor?: { name?: string } }).constructor?.name ?? 'Budget';
    budgetDecisions.add(1, {
      'stormproof.budget.decision': m.type,
      'stormproof.budget.type': type,
    });
    if (m.tokens === undefined) return;
    let entry = budgetEntries.get(m.budget);
    if (entry === undefined) {
      if (budgets.size >= maxKeys) forgetBudget(budgets.values().next().value!);
      // The lowest free id, else the next one.
      let id = budgets.size;
      if (freeIds.length > 0) {
        const at = freeIds.indexOf(Math.min(...freeIds));
        id = freeIds[at]!;
        freeIds.splice(at, 1);
      }
      entry = { id, ref: new WeakRef(m.budget), type, tokens: m.tokens };
      budgetEntries.set(m.budget, entry);
    } else {
      budgets.delete(entry.id); // moved to the end: heard from most recently
    }
    budgets.set(entry.id, entry);
    entry.tokens = m.tokens;
  });

  // Timers: skipped and failed runs.
  const timerSkips = meter.createCounter('stormproof.timer.skipped', {
    unit: '{run}',
    description: 'Scheduled runs skipped, by stormproof.timer.skip.reason (late, overlap).',
  });
  const timerErrors = meter.createCounter('stormproof.timer.errors', {
    unit: '{run}',
    description: 'Scheduled runs that threw or rejected, by error.type.',
  });
  listen<TimerMessage>(channels.timer, (m) => {
    if (m.type === 'skip') {
      timerSkips.add(m.skipped, { 'stormproof.timer.skip.reason': m.reason ?? 'unknown' });
    } else {
      timerErrors.add(1, { 'error.type': errorType(m.error) });
    }
  });

  // Breakers: state (a gauge per key, bounded as the budgets are) and transitions.
  const breakers = new Map<string, { ref: WeakRef<object>; state: number }>();
  const transitions = meter.createCounter('stormproof.breaker.transitions', {
    unit: '{transition}',
    description: 'Circuit breaker state changes, by stormproof.breaker.from and .to.',
  });
  const breakerRefused = meter.createCounter('stormproof.breaker.refused', {
    unit: '{call}',
    description: 'Attempts a circuit breaker did not admit.',
  });
  const probes = meter.createCounter('stormproof.breaker.probes', {
    unit: '{call}',
    description: 'Attempts admitted as probes of a half-open breaker.',
  });
  meter
    .createObservableGauge('stormproof.breaker.state', {
      unit: '1',
      description: 'Circuit breaker state: 0 closed, 1 open, 2 half-open, 3 isolated.',
    })
    .addCallback((result) => {
      for (const [key, { ref, state }] of breakers) {
        if (ref.deref() === undefined) breakers.delete(key);
        else result.observe(state, breakerAttrs(key));
      }
    });
  listen<BreakerMessage>(channels.breaker, (m) => {
    const attrs = breakerAttrs(m.key);
    const known = breakers.get(m.key);
    if (known !== undefined) {
      breakers.delete(m.key); // moved to the end: heard from most recently
      breakers.set(m.key, known);
    }
    if (m.type === 'state') {
      breakers.delete(m.key);
      if (breakers.size >= maxKeys) breakers.delete(breakers.keys().next().value!);
      breakers.set(m.key, { ref: new WeakRef(m.breaker), state: BREAKER_STATES[m.to] ?? -1 });
      transitions.add(1, {
        ...attrs,
        'stormproof.breaker.from': m.from,
        'stormproof.breaker.to': m.to,
      });
    } else if (m.type === 'refused') {
      breakerRefused.add(1, { ...attrs, 'stormproof.breaker.state': m.state });
    } else {
      probes.add(1, attrs);
    }
  });

  // The server: counters and histograms from its messages, gauges from each engine's stats.
  const shedders: Array<WeakRef<{ readonly gateway?: boolean; stats(): ServerStats }>> = [];
  const seen = new WeakSet<object>();
  const admitted = meter.createCounter('stormproof.server.admitted', {
    unit: '{request}',
    description: 'Requests admitted, by stormproof.request.retry.',
  });
  const shed = meter.createCounter('stormproof.server.shed', {
    unit: '{request}',
    description: 'Requests rejected, by stormproof.shed.reason and stormproof.shed.kind.',
  });
  const queueWait = seconds(
    'stormproof.server.queue.wait',
    'Time an admitted request waited in the queue.',
  );
  const retryAfter = seconds(
    'stormproof.server.retry_after',
    'The Retry-After handed out with each come-back-later rejection.',
  );
  const limitChanges = meter.createCounter('stormproof.server.limit.changes', {
    unit: '{change}',
    description: 'Moves of the adaptive concurrency limit, by stormproof.limit.direction.',
  });
  const gauge = (
    name: string,
    unit: string,
    description: string,
    read: (s: ServerStats, gateway: boolean) => number | undefined,
  ) =>
    meter.createObservableGauge(name, { unit, description }).addCallback((result) => {
      shedders.forEach((ref, index) => {
        const s = ref.deref();
        if (s === undefined) return;
        const value = read(s.stats(), s.gateway === true);
        if (value !== undefined) result.observe(value, { 'stormproof.server.id': index });
      });
    });
  gauge('stormproof.server.limit', '{request}', 'The concurrency limit now.', (s) => s.limit);
  gauge('stormproof.server.inflight', '{request}', 'Requests running now.', (s) => s.inflight);
  gauge(
    'stormproof.server.queued',
    '{request}',
    'Requests waiting in the queue now.',
    (s) => s.queued,
  );
  gauge(
    'stormproof.server.ramp.share',
    '1',
    'The share of the limit the ramp lets run (1 when open).',
    (s) => s.rampShare,
  );
  gauge(
    'stormproof.server.throttle.probability',
    '1',
    'Gateway mode: the probability of rejecting a request locally now (the SRE book adaptive throttle).',
    (s, gateway) => (gateway ? s.throttleProbability : undefined),
  );
  listen<ServerMessage>(channels.server, (m) => {
    const engine = m.shedder as { stats?: unknown };
    if (!seen.has(engine) && typeof engine.stats === 'function') {
      seen.add(engine);
      shedders.push(new WeakRef(engine as never));
    }
    if (m.type === 'admitted') {
      admitted.add(1, { 'stormproof.request.retry': m.retry });
      if (m.queuedMs > 0) queueWait.record(m.queuedMs / 1000);
    } else if (m.type === 'shed') {
      shed.add(1, {
        'stormproof.shed.reason': m.reason,
        'stormproof.shed.kind': m.kind,
        'stormproof.request.retry': m.retry,
      });
      if (m.waitMs !== undefined) retryAfter.record(m.waitMs / 1000);
    } else if (m.type === 'limit') {
      limitChanges.add(1, { 'stormproof.limit.direction': m.limit > m.previous ? 'up' : 'down' });
    }
  });
}

function recordTraces(
  provider: TracerProvider,
  listen: Listen,
  stops: Array<() => void>,
  fetchSpans: boolean,
): void {
  const tracer = provider.getTracer(SCOPE, VERSION);
  if (fetchSpans) {
    // One CLIENT span per physical send, a child of the call's span (active while it runs).
    const sends = new WeakMap<object, Span>();
    listen<FetchMessage>(channels.fetch, (m) => {
      if (m.type === 'request') {
        const colon = m.host.lastIndexOf(':');
        const hasPort = colon > 0 && !m.host.endsWith(']');
        const attributes: Attributes = {
          'http.request.method': m.method,
          'url.full': m.url,
          'server.address': hasPort ? m.host.slice(0, colon) : m.host,
          'stormproof.attempt.number': m.attempt,
        };
        if (hasPort) attributes['server.port'] = Number(m.host.slice(colon + 1));
        if (m.resendCount > 0) attributes['http.request.resend_count'] = m.resendCount;
        if (m.hedge > 0) attributes['stormproof.hedge'] = m.hedge;
        sends.set(m.send, tracer.startSpan(m.method, { kind: SpanKind.CLIENT, attributes }));
        return;
      }
      const span = sends.get(m.send);
      if (span === undefined) return;
      sends.delete(m.send);
      if (m.type === 'response') {
        span.setAttribute('http.response.status_code', m.status ?? 0);
        if ((m.status ?? 0) >= 400) {
          span.setAttribute('error.type', String(m.status));
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
      } else {
        span.setAttribute('error.type', errorType(m.error));
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
    });
  }
  const spans = new Map<CallRef, Span>();
  listen<CallMessage>(channels.call, (m) => {
    if (m.type === 'start') {
      const name =
        m.call.policy === undefined ? 'stormproof.call' : `stormproof.call ${m.call.policy}`;
      spans.set(
        m.call,
        tracer.startSpan(name, { kind: SpanKind.INTERNAL, attributes: policyAttrs(m.call) }),
      );
      return;
    }
    const span = spans.get(m.call);
    if (span === undefined) return; // It started before instrument().
    if (m.type === 'retry') {
      span.addEvent('stormproof.retry', {
        'stormproof.attempt.number': m.attempt,
        'stormproof.retry.delay': m.delayMs / 1000,
        'stormproof.failure.kind': m.kind,
        ...(m.retryAfterMs === undefined
          ? {}
          : { 'stormproof.retry_after': m.retryAfterMs / 1000 }),
      });
    } else if (m.type === 'refused') {
      span.addEvent('stormproof.retry.refused', {
        'stormproof.attempt.number': m.attempt,
        'stormproof.refusal.reason': m.reason,
      });
    } else {
      spans.delete(m.call);
      span.setAttributes({
        'stormproof.attempts': m.attempts,
        'stormproof.outcome': m.outcome,
        'stormproof.kind': kindOf(m.outcome === 'success', m.attempts),
        ...(m.totalDelayMs > 0 ? { 'stormproof.retry_delay': m.totalDelayMs / 1000 } : {}),
        ...(m.hedges > 0 ? { 'stormproof.hedges': m.hedges } : {}),
      });
      if (m.outcome === 'failure') {
        span.setAttributes({
          'stormproof.give_up.reason': m.reason ?? 'unknown',
          'error.type': errorType(m.error),
        });
        span.setStatus({ code: SpanStatusCode.ERROR, message: m.reason ?? 'failure' });
      }
      span.end();
    }
  });
  listen<HedgeMessage>(channels.hedge, (m) => {
    spans.get(m.call)?.addEvent('stormproof.hedge', {
      'stormproof.attempt.number': m.attempt,
      'stormproof.hedge.event': m.type,
      ...(m.reason === undefined ? {} : { 'stormproof.hedge.refusal': m.reason }),
    });
  });
  // The attempt wrapper runs only while `stormproof:attempt` is watched: watch it.
  listen<AttemptMessage>(channels.attempt, () => {});
  stops.push(
    wrapAttempts((call, attempt, run) => {
      const span = spans.get(call);
      const base = span === undefined ? context.active() : trace.setSpan(context.active(), span);
      return context.with(base.setValue(ATTEMPT_KEY, attempt), run);
    }),
  );
}
