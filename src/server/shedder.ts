// The server engine: admits, queues or rejects each request from its headers alone, and answers
// every rejection with one of two distinct answers. Runtime-agnostic: time and randomness are
// injected, the adapters (web, node) only translate requests and responses.
import { OVERLOADED_HEADER } from '../core/classify.js';
import { type Clock, type RandomSource, systemClock } from '../core/clock.js';
import {
  checkKnownKeys,
  checkNumber,
  checkOptionsObject,
  refuseNulls,
  show,
} from '../core/validate.js';
import { type ConcurrencyLimit, createLimit, type LimitOption } from './limits.js';
import { createPushback, type Pushback, type RetryAfterOption } from './pushback.js';
import { Ramp, type RampEvent } from './ramp.js';
import {
  CRITICALITY_LEVELS,
  type Criticality,
  type HeaderReader,
  isRetry,
  PUSHBACK_HEADER,
  readCriticality,
} from './request-info.js';
import { AdaptiveThrottle } from './throttle.js';

/**
 * Why a request was not admitted.
 *
 * - `'limit'`: the concurrency limit was reached and there is no queue (or no room to borrow).
 * - `'queue-full'`: the queue was full, or the request was pushed out by a more important one.
 * - `'queue-timeout'`: it waited in the queue past its time (CoDel).
 * - `'abandoned'`: its caller went away while it waited.
 * - `'ramp'`: the server is reopening in steps and this request fell outside the share.
 * - `'throttle'`: gateway mode: the downstream is failing and this request was rejected here.
 */
export type ShedReason =
  | 'limit'
  | 'queue-full'
  | 'queue-timeout'
  | 'abandoned'
  | 'ramp'
  | 'throttle';

/** The two answers: come back later (with a wait), or overloaded, do not retry. */
export type AnswerKind = 'come-back-later' | 'do-not-retry';

/** A rejection, ready to send: a status, headers, no body to parse. */
export interface Rejection {
  readonly admitted: false;
  readonly reason: ShedReason;
  readonly kind: AnswerKind;
  readonly status: number;
  /** Lower-case header names and values. */
  readonly headers: ReadonlyArray<[string, string]>;
  /** The wait handed out, in ms, for `come-back-later`. */
  readonly waitMs?: number;
}

/** An admitted request. Call `finish` exactly once when its answer is sent (more calls are ignored). */
export interface Ticket {
  readonly admitted: true;
  /** Whether the request was a retry. */
  readonly retry: boolean;
  /**
   * The request is done. `status` is the status sent (undefined when the handler threw);
   * `header` reads the response's headers. Returns true in gateway mode when the downstream said
   * "do not retry": the adapter then marks the answer upward the same way.
   */
  finish(status: number | undefined, header?: HeaderReader): boolean;
}

export type Admission = Ticket | Rejection;

/** One rejection, as an event (no request data: nothing to redact). */
export interface ShedEvent {
  readonly reason: ShedReason;
  readonly kind: AnswerKind;
  readonly retry: boolean;
  readonly waitMs?: number;
}

/** The concurrency limit moved. */
export interface LimitEvent {
  readonly limit: number;
  readonly previous: number;
}

/** A snapshot of the server's state and counters since it was made. */
export interface ShedderStats {
  readonly inflight: number;
  readonly limit: number;
  readonly queued: number;
  readonly admitted: number;
  readonly shed: Readonly<Record<ShedReason, number>>;
  /** Exponential average of the time admitted requests spent queued, in ms. */
  readonly queueDelayMs: number;
  /**
   * Whether the queue is overloaded (LIFO, short waits): it was not empty for a whole interval,
   * and in the last interval a request waited past the target.
   */
  readonly overloaded: boolean;
  /** Completions per second: an exponential average over 100 ms windows (undefined at first). */
  readonly drainPerSecond: number | undefined;
  /**
   * The share of new requests the ramp admits, and its step (-1 at the floor, `steps.length`
   * when open, undefined when the ramp is off).
   */
  readonly rampShare: number;
  readonly rampStep: number | undefined;
  /** Gateway mode: the probability of rejecting locally now. */
  readonly throttleProbability: number;
}

/** Options of the bounded queue. */
export interface QueueOptions {
  /**
   * How many requests may wait (Netflix's LIFO limiter keeps a backlog of 100).
   * @default 100
   * @example
   * ```ts
   * queue: { capacity: 50 }
   * ```
   */
  capacity?: number | undefined;
  /**
   * CoDel's target queueing delay (folly's Codel: 5 ms). Once its oldest request waited past
   * the target the queue serves newest first; while it is overloaded (not empty for a whole
   * interval, until an interval passes with no wait past the target) it also drops requests
   * that waited more than twice the target.
   * @default 5
   * @example
   * ```ts
   * queue: { targetMs: 10 }
   * ```
   */
  targetMs?: number | undefined;
  /**
   * CoDel's interval (folly's Codel: 100 ms): a queue not empty for this long is overloaded
   * (and stays so until this long passes with no wait past the target); until then it is also
   * the longest a request may wait.
   * @default 100
   * @example
   * ```ts
   * queue: { intervalMs: 200 }
   * ```
   */
  intervalMs?: number | undefined;
}

/** Options of the ramp (reopening in steps). */
export interface RampOptions {
  /**
   * The shares admitted, step by step; the last should be 1.
   * @default [0.2, 0.4, 0.6, 0.8, 1]
   * @example
   * ```ts
   * ramp: { steps: [0.1, 0.25, 0.5, 1] }
   * ```
   */
  steps?: readonly number[] | undefined;
  /**
   * The share admitted after stepping back from the first step (Envoy slow start's minimum
   * weight: 10 %).
   * @default 0.1
   * @example
   * ```ts
   * ramp: { floor: 0.05 }
   * ```
   */
  floor?: number | undefined;
  /**
   * Each step lasts at least this long and is judged on what finished in it.
   * @default 1000
   * @example
   * ```ts
   * ramp: { windowMs: 5000 }
   * ```
   */
  windowMs?: number | undefined;
  /**
   * A window is judged only once this many requests finished in it.
   * @default 20
   * @example
   * ```ts
   * ramp: { minRequests: 50 }
   * ```
   */
  minRequests?: number | undefined;
  /**
   * A step fails when more than this share of its requests failed (5xx or threw). Envoy's
   * admission control counts below 95 % success as failing.
   * @default 0.05
   * @example
   * ```ts
   * ramp: { maxErrorRate: 0.1 }
   * ```
   */
  maxErrorRate?: number | undefined;
  /**
   * While fully open, a window with more than this share of failures starts a ramp from the
   * first step (an outage episode).
   * @default 0.5
   * @example
   * ```ts
   * ramp: { tripErrorRate: 0.3 }
   * ```
   */
  tripErrorRate?: number | undefined;
  /**
   * A step fails when its mean latency exceeds this many times the larger of two references: the
   * mean of healthy open windows (before the episode) and the latest healthy window at the floor
   * (the service as it is now, at the least load: a cache still cold after an outage is slower
   * at any load, and must not hold the ramp at its floor).
   * @default 2
   * @example
   * ```ts
   * ramp: { latencyTolerance: 3 }
   * ```
   */
  latencyTolerance?: number | undefined;
}

/** Options of gateway mode (one retry layer). */
export interface GatewayOptions {
  /**
   * The SRE book's K: the downstream may reject up to (K - 1) / K of requests before this
   * gateway starts rejecting locally.
   * @default 2
   * @example
   * ```ts
   * gateway: { k: 1.5 }
   * ```
   */
  k?: number | undefined;
  /**
   * The window the requests and accepts are counted over (Envoy's admission control: 30 s;
   * the SRE book: 2 minutes).
   * @default 30000
   * @example
   * ```ts
   * gateway: { windowMs: 120_000 }
   * ```
   */
  windowMs?: number | undefined;
  /**
   * The highest probability of rejecting locally (Envoy's admission control: 80 %), so some
   * requests always probe the downstream.
   * @default 0.8
   * @example
   * ```ts
   * gateway: { maxRejection: 0.9 }
   * ```
   */
  maxRejection?: number | undefined;
  /**
   * No local rejection until the window holds this many requests (a cold or quiet gateway).
   * @default 20
   * @example
   * ```ts
   * gateway: { minRequests: 5 }
   * ```
   */
  minRequests?: number | undefined;
}

/** Hooks for metrics and logs. They carry no request data. */
export interface ShedderHooks {
  /**
   * Called for every rejection.
   * @default undefined
   * @example
   * ```ts
   * onShed: (e) => metrics.increment('shed', { reason: e.reason, retry: e.retry })
   * ```
   */
  onShed?: ((event: ShedEvent) => unknown) | undefined;
  /**
   * Called each time the ramp moves (a step up, a step back, opening), with the reason.
   * @default undefined
   * @example
   * ```ts
   * onRamp: (e) => log.info(`admitting ${e.share * 100}% (${e.reason})`)
   * ```
   */
  onRamp?: ((event: RampEvent) => unknown) | undefined;
  /**
   * Called when an adaptive concurrency limit moves.
   * @default undefined
   * @example
   * ```ts
   * onLimit: (e) => metrics.gauge('limit', e.limit)
   * ```
   */
  onLimit?: ((event: LimitEvent) => unknown) | undefined;
}

/** Options of `createShedder` and of both adapters. */
export interface ShedderOptions extends ShedderHooks {
  /**
   * The concurrency limit: a number (fixed) or an adaptive one, `{ kind: 'gradient2' }` or
   * `{ kind: 'aimd' }` with their own options. The adaptive limits never go below 20: when what
   * the handler waits on serves fewer at once (a database pool of 10), set this to that number,
   * or requests wait inside the handler, out of the queue's reach.
   * @default { kind: 'gradient2' } (initial 20, min 20, max 200, smoothing 0.2, tolerance 1.5)
   * @example
   * ```ts
   * limit: 10 // behind a database pool of 10 connections
   * ```
   */
  limit?: LimitOption | undefined;
  /**
   * The bounded CoDel queue in front of the limit, or `false` to reject at once when full.
   * @default { capacity: 100, targetMs: 5, intervalMs: 100 }
   * @example
   * ```ts
   * queue: false
   * ```
   */
  queue?: QueueOptions | false | undefined;
  /**
   * Serve first attempts before retries under contention: retries get a guaranteed share of
   * `retryShare` of the limit, first attempts the rest; a share idle capacity is lent out.
   * @default true
   * @example
   * ```ts
   * prioritizeFirstAttempts: false // several replicas behind a balancer: a retry goes elsewhere
   * ```
   */
  prioritizeFirstAttempts?: boolean | undefined;
  /**
   * The share of the limit guaranteed to retries (first attempts get the rest).
   * @default 0.1
   * @example
   * ```ts
   * retryShare: 0.2
   * ```
   */
  retryShare?: number | undefined;
  /**
   * A request header naming the SRE book's criticality (`critical_plus`, `critical`,
   * `sheddable_plus`, `sheddable`); queued requests are served and kept most critical first.
   * Off when undefined.
   * @default undefined
   * @example
   * ```ts
   * criticalityHeader: 'x-criticality'
   * ```
   */
  criticalityHeader?: string | undefined;
  /**
   * The criticality of a request without a valid criticality header.
   * @default 'critical'
   * @example
   * ```ts
   * defaultCriticality: 'sheddable_plus'
   * ```
   */
  defaultCriticality?: Criticality | undefined;
  /**
   * The status of "come back later": 503, or 429 so load balancers do not eject an instance
   * that sheds on purpose.
   * @default 503
   * @example
   * ```ts
   * status: 429
   * ```
   */
  status?: 503 | 429 | undefined;
  /**
   * The status of "overloaded, do not retry".
   * @default 503
   * @example
   * ```ts
   * doNotRetryStatus: 429
   * ```
   */
  doNotRetryStatus?: 503 | 429 | undefined;
  /**
   * How long rejected clients are told to wait: spread uniformly (default), load-aware (the
   * k-th rejected client gets a slot k / drain rate ahead, capped at 30 s), or fixed.
   * @default { mode: 'spread', minMs: 1000, maxMs: 5000 }
   * @example
   * ```ts
   * retryAfter: { mode: 'load-aware', capMs: 30_000 }
   * ```
   */
  retryAfter?: RetryAfterOption | undefined;
  /**
   * Says whether the whole service (not just this instance) is overloaded; while it returns
   * true, rejections say "overloaded, do not retry" instead of "come back later".
   * @default undefined
   * @example
   * ```ts
   * serviceOverloaded: () => fleet.sheddingShare() > 0.5
   * ```
   */
  serviceOverloaded?: (() => boolean) | undefined;
  /**
   * Reopening in steps after an outage episode, or `false` to turn it off.
   * @default { steps: [0.2, 0.4, 0.6, 0.8, 1], floor: 0.1, windowMs: 1000, maxErrorRate: 0.05 }
   * @example
   * ```ts
   * ramp: { windowMs: 5000 }
   * ```
   */
  ramp?: RampOptions | false | undefined;
  /**
   * Gateway mode: throttle toward a failing downstream (SRE client-side adaptive throttling)
   * and turn a downstream "do not retry" into the same answer upward.
   * @default false
   * @example
   * ```ts
   * gateway: true
   * ```
   */
  gateway?: GatewayOptions | boolean | undefined;
  /**
   * Where time comes from.
   * @default systemClock
   * @example
   * ```ts
   * clock: { now: () => performance.now(), sleep: (ms) => new Promise((r) => setTimeout(r, ms)) }
   * ```
   */
  clock?: Clock | undefined;
  /**
   * The random source for spread waits, the ramp and the gateway throttle.
   * @default Math.random
   * @example
   * ```ts
   * random: seededRandom(42)
   * ```
   */
  random?: RandomSource | undefined;
}

const OPTION_KEYS = [
  'limit',
  'queue',
  'prioritizeFirstAttempts',
  'retryShare',
  'criticalityHeader',
  'defaultCriticality',
  'status',
  'doNotRetryStatus',
  'retryAfter',
  'serviceOverloaded',
  'ramp',
  'gateway',
  'clock',
  'random',
  'onShed',
  'onRamp',
  'onLimit',
];

const SHED_REASONS: readonly ShedReason[] = [
  'limit',
  'queue-full',
  'queue-timeout',
  'abandoned',
  'ramp',
  'throttle',
];

const OWNER = 'server';

function num(
  name: string,
  value: unknown,
  fallback: number,
  range: Parameters<typeof checkNumber>[3],
): number {
  return value === undefined ? fallback : checkNumber(OWNER, name, value, range);
}

function sub(name: string, value: unknown, keys: readonly string[]): Record<string, unknown> {
  if (value === null) throw new TypeError(`stormproof: ${OWNER} ${name} must not be null`);
  const o = checkOptionsObject(`${OWNER} ${name}`, value);
  checkKnownKeys(`${OWNER} ${name}`, o, keys);
  return o;
}

function fn<T>(name: string, value: unknown): T | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') {
    throw new TypeError(`stormproof: ${OWNER} ${name} must be a function, got ${show(value)}`);
  }
  return value as T;
}

/**
 * A hook that can never break a request: what it throws, or a promise it returns that rejects,
 * is dropped (metrics must not turn into outages or unhandled rejections).
 */
function hook<E>(f: ((event: E) => unknown) | undefined): ((event: E) => void) | undefined {
  if (f === undefined) return undefined;
  return (event) => {
    try {
      const result = f(event);
      if (result instanceof Promise) result.catch(() => {});
    } catch {
      // ignored on purpose: see above
    }
  };
}

function statusOption(name: string, value: unknown): 503 | 429 {
  if (value === undefined) return 503;
  if (value !== 503 && value !== 429) {
    throw new TypeError(`stormproof: ${OWNER} ${name} must be 503 or 429, got ${show(value)}`);
  }
  return value;
}

function resolveRetryAfter(value: unknown): RetryAfterOption {
  if (value === undefined) return { mode: 'spread', minMs: 1000, maxMs: 5000 };
  const mode = (value as { mode?: unknown } | null)?.mode;
  if (mode === 'spread') {
    const o = sub('retryAfter', value, ['mode', 'minMs', 'maxMs']);
    const minMs = num('retryAfter.minMs', o.minMs, 1000, { min: 0 });
    const maxMs = num('retryAfter.maxMs', o.maxMs, Math.max(5000, minMs), { min: minMs });
    return { mode, minMs, maxMs };
  }
  if (mode === 'load-aware') {
    const o = sub('retryAfter', value, [
      'mode',
      'capMs',
      'minMs',
      'drainWindowMs',
      'initialDrainPerSecond',
    ]);
    const capMs = num('retryAfter.capMs', o.capMs, 30_000, { min: 1 });
    return {
      mode,
      capMs,
      minMs: num('retryAfter.minMs', o.minMs, 0, { min: 0, max: capMs }),
      drainWindowMs: num('retryAfter.drainWindowMs', o.drainWindowMs, 100, { min: 1 }),
      initialDrainPerSecond:
        o.initialDrainPerSecond === undefined
          ? undefined
          : checkNumber(OWNER, 'retryAfter.initialDrainPerSecond', o.initialDrainPerSecond, {
              min: 0,
              minExclusive: true,
            }),
    };
  }
  if (mode === 'fixed') {
    const o = sub('retryAfter', value, ['mode', 'ms']);
    return { mode, ms: checkNumber(OWNER, 'retryAfter.ms', o.ms, { min: 0 }) };
  }
  throw new TypeError(
    `stormproof: ${OWNER} retryAfter.mode must be 'spread', 'load-aware' or 'fixed', got ${show(value === null || typeof value !== 'object' ? value : mode)}`,
  );
}

/** Whether the caller of a request has gone away; an `AbortSignal` is one. */
export interface CallerState {
  readonly aborted: boolean;
}

/** One request waiting in the queue. */
interface Waiter {
  readonly enqueuedAt: number;
  readonly retry: boolean;
  readonly level: number;
  readonly caller: CallerState | undefined;
  readonly resolve: (admission: Admission) => void;
}

/** The server engine. Make one per server (or per route group) and share it. */
export interface Shedder {
  /**
   * Decides on one request from its headers: admitted now (a ticket), rejected now, or a promise
   * when it waits in the queue. `caller.aborted` (an `AbortSignal` will do) turns true when the
   * caller goes away: a queued request whose caller left is not run.
   */
  admit(header: HeaderReader, caller?: CallerState): Admission | Promise<Admission>;
  /**
   * `admit` without a promise, for callers that run on virtual time and cannot wait for promise
   * callbacks (the storm simulator): returns the admission when it is decided at once, or
   * undefined when the request waits in the queue; `settle` is then called with its admission
   * when the queue decides (from inside the engine, when a request finishes or the queue's timer
   * fires), exactly once.
   */
  admitOrQueue(
    header: HeaderReader,
    settle: (admission: Admission) => void,
    caller?: CallerState,
  ): Admission | undefined;
  /** Whether gateway mode is on. */
  readonly gateway: boolean;
  /** Starts reopening in steps from the first step (say, a dependency is healthy again). */
  reopen(): void;
  /** A snapshot of state and counters. */
  stats(): ShedderStats;
  /** Rejects everything still queued and stops the queue's timer (on server shutdown). */
  close(): void;
}

/**
 * Makes the server engine. Options are checked and filled once, here.
 *
 * @example
 * ```ts
 * const shedder = createShedder({ limit: { kind: 'gradient2' }, status: 429 });
 * const admission = await shedder.admit((name) => request.headers.get(name));
 * if (!admission.admitted) return new Response(null, { status: admission.status, headers: admission.headers });
 * ```
 */
export function createShedder(options?: ShedderOptions): Shedder {
  const o = checkOptionsObject(OWNER, options);
  checkKnownKeys(OWNER, o, OPTION_KEYS);
  refuseNulls(OWNER, o);
  const clock: Clock = (o.clock as Clock | undefined) ?? systemClock;
  if (typeof clock.now !== 'function' || typeof clock.sleep !== 'function') {
    throw new TypeError(`stormproof: ${OWNER} clock must have now() and sleep(ms, signal)`);
  }
  const random = fn<RandomSource>('random', o.random) ?? Math.random;
  const limiter: ConcurrencyLimit = createLimit(
    (o.limit as LimitOption | undefined) ?? { kind: 'gradient2' },
  );
  const queueOn = o.queue !== false;
  const q = queueOn ? sub('queue', o.queue ?? {}, ['capacity', 'targetMs', 'intervalMs']) : {};
  const capacity = queueOn ? num('queue.capacity', q.capacity, 100, { min: 1, integer: true }) : 0;
  const targetMs = num('queue.targetMs', q.targetMs, 5, { min: 0, minExclusive: true });
  const intervalMs = num('queue.intervalMs', q.intervalMs, 100, { min: targetMs });
  const prioritize = o.prioritizeFirstAttempts ?? true;
  if (typeof prioritize !== 'boolean') {
    throw new TypeError(
      `stormproof: ${OWNER} prioritizeFirstAttempts must be a boolean, got ${show(prioritize)}`,
    );
  }
  const retryShare = num('retryShare', o.retryShare, 0.1, { min: 0, max: 1 });
  const criticalityHeader = o.criticalityHeader;
  if (
    criticalityHeader !== undefined &&
    (typeof criticalityHeader !== 'string' || criticalityHeader === '')
  ) {
    throw new TypeError(
      `stormproof: ${OWNER} criticalityHeader must be a header name, got ${show(criticalityHeader)}`,
    );
  }
  const criticalityName = criticalityHeader?.toLowerCase();
  const defaultLevel =
    o.defaultCriticality === undefined
      ? 1
      : CRITICALITY_LEVELS.indexOf(o.defaultCriticality as Criticality);
  if (defaultLevel < 0) {
    throw new TypeError(
      `stormproof: ${OWNER} defaultCriticality must be one of ${CRITICALITY_LEVELS.join(', ')}, got ${show(o.defaultCriticality)}`,
    );
  }
  const status = statusOption('status', o.status);
  const doNotRetryStatus = statusOption('doNotRetryStatus', o.doNotRetryStatus);
  const retryAfter = resolveRetryAfter(o.retryAfter);
  const pushback: Pushback = createPushback(retryAfter, random);
  const spread = retryAfter.mode !== 'fixed';
  const serviceOverloaded = fn<() => boolean>('serviceOverloaded', o.serviceOverloaded);
  const onShed = hook(fn<(e: ShedEvent) => unknown>('onShed', o.onShed));
  const onRamp = hook(fn<(e: RampEvent) => unknown>('onRamp', o.onRamp));
  const onLimit = hook(fn<(e: LimitEvent) => unknown>('onLimit', o.onLimit));

  let ramp: Ramp | undefined;
  if (o.ramp !== false) {
    const r = sub('ramp', o.ramp ?? {}, [
      'steps',
      'floor',
      'windowMs',
      'minRequests',
      'maxErrorRate',
      'tripErrorRate',
      'latencyTolerance',
    ]);
    const steps = (r.steps as unknown) ?? [0.2, 0.4, 0.6, 0.8, 1];
    if (!Array.isArray(steps) || steps.length === 0) {
      throw new TypeError(
        `stormproof: ${OWNER} ramp.steps must be a non-empty array, got ${show(steps)}`,
      );
    }
    let previous = 0;
    for (const s of steps) {
      checkNumber(OWNER, 'ramp.steps[]', s, { min: previous, max: 1, minExclusive: true });
      previous = s as number;
    }
    const floor = num('ramp.floor', r.floor, Math.min(0.1, steps[0] as number), {
      min: 0,
      max: steps[0] as number,
      minExclusive: true,
    });
    ramp = new Ramp(
      {
        steps: [...(steps as number[])],
        floor,
        windowMs: num('ramp.windowMs', r.windowMs, 1000, { min: 1 }),
        minRequests: num('ramp.minRequests', r.minRequests, 20, { min: 1, integer: true }),
        maxErrorRate: num('ramp.maxErrorRate', r.maxErrorRate, 0.05, { min: 0, max: 1 }),
        tripErrorRate: num('ramp.tripErrorRate', r.tripErrorRate, 0.5, { min: 0, max: 1 }),
        latencyTolerance: num('ramp.latencyTolerance', r.latencyTolerance, 2, { min: 1 }),
      },
      (event) => onRamp?.(event),
    );
  }

  let throttle: AdaptiveThrottle | undefined;
  if (o.gateway !== undefined && o.gateway !== false) {
    const g = sub('gateway', o.gateway === true ? {} : o.gateway, [
      'k',
      'windowMs',
      'maxRejection',
      'minRequests',
    ]);
    throttle = new AdaptiveThrottle({
      k: num('gateway.k', g.k, 2, { min: 1 }),
      windowMs: num('gateway.windowMs', g.windowMs, 30_000, { min: 10 }),
      maxRejection: num('gateway.maxRejection', g.maxRejection, 0.8, { min: 0, max: 1 }),
      minRequests: num('gateway.minRequests', g.minRequests, 20, { min: 0, integer: true }),
    });
  }

  // State.
  let inflight = 0;
  let inflightRetries = 0;
  let admittedCount = 0;
  const shed: Record<ShedReason, number> = Object.fromEntries(
    SHED_REASONS.map((r) => [r, 0]),
  ) as Record<ShedReason, number>;
  // One deque per (criticality, first/retry): index level * 2 + (retry ? 1 : 0).
  const queues: Waiter[][] = Array.from({ length: CRITICALITY_LEVELS.length * 2 }, () => []);
  let queued = 0;
  let queueDelayMs = 0;
  // Meta's CoDel variant ("Fail at Scale"): the queue turns overloaded when it has not been
  // empty for a whole interval; then a request may wait only twice the target (folly's slough
  // timeout), else up to one interval. It stays overloaded until a whole interval passes in
  // which no request waited past the target: under a standing overload the queue empties for a
  // moment whenever arrivals pause, and that moment must not reopen FIFO with interval-long waits.
  let nonEmptySince = 0;
  let overloaded = false;
  let slowAt = 0; // the last time a request was seen waiting past the target
  const overloadedAt = (nowMs: number): boolean => {
    if (queued > 0 && nowMs - oldestEnqueuedAt() > targetMs) slowAt = nowMs;
    if (!overloaded && queued > 0 && nowMs - nonEmptySince > intervalMs) {
      overloaded = true;
      slowAt = nowMs;
    } else if (overloaded && nowMs - slowAt > intervalMs) {
      overloaded = false;
      // Count the next interval afresh, or a short steady queue would turn it straight back.
      if (queued > 0) nonEmptySince = nowMs;
    }
    return overloaded;
  };
  const maxWaitAt = (nowMs: number): number => (overloadedAt(nowMs) ? 2 * targetMs : intervalMs);
  // The one sweep timer for queued requests past their time.
  let sweepAt = Number.POSITIVE_INFINITY;
  let cancelSweep: (() => void) | undefined;

  const comeBackLater = (reason: ShedReason, retry: boolean, nowMs: number): Rejection => {
    shed[reason]++;
    if (serviceOverloaded?.() === true) return doNotRetry(reason, retry, true);
    const waitMs = Math.ceil(pushback.next(nowMs));
    const headers: Array<[string, string]> = [
      ['retry-after', String(Math.ceil(waitMs / 1000))],
      ['retry-after-ms', String(waitMs)],
    ];
    if (spread) headers.push([PUSHBACK_HEADER, String(waitMs)]);
    onShed?.({ reason, kind: 'come-back-later', retry, waitMs });
    return { admitted: false, reason, kind: 'come-back-later', status, headers, waitMs };
  };

  const DO_NOT_RETRY_HEADERS: ReadonlyArray<[string, string]> = [[OVERLOADED_HEADER, '1']];
  const doNotRetry = (reason: ShedReason, retry: boolean, counted = false): Rejection => {
    if (!counted) shed[reason]++;
    onShed?.({ reason, kind: 'do-not-retry', retry });
    return {
      admitted: false,
      reason,
      kind: 'do-not-retry',
      status: doNotRetryStatus,
      headers: DO_NOT_RETRY_HEADERS,
    };
  };

  const ticket = (retry: boolean, startedAt: number): Ticket => {
    // The throttle counts what goes downstream, not what this instance shed for itself.
    throttle?.request(startedAt);
    inflight++;
    if (retry) inflightRetries++;
    admittedCount++;
    const inflightAtStart = inflight;
    let done = false;
    return {
      admitted: true,
      retry,
      finish(finalStatus, header) {
        if (done) return false;
        done = true;
        inflight--;
        if (retry) inflightRetries--;
        const nowMs = clock.now();
        const latencyMs = nowMs - startedAt;
        const downstreamSaysStop =
          throttle !== undefined && header !== undefined && saysDoNotRetry(header);
        const failed = finalStatus === undefined || finalStatus >= 500 || downstreamSaysStop;
        const dropped =
          finalStatus === undefined ||
          finalStatus === 429 ||
          finalStatus === 503 ||
          finalStatus === 504;
        const before = limiter.current;
        limiter.sample(nowMs, latencyMs, inflightAtStart, dropped);
        if (onLimit && limiter.current !== before)
          onLimit({ limit: limiter.current, previous: before });
        pushback.completed(nowMs);
        ramp?.record(nowMs, latencyMs, failed, startedAt);
        if (throttle && !failed) throttle.accept(nowMs);
        if (queued > 0) drain(nowMs);
        return downstreamSaysStop;
      },
    };
  };

  /** Whether a partition is within its guaranteed share of the limit. */
  const withinShare = (retry: boolean, limit: number): boolean =>
    retry
      ? inflightRetries < retryShare * limit
      : inflight - inflightRetries < (1 - retryShare) * limit;

  /** The next waiter to serve: most critical level first; in it, first attempts unless retries are under their share. */
  const pick = (nowMs: number): Waiter | undefined => {
    const limit = limiter.current;
    for (let level = 0; level < CRITICALITY_LEVELS.length; level++) {
      const firsts = queues[level * 2]!;
      const retries = queues[level * 2 + 1]!;
      if (firsts.length === 0 && retries.length === 0) continue;
      const deque =
        retries.length > 0 && (firsts.length === 0 || !prioritize || withinShare(true, limit))
          ? retries
          : firsts;
      // Adaptive LIFO: once a queue forms (its oldest waited past the target) or while
      // overloaded, the newest callers are the ones most likely still waiting.
      const lifo = overloadedAt(nowMs) || nowMs - oldestEnqueuedAt() > targetMs;
      const waiter = lifo ? deque.pop() : deque.shift();
      queued--;
      return waiter;
    }
    return undefined;
  };

  const drain = (nowMs: number): void => {
    while (queued > 0 && inflight < limiter.current) {
      const maxWait = maxWaitAt(nowMs);
      const waiter = pick(nowMs)!;
      const delay = nowMs - waiter.enqueuedAt;
      if (waiter.caller?.aborted) {
        waiter.resolve(comeBackLater('abandoned', waiter.retry, nowMs));
      } else if (delay > maxWait) {
        waiter.resolve(comeBackLater('queue-timeout', waiter.retry, nowMs));
      } else {
        queueDelayMs += (delay - queueDelayMs) * 0.1;
        waiter.resolve(ticket(waiter.retry, nowMs));
      }
    }
    scheduleSweep(nowMs);
  };

  /** When the oldest queued request arrived; each deque holds its oldest at its head. */
  function oldestEnqueuedAt(): number {
    let oldest = Number.POSITIVE_INFINITY;
    for (const deque of queues)
      if (deque.length > 0 && deque[0]!.enqueuedAt < oldest) oldest = deque[0]!.enqueuedAt;
    return oldest;
  }

  /** Rejects queued requests past their time; the oldest of each deque is at its head. */
  const sweep = (): void => {
    const nowMs = clock.now();
    const maxWait = maxWaitAt(nowMs);
    for (const deque of queues) {
      while (deque.length > 0 && nowMs - deque[0]!.enqueuedAt > maxWait) {
        const waiter = deque.shift()!;
        queued--;
        waiter.resolve(comeBackLater('queue-timeout', waiter.retry, nowMs));
      }
    }
    scheduleSweep(nowMs);
  };

  const scheduleSweep = (nowMs: number): void => {
    if (queued === 0) {
      cancelSweep?.();
      cancelSweep = undefined;
      sweepAt = Number.POSITIVE_INFINITY;
      return;
    }
    const oldest = oldestEnqueuedAt();
    // Just past the deadline, so the sweep finds the head expired even on an exact clock; and
    // at the latest when the queue turns overloaded, since its waits then shrink.
    let due = oldest + maxWaitAt(nowMs) + 1;
    if (!overloadedAt(nowMs)) due = Math.min(due, nonEmptySince + intervalMs + 1);
    if (cancelSweep !== undefined && sweepAt <= due) return;
    cancelSweep?.();
    sweepAt = due;
    let fired = false;
    const fire = () => {
      if (fired || cancelSweep !== cancel) return;
      fired = true;
      cancelSweep = undefined;
      sweepAt = Number.POSITIVE_INFINITY;
      sweep();
    };
    let cancel: () => void;
    if (clock.setTimer !== undefined) {
      // A clock with timers calls back directly: no promise, so a clock on virtual time can
      // fire the sweep at its exact millisecond without waiting for promise callbacks.
      const stop = clock.setTimer(Math.max(0, due - nowMs), fire);
      cancel = () => {
        fired = true;
        stop();
      };
    } else {
      const controller = new AbortController();
      clock.sleep(Math.max(0, due - nowMs), controller.signal).then(fire, () => {});
      cancel = () => {
        fired = true;
        controller.abort();
      };
    }
    cancelSweep = cancel;
  };

  /** Makes room for a more important waiter: pushes out the oldest of the least important. */
  const evictBelow = (level: number, retry: boolean): boolean => {
    const rank = level * 2 + (retry && prioritize ? 1 : 0);
    for (let i = queues.length - 1; i > rank; i--) {
      const deque = queues[i]!;
      if (deque.length === 0) continue;
      const victim = deque.shift()!;
      queued--;
      victim.resolve(comeBackLater('queue-full', victim.retry, clock.now()));
      return true;
    }
    return false;
  };

  /**
   * Decides on one request. When it must wait in the queue: with `settle`, queues it and returns
   * undefined (`settle` hears the decision); without, returns a promise of the decision.
   */
  function decide(
    header: HeaderReader,
    caller: CallerState | undefined,
    settle: ((admission: Admission) => void) | undefined,
  ): Admission | Promise<Admission> | undefined {
    const nowMs = clock.now();
    if (throttle) {
      const p = throttle.rejectProbability(nowMs);
      if (p > 0 && random() < p) {
        // Counted as a request that was not accepted, as the SRE book counts local rejections.
        throttle.request(nowMs);
        return doNotRetry('throttle', isRetry(header));
      }
    }
    const retry = isRetry(header);
    if (ramp && ramp.share < 1 && random() >= ramp.share)
      return comeBackLater('ramp', retry, nowMs);
    const limit = limiter.current;
    if (inflight < limit && queued === 0) return ticket(retry, nowMs);
    // Netflix partitions: a share under its guarantee may go past the global limit.
    if (prioritize && withinShare(retry, limit)) return ticket(retry, nowMs);
    if (capacity === 0) return comeBackLater('limit', retry, nowMs);
    const level =
      criticalityName === undefined
        ? defaultLevel
        : readCriticality(header(criticalityName), defaultLevel);
    if (queued >= capacity && !evictBelow(level, retry))
      return comeBackLater('queue-full', retry, nowMs);
    if (queued === 0) nonEmptySince = nowMs;
    const enqueue = (resolve: (admission: Admission) => void): void => {
      queues[level * 2 + (retry && prioritize ? 1 : 0)]!.push({
        enqueuedAt: nowMs,
        retry,
        level,
        caller,
        resolve,
      });
      queued++;
      scheduleSweep(nowMs);
    };
    if (settle !== undefined) {
      enqueue(settle);
      return undefined;
    }
    return new Promise<Admission>(enqueue);
  }

  return {
    gateway: throttle !== undefined,
    admit: (header, caller) => decide(header, caller, undefined) as Admission | Promise<Admission>,
    admitOrQueue: (header, settle, caller) =>
      decide(header, caller, settle) as Admission | undefined,
    reopen() {
      ramp?.reopen(clock.now());
    },
    stats() {
      const nowMs = clock.now();
      return {
        inflight,
        limit: limiter.current,
        queued,
        admitted: admittedCount,
        shed: { ...shed },
        queueDelayMs,
        overloaded: overloadedAt(nowMs),
        drainPerSecond: pushback.drainPerSecond(nowMs),
        rampShare: ramp?.share ?? 1,
        rampStep: ramp?.stepIndex,
        throttleProbability: throttle?.rejectProbability(nowMs) ?? 0,
      };
    },
    close() {
      const nowMs = clock.now();
      for (const deque of queues) {
        for (const waiter of deque.splice(0))
          waiter.resolve(comeBackLater('queue-full', waiter.retry, nowMs));
      }
      queued = 0;
      scheduleSweep(nowMs);
    },
  };
}

/**
 * Whether a downstream response says "do not retry": `stormproof-overloaded`,
 * `x-envoy-overloaded`, `Stripe-Should-Retry: false` or a negative gRPC pushback.
 */
export function saysDoNotRetry(header: HeaderReader): boolean {
  if (header(OVERLOADED_HEADER) != null || header('x-envoy-overloaded') != null) return true;
  if (header('stripe-should-retry')?.trim().toLowerCase() === 'false') return true;
  const pushback = header('grpc-retry-pushback-ms');
  return pushback?.trim().startsWith('-') === true;
}
