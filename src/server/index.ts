/**
 * stormproof/server: shed load cheaply, tell each client when to come back, reopen in steps,
 * retry at one layer. One runtime-agnostic engine (`createShedder`) behind two thin adapters:
 * `webMiddleware` (Request/Response) and `nodeMiddleware` (node:http, Express, Connect).
 *
 * @module
 */

export { OVERLOADED_HEADER } from '../core/classify.js';
export { type NodeMiddleware, nodeHeaderReader, nodeMiddleware } from './adapters/node.js';
export { type WebMiddleware, webMiddleware } from './adapters/web.js';
export type {
  AnswerKind,
  Rejection,
  ShedEvent,
  ShedReason,
} from './answers.js';
export type { KneeOptions } from './knee.js';
export type {
  AimdOptions,
  ConcurrencyLimit,
  Gradient2Options,
  LimitEvent,
  LimitOption,
} from './limits.js';
export type {
  GatewayOptions,
  QueueOptions,
  RampOptions,
  ShedderHooks,
  ShedderOptions,
} from './options.js';
export type { RetryAfterOption } from './pushback.js';
export type { CallerState } from './queue.js';
export type { RampEvent, RampReason } from './ramp.js';
export {
  ATTEMPT_HEADER,
  CRITICALITY_LEVELS,
  type Criticality,
  type HeaderReader,
  isRetry,
  PUSHBACK_HEADER,
} from './request-info.js';
export {
  type Admission,
  createShedder,
  type Shedder,
  type ShedderStats,
  type Ticket,
} from './shedder.js';
export { saysDoNotRetry } from './throttle.js';
