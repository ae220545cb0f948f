// The options of stormproof/server's engine: what each means and its default (the TSDoc), and
// their check and fill, once, when an engine is made. A bad option throws a TypeError or
// RangeError naming it; `null` is refused like any other wrong type.
import { type Clock, type RandomSource, systemClock } from '../core/clock.js';
import {
  checkKnownKeys,
  checkNumber,
  checkOptionsObject,
  refuseNulls,
  show,
} from '../core/validate.js';
import type { ShedEvent } from './answers.js';
import { type ConcurrencyLimit, createLimit, type LimitEvent, type LimitOption } from './limits.js';
import type { RetryAfterOption } from './pushback.js';
import type { QueueSettings } from './queue.js';
import type { RampEvent, RampSettings } from './ramp.js';
import { CRITICALITY_LEVELS, type Criticality } from './request-info.js';
import type { ShareSettings } from './shares.js';
import type { ThrottleSettings } from './throttle.js';

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
   * The shares of the concurrency limit that may run at once, step by step; the last should be 1.
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
   * How long a step (and a check while fully open) lasts before it is judged on what finished
   * in it. A step ends sooner once `minRequests` admitted in it were all served, at the floor or
   * when it refused nothing for its cap: a step that held nothing back has nothing to wait for.
   * @default 1000
   * @example
   * ```ts
   * ramp: { windowMs: 5000 }
   * ```
   */
  windowMs?: number | undefined;
  /**
   * A window is judged only once this many requests finished in it (and a clean step may end
   * as soon as this many were served).
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
   * The concurrency limit: a number (fixed), an adaptive one, `{ kind: 'gradient2' }`,
   * `{ kind: 'aimd' }` or `{ kind: 'knee' }` with their own options, or a limit of your own
   * (`{ current, sample }`). Gradient2 and AIMD never go below 20: when what the handler waits on
   * serves fewer at once (a database pool of 10), set this to that number, or requests wait
   * inside the handler, out of the queue's reach. The knee limit finds that number by itself
   * (docs/server.md says where it does and does not yet).
   * @default { kind: 'gradient2' } (initial 20, min 20, max 200, smoothing 0.2, tolerance 1.5)
   * @example
   * ```ts
   * limit: 10 // behind a database pool of 10 connections
   * ```
   */
  limit?: LimitOption | undefined;
  /**
   * The bounded CoDel queue in front of the limit, or `false` to reject at once when full.
   * With the knee limit, the target and interval not given follow the unloaded latency it
   * measures (the interval half that latency, the target a quarter of it), and while the
   * queue counts requests arriving below capacity (fewer than 1.5 a completion, four blocks of
   * 32 completions in a row), a request may wait 20 such latencies, oldest first.
   * @default { capacity: 100, targetMs: 5, intervalMs: 100 }
   * @example
   * ```ts
   * queue: false
   * ```
   */
  queue?: QueueOptions | false | undefined;
  /**
   * Serve first attempts before retries under contention: retries get a guaranteed share of
   * `retryShare` of the limit, first attempts the rest; idle capacity is lent out, and the
   * shares never add to the limit (queued first attempts take the next free places).
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

/** Every option of `createShedder`, checked and filled. */
export interface ShedderSettings {
  readonly clock: Clock;
  readonly random: RandomSource;
  readonly limiter: ConcurrencyLimit;
  /** The queue, or false for none (reject at once when the limit is reached). */
  readonly queue: QueueSettings | false;
  readonly shares: ShareSettings;
  readonly status: 503 | 429;
  readonly doNotRetryStatus: 503 | 429;
  readonly retryAfter: RetryAfterOption;
  readonly serviceOverloaded: (() => boolean) | undefined;
  readonly ramp: RampSettings | undefined;
  readonly gateway: ThrottleSettings | undefined;
  readonly onShed: ((event: ShedEvent) => void) | undefined;
  readonly onRamp: ((event: RampEvent) => void) | undefined;
  readonly onLimit: ((event: LimitEvent) => void) | undefined;
}

/** Checks the options of `createShedder` and fills their defaults. */
export function resolveShedderOptions(options: ShedderOptions | undefined): ShedderSettings {
  const o = checkOptionsObject(OWNER, options);
  checkKnownKeys(OWNER, o, OPTION_KEYS);
  refuseNulls(OWNER, o);
  const clock: Clock = (o.clock as Clock | undefined) ?? systemClock;
  if (typeof clock.now !== 'function' || typeof clock.sleep !== 'function') {
    throw new TypeError(`stormproof: ${OWNER} clock must have now() and sleep(ms, signal)`);
  }
  const random = fn<RandomSource>('random', o.random) ?? Math.random;
  const limiter = createLimit((o.limit as LimitOption | undefined) ?? { kind: 'gradient2' });
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
  const serviceOverloaded = fn<() => boolean>('serviceOverloaded', o.serviceOverloaded);
  const onShed = hook(fn<(e: ShedEvent) => unknown>('onShed', o.onShed));
  const onRamp = hook(fn<(e: RampEvent) => unknown>('onRamp', o.onRamp));
  const onLimit = hook(fn<(e: LimitEvent) => unknown>('onLimit', o.onLimit));
  return {
    clock,
    random,
    limiter,
    queue: queueOn && {
      capacity,
      targetMs,
      intervalMs,
      // Times given are kept; else they follow the latency the limit measures, if it does.
      follow:
        q.targetMs === undefined && q.intervalMs === undefined ? () => limiter.floorMs : undefined,
    },
    shares: {
      prioritize,
      retryShare,
      criticalityHeader: (criticalityHeader as string | undefined)?.toLowerCase(),
      defaultLevel,
    },
    status,
    doNotRetryStatus,
    retryAfter,
    serviceOverloaded,
    ramp: resolveRamp(o.ramp),
    gateway: resolveGateway(o.gateway),
    onShed,
    onRamp,
    onLimit,
  };
}

function resolveRamp(value: unknown): RampSettings | undefined {
  if (value === false) return undefined;
  const r = sub('ramp', value ?? {}, [
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
  return {
    steps: [...(steps as number[])],
    floor,
    windowMs: num('ramp.windowMs', r.windowMs, 1000, { min: 1 }),
    minRequests: num('ramp.minRequests', r.minRequests, 20, { min: 1, integer: true }),
    maxErrorRate: num('ramp.maxErrorRate', r.maxErrorRate, 0.05, { min: 0, max: 1 }),
    tripErrorRate: num('ramp.tripErrorRate', r.tripErrorRate, 0.5, { min: 0, max: 1 }),
    latencyTolerance: num('ramp.latencyTolerance', r.latencyTolerance, 2, { min: 1 }),
  };
}

function resolveGateway(value: unknown): ThrottleSettings | undefined {
  if (value === undefined || value === false) return undefined;
  const g = sub('gateway', value === true ? {} : value, [
    'k',
    'windowMs',
    'maxRejection',
    'minRequests',
  ]);
  return {
    k: num('gateway.k', g.k, 2, { min: 1 }),
    windowMs: num('gateway.windowMs', g.windowMs, 30_000, { min: 10 }),
    maxRejection: num('gateway.maxRejection', g.maxRejection, 0.8, { min: 0, max: 1 }),
    minRequests: num('gateway.minRequests', g.minRequests, 20, { min: 0, integer: true }),
  };
}
