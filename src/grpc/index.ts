/**
 * stormproof/grpc: gRFC A6 retries for @grpc/grpc-js, exactly.
 *
 * Two ways to the same policy: `createRetryInterceptor(options)`, a client interceptor that runs
 * each call through stormproof's engine (strict pushback, RetryInfo, throttling that never
 * waits, the call's deadline as total deadline), or `toServiceConfig(options)`, a service config
 * for grpc-js's own retries. docs/grpc.md says when to choose which and where grpc-js differs
 * from A6. On the server, `createAdmissionInterceptor(options)` puts stormproof/server's engine
 * in front of gRPC methods: UNAVAILABLE with a spread `grpc-retry-pushback-ms`, or -1 when the
 * whole service is overloaded. Needs `@grpc/grpc-js` (an optional peer dependency) for the
 * interceptors.
 *
 * @example
 * ```ts
 * import { createRetryInterceptor } from 'stormproof/grpc';
 * const client = new Client(address, credentials.createInsecure(), {
 *   interceptors: [createRetryInterceptor({ maxAttempts: 3 })],
 * });
 * ```
 *
 * @module
 */

// The same function as stormproof's and stormproof/fetch's: one import per adapter.
export type { RetryReport } from '../core/options.js';
export { getRetryReport } from '../core/report.js';
export { type AdmissionInterceptor, createAdmissionInterceptor } from './admission.js';
export type { GrpcHedgeRefusal, HedgingPolicyOptions } from './hedging.js';
export {
  createRetryInterceptor,
  PREVIOUS_ATTEMPTS_HEADER,
  type RetryInterceptorOptions,
} from './interceptor.js';
export { MAX_ATTEMPTS_LIMIT } from './limits.js';
export {
  MAX_PUSHBACK_MS,
  PUSHBACK_TRAILER,
  type Pushback,
  parsePushback,
  readRetryInfoMs,
  STATUS_DETAILS_TRAILER,
} from './pushback.js';
export {
  type HedgingServiceConfig,
  type RetryServiceConfig,
  type ServiceConfigOptions,
  toDuration,
  toServiceConfig,
} from './service-config.js';
export type { StatusCodeLike, StatusName } from './status-codes.js';
export {
  createThrottle,
  type Throttle,
  type ThrottleOptions,
  type ThrottlingOptions,
} from './throttle.js';
