// A breaker's options, checked and filled once when the breaker (or registry) is made.
import { type Clock, type RandomSource, systemClock } from '../clock.js';
import { checkNumber, show } from '../validate.js';
import type { BreakerStore, BreakerStoreEvent } from './store.js';

/** A breaker's state. `'isolated'` is open by hand until `reset`. */
export type BreakerState = 'closed' | 'open' | 'half-open' | 'isolated';

/** A change of a breaker's state. */
export interface BreakerTransition {
  readonly key: string;
  readonly from: BreakerState;
  readonly to: BreakerState;
}

/** The options of a circuit breaker. Every field is optional. */
export interface BreakerOptions {
  /**
   * Failures in a row (across all calls) that open the breaker; any success resets the count.
   * The default is Finagle's and Envoy's (5 consecutive errors).
   * Not used when `failureRatio` is set.
   * @default 5
   * @example
   * ```ts
   * new CircuitBreaker('api.example.com', { consecutiveFailures: 10 })
   * ```
   */
  consecutiveFailures?: number | undefined;
  /**
   * Opens on a failure ratio instead: when at least `minimumCalls` calls ended in the last
   * `windowMs` and this share of them failed. From 0 (exclusive) to 1.
   * @default undefined (count consecutive failures instead)
   * @example
   * ```ts
   * new CircuitBreaker('db', { failureRatio: 0.5, windowMs: 30_000, minimumCalls: 100 })
   * ```
   */
  failureRatio?: number | undefined;
  /**
   * The sliding window of `failureRatio`, in ten buckets. Polly samples 30 s the same way.
   * @default 30_000
   * @example
   * ```ts
   * new CircuitBreaker('db', { failureRatio: 0.5, windowMs: 10_000 })
   * ```
   */
  windowMs?: number | undefined;
  /**
   * The fewest calls in the window before `failureRatio` can open the breaker, so that two
   * failures out of three at night do not (Polly's and resilience4j's default is 100).
   * @default 100
   * @example
   * ```ts
   * new CircuitBreaker('db', { failureRatio: 0.5, minimumCalls: 20 })
   * ```
   */
  minimumCalls?: number | undefined;
  /**
   * The open period's ceiling the first time the breaker opens. Each period is drawn with equal
   * jitter (Brooker's: half the ceiling plus a random part of the other half) so a fleet that
   * opened together does not probe together; the ceiling doubles after each failed probe, up to
   * `maxOpenMs`. Finagle's failure accrual backs off the same way, from 5 s to 300 s.
   * @default 5_000
   * @example
   * ```ts
   * new CircuitBreaker('db', { openMs: 30_000 }) // Envoy's outlier ejection base time
   * ```
   */
  openMs?: number | undefined;
  /**
   * The largest open period's ceiling.
   * @default 300_000
   * @example
   * ```ts
   * new CircuitBreaker('db', { maxOpenMs: 60_000 })
   * ```
   */
  maxOpenMs?: number | undefined;
  /**
   * How many calls a half-open breaker lets through at once as probes; every other call is
   * refused. Never all traffic: a half-open breaker that admits everything turned one outage into
   * a 17x amplification at safe-client-gateway (PR #3442).
   * @default 1
   * @example
   * ```ts
   * new CircuitBreaker('db', { probes: 3, successesToClose: 3 })
   * ```
   */
  probes?: number | undefined;
  /**
   * Probe successes needed to close the breaker; a probe failure opens it again for longer.
   * @default 1
   * @example
   * ```ts
   * new CircuitBreaker('db', { successesToClose: 3 })
   * ```
   */
  successesToClose?: number | undefined;
  /**
   * Where time comes from (`now` only; a breaker sets no timers).
   * @default systemClock
   * @example
   * ```ts
   * new CircuitBreaker('db', { clock: { now: () => t, sleep: async () => {} } })
   * ```
   */
  clock?: Clock | undefined;
  /**
   * Random numbers in [0, 1) for the open periods' jitter.
   * @default Math.random
   * @example
   * ```ts
   * new CircuitBreaker('db', { random: () => 0.5 })
   * ```
   */
  random?: RandomSource | undefined;
  /**
   * Wall time in epoch ms, used only to export and import state (`toJSON`, `restore`): the
   * monotonic clock means nothing in another process.
   * @default Date.now
   * @example
   * ```ts
   * new CircuitBreaker('db', { wallClock: () => virtualEpochMs })
   * ```
   */
  wallClock?: (() => number) | undefined;
  /**
   * Told of every change of state. An error it throws is ignored.
   * @default undefined
   * @example
   * ```ts
   * new CircuitBreaker('db', { onStateChange: (t) => log.warn(`${t.key}: ${t.from} -> ${t.to}`) })
   * ```
   */
  onStateChange?: ((transition: BreakerTransition) => void) | undefined;
  /**
   * Shares the breaker's state across a fleet (`stormproof/redis`). Calls are still decided from
   * local state at once; outcomes go to the store in batches in the background, the fleet's
   * state comes back, and one probe per open period goes across the whole fleet. When the store
   * fails, the breaker goes on alone on its local state and says so through `onStoreEvent`.
   * @default undefined (this process only)
   * @example
   * ```ts
   * new BreakerRegistry({ store: createRedisBreakerStore({ client }) })
   * ```
   */
  store?: BreakerStore | undefined;
  /**
   * With a store, how old the local copy of the fleet's state may get before a call (admitted or
   * ended) brings a fresh one (one round trip, in the background); a copy's age counts from when
   * the round trip that brought it began. A trip elsewhere in the fleet is seen within about this
   * long plus a round trip by a process that keeps calling.
   * @default 50
   * @example
   * ```ts
   * new BreakerRegistry({ store, syncMs: 20 })
   * ```
   */
  syncMs?: number | undefined;
  /**
   * Told when the store stops answering (the breaker then decides alone) and when it is back.
   * After a failure the store is tried again at most once a second per key.
   * @default undefined
   * @example
   * ```ts
   * new BreakerRegistry({ store, onStoreEvent: (e) => log.warn(`breaker store ${e.type}`, e.error) })
   * ```
   */
  onStoreEvent?: ((event: BreakerStoreEvent) => void) | undefined;
}

/** A breaker's options with every default filled in. */
export interface BreakerSettings {
  readonly consecutiveFailures: number;
  readonly failureRatio: number | undefined;
  readonly windowMs: number;
  readonly minimumCalls: number;
  readonly openMs: number;
  readonly maxOpenMs: number;
  readonly probes: number;
  readonly successesToClose: number;
  readonly clock: Clock;
  readonly random: RandomSource;
  readonly wallClock: () => number;
  readonly onStateChange: ((transition: BreakerTransition) => void) | undefined;
  readonly store: BreakerStore | undefined;
  readonly syncMs: number;
  readonly onStoreEvent: ((event: BreakerStoreEvent) => void) | undefined;
}

/** The options that are a breaker's rules (what a stack file or a model may set), not its wiring. */
export const BREAKER_RULE_KEYS = [
  'consecutiveFailures',
  'failureRatio',
  'windowMs',
  'minimumCalls',
  'openMs',
  'maxOpenMs',
  'probes',
  'successesToClose',
] as const;

export const BREAKER_KEYS = [
  ...BREAKER_RULE_KEYS,
  'clock',
  'random',
  'wallClock',
  'onStateChange',
  'store',
  'syncMs',
  'onStoreEvent',
] as const;

const given = (o: Record<string, unknown>, name: string, fallback: unknown): unknown =>
  o[name] === undefined ? fallback : o[name];

function fn<T>(owner: string, name: string, value: unknown): T {
  if (typeof value !== 'function') {
    throw new TypeError(`stormproof: ${owner} ${name} must be a function, got ${show(value)}`);
  }
  return value as T;
}

/** Checks the options once; every message names the option and the value at fault. */
export function resolveBreakerOptions(owner: string, o: Record<string, unknown>): BreakerSettings {
  const int = { min: 1, max: 1_000_000, integer: true };
  const ms = { min: 1, max: 86_400_000 };
  const openMs = checkNumber(owner, 'openMs', given(o, 'openMs', 5_000), ms);
  const maxOpenMs = checkNumber(owner, 'maxOpenMs', given(o, 'maxOpenMs', 300_000), ms);
  if (maxOpenMs < openMs) {
    throw new RangeError(
      `stormproof: ${owner} maxOpenMs must be >= openMs (${openMs}), got ${maxOpenMs}`,
    );
  }
  const ratio = o.failureRatio;
  const clock = given(o, 'clock', systemClock) as Clock;
  if (clock === null || typeof clock !== 'object' || typeof clock.now !== 'function') {
    throw new TypeError(`stormproof: ${owner} clock must have a now() method, got ${show(clock)}`);
  }
  return {
    consecutiveFailures: checkNumber(
      owner,
      'consecutiveFailures',
      given(o, 'consecutiveFailures', 5),
      int,
    ),
    failureRatio:
      ratio === undefined
        ? undefined
        : checkNumber(owner, 'failureRatio', ratio, { min: 0, max: 1, minExclusive: true }),
    windowMs: checkNumber(owner, 'windowMs', given(o, 'windowMs', 30_000), ms),
    minimumCalls: checkNumber(owner, 'minimumCalls', given(o, 'minimumCalls', 100), int),
    openMs,
    maxOpenMs,
    probes: checkNumber(owner, 'probes', given(o, 'probes', 1), int),
    successesToClose: checkNumber(owner, 'successesToClose', given(o, 'successesToClose', 1), int),
    clock,
    random: fn(owner, 'random', given(o, 'random', Math.random)),
    wallClock: fn(owner, 'wallClock', given(o, 'wallClock', Date.now)),
    onStateChange:
      o.onStateChange === undefined ? undefined : fn(owner, 'onStateChange', o.onStateChange),
    store: checkStore(owner, o.store),
    syncMs: checkNumber(owner, 'syncMs', given(o, 'syncMs', 50), { min: 0, max: 60_000 }),
    onStoreEvent:
      o.onStoreEvent === undefined ? undefined : fn(owner, 'onStoreEvent', o.onStoreEvent),
  };
}

const STORE_METHODS = ['report', 'claimProbe', 'settleProbe', 'control'] as const;

function checkStore(owner: string, store: unknown): BreakerStore | undefined {
  if (store === undefined) return undefined;
  const s = store as Record<string, unknown> | null;
  if (
    s === null ||
    typeof s !== 'object' ||
    STORE_METHODS.some((m) => typeof s[m] !== 'function')
  ) {
    throw new TypeError(
      `stormproof: ${owner} store must have ${STORE_METHODS.join(', ')} methods, got ${show(store)}`,
    );
  }
  return store as BreakerStore;
}
