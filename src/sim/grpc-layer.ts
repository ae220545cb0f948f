// A gRPC layer for `stormproof check`: the retry policy of a gRPC service config (gRFC A6), read
// into the fields `check` knows. Runtime-agnostic, like the rest of sim/: no @grpc/grpc-js here.
import { checkNumber, show } from '../core/validate.js';

/** The layer fields a gRPC service config stands for. */
export interface GrpcLayerFields {
  /** `maxAttempts`, treated as 5 when above 5, as gRPC does. */
  readonly attempts: number;
  /** What the config asked for, before gRPC's cap. */
  readonly requestedAttempts: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  readonly backoffMultiplier: number;
  /** gRPC's backoff band, U(0.8, 1.2). */
  readonly jitter: 'band';
  /** `retryThrottling` is gRPC's retry budget. */
  readonly budget: boolean;
  /** The method config's `timeout`: the deadline of the whole call. */
  readonly deadlineMs: number | undefined;
}

/** gRPC treats any maxAttempts above 5 as 5 (gRFC A6). */
const GRPC_MAX_ATTEMPTS = 5;

const DURATION = /^(\d+)(\.\d{1,9})?s$/;

function object(at: string, value: unknown): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new TypeError(`stormproof: ${at} must be an object, got ${show(value)}`);
  }
  return value as Record<string, unknown>;
}

/** A proto3 Duration string ("0.1s") in ms, > 0. */
function duration(at: string, value: unknown): number {
  const match = typeof value === 'string' ? DURATION.exec(value) : null;
  const ms = match === null ? Number.NaN : Number(`${match[1]}${match[2] ?? ''}`) * 1000;
  if (!(ms > 0)) {
    throw new TypeError(
      `stormproof: ${at} must be a proto3 Duration string above 0 such as "0.1s", got ${show(value)}`,
    );
  }
  return ms;
}

/**
 * Reads the first method config with a `retryPolicy` from a gRPC service config (the JSON given
 * to grpc-js as `grpc.service_config`), checked as gRFC A6 checks it. `at` names the field in
 * error messages (`stack layers[0].grpc`).
 */
export function readGrpcServiceConfig(at: string, config: unknown): GrpcLayerFields {
  const c = object(at, config);
  const methods = c.methodConfig;
  const method = Array.isArray(methods)
    ? (methods as unknown[]).findIndex(
        (m) => typeof m === 'object' && m !== null && 'retryPolicy' in m,
      )
    : -1;
  if (method < 0) {
    throw new TypeError(
      `stormproof: ${at}.methodConfig must hold a method config with a retryPolicy, got ${show(methods)}`,
    );
  }
  const m = object(`${at}.methodConfig[${method}]`, (methods as unknown[])[method]);
  const where = `${at}.methodConfig[${method}].retryPolicy`;
  const p = object(where, m.retryPolicy);
  const requestedAttempts = checkNumber(where, 'maxAttempts', p.maxAttempts, {
    min: 2,
    integer: true,
  });
  const baseDelayMs = duration(`${where}.initialBackoff`, p.initialBackoff);
  const maxDelayMs = duration(`${where}.maxBackoff`, p.maxBackoff);
  const backoffMultiplier = checkNumber(where, 'backoffMultiplier', p.backoffMultiplier, {
    min: 0,
    minExclusive: true,
  });
  const codes = p.retryableStatusCodes;
  if (!Array.isArray(codes) || codes.length === 0) {
    throw new TypeError(
      `stormproof: ${where}.retryableStatusCodes must be a non-empty array, got ${show(codes)}`,
    );
  }
  let budget = false;
  if (c.retryThrottling !== undefined) {
    const t = object(`${at}.retryThrottling`, c.retryThrottling);
    checkNumber(`${at}.retryThrottling`, 'maxTokens', t.maxTokens, {
      min: 0,
      minExclusive: true,
      max: 1000,
      integer: true,
    });
    checkNumber(`${at}.retryThrottling`, 'tokenRatio', t.tokenRatio, { min: 0.001 });
    budget = true;
  }
  return {
    attempts: Math.min(requestedAttempts, GRPC_MAX_ATTEMPTS),
    requestedAttempts,
    baseDelayMs,
    maxDelayMs,
    backoffMultiplier,
    jitter: 'band',
    budget,
    deadlineMs:
      m.timeout === undefined
        ? undefined
        : duration(`${at}.methodConfig[${method}].timeout`, m.timeout),
  };
}
