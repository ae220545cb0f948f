// The client interceptor: each gRPC call becomes one stormproof retry call. The engine decides
// every retry (attempts, backoff, deadline, throttling); this file only turns gRPC's statuses and
// trailers into verdicts, buffers what must be resent, and commits the call when A6 says so.
import {
  InterceptingCall,
  type InterceptingListener,
  type Interceptor,
  type InterceptorOptions,
  Metadata,
  type NextCall,
  type StatusObject,
} from '@grpc/grpc-js';
import type { Jitter } from '../core/backoff.js';
import type { Budget } from '../core/budgets/budget.js';
import { RetryBudget } from '../core/budgets/retry-budget.js';
import type { TokenBucket } from '../core/budgets/token-bucket.js';
import type { Verdict } from '../core/classify.js';
import { type Clock, type RandomSource, systemClock } from '../core/clock.js';
import type {
  AttemptContext,
  CallOptions,
  RetryDecisionContext,
  RetryHooks,
  RetryReport,
} from '../core/options.js';
import { addReportFinder, getRetryReport } from '../core/report.js';
import { createRetryPolicy, type RetryPolicy } from '../core/retry.js';
import { checkKnownKeys, checkNumber, checkOptionsObject, refuseNulls } from '../core/validate.js';
import { OriginBudgets } from '../fetch/budgets.js';
import { BufferPool, CallBuffer, serializedSize } from './buffer.js';
import {
  checkHedging,
  HedgingCall,
  type HedgingPolicyOptions,
  type HedgingSettings,
} from './hedging.js';
import { capMaxAttempts } from './limits.js';
import { findByTrailers, keepReport, noListener, wholeListener } from './listener.js';
import {
  MAX_PUSHBACK_MS,
  PUSHBACK_TRAILER,
  parsePushback,
  readRetryInfoMs,
  STATUS_DETAILS_TRAILER,
} from './pushback.js';
import { CODE, failureKindOf, resolveStatusCodes, type StatusCodeLike } from './status-codes.js';
import {
  DEFAULT_MAX_TARGETS,
  type Throttle,
  type ThrottlingOptions,
  toThrottle,
} from './throttle.js';

export { DEFAULT_MAX_TARGETS, type ThrottlingOptions } from './throttle.js';

/** The request header that tells the server how many attempts came before this one (gRFC A6). */
export const PREVIOUS_ATTEMPTS_HEADER = 'grpc-previous-rpc-attempts';

/** gRPC core's per-call retry buffer (grpc-js uses 1 MiB). */
const DEFAULT_BUFFER_BYTES = 256 * 1024;

/** grpc-js's retry buffer for all the calls of a channel (`grpc.retry_buffer_size`). */
const DEFAULT_TARGET_BUFFER_BYTES = 16 * 1024 * 1024;

/** The options of {@link createRetryInterceptor}. */
export interface RetryInterceptorOptions extends RetryHooks {
  /**
   * Total attempts, the first included. An integer >= 1; above 5 it is treated as 5 with a
   * warning, as gRFC A6 says.
   * @default 4
   * @example
   * ```ts
   * { maxAttempts: 3 }
   * ```
   */
  maxAttempts?: number | undefined;
  /**
   * The backoff ceiling of the first retry, in ms; it doubles after each retry.
   * @default 200
   * @example
   * ```ts
   * { baseDelayMs: 100 } // gRFC A6's usual initialBackoff of 0.1s
   * ```
   */
  baseDelayMs?: number | undefined;
  /**
   * The cap of the backoff ceiling, in ms. At least `baseDelayMs`.
   * @default 5000
   * @example
   * ```ts
   * { maxDelayMs: 1000 }
   * ```
   */
  maxDelayMs?: number | undefined;
  /**
   * How each wait is drawn below its ceiling. `'band'` is gRFC A6's: the ceiling times a uniform
   * factor in [0.8, 1.2).
   * @default 'full'
   * @example
   * ```ts
   * { jitter: 'band' }
   * ```
   */
  jitter?: Jitter | undefined;
  /**
   * A total deadline, in ms, for calls that set none of their own; it becomes their gRPC
   * deadline. A call's own deadline is always its total deadline: no wait is started that would
   * end past it. Unset: a call without a deadline is bounded only by `maxAttempts`.
   * @default undefined
   * @example
   * ```ts
   * { deadlineMs: 5000 }
   * ```
   */
  deadlineMs?: number | undefined;
  /**
   * The status codes to retry: numbers or names in any case. Each must be safe to retry for every
   * method the interceptor is given to.
   * @default ['UNAVAILABLE']
   * @example
   * ```ts
   * { retryableStatusCodes: ['UNAVAILABLE', 'resource_exhausted', 10] }
   * ```
   */
  retryableStatusCodes?: readonly StatusCodeLike[] | undefined;
  /**
   * RESOURCE_EXHAUSTED, when listed, is retried more slowly: its backoff ceiling is
   * `baseDelayMs * throttledDelayMultiplier * 2^n`, capped at `maxDelayMs`. A number >= 1.
   * @default 5
   * @example
   * ```ts
   * { throttledDelayMultiplier: 10 }
   * ```
   */
  throttledDelayMultiplier?: number | undefined;
  /**
   * gRFC A6's retry throttling: one token bucket per channel target (the target a client was
   * made with, such as `dns:api.example.com:443`), shared by every call to that target through
   * this interceptor, whichever client or channel makes it: failures at one server never
   * throttle another. `{ maxTokens, tokenRatio }` makes this interceptor a throttle of its own;
   * a throttle from `createThrottle` is shared with every interceptor given it, so an
   * interceptor that retries and one that hedges the methods of one server spend one throttle
   * per target, as A6 says. Cannot be combined with `budget`.
   * @default undefined (the `budget` applies)
   * @example
   * ```ts
   * { throttling: { maxTokens: 10, tokenRatio: 0.1 } } // or createThrottle({ maxTokens: 10, tokenRatio: 0.1 })
   * ```
   */
  throttling?: ThrottlingOptions | Throttle | undefined;
  /**
   * gRFC A6's `hedgingPolicy` instead of its retry policy (A6: a method has one or the other):
   * each call, of any kind, is sent up to `hedging.maxAttempts` times, `hedgingDelayMs` apart,
   * every attempt sent the request messages so far, in order; the first attempt to answer
   * (headers, a message, OK) wins and the others are cancelled; a `nonFatalStatusCodes` failure
   * sends the next attempt at once, any other ends the call; pushback delays or stops the next
   * attempt; every attempt after the first is paid from `throttling` (or `budget`) as a retry
   * would be; no retry once every attempt has failed; a call whose request messages outgrow
   * `maxBufferBytes` is committed to the attempt that sent the most of them. `onSuccess`,
   * `onGiveUp` and `getRetryReport` tell what hedging did (`hedges`: sent, won, cancelled,
   * refused and why). Not with the retry options (`maxAttempts`, `baseDelayMs`, `maxDelayMs`,
   * `jitter`, `retryableStatusCodes`, `throttledDelayMultiplier`) nor `onRetry`: hedging never
   * retries.
   * @default undefined (the retry policy applies)
   * @example
   * ```ts
   * createRetryInterceptor({ hedging: { maxAttempts: 2, hedgingDelayMs: 20, nonFatalStatusCodes: ['UNAVAILABLE'] }, throttling: { maxTokens: 10, tokenRatio: 0.1 } })
   * ```
   */
  hedging?: HedgingPolicyOptions | undefined;
  /**
   * Any stormproof budget instead of A6 throttling, or `false` for none. A budget given here is
   * shared as given, by the calls to every target; the default is one per channel target.
   * @default a new RetryBudget() per channel target (when `throttling` is not given)
   * @example
   * ```ts
   * { budget: false }
   * ```
   */
  budget?: Budget | false | undefined;
  /**
   * How many channel targets' throttling buckets (or default budgets) are remembered. Past it,
   * the target used least recently is forgotten, and starts again with a full bucket if it is
   * called again. An integer >= 1. A throttle from `createThrottle` keeps its own `maxTargets`.
   * @default 1000
   * @example
   * ```ts
   * { maxTargets: 50 }
   * ```
   */
  maxTargets?: number | undefined;
  /**
   * The most bytes of request messages kept per call for resending (or for hedges). A call
   * whose messages no longer fit is committed: it is never retried again, and no more hedges
   * are sent (its other attempts are cancelled).
   * @default 262144 (256 KiB, as gRPC core; grpc-js uses 1 MiB)
   * @example
   * ```ts
   * { maxBufferBytes: 1024 * 1024 }
   * ```
   */
  maxBufferBytes?: number | undefined;
  /**
   * The most bytes of request messages kept for resending (or for hedges) by all the calls to
   * one channel target at once (gRFC A6's `retry_buffer_size_in_bytes`, beside `maxBufferBytes`
   * per call): a call whose next message does not fit is committed, as at its own limit. An
   * integer >= 0.
   * @default 16777216 (16 MiB, grpc-js's `grpc.retry_buffer_size`)
   * @example
   * ```ts
   * { maxTargetBufferBytes: 4 * 1024 * 1024 }
   * ```
   */
  maxTargetBufferBytes?: number | undefined;
  /**
   * Where time comes from for the waits between attempts.
   * @default systemClock
   * @example
   * ```ts
   * { clock: myVirtualClock }
   * ```
   */
  clock?: Clock | undefined;
  /**
   * Uniform random numbers in [0, 1) for jitter.
   * @default Math.random
   * @example
   * ```ts
   * { random: () => 0.5 }
   * ```
   */
  random?: RandomSource | undefined;
}

const KEYS = [
  'maxAttempts',
  'baseDelayMs',
  'maxDelayMs',
  'jitter',
  'deadlineMs',
  'retryableStatusCodes',
  'throttledDelayMultiplier',
  'throttling',
  'hedging',
  'budget',
  'maxTargets',
  'maxBufferBytes',
  'maxTargetBufferBytes',
  'clock',
  'random',
  'onRetry',
  'onGiveUp',
  'onSuccess',
] as const;

/**
 * The engine's deadline for calls that have none: the longest wait a timer can hold. It only
 * bounds decisions; nothing is armed for it.
 */
const NO_DEADLINE_MS = MAX_PUSHBACK_MS;

/** What the interceptor settled once, at creation. */
interface Settings {
  readonly maxBufferBytes: number;
  /** The bytes kept by the calls to a channel target, under `maxTargetBufferBytes`. */
  readonly poolOf: (target: string) => BufferPool;
  readonly deadlineMs: number | undefined;
  /** The policy of the calls to a channel target: that target's throttle, or the shared budget. */
  readonly policyOf: (target: string) => RetryPolicy;
  /** Set when the interceptor hedges instead of retrying. */
  readonly hedging: HedgingSettings | undefined;
}

/** The options a hedging interceptor refuses: they belong to A6's retry policy (hedging never retries). */
const RETRY_ONLY_KEYS = [
  'maxAttempts',
  'baseDelayMs',
  'maxDelayMs',
  'jitter',
  'retryableStatusCodes',
  'throttledDelayMultiplier',
  'onRetry',
] as const;

/** One attempt, or the call as grpc-js sees it. */
type InterceptingCallInterface = ReturnType<NextCall>;

/** The statuses of attempts that failed after the call was committed: never retried. */
const committedFailures = new WeakSet<StatusObject>();

const PERMANENT: Verdict = Object.freeze({ retryable: false, kind: 'permanent' });
const DO_NOT_RETRY: Verdict = Object.freeze({ retryable: false, kind: 'do-not-retry' });

function isStatus(value: unknown): value is StatusObject {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as StatusObject).code === 'number' &&
    (value as StatusObject).metadata instanceof Metadata
  );
}

/**
 * Judges a failed attempt by gRFC A6: a status outside the list is final; a don't-retry
 * pushback is final (and the engine counts it against the throttle); a valid pushback is the
 * exact wait. With no pushback trailer, a `google.rpc.RetryInfo` delay is used the same way: the
 * trailer wins when both are sent, because it is A6's own signal and can also say "stop".
 */
function judge(
  codes: ReadonlySet<number>,
  bucket: TokenBucket | undefined,
  clock: Clock | undefined,
  status: unknown,
): Verdict {
  if (!isStatus(status)) return PERMANENT;
  const listed = codes.has(status.code);
  const pushback = parsePushback(status.metadata.get(PUSHBACK_TRAILER));
  if (pushback === 'do-not-retry') return DO_NOT_RETRY;
  if (!listed) return PERMANENT;
  const kind = failureKindOf(status.code);
  if (committedFailures.has(status)) {
    // A6 counts every failure with a retryable status, committed or not; the engine counts only
    // failures it may retry, so this one is counted here.
    bucket?.recordFailure(clock?.now() ?? 0, true);
    return { retryable: false, kind };
  }
  const waitMs = pushback ?? readRetryInfoMs(status.metadata.get(STATUS_DETAILS_TRAILER)[0]);
  return waitMs === undefined
    ? { retryable: true, kind }
    : { retryable: true, kind, pushbackMs: waitMs };
}

function settle(options: RetryInterceptorOptions | undefined): Settings {
  const owner = 'createRetryInterceptor';
  const o = checkOptionsObject(owner, options) as RetryInterceptorOptions;
  checkKnownKeys(owner, o, KEYS);
  refuseNulls(owner, o as Record<string, unknown>);
  if (o.hedging !== undefined) return settleHedging(owner, o);
  const maxAttempts = capMaxAttempts(
    owner,
    checkNumber(owner, 'maxAttempts', o.maxAttempts ?? 4, { min: 1, integer: true }),
  );
  const codes = resolveStatusCodes(owner, o.retryableStatusCodes ?? ['UNAVAILABLE']);
  const maxBufferBytes = checkNumber(
    owner,
    'maxBufferBytes',
    o.maxBufferBytes ?? DEFAULT_BUFFER_BYTES,
    {
      min: 0,
      integer: true,
    },
  );
  const deadlineMs =
    o.deadlineMs === undefined
      ? undefined
      : checkNumber(owner, 'deadlineMs', o.deadlineMs, { min: 0, minExclusive: true });
  if (o.throttling !== undefined && o.budget !== undefined) {
    throw new TypeError(`stormproof: ${owner} takes throttling or budget, not both`);
  }
  const maxTargets = checkNumber(owner, 'maxTargets', o.maxTargets ?? DEFAULT_MAX_TARGETS, {
    min: 1,
    integer: true,
  });
  const throttle =
    o.throttling === undefined ? undefined : toThrottle(owner, o.throttling, maxTargets);
  const poolOf = targetPools(owner, o, maxTargets);
  const clock = o.clock ?? undefined;
  const base = {
    maxAttempts,
    baseDelayMs: o.baseDelayMs,
    maxDelayMs: o.maxDelayMs,
    jitter: o.jitter,
    throttledDelayMultiplier: o.throttledDelayMultiplier,
    // Retry-After is HTTP's; gRPC's waits arrive as pushback, which the verdict carries.
    honorRetryAfter: false,
    clock: o.clock,
    random: o.random,
    onRetry: o.onRetry,
    onGiveUp: o.onGiveUp,
    onSuccess: o.onSuccess,
  };
  // A call's own deadline is passed per call; calls without one are bounded only by attempts.
  const make = (budget: Budget | false, bucket: TokenBucket | undefined) =>
    createRetryPolicy({
      ...base,
      deadlineMs: NO_DEADLINE_MS,
      shouldRetry: ({ error }: RetryDecisionContext) => judge(codes, bucket, clock, error),
      budget,
    });
  if (o.budget !== undefined) {
    // The user's budget (or none): one policy, made now, so every option is checked here.
    const shared = make(o.budget, undefined);
    return { maxBufferBytes, poolOf, deadlineMs, policyOf: () => shared, hedging: undefined };
  }
  // gRFC A6 keeps one bucket per server name: one per channel target, bounded as createFetch
  // bounds its budgets per origin. Checked now with a policy that is never used.
  make(false, undefined);
  if (throttle !== undefined) {
    return {
      maxBufferBytes,
      poolOf,
      deadlineMs,
      policyOf: policiesOf(throttle, make),
      hedging: undefined,
    };
  }
  const targets = new OriginBudgets(maxTargets, () => make(new RetryBudget(), undefined));
  return {
    maxBufferBytes,
    poolOf,
    deadlineMs,
    policyOf: (target) => targets.get(target),
    hedging: undefined,
  };
}

/**
 * The retry policy of each target's bucket in `throttle`. The throttle decides which buckets
 * live (it may be shared with other interceptors, and forgets the targets used least recently):
 * a policy is kept only as long as its bucket is.
 */
function policiesOf(
  throttle: Throttle,
  make: (budget: Budget, bucket: TokenBucket) => RetryPolicy,
): (target: string) => RetryPolicy {
  const policies = new WeakMap<TokenBucket, RetryPolicy>();
  return (target) => {
    const bucket = throttle.bucketOf(target);
    let policy = policies.get(bucket);
    if (policy === undefined) {
      policy = make(bucket, bucket);
      policies.set(bucket, policy);
    }
    return policy;
  };
}

/** The buffer pool of each channel target, as many remembered as `maxTargets`. */
function targetPools(
  owner: string,
  o: RetryInterceptorOptions,
  maxTargets: number,
): (target: string) => BufferPool {
  const limit = checkNumber(
    owner,
    'maxTargetBufferBytes',
    o.maxTargetBufferBytes ?? DEFAULT_TARGET_BUFFER_BYTES,
    { min: 0, integer: true },
  );
  const pools = new OriginBudgets(maxTargets, () => new BufferPool(limit));
  return (target) => pools.get(target);
}

/** The settings of an interceptor that hedges (gRFC A6's hedgingPolicy). */
function settleHedging(owner: string, o: RetryInterceptorOptions): Settings {
  for (const key of RETRY_ONLY_KEYS) {
    if (o[key] !== undefined) {
      throw new TypeError(
        `stormproof: ${owner} takes hedging or ${key}, not both (gRFC A6: a method has a retry policy or a hedging policy)`,
      );
    }
  }
  const policy = checkHedging(owner, o.hedging);
  if (o.throttling !== undefined && o.budget !== undefined) {
    throw new TypeError(`stormproof: ${owner} takes throttling or budget, not both`);
  }
  const deadlineMs =
    o.deadlineMs === undefined
      ? undefined
      : checkNumber(owner, 'deadlineMs', o.deadlineMs, { min: 0, minExclusive: true });
  const maxTargets = checkNumber(owner, 'maxTargets', o.maxTargets ?? DEFAULT_MAX_TARGETS, {
    min: 1,
    integer: true,
  });
  const throttle =
    o.throttling === undefined ? undefined : toThrottle(owner, o.throttling, maxTargets);
  const maxBufferBytes = checkNumber(
    owner,
    'maxBufferBytes',
    o.maxBufferBytes ?? DEFAULT_BUFFER_BYTES,
    { min: 0, integer: true },
  );
  const poolOf = targetPools(owner, o, maxTargets);
  // Checked as the retry policy checks them, by a policy that is never used.
  createRetryPolicy({
    clock: o.clock,
    random: o.random,
    budget: o.budget ?? false,
    onGiveUp: o.onGiveUp,
    onSuccess: o.onSuccess,
  });
  const clock = o.clock ?? systemClock;
  let budgetOf: (target: string) => Budget | undefined;
  if (o.budget !== undefined) {
    const shared = o.budget === false ? undefined : o.budget;
    budgetOf = () => shared;
  } else if (throttle !== undefined) {
    // The target's bucket in the throttle, shared with the interceptors given the same one.
    budgetOf = (target) => throttle.bucketOf(target);
  } else {
    // One RetryBudget per channel target, as for retries.
    const targets = new OriginBudgets<Budget>(maxTargets, () => new RetryBudget());
    budgetOf = (target) => targets.get(target);
  }
  return {
    maxBufferBytes,
    poolOf,
    deadlineMs,
    policyOf: () => {
      throw new Error('stormproof: a hedging interceptor has no retry policy');
    },
    hedging: {
      policy,
      clock,
      budgetOf,
      poolOf,
      maxBufferBytes,
      onSuccess: o.onSuccess,
      onGiveUp: o.onGiveUp,
    },
  };
}

/** A request message on its way: kept for resending until the call is committed. */
interface Queued {
  readonly message: unknown;
  readonly flags: number | undefined;
  /** The writer's callback, still owed when the write was not acknowledged at once. */
  callback: ((error?: Error | null) => void) | undefined;
}

/** One attempt and how far it got through the queue. grpc-js takes one write at a time. */
interface Running {
  readonly call: InterceptingCallInterface;
  next: number;
  writing: boolean;
  halfClosed: boolean;
}

/**
 * One gRPC call as the application sees it, made of one or more attempts. It keeps the request
 * metadata and messages to resend, passes the first committed attempt's answers through, and
 * reports exactly one status.
 */
class RetryingCall implements InterceptingCallInterface {
  private attempt: Running | undefined;
  private listener: InterceptingListener = noListener;
  private metadata: Metadata | undefined;
  /** Messages every new attempt sends first; once committed, only those not yet written. */
  private queue: Queued[] = [];
  /** The request bytes kept for resending, against the call's and its target's limits. */
  private readonly buffer: CallBuffer;
  /** A single request message has been counted in the buffer (once a retry was in question). */
  private singleKept = false;
  private halfClosed = false;
  private readStarted = false;
  /** Set by the first response header or message, or by a buffer overflow: no attempt follows. */
  private committed = false;
  private finished = false;
  private lastPeer = '';
  private readonly controller = new AbortController();
  /** Unary and server-streaming calls send one message. */
  private readonly singleRequest: boolean;
  /** Ends a wait at the call's deadline even when the injected clock sleeps late. */
  private deadlineTimer: ReturnType<typeof setTimeout> | undefined;
  /** The first attempt, made before the engine starts it: it names the channel's target. */
  private firstCall: InterceptingCallInterface | undefined;

  constructor(
    private readonly settings: Settings,
    private readonly options: InterceptorOptions,
    private readonly nextCall: NextCall,
  ) {
    this.buffer = new CallBuffer(settings.maxBufferBytes);
    this.singleRequest = !options.method_definition.requestStream;
  }

  start(metadata: Metadata, listener?: Partial<InterceptingListener>): void {
    this.metadata = metadata;
    this.listener = wholeListener(listener);
    const deadline = this.options.deadline;
    const left =
      deadline === undefined || deadline === Number.POSITIVE_INFINITY
        ? undefined
        : new Date(deadline).getTime() - Date.now();
    // grpc-js tells an interceptor nothing of its channel, but a call not started yet names the
    // channel's target as its peer (the resolving call's `getPeer()`): the throttle's key.
    this.firstCall = this.nextCall(this.options);
    const target = this.firstCall.getPeer();
    const policy = this.settings.policyOf(target);
    this.buffer.pool = this.settings.poolOf(target);
    const call: CallOptions = { signal: this.controller.signal };
    if (left !== undefined) {
      // Whole ms, rounded down: the engine may give up up to 1 ms early, never late.
      call.deadlineMs = Math.max(1, Math.floor(left));
      this.deadlineTimer = setTimeout(() => this.expire(), Math.max(0, left));
    }
    policy
      .retry((context) => this.runAttempt(context), call)
      .then(
        (status) => this.finish(status),
        (error: unknown) => this.finish(this.statusOf(error), getRetryReport(error)),
      );
  }

  private statusOf(error: unknown): StatusObject {
    if (isStatus(error)) return error;
    return {
      code: 2, // UNKNOWN: the attempt could not even be made.
      details: error instanceof Error ? error.message : String(error),
      metadata: new Metadata(),
    };
  }

  /** The deadline passed while the engine still held the call (a late wait): end it now. */
  private expire(): void {
    const status: StatusObject = {
      code: CODE.DEADLINE_EXCEEDED,
      details: 'Deadline exceeded',
      metadata: new Metadata(),
    };
    const attempt = this.attempt;
    this.controller.abort(status);
    attempt?.call.cancelWithStatus(status.code, status.details);
  }

  private finish(status: StatusObject, report?: RetryReport): void {
    if (this.finished) return;
    this.finished = true;
    if (report !== undefined) keepReport(status, report);
    clearTimeout(this.deadlineTimer);
    // Never started (the call was cancelled first): ended too, so grpc-js counts it as done.
    this.firstCall?.cancelWithStatus(CODE.CANCELLED, 'Cancelled before it started');
    this.firstCall = undefined;
    this.attempt = undefined;
    this.queue = [];
    this.buffer.release();
    this.listener.onReceiveStatus(status);
  }

  private commit(): void {
    if (this.committed) return;
    this.committed = true;
    this.buffer.release();
    this.dropWritten();
  }

  /** After the commit, what the attempt has written is never needed again. */
  private dropWritten(): void {
    const running = this.attempt;
    if (!this.committed || running === undefined || running.next === 0) return;
    this.queue.splice(0, running.next);
    running.next = 0;
  }

  /** Sends the attempt its next queued message, one write at a time, and then its half-close. */
  private pump(): void {
    const running = this.attempt;
    if (running === undefined) return;
    const entry = running.writing ? undefined : this.queue[running.next];
    if (entry !== undefined) {
      running.writing = true;
      const context = {
        ...(entry.flags === undefined ? {} : { flags: entry.flags }),
        callback: (error?: Error | null) => {
          const owed = entry.callback;
          entry.callback = undefined;
          owed?.(error);
          if (this.attempt !== running) return;
          running.writing = false;
          running.next += 1;
          this.dropWritten();
          this.pump();
        },
      };
      running.call.sendMessageWithContext(context, entry.message);
    }
    // Once the last message is with the transport, half-close at once, in the same frame burst
    // (as grpc-js does): waiting for the write to complete would cost a unary call a round trip.
    const passed = running.next + (running.writing ? 1 : 0);
    if (this.halfClosed && !running.halfClosed && passed === this.queue.length) {
      running.halfClosed = true;
      running.call.halfClose();
    }
  }

  /** One attempt: settles with its status, resolving on OK and rejecting otherwise. */
  private runAttempt({ attempt: number }: AttemptContext): Promise<StatusObject> {
    return new Promise((resolve, reject) => {
      let metadata = this.metadata!;
      if (number > 1) {
        metadata = metadata.clone();
        metadata.set(PREVIOUS_ATTEMPTS_HEADER, String(number - 1));
      }
      const call = this.firstCall ?? this.nextCall(this.options);
      this.firstCall = undefined;
      const running: Running = { call, next: 0, writing: false, halfClosed: false };
      this.attempt = running;
      const unaryResponse = !this.options.method_definition.responseStream;
      call.start(metadata, {
        onReceiveMetadata: (received) => {
          this.commit();
          this.listener.onReceiveMetadata(received);
        },
        onReceiveMessage: (message) => {
          // grpc-js hands a unary call that ends without a message a `null` just before its
          // status; on an uncommitted attempt that is all it can be (headers come first).
          if (!this.committed && unaryResponse && message === null) return;
          this.commit();
          this.listener.onReceiveMessage(message);
        },
        onReceiveStatus: (status) => {
          if (this.attempt === running) {
            this.lastPeer = call.getPeer();
            this.attempt = undefined;
          }
          if (status.code === CODE.OK) {
            resolve(status);
            return;
          }
          // A single request message is sized only now, when a retry is in question: the success
          // path never pays for serializing it twice.
          if (!this.committed && this.singleRequest && !this.keepSingle()) this.commit();
          if (this.committed) committedFailures.add(status);
          reject(status);
        },
      });
      this.pump();
      if (this.readStarted) call.startRead();
    });
  }

  sendMessageWithContext(
    context: { flags?: number; callback?: (error?: Error | null) => void },
    message: unknown,
  ): void {
    if (this.finished) return;
    let callback = context.callback;
    if (!this.committed) {
      const size = this.singleRequest
        ? 0
        : serializedSize(this.options.method_definition.requestSerialize, message);
      if (this.buffer.keep(size)) {
        // Kept for resending, so the write is acknowledged now, as grpc-js does for its buffer.
        if (callback !== undefined) queueMicrotask(callback);
        callback = undefined;
      } else {
        this.commit();
      }
    }
    this.queue.push({ message, flags: context.flags, callback });
    this.pump();
  }

  /** Counts a single request message in the buffer, once; false when it does not fit. */
  private keepSingle(): boolean {
    const entry = this.queue[0];
    if (entry === undefined || this.singleKept) return true;
    this.singleKept = true;
    return this.buffer.keep(
      serializedSize(this.options.method_definition.requestSerialize, entry.message),
    );
  }

  sendMessage(message: unknown): void {
    this.sendMessageWithContext({}, message);
  }

  halfClose(): void {
    this.halfClosed = true;
    this.pump();
  }

  startRead(): void {
    this.readStarted = true;
    this.attempt?.call.startRead();
  }

  cancelWithStatus(code: number, details: string): void {
    if (this.finished) return;
    const status: StatusObject = { code, details, metadata: new Metadata() };
    const attempt = this.attempt;
    // The engine ends the call with this status: at once during a wait, or when the attempt's
    // own cancellation comes back.
    this.controller.abort(status);
    attempt?.call.cancelWithStatus(code, details);
    if (this.metadata === undefined) this.finish(status);
  }

  getPeer(): string {
    return this.attempt?.call.getPeer() ?? this.lastPeer;
  }

  getAuthContext(): ReturnType<InterceptingCallInterface['getAuthContext']> {
    return this.attempt?.call.getAuthContext() ?? null;
  }
}

/**
 * A grpc-js client interceptor that retries calls through stormproof's engine, following gRFC A6:
 * only listed statuses, at most 5 attempts, the server's `grpc-retry-pushback-ms` read strictly
 * (a bad value means "do not retry"), `google.rpc.RetryInfo` honoured, `grpc-previous-rpc-attempts`
 * sent on retries, the call's deadline as the total deadline, optional A6 throttling (one bucket
 * per channel target, shared by every client of that target) that fails a throttled call at once. Unary and server-streaming calls are retried until the first response
 * header or message; client-streaming and bidi calls too, while their messages fit
 * `maxBufferBytes`. With `hedging`, it hedges every kind of call instead, by A6's hedgingPolicy.
 *
 * Use it on a channel without a retry policy in its service config, or grpc-js would retry too.
 * Options are checked here: a bad value throws a TypeError or RangeError naming it.
 *
 * @example
 * ```ts
 * import { Client, credentials } from '@grpc/grpc-js';
 * import { createRetryInterceptor } from 'stormproof/grpc';
 *
 * const retries = createRetryInterceptor({ maxAttempts: 3, throttling: { maxTokens: 10, tokenRatio: 0.1 } });
 * const client = new Client('api.example.com:443', credentials.createSsl(), { interceptors: [retries] });
 * ```
 */
export function createRetryInterceptor(options?: RetryInterceptorOptions): Interceptor {
  const settings = settle(options);
  addReportFinder(findByTrailers);
  return (callOptions, nextCall) => {
    let effective = callOptions;
    if (settings.deadlineMs !== undefined && callOptions.deadline === undefined) {
      effective = { ...callOptions, deadline: Date.now() + settings.deadlineMs };
    }
    const hedging = settings.hedging;
    if (hedging !== undefined) {
      return new InterceptingCall(new HedgingCall(hedging, effective, nextCall));
    }
    return new InterceptingCall(new RetryingCall(settings, effective, nextCall));
  };
}
