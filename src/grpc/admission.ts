// The server adapter: stormproof/server's engine (`createShedder`) in front of gRPC methods, as
// a grpc-js server interceptor. The engine decides everything (limit, queue, retries first, the
// wait, "do not retry"); this file only reads request metadata, turns a rejection into gRPC's
// words (UNAVAILABLE and `grpc-retry-pushback-ms`) and hands each ticket back when its call ends.
import {
  Metadata,
  ServerInterceptingCall,
  type ServerInterceptingCallInterface,
  type ServerInterceptor,
  type ServerMethodDefinition,
} from '@grpc/grpc-js';
import type { Rejection } from '../server/answers.js';
import { shedderOf } from '../server/engine.js';
import type { ShedderOptions } from '../server/options.js';
import type { HeaderReader } from '../server/request-info.js';
import { PUSHBACK_HEADER } from '../server/request-info.js';
import type { Admission, Shedder, Ticket } from '../server/shedder.js';
import { MAX_PUSHBACK_MS, PUSHBACK_TRAILER } from './pushback.js';
import { CODE } from './status-codes.js';

/** A grpc-js server interceptor with the engine it runs, for `stats()`, `reopen()`, `close()`. */
export type AdmissionInterceptor = ServerInterceptor & { readonly shedder: Shedder };

/**
 * The HTTP status the engine learns from a call's gRPC status (grpc-gateway's mapping,
 * `HTTPStatusFromCode`): 5xx counts as a failure for the ramp, 429/503/504 as a drop for an
 * adaptive limit. CANCELLED is 499, neither: a caller that went away says nothing about this
 * server (Netflix concurrency-limits stopped counting cancelled gRPC calls as drops, PR #146).
 */
const HTTP_STATUS = [
  200, 499, 500, 400, 504, 404, 409, 403, 429, 400, 409, 400, 501, 500, 503, 500, 401,
] as const;

/** How close to its deadline a call that ends without a status counts as timed out. */
const DEADLINE_SLACK_MS = 20;

function httpStatusOf(code: number): number {
  return HTTP_STATUS[code] ?? 500;
}

/** Reads request metadata like headers: the first text value of a key, or undefined. */
function metadataReader(metadata: Metadata | null | undefined): HeaderReader {
  return (name) => {
    const value = metadata?.get(name)[0];
    return typeof value === 'string' ? value : undefined;
  };
}

/**
 * A rejection in gRPC's words. Both answers are UNAVAILABLE (gRPC's own HTTP mapping turns 429
 * and 503 into it, and it is the status clients retry by default); the trailer tells them apart:
 * the spread wait, or -1 for "overloaded, do not retry". A fixed wait (`retryAfter: { mode:
 * 'fixed' }`) sends no pushback: A6 clients obey a pushback exactly, so one value for everyone
 * would bring them all back together; without it they use their own jittered backoff.
 */
function rejectionStatus(rejection: Rejection) {
  const trailers = new Metadata();
  let details: string;
  if (rejection.kind === 'do-not-retry') {
    trailers.set(PUSHBACK_TRAILER, '-1');
    details = `stormproof: service overloaded (${rejection.reason}), do not retry`;
  } else {
    const spread = rejection.headers.find(([name]) => name === PUSHBACK_HEADER)?.[1];
    if (spread !== undefined)
      trailers.set(PUSHBACK_TRAILER, String(Math.min(Number(spread), MAX_PUSHBACK_MS)));
    details = `stormproof: shed (${rejection.reason}), come back in ${rejection.waitMs} ms`;
  }
  return { code: CODE.UNAVAILABLE, details, metadata: trailers };
}

/**
 * Puts stormproof/server's admission in front of gRPC methods: a grpc-js server interceptor for
 * `new Server({ interceptors: [...] })`. Each call is judged from its request metadata alone,
 * before any message is read: admitted, queued, or answered UNAVAILABLE with a spread
 * `grpc-retry-pushback-ms` (come back later) or a pushback of -1 when `serviceOverloaded()`
 * says the whole service is overloaded (do not retry). Retries (`grpc-previous-rpc-attempts`
 * >= 1) are shed first under contention. An admitted call gives its place back once, when it
 * ends: with its status, on cancellation, or at its deadline. Takes the options of
 * `createShedder` or an engine made with it (shared with HTTP adapters, say); a bad option
 * throws a TypeError or RangeError naming it.
 *
 * @example
 * ```ts
 * import { Server } from '@grpc/grpc-js';
 * import { createAdmissionInterceptor } from 'stormproof/grpc';
 *
 * const admission = createAdmissionInterceptor({ limit: 64 });
 * const server = new Server({ interceptors: [admission] });
 * ```
 */
export function createAdmissionInterceptor(
  options?: Shedder | ShedderOptions,
): AdmissionInterceptor {
  const shedder = shedderOf(options);
  const interceptor = (
    _method: ServerMethodDefinition<unknown, unknown>,
    call: ServerInterceptingCallInterface,
  ): ServerInterceptingCall => {
    let ticket: Ticket | undefined;
    // Turns aborted when the call ends: a plain field, not a getter (V8 builds an object
    // literal with a getter slowly, on every call).
    const caller = { aborted: false };
    /** Hands the ticket back, once. True in gateway mode when the downstream said "do not retry". */
    const release = (httpStatus: number, trailers?: Metadata | null): boolean => {
      caller.aborted = true;
      const held = ticket;
      ticket = undefined;
      return (
        held?.finish(httpStatus, trailers == null ? undefined : metadataReader(trailers)) === true
      );
    };
    return new ServerInterceptingCall(call, {
      start(next) {
        next({
          onReceiveMetadata(metadata, pass) {
            const decide = (admission: Admission) => {
              if (!admission.admitted) {
                call.sendStatus(rejectionStatus(admission));
                return;
              }
              ticket = admission;
              // The caller left while the call waited: nothing will run, give the place back.
              if (caller.aborted) release(httpStatusOf(CODE.CANCELLED));
              else pass(metadata);
            };
            const pending = shedder.admit(metadataReader(metadata), caller);
            if (pending instanceof Promise) pending.then(decide);
            else decide(pending);
          },
          onCancel() {
            if (caller.aborted) return;
            // grpc-js ends a call at its deadline without a status through interceptors. Its
            // deadline timer runs on the event loop's clock, which can lag Date.now() by a busy
            // tick: a call that ends this close to its deadline ended at the deadline.
            const deadline = call.getDeadline();
            const at = deadline instanceof Date ? deadline.getTime() : deadline;
            const timedOut = Date.now() >= at - DEADLINE_SLACK_MS;
            release(httpStatusOf(timedOut ? CODE.DEADLINE_EXCEEDED : CODE.CANCELLED));
          },
        });
      },
      sendStatus(status, next) {
        if (caller.aborted || !release(httpStatusOf(status.code), status.metadata)) {
          next(status);
          return;
        }
        // Gateway mode: say "do not retry" upward, in gRPC's words.
        const trailers = status.metadata?.clone() ?? new Metadata();
        trailers.set(PUSHBACK_TRAILER, '-1');
        next({ ...status, metadata: trailers });
      },
    });
  };
  return Object.assign(interceptor, { shedder });
}
