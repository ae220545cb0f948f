// gRFC A6's retry throttle as an object of its own: one token bucket per channel target, which
// several interceptors can share. A6 gives a method a retry policy or a hedging policy, so a
// client that retries some methods and hedges others uses two interceptors; A6 (and grpc-js)
// keep one throttle per server for both, so both take the same `Throttle`: the failures of the
// retried methods drain the tokens that gate the hedges, and the other way round.
import { TokenBucket } from '../core/budgets/token-bucket.js';
import { checkKnownKeys, checkNumber, checkOptionsObject, refuseNulls } from '../core/validate.js';
import { OriginBudgets } from '../fetch/budgets.js';

/** How many channel targets' throttles are remembered by default. */
export const DEFAULT_MAX_TARGETS = 1000;

/** gRFC A6's `retryThrottling`: one token bucket per channel target this interceptor calls. */
export interface ThrottlingOptions {
  /**
   * The most tokens, and the starting count. A whole number in (0, 1000]. Retries stop while the
   * count is at or below half of it.
   * @default 10 (gRFC A6's example)
   * @example
   * ```ts
   * { throttling: { maxTokens: 10, tokenRatio: 0.1 } }
   * ```
   */
  maxTokens?: number | undefined;
  /**
   * Tokens each successful call adds back; digits past the third decimal are ignored
   * (0.5466 counts as 0.546).
   * @default 0.1 (gRFC A6's example)
   * @example
   * ```ts
   * { throttling: { maxTokens: 100, tokenRatio: 0.5 } }
   * ```
   */
  tokenRatio?: number | undefined;
}

/** The options of {@link createThrottle}. */
export interface ThrottleOptions extends ThrottlingOptions {
  /**
   * How many channel targets' buckets the throttle remembers. Past it, the target used least
   * recently is forgotten, and starts again with a full bucket if it is called again. An
   * integer >= 1.
   * @default 1000
   * @example
   * ```ts
   * createThrottle({ maxTokens: 10, tokenRatio: 0.1, maxTargets: 50 })
   * ```
   */
  maxTargets?: number | undefined;
}

/**
 * gRFC A6's retry throttle, one token bucket per channel target, for the interceptors that share
 * it (`createRetryInterceptor({ throttling })`, retrying or hedging). Made by
 * {@link createThrottle}.
 */
export interface Throttle {
  /** The most tokens of each target's bucket, and its starting count. */
  readonly maxTokens: number;
  /** Tokens a success adds back, after dropping digits past the third decimal. */
  readonly tokenRatio: number;
  /**
   * The bucket of a channel target (as grpc-js names it, `dns:weather.internal:443`), made
   * full on first use.
   */
  bucketOf(target: string): TokenBucket;
}

const OWNER = 'createThrottle';
/** Marks a throttle, so one from another installed copy of stormproof is still shared. */
const BRAND = Symbol.for('stormproof.grpc.Throttle');
const KEYS = ['maxTokens', 'tokenRatio'] as const;

class SharedThrottle implements Throttle {
  readonly maxTokens: number;
  readonly tokenRatio: number;
  readonly #targets: OriginBudgets<TokenBucket>;

  constructor(owner: string, name: string, input: unknown, maxTargets: number | undefined) {
    const o = checkOptionsObject(`${owner} ${name}`.trim(), input);
    const keys = maxTargets === undefined ? ['maxTokens', 'tokenRatio', 'maxTargets'] : KEYS;
    checkKnownKeys(`${owner} ${name}`.trim(), o, keys);
    refuseNulls(`${owner} ${name}`.trim(), o);
    const prefix = name === '' ? '' : `${name}.`;
    const maxTokens = checkNumber(owner, `${prefix}maxTokens`, o.maxTokens ?? 10, {
      min: 0,
      minExclusive: true,
      max: 1000,
      integer: true,
    });
    const tokenRatio = checkNumber(owner, `${prefix}tokenRatio`, o.tokenRatio ?? 0.1, {
      min: 0.001,
    });
    const targets =
      maxTargets ??
      checkNumber(owner, 'maxTargets', o.maxTargets ?? DEFAULT_MAX_TARGETS, {
        min: 1,
        integer: true,
      });
    const options = { maxTokens, tokenRatio };
    const first = new TokenBucket(options);
    this.maxTokens = first.maxTokens;
    this.tokenRatio = first.tokenRatio;
    this.#targets = new OriginBudgets(targets, () => new TokenBucket(options));
  }

  bucketOf(target: string): TokenBucket {
    return this.#targets.get(target);
  }

  /** The brand {@link toThrottle} looks for. */
  get [BRAND](): true {
    return true;
  }
}

/**
 * Makes gRFC A6's retry throttle (`retryThrottling`) to share between interceptors: one token
 * bucket per channel target, as A6 keeps one per server name. Give the same throttle as
 * `throttling` to the interceptor that retries some methods and to the one that hedges others,
 * and a target's retry failures take the tokens its hedges need (and its hedges' failures the
 * tokens its retries need), as grpc-js's one throttle per target does. Interceptors given plain
 * `{ maxTokens, tokenRatio }` options each keep throttles of their own. A throttle from another
 * installed copy of stormproof is shared too (it carries a `Symbol.for` brand).
 *
 * Options are checked here: a wrong type, a value out of range, an unknown name or `null` throws a
 * TypeError or RangeError naming it.
 *
 * @example
 * ```ts
 * import type { Interceptor } from '@grpc/grpc-js';
 * import { createRetryInterceptor, createThrottle } from 'stormproof/grpc';
 *
 * const throttling = createThrottle({ maxTokens: 10, tokenRatio: 0.1 });
 * const retries = createRetryInterceptor({ maxAttempts: 3, throttling });
 * const hedges = createRetryInterceptor({ hedging: { maxAttempts: 2, hedgingDelayMs: 20 }, throttling });
 * const interceptor: Interceptor = (options, next) =>
 *   options.method_definition.path.endsWith('/Get') ? hedges(options, next) : retries(options, next);
 * ```
 */
export function createThrottle(options?: ThrottleOptions): Throttle {
  return new SharedThrottle(OWNER, '', options, undefined);
}

/**
 * An interceptor's `throttling` option as a throttle: the shared one as given, or a throttle of
 * its own made from `{ maxTokens, tokenRatio }` (remembering `maxTargets` targets). Errors name
 * `throttling` and `throttling.maxTokens` and so on.
 */
export function toThrottle(owner: string, value: unknown, maxTargets: number): Throttle {
  if (
    typeof value === 'object' &&
    value !== null &&
    (value as Record<symbol, unknown>)[BRAND] === true
  ) {
    return value as Throttle;
  }
  return new SharedThrottle(owner, 'throttling', value, maxTargets);
}
