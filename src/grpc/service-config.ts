// gRFC A6's retry or hedging policy as grpc-js reads it: the same options as the interceptor,
// turned into a service config object for the channel option `grpc.service_config`, checked as A6 checks it.
import { truncatedThousandths } from '../core/budgets/token-bucket.js';
import {
  checkKnownKeys,
  checkNumber,
  checkOptionsObject,
  refuseNulls,
  show,
} from '../core/validate.js';
import { checkHedging, type HedgingPolicyOptions } from './hedging.js';
import { capMaxAttempts } from './limits.js';
import { resolveStatusCodes, type StatusCodeLike, statusName } from './status-codes.js';

/** The options of {@link toServiceConfig}. */
export interface ServiceConfigOptions {
  /**
   * The fully qualified service the policy applies to (`package.Service`).
   * @default none (required)
   * @example
   * ```ts
   * { service: 'weather.v1.Forecasts' }
   * ```
   */
  service: string;
  /**
   * One method of that service; unset, every method of the service.
   * @default undefined (every method)
   * @example
   * ```ts
   * { service: 'weather.v1.Forecasts', method: 'GetForecast' }
   * ```
   */
  method?: string | undefined;
  /**
   * Total attempts, the first included: an integer >= 2 (A6); above 5 it becomes 5, with a warning.
   * @default 4
   * @example
   * ```ts
   * { maxAttempts: 3 }
   * ```
   */
  maxAttempts?: number | undefined;
  /**
   * `initialBackoff`, in ms: > 0.
   * @default 200
   * @example
   * ```ts
   * { baseDelayMs: 100 } // "0.1s"
   * ```
   */
  baseDelayMs?: number | undefined;
  /**
   * `maxBackoff`, in ms: > 0.
   * @default 5000, or baseDelayMs if larger
   * @example
   * ```ts
   * { maxDelayMs: 1000 } // "1s"
   * ```
   */
  maxDelayMs?: number | undefined;
  /**
   * `backoffMultiplier`: > 0.
   * @default 2
   * @example
   * ```ts
   * { backoffMultiplier: 1.5 }
   * ```
   */
  backoffMultiplier?: number | undefined;
  /**
   * `retryableStatusCodes`: non-empty, numbers or names in any case; written as upper-case names.
   * @default ['UNAVAILABLE']
   * @example
   * ```ts
   * { retryableStatusCodes: ['UNAVAILABLE', 'ABORTED'] }
   * ```
   */
  retryableStatusCodes?: readonly StatusCodeLike[] | undefined;
  /**
   * `retryThrottling`: maxTokens an integer in (0, 1000], tokenRatio > 0 truncated to three
   * decimals (it must stay >= 0.001). Unset: no throttling.
   * @default undefined
   * @example
   * ```ts
   * { throttling: { maxTokens: 10, tokenRatio: 0.1 } }
   * ```
   */
  throttling?: { maxTokens: number; tokenRatio: number } | undefined;
  /**
   * A6's `hedgingPolicy` instead of its `retryPolicy` (a method has one or the other): not with
   * `maxAttempts`, `baseDelayMs`, `maxDelayMs`, `backoffMultiplier` or `retryableStatusCodes`.
   * `throttling` applies to hedges as to retries.
   * @default undefined (a retryPolicy)
   * @example
   * ```ts
   * { service: 'weather.v1.Forecasts', hedging: { maxAttempts: 2, hedgingDelayMs: 20 } }
   * ```
   */
  hedging?: HedgingPolicyOptions | undefined;
}

/** The part of a gRPC service config that `toServiceConfig` writes (JSON form). */
export interface RetryServiceConfig {
  methodConfig: Array<{
    name: Array<{ service: string; method?: string }>;
    retryPolicy: {
      maxAttempts: number;
      initialBackoff: string;
      maxBackoff: string;
      backoffMultiplier: number;
      retryableStatusCodes: string[];
    };
  }>;
  retryThrottling?: { maxTokens: number; tokenRatio: number };
}

/** The service config `toServiceConfig` writes for `hedging` (JSON form): A6's hedgingPolicy. */
export interface HedgingServiceConfig {
  methodConfig: Array<{
    name: Array<{ service: string; method?: string }>;
    hedgingPolicy: {
      maxAttempts: number;
      hedgingDelay: string;
      nonFatalStatusCodes: string[];
    };
  }>;
  retryThrottling?: { maxTokens: number; tokenRatio: number };
}

const OWNER = 'toServiceConfig';
const KEYS = [
  'service',
  'method',
  'maxAttempts',
  'baseDelayMs',
  'maxDelayMs',
  'backoffMultiplier',
  'retryableStatusCodes',
  'throttling',
  'hedging',
] as const;

/** The options of A6's retryPolicy, which a hedgingPolicy does not take. */
const RETRY_ONLY_KEYS = [
  'maxAttempts',
  'baseDelayMs',
  'maxDelayMs',
  'backoffMultiplier',
  'retryableStatusCodes',
] as const;

/** Milliseconds as a proto3 Duration string in seconds: 200 -> "0.2s", 1500 -> "1.5s". */
export function toDuration(ms: number): string {
  // Nanosecond precision, the Duration's own; trailing zeros dropped.
  const fixed = (ms / 1000).toFixed(9).replace(/\.?0+$/, '');
  return `${fixed}s`;
}

function checkName(name: string, value: unknown, required: boolean): string | undefined {
  if (value === undefined && !required) return undefined;
  if (typeof value !== 'string' || value === '' || /\s|\//.test(value)) {
    throw new TypeError(
      `stormproof: ${OWNER} ${name} must be a non-empty name without spaces or slashes, got ${show(value)}`,
    );
  }
  return value;
}

/**
 * Makes a gRPC service config that gives grpc-js's built-in retries a gRFC A6 retry policy, or
 * with `hedging` a hedging policy (and optionally `retryThrottling`), validated as A6 says. Pass it, as JSON, in the channel option
 * `grpc.service_config`. A bad value throws a TypeError or RangeError naming the field.
 *
 * grpc-js then retries by itself, with the differences from A6 listed in docs/grpc.md; the
 * options here are already A6-exact (tokenRatio truncated, maxTokens an integer), which avoids
 * two of them.
 *
 * @example
 * ```ts
 * const config = toServiceConfig({ service: 'weather.v1.Forecasts', maxAttempts: 3, baseDelayMs: 100, maxDelayMs: 1000 });
 * const client = new Client(address, credentials.createInsecure(), {
 *   'grpc.service_config': JSON.stringify(config),
 * });
 * ```
 */
export function toServiceConfig(
  options: ServiceConfigOptions & { hedging: HedgingPolicyOptions },
): HedgingServiceConfig;
export function toServiceConfig(
  options: ServiceConfigOptions & { hedging?: undefined },
): RetryServiceConfig;
export function toServiceConfig(
  options: ServiceConfigOptions,
): RetryServiceConfig | HedgingServiceConfig {
  const o = checkOptionsObject(OWNER, options);
  checkKnownKeys(OWNER, o, KEYS);
  refuseNulls(OWNER, o);
  const service = checkName('service', o.service, true)!;
  const method = checkName('method', o.method, false);
  const name = [method === undefined ? { service } : { service, method }];
  if (o.hedging !== undefined) {
    for (const key of RETRY_ONLY_KEYS) {
      if (o[key] !== undefined) {
        throw new TypeError(
          `stormproof: ${OWNER} takes hedging or ${key}, not both (gRFC A6: a method has a retry policy or a hedging policy)`,
        );
      }
    }
    const hedging = checkHedging(OWNER, o.hedging);
    const config: HedgingServiceConfig = {
      methodConfig: [
        {
          name,
          hedgingPolicy: {
            maxAttempts: hedging.maxAttempts,
            hedgingDelay: toDuration(hedging.delayMs),
            nonFatalStatusCodes: [...hedging.nonFatal].map((code) => statusName(code)!),
          },
        },
      ],
    };
    addThrottling(config, o.throttling);
    return config;
  }
  const maxAttempts = capMaxAttempts(
    OWNER,
    checkNumber(OWNER, 'maxAttempts', o.maxAttempts ?? 4, { min: 2, integer: true }),
  );
  const positive = { min: 0, minExclusive: true };
  const baseDelayMs = checkNumber(OWNER, 'baseDelayMs', o.baseDelayMs ?? 200, positive);
  const maxDelayMs = checkNumber(
    OWNER,
    'maxDelayMs',
    o.maxDelayMs ?? Math.max(5000, baseDelayMs),
    positive,
  );
  const backoffMultiplier = checkNumber(
    OWNER,
    'backoffMultiplier',
    o.backoffMultiplier ?? 2,
    positive,
  );
  const codes = resolveStatusCodes(OWNER, o.retryableStatusCodes ?? ['UNAVAILABLE']);
  for (const [name, ms] of [
    ['baseDelayMs', baseDelayMs],
    ['maxDelayMs', maxDelayMs],
  ] as const) {
    // A Duration keeps nanoseconds: a value that rounds to 0 there would be "0s", which A6 refuses.
    if (toDuration(ms) === '0s') {
      throw new RangeError(
        `stormproof: ${OWNER} ${name} must be at least 1 ns (1e-6 ms), got ${ms}`,
      );
    }
  }
  const config: RetryServiceConfig = {
    methodConfig: [
      {
        name,
        retryPolicy: {
          maxAttempts,
          initialBackoff: toDuration(baseDelayMs),
          maxBackoff: toDuration(maxDelayMs),
          backoffMultiplier,
          retryableStatusCodes: [...codes].map((code) => statusName(code)!),
        },
      },
    ],
  };
  addThrottling(config, o.throttling);
  return config;
}

/** A6's `retryThrottling`, checked, when `throttling` is given. */
function addThrottling(
  config: RetryServiceConfig | HedgingServiceConfig,
  throttling: unknown,
): void {
  if (throttling !== undefined) {
    const t = checkOptionsObject(`${OWNER} throttling`, throttling);
    checkKnownKeys(`${OWNER} throttling`, t, ['maxTokens', 'tokenRatio']);
    refuseNulls(`${OWNER} throttling`, t);
    const maxTokens = checkNumber(OWNER, 'throttling.maxTokens', t.maxTokens, {
      min: 0,
      minExclusive: true,
      max: 1000,
      integer: true,
    });
    const tokenRatio = checkNumber(OWNER, 'throttling.tokenRatio', t.tokenRatio, { min: 0.001 });
    config.retryThrottling = { maxTokens, tokenRatio: truncatedThousandths(tokenRatio) / 1000 };
  }
}
