// The one event source: every part of stormproof reports what it decides into the named channels
// below, and anything that wants to watch (stormproof/otel, a log line, a test) subscribes to
// them. No dependency and no `node:` import. On a runtime that has `node:diagnostics_channel`
// (Node 20.16 and later, and runtimes that implement `process.getBuiltinModule` with it), each
// channel IS the diagnostics channel of that name, looked up at load through
// `process.getBuiltinModule` exactly as stormproof/fetch finds undici's channels: a subscriber
// through `diagnostics_channel.subscribe('stormproof:call', ...)` and one through `subscribe` here
// see the same messages, as undici feeds `@opentelemetry/instrumentation-undici`. Elsewhere
// (browsers, workerd) a small portable subscriber list stands in, with the same interface.
//
// With nobody subscribed it costs one `hasSubscribers` read at each point that reports: no message
// is built. Messages are built only for subscribers, and say no more than the hooks already do:
// no URL with its query (stormproof/fetch redacts as in its own events), no header, no body.

import type { FailureKind } from './classify.js';
import type { GiveUpReason } from './options.js';

/** A channel of the event source: one per part of stormproof. */
export interface EventChannel<M> {
  /** Its name, such as `'stormproof:call'`: the diagnostics channel of that name on Node. */
  readonly name: string;
  /** Whether anyone listens. Read before building a message: with nobody, nothing is built. */
  readonly hasSubscribers: boolean;
  /** Hands `message` to every subscriber, synchronously. */
  publish(message: M): void;
  /** Adds a subscriber; adding the same function twice adds it once (as diagnostics_channel). */
  subscribe(subscriber: (message: M, name: string) => void): void;
  /** Removes a subscriber; whether it was there. */
  unsubscribe(subscriber: (message: M, name: string) => void): boolean;
}

/** What this file needs of `node:diagnostics_channel`. */
interface DiagnosticsChannels {
  channel(name: string): EventChannel<unknown>;
}

function diagnosticsChannels(): DiagnosticsChannels | undefined {
  try {
    const host = (
      globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } | undefined }
    ).process;
    const module = host?.getBuiltinModule?.('node:diagnostics_channel') as
      | DiagnosticsChannels
      | undefined;
    return typeof module?.channel === 'function' ? module : undefined;
  } catch {
    // A runtime whose `process` looks like Node's but is not: the portable list serves.
    return undefined;
  }
}

/**
 * The portable channel: a subscriber list. A subscriber that throws does not stop the others or
 * reach the publisher; its error is thrown again from a microtask, as diagnostics_channel does
 * from `process.nextTick`, so it is reported and never changes a call.
 * @internal
 */
export class PortableChannel<M> implements EventChannel<M> {
  hasSubscribers = false;
  private subscribers: ReadonlyArray<(message: M, name: string) => void> = [];

  constructor(readonly name: string) {}

  publish(message: M): void {
    // A copy-on-write list: a subscriber that unsubscribes while called changes the next list.
    for (const subscriber of this.subscribers) {
      try {
        subscriber(message, this.name);
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }

  subscribe(subscriber: (message: M, name: string) => void): void {
    if (this.subscribers.includes(subscriber)) return;
    this.subscribers = [...this.subscribers, subscriber];
    this.hasSubscribers = true;
  }

  unsubscribe(subscriber: (message: M, name: string) => void): boolean {
    const index = this.subscribers.indexOf(subscriber);
    if (index < 0) return false;
    this.subscribers = this.subscribers.filter((s) => s !== subscriber);
    this.hasSubscribers = this.subscribers.length > 0;
    return true;
  }
}

const dc = diagnosticsChannels();

/** Whether the channels are `node:diagnostics_channel`'s (else the portable lists). */
export const usesDiagnosticsChannel: boolean = dc !== undefined;

function channel<M>(name: string): EventChannel<M> {
  if (dc !== undefined) {
    try {
      return dc.channel(name) as EventChannel<M>;
    } catch {
      // Fall through to the portable list.
    }
  }
  return new PortableChannel<M>(name);
}

// ---------------------------------------------------------------------------------------------
// The messages. Every one has a `type`; times are milliseconds on the clock of the part that
// reports (the policy's, the server's), so durations are exact under an injected clock.

/**
 * One logical call of the retry engine, the same object in every message about it, so that a
 * subscriber can follow a call from start to end (a WeakMap keyed by it holds nothing alive).
 */
export interface CallRef {
  /** A number unique in this process, for logs. */
  readonly id: number;
  /** The policy's `name` when it has one (low cardinality by design), else undefined. */
  readonly policy: string | undefined;
}

/** `stormproof:call`: a call of the retry engine, from start to end. */
export type CallMessage =
  | {
      /** The call started (its first attempt starts right after). */
      readonly type: 'start';
      readonly call: CallRef;
      /** When, on the policy's clock (ms). */
      readonly atMs: number;
    }
  | {
      /** A failed attempt will be retried: the wait is scheduled. */
      readonly type: 'retry';
      readonly call: CallRef;
      /** The attempt that failed, from 1. */
      readonly attempt: number;
      /** The wait before the next attempt, ms. */
      readonly delayMs: number;
      /** How the failure was judged. */
      readonly kind: FailureKind;
      /** The server's Retry-After (or pushback), ms, when it sent one. */
      readonly retryAfterMs: number | undefined;
      readonly atMs: number;
    }
  | {
      /**
       * A failure that could have passed was not retried: why (`budget`, `deadline`,
       * `max-attempts`, `breaker-open`, `not-idempotent`, ...). The call's `end` follows.
       */
      readonly type: 'refused';
      readonly call: CallRef;
      readonly attempt: number;
      readonly reason: GiveUpReason;
      readonly atMs: number;
    }
  | {
      /** The call settled. */
      readonly type: 'end';
      readonly call: CallRef;
      /** `success`, or `failure` (it gave up; `reason` says why). */
      readonly outcome: 'success' | 'failure';
      readonly reason: GiveUpReason | undefined;
      /** Attempts made, the first included. */
      readonly attempts: number;
      /** Time spent waiting between attempts, ms. */
      readonly totalDelayMs: number;
      /** From start to end, ms. */
      readonly elapsedMs: number;
      /** Hedges sent, when the policy hedges. */
      readonly hedges: number;
      /** What the call fails with (the error itself, as `onGiveUp` gets it), when it failed. */
      readonly error: unknown;
      readonly atMs: number;
    };

/** `stormproof:attempt`: each attempt of a call. */
export type AttemptMessage =
  | {
      readonly type: 'start';
      readonly call: CallRef;
      /** From 1. */
      readonly attempt: number;
      readonly atMs: number;
    }
  | {
      readonly type: 'end';
      readonly call: CallRef;
      readonly attempt: number;
      /** How long it ran, ms. */
      readonly durationMs: number;
      /**
       * `success`; `failure` (it threw, or returned a failed value such as a 503 Response);
       * `timeout` (its own timeout); `deadline` (the call's); `aborted` (the caller).
       */
      readonly outcome: 'success' | 'failure' | 'timeout' | 'deadline' | 'aborted';
      /** What it failed with, when it failed. */
      readonly error: unknown;
      readonly atMs: number;
    };

/** `stormproof:hedge`: hedged copies of an attempt. */
export interface HedgeMessage {
  /**
   * `sent`: a hedge was sent; `won`: a hedge answered first; `cancelled`: a copy was stopped
   * because another answered; `refused`: a hedge was due but not sent (`reason` says why).
   */
  readonly type: 'sent' | 'won' | 'cancelled' | 'refused';
  readonly call: CallRef;
  readonly attempt: number;
  /** With `refused`: `budget`, `breaker`, `pushback`, `not-winning`, `learning`, ... */
  readonly reason: string | undefined;
}

/**
 * `stormproof:budget`: a budget's answer to a retry (or a hedge). stormproof/grpc's A6 retry
 * throttle is a `TokenBucket`: its answers come here too. `budget` is the budget itself (read its
 * tokens at collection time; hold it weakly).
 */
export interface BudgetMessage {
  readonly type: 'allowed' | 'refused';
  readonly budget: object;
  /** Tokens left after the answer, when the budget counts tokens. */
  readonly tokens: number | undefined;
}

/** `stormproof:breaker`: a circuit breaker's decisions. */
export type BreakerMessage =
  | {
      readonly type: 'state';
      readonly breaker: object;
      readonly key: string;
      readonly from: string;
      readonly to: string;
    }
  | {
      /** An attempt was not admitted. */
      readonly type: 'refused';
      readonly breaker: object;
      readonly key: string;
      readonly state: string;
    }
  | {
      /** An attempt was admitted as a probe of a half-open breaker. */
      readonly type: 'probe';
      readonly breaker: object;
      readonly key: string;
    };

/** `stormproof:server`: the server engine's decisions. `shedder` is the engine (hold it weakly). */
export type ServerMessage =
  | {
      readonly type: 'admitted';
      readonly shedder: object;
      readonly retry: boolean;
      /** Time spent in the queue, ms (0 when admitted at once). */
      readonly queuedMs: number;
      readonly inflight: number;
      readonly atMs: number;
    }
  | {
      readonly type: 'queued';
      readonly shedder: object;
      readonly retry: boolean;
      readonly queued: number;
      readonly atMs: number;
    }
  | {
      readonly type: 'finished';
      readonly shedder: object;
      /** From admission to finish, ms. */
      readonly durationMs: number;
      readonly status: number | undefined;
      readonly inflight: number;
      readonly atMs: number;
    }
  | {
      readonly type: 'shed';
      readonly shedder: object;
      /** `limit`, `queue-full`, `queue-wait`, `queue-timeout`, `abandoned`, `ramp`, `throttle`. */
      readonly reason: string;
      /** `come-back-later` (with a wait) or `do-not-retry`. */
      readonly kind: 'come-back-later' | 'do-not-retry';
      readonly retry: boolean;
      /** The Retry-After handed out, ms (come-back-later only). */
      readonly waitMs: number | undefined;
    }
  | {
      readonly type: 'limit';
      readonly shedder: object;
      readonly limit: number;
      readonly previous: number;
      readonly atMs: number;
    }
  | {
      readonly type: 'ramp';
      readonly shedder: object;
      /** The share of the limit the ramp lets run, 0 to 1. */
      readonly share: number;
      readonly step: number | undefined;
      readonly atMs: number;
    };

/** `stormproof:fetch`: each physical request stormproof/fetch sends. */
export interface FetchMessage {
  /** `request`: about to send; `response`: a response head came; `error`: the send failed. */
  readonly type: 'request' | 'response' | 'error';
  /** The same object in the three messages of one send. */
  readonly send: object;
  /**
   * Undefined: a subscriber finds the call through the active context (each attempt runs inside
   * the registered attempt wrappers).
   */
  readonly call: CallRef | undefined;
  /** The engine's attempt, from 1. */
  readonly attempt: number;
  /** Which copy of the attempt (0 first, 1 and up hedges). */
  readonly hedge: number;
  /** `http.request.resend_count`: sends of this request before this one (0 for the first). */
  readonly resendCount: number;
  readonly method: string;
  /** The URL redacted as in fetch events (`redactUrl`): no user, no query values, no fragment. */
  readonly url: string;
  /** The host and port, for `server.address` / `server.port`. */
  readonly host: string;
  readonly status: number | undefined;
  readonly error: unknown;
  readonly atMs: number;
}

/** `stormproof:timer`: scheduled runs skipped or failed (stormproof's `every`/`daily`). */
export interface TimerMessage {
  readonly type: 'skip' | 'error';
  readonly reason: string | undefined;
  readonly skipped: number;
  readonly error: unknown;
}

/** Every channel, by part. Subscribe with `channels.call.subscribe(fn)` or diagnostics_channel. */
export const channels = {
  /** `stormproof:call` */
  call: channel<CallMessage>('stormproof:call'),
  /** `stormproof:attempt` */
  attempt: channel<AttemptMessage>('stormproof:attempt'),
  /** `stormproof:hedge` */
  hedge: channel<HedgeMessage>('stormproof:hedge'),
  /** `stormproof:budget` */
  budget: channel<BudgetMessage>('stormproof:budget'),
  /** `stormproof:breaker` */
  breaker: channel<BreakerMessage>('stormproof:breaker'),
  /** `stormproof:server` */
  server: channel<ServerMessage>('stormproof:server'),
  /** `stormproof:fetch` */
  fetch: channel<FetchMessage>('stormproof:fetch'),
  /** `stormproof:timer` */
  timer: channel<TimerMessage>('stormproof:timer'),
} as const;

/** The names of the channels, as diagnostics_channel knows them. */
export const CHANNEL_NAMES = Object.freeze(
  Object.fromEntries(Object.entries(channels).map(([k, c]) => [k, c.name])) as {
    readonly [K in keyof typeof channels]: string;
  },
);

let nextCallId = 1;

/** A new call reference (only when someone listens). @internal */
export function callRef(policy: string | undefined): CallRef {
  return { id: nextCallId++, policy };
}

/**
 * Runs an attempt's operation inside a subscriber's context: stormproof/otel uses it to make the
 * call's span the active one while the attempt runs, so that spans made underneath (undici's,
 * say) hang off it and know their resend count. Without a wrapper the engine calls `run` as is.
 */
export type AttemptWrapper = <R>(call: CallRef, attempt: number, run: () => R) => R;

let wrappers: ReadonlyArray<AttemptWrapper> = [];

/** The wrappers registered, innermost last. @internal */
export function attemptWrappers(): ReadonlyArray<AttemptWrapper> {
  return wrappers;
}

/**
 * Registers a wrapper that runs around each attempt; returns a function that removes it. Only
 * while at least one `stormproof:attempt` subscriber listens is it used.
 */
export function wrapAttempts(wrapper: AttemptWrapper): () => void {
  if (typeof wrapper !== 'function') {
    throw new TypeError(`stormproof: wrapAttempts(wrapper) must be a function, got ${wrapper}`);
  }
  wrappers = [...wrappers, wrapper];
  return () => {
    wrappers = wrappers.filter((w) => w !== wrapper);
  };
}

/** Runs `run` inside every wrapper. @internal */
export function runWrapped<R>(call: CallRef, attempt: number, run: () => R): R {
  const list = wrappers;
  let wrapped = run;
  for (let i = list.length - 1; i >= 0; i--) {
    const inner = wrapped;
    const wrapper = list[i]!;
    wrapped = () => wrapper(call, attempt, inner);
  }
  return wrapped();
}
