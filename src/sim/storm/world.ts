// What every part of the storm model shares: virtual time (the current millisecond and second),
// the event calendar, the one seeded random source, the network between the partner backends and
// the edge, and the things that move through the model (a tap, an attempt, a server job) with the
// events that move them.
import type { BreakerAdmission } from '../../core/breaker/breaker.js';
import type { Clock } from '../../core/clock.js';
import type { Outcome, RetryState } from '../../core/step.js';
import type { Admission } from '../../server/shedder.js';
import { PythonRandom } from '../python-random.js';
import { Calendar } from '../storm-calendar.js';
import type { StormParameters } from './options.js';

/** Virtual time, the calendar and the random source of one run. */
export class World {
  /** The current virtual millisecond. */
  now = 0;
  /** The current second (the measurements' slot). */
  sec = 0;
  readonly calendar = new Calendar<unknown>(13);
  readonly rng: PythonRandom;
  /** The one seeded generator behind every random draw of the run. */
  readonly random: () => number;
  /** The simulator's clock, for the engine's parts: its time is the run's virtual time. */
  readonly clock: Clock;
  /**
   * The 503 the servers and the edge send: with `Retry-After: retryAfterSeconds` when that is
   * above 0. One object, whoever sends it.
   */
  readonly serviceUnavailable: Outcome;

  constructor(readonly p: StormParameters) {
    const rng = new PythonRandom(p.seed);
    this.rng = rng;
    this.random = () => rng.random();
    this.clock = {
      now: () => this.now,
      sleep: () => Promise.resolve(),
      // Timers on the calendar: the server engine's queue timer fires at its virtual millisecond.
      setTimer: (ms, callback) => {
        const timer: Timer = { callback, cancelled: false };
        this.calendar.schedule(this.now + Math.ceil(ms), timer, EV_TIMER);
        return () => {
          timer.cancelled = true;
        };
      },
    };
    this.serviceUnavailable = unavailable(p.retryAfterSeconds);
  }

  /** One trip between a partner backend and the edge: uniform over [0.5, 1.5] x the latency. */
  latency(): number {
    const ms = this.p.networkLatencyMs;
    return ms === 0 ? 0 : Math.round(ms * (0.5 + this.random()));
  }
}

/** One farmer's tap, as the partner backend handles it. */
export interface UserRequest {
  readonly instance: number;
  readonly key: number;
  /** The partner wrapper's attempt (library call) number, or 0 when this instance does not wrap. */
  wrapperAttempt: number;
  /** The client library's attempt number in its current call (from 1). */
  libAttempt: number;
  /** When the library's current call started. */
  libStartedAt: number;
  /** The engine's state of the library's current call (undefined when the library is fixed). */
  lib: RetryState | undefined;
}

// Where a client-library attempt is.
/** On its way to the edge. */
export const TO_EDGE = 0;
/** With the gateway, which is trying the API servers. */
export const IN_GATEWAY = 1;
/** Answered (by the edge or the gateway); the answer is on its way back. */
export const ANSWERED = 2;

/** One client-library attempt, and the gateway's handling of it (one gateway request). */
export interface Attempt {
  readonly user: UserRequest;
  /** The client has its answer or has hung up: nothing more happens to this attempt. */
  done: boolean;
  stage: number;
  /** The gateway's attempt number for this request (its tries that got an answer or failed). */
  gatewayAttempt: number;
  /** Number of the gateway's current try; answers to older tries are ignored. */
  tryNo: number;
  /** The answer travelling back to the client. */
  answer: Outcome;
  /** Its instance's circuit breaker's admission, recorded when the attempt ends. */
  readonly admission: BreakerAdmission | undefined;
}

/** A request accepted by an API server: it holds a connection until it is answered. */
export interface Job {
  readonly attempt: Attempt;
  readonly tryNo: number;
  readonly key: number;
  /** CPU ms still to do; NaN until the CPU first reaches it and looks in the cache. */
  remaining: number;
  miss: boolean;
  /** When the server accepted its connection. */
  readonly acceptedAt: number;
  /** With server protection: which server took it, and its engine's decision once made. */
  server: number;
  admission: Admission | undefined;
}

/** A timer of the simulator's clock (see {@link World.clock}). */
export interface Timer {
  readonly callback: () => void;
  cancelled: boolean;
}

// Event kinds. The low 4 bits of a code are the kind; the gateway timeout keeps its try number
// in the bits above.
export const EV_EDGE = 0;
export const EV_CLIENT_TIMEOUT = 1;
export const EV_ANSWER = 2;
export const EV_LIBRARY_RETRY = 3;
export const EV_WRAPPER_RETRY = 4;
export const EV_GATEWAY_RETRY = 5;
export const EV_GATEWAY_TIMEOUT = 6;
export const EV_DB_DONE = 7;
export const EV_DB_FAILED = 8;
/** A server engine decided on a queued request (the job carries the decision). */
export const EV_SERVER_DECIDED = 9;
/** A timer of the simulator's clock is due. */
export const EV_TIMER = 10;

export const OK: Outcome = Object.freeze({ ok: true });
export const CLIENT_TIMEOUT: Outcome = Object.freeze({
  ok: false,
  error: Object.freeze({ timedOut: true }),
});
export const GATEWAY_TIMEOUT: Outcome = Object.freeze({
  ok: false,
  error: Object.freeze({ status: 504 }),
});

/** A 503 as the servers send it: with `Retry-After: N` when N > 0. */
export function unavailable(retryAfterSeconds: number): Outcome {
  const error =
    retryAfterSeconds > 0
      ? { status: 503, headers: Object.freeze({ 'retry-after': String(retryAfterSeconds) }) }
      : { status: 503 };
  return Object.freeze({ ok: false, error: Object.freeze(error) });
}
