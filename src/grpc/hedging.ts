// gRFC A6's hedging policy in the client interceptor: the same call sent up to `maxAttempts`
// times, `hedgingDelay` apart; the first attempt that gets response headers, a message or an OK
// wins and the others are cancelled. A non-fatal status sends the next attempt at once; any other
// status ends the call with it; when every attempt has failed the call fails, with no retries.
// A server's pushback delays the next attempt or stops hedging, and every attempt after the
// first asks the budget (A6's throttle per channel target, or a RetryBudget), as a retry would.
// Every kind of call is hedged: the request messages are kept until the call is committed and
// each attempt is sent them in order, as A6's buffer does; a call whose messages outgrow the
// buffer (its own, or its channel target's) is committed to the attempt that has sent the most.
import {
  type InterceptingListener,
  type InterceptorOptions,
  Metadata,
  type NextCall,
  type StatusObject,
} from '@grpc/grpc-js';
import type { Budget } from '../core/budgets/budget.js';
import type { Verdict } from '../core/classify.js';
import type { Clock } from '../core/clock.js';
import type { HedgeRefusal, HedgeReport } from '../core/hedge.js';
import {
  attemptWrappers,
  type CallRef,
  callRef,
  channels,
  type HedgeMessage,
  runWrapped,
} from '../core/instrument.js';
import type { GiveUpReason, RetryHooks, RetryReport } from '../core/options.js';
import {
  checkKnownKeys,
  checkNumber,
  checkOptionsObject,
  isThenable,
  refuseNulls,
} from '../core/validate.js';
import { type BufferPool, CallBuffer, serializedSize } from './buffer.js';
import { capMaxAttempts } from './limits.js';
import { keepReport, noListener, wholeListener } from './listener.js';
import { MAX_PUSHBACK_MS, PUSHBACK_TRAILER, parsePushback } from './pushback.js';
import { CODE, failureKindOf, resolveStatusCodes, type StatusCodeLike } from './status-codes.js';

/** gRFC A6's `hedgingPolicy`, for the interceptor and for `toServiceConfig`. */
export interface HedgingPolicyOptions {
  /**
   * Attempts sent at most, the first included: an integer >= 2; above 5 it becomes 5, with a
   * warning (A6's limit).
   * @default 2 (one hedge, as Dean and Barroso's and stormproof's engine)
   * @example
   * ```ts
   * { hedging: { maxAttempts: 3, hedgingDelayMs: 50 } }
   * ```
   */
  maxAttempts?: number | undefined;
  /**
   * `hedgingDelay`, in ms: the wait before each next attempt. 0 sends every attempt at once
   * (A6's default). Pick it near the p95 of the method's latency: a hedge then adds about 5 %
   * load (Dean and Barroso, "The Tail at Scale").
   * @default 0 (gRFC A6: all attempts at once)
   * @example
   * ```ts
   * { hedging: { hedgingDelayMs: 20 } }
   * ```
   */
  hedgingDelayMs?: number | undefined;
  /**
   * `nonFatalStatusCodes`: an attempt failing with one of these sends the next attempt at once
   * (and counts against the throttle); any other status ends the call with it, cancelling the
   * other attempts. Numbers or names in any case.
   * @default [] (every failure is fatal)
   * @example
   * ```ts
   * { hedging: { nonFatalStatusCodes: ['UNAVAILABLE'] } }
   * ```
   */
  nonFatalStatusCodes?: readonly StatusCodeLike[] | undefined;
}

/** A hedging policy after its checks. */
export interface ResolvedHedging {
  readonly maxAttempts: number;
  readonly delayMs: number;
  readonly nonFatal: ReadonlySet<number>;
}

/** Checks a `hedging` option; errors name `hedging.maxAttempts` and so on. */
export function checkHedging(owner: string, value: unknown): ResolvedHedging {
  const o = checkOptionsObject(`${owner} hedging`, value);
  checkKnownKeys(`${owner} hedging`, o, ['maxAttempts', 'hedgingDelayMs', 'nonFatalStatusCodes']);
  refuseNulls(`${owner} hedging`, o);
  const maxAttempts = capMaxAttempts(
    owner,
    checkNumber(owner, 'hedging.maxAttempts', o.maxAttempts ?? 2, { min: 2, integer: true }),
  );
  const delayMs = checkNumber(owner, 'hedging.hedgingDelayMs', o.hedgingDelayMs ?? 0, {
    min: 0,
    max: MAX_PUSHBACK_MS,
  });
  const nonFatal =
    o.nonFatalStatusCodes === undefined
      ? new Set<number>()
      : resolveStatusCodes(owner, o.nonFatalStatusCodes, 'hedging.nonFatalStatusCodes', true);
  return { maxAttempts, delayMs, nonFatal };
}

/** What a hedging interceptor settled once, at creation. */
export interface HedgingSettings {
  readonly policy: ResolvedHedging;
  readonly clock: Clock;
  /** The budget of a channel target: its A6 throttle, its RetryBudget, or the shared one. */
  readonly budgetOf: (target: string) => Budget | undefined;
  /** The most bytes of request messages a call keeps for its later attempts. */
  readonly maxBufferBytes: number;
  /** The bytes kept by the calls to a channel target, under `maxTargetBufferBytes`. */
  readonly poolOf: (target: string) => BufferPool;
  readonly onSuccess: RetryHooks['onSuccess'];
  readonly onGiveUp: RetryHooks['onGiveUp'];
}

/**
 * Why a hedge of a gRPC call was not sent: the engine's reasons (`budget`: the throttle;
 * `pushback`: a "don't retry" pushback), and `buffer`: the request messages outgrew the buffer,
 * so no later attempt could be sent all of them.
 */
export type GrpcHedgeRefusal = HedgeRefusal | 'buffer';

/**
 * The request header that counts the attempts sent before this one (gRFC A6); the interceptor
 * exports it, and imports this file.
 */
const PREVIOUS_ATTEMPTS_HEADER = 'grpc-previous-rpc-attempts';

type InterceptingCallInterface = ReturnType<NextCall>;

/** One attempt of a hedged call, and how far it got through the request messages. */
interface Attempt {
  readonly call: InterceptingCallInterface;
  /** 0 for the first attempt, 1 and up for hedges. */
  readonly index: number;
  /** The place in the request stream of the next message to write to it. */
  next: number;
  /** A write is with the attempt, not yet acknowledged: grpc-js takes one at a time. */
  writing: boolean;
  halfClosed: boolean;
  /** Ended, or cancelled: its status is not the call's. */
  done: boolean;
}

/** A request message, kept for the attempts until the call is committed. */
interface Queued {
  readonly message: unknown;
  readonly flags: number | undefined;
  /** The writer's callback, owed when the message was not kept (written once, unbuffered). */
  callback: ((error?: Error | null) => void) | undefined;
  /** Its serialized size, counted in the buffer; a single request is sized only when hedged. */
  size: number | undefined;
}

/** How a failed call gave up: the report's reason and verdict. */
interface Ending {
  readonly reason: GiveUpReason;
  readonly verdict: Verdict | undefined;
}

const PERMANENT: Verdict = Object.freeze({ retryable: false, kind: 'permanent' });
const DO_NOT_RETRY: Verdict = Object.freeze({ retryable: false, kind: 'do-not-retry' });

/** The give-up reasons that refuse a failure which could have passed (as the engine's). */
const REFUSALS: ReadonlySet<GiveUpReason> = new Set<GiveUpReason>([
  'max-attempts',
  'deadline',
  'pushback-beyond-deadline',
  'budget',
  'body-not-replayable',
]);

const callChannel = channels.call;
const attemptChannel = channels.attempt;
const hedgeChannel = channels.hedge;

const noop = () => {};

/** Calls a hook so that nothing it does (throw, reject) can reach the call. */
function emit<E>(hook: ((event: E) => unknown) | undefined, event: E): void {
  if (hook === undefined) return;
  try {
    const result = hook(event);
    if (isThenable(result)) result.then(undefined, noop);
  } catch {
    // A broken hook must not change the outcome of the call.
  }
}

/**
 * One call hedged as gRFC A6 says, of any kind. Its request messages are kept until the call is
 * committed and written to each attempt in order, one write at a time; response headers or a
 * message from one attempt commit the call to it (the others cancelled, the messages freed), as
 * does a message that would take the kept bytes past `maxBufferBytes`, or the target's past
 * `maxTargetBufferBytes` (to the attempt that has sent the most, no attempt after it). It reports
 * as a call of the engine with one attempt: `hedges` counts A6's attempts after the first.
 */
export class HedgingCall implements InterceptingCallInterface {
  private listener: InterceptingListener = noListener;
  private metadata: Metadata | undefined;
  private readonly attempts: Attempt[] = [];
  private committed: Attempt | undefined;
  private finished = false;
  /** No attempt will follow: committed, throttled, told so by pushback, past the deadline, all sent. */
  private stopped = false;
  /** Why no attempt followed, when one could have: the reason a call that then fails gives. */
  private stopReason: GiveUpReason | undefined;
  private lastFailure: StatusObject | undefined;
  /** The request messages from `dropped` on: every one until the call is committed. */
  private queue: Queued[] = [];
  private dropped = 0;
  /** The request bytes kept for resending, against the call's and its target's limits. */
  private readonly buffer: CallBuffer;
  private halfClosed = false;
  private readStarted = false;
  /** Aborts the wait for the next attempt. */
  private wait: AbortController | undefined;
  private budget: Budget | undefined;
  /** The first attempt, made before the call starts: it names the channel's target. */
  private firstCall: InterceptingCallInterface | undefined;
  private readonly unaryResponse: boolean;
  /** Unary and server-streaming calls send one message. */
  private readonly singleRequest: boolean;
  private readonly counts = {
    sent: 0,
    won: 0,
    cancelled: 0,
    refused: {} as Partial<Record<GrpcHedgeRefusal, number>>,
  };
  private startedAt = 0;
  /** The call's deadline on the injected clock, when it has one. */
  private deadlineAt: number | undefined;
  /** Ends the call at its deadline even while it waits on a clock that sleeps late. */
  private deadlineTimer: ReturnType<typeof setTimeout> | undefined;
  /** Its reference in the event source, made when someone first listens. */
  private ref: CallRef | undefined;

  constructor(
    private readonly settings: HedgingSettings,
    private readonly options: InterceptorOptions,
    private readonly nextCall: NextCall,
  ) {
    this.buffer = new CallBuffer(settings.maxBufferBytes);
    this.unaryResponse = !options.method_definition.responseStream;
    this.singleRequest = !options.method_definition.requestStream;
  }

  start(metadata: Metadata, listener?: Partial<InterceptingListener>): void {
    const clock = this.settings.clock;
    this.metadata = metadata;
    this.listener = wholeListener(listener);
    this.startedAt = clock.now();
    const deadline = this.options.deadline;
    if (deadline !== undefined && deadline !== Number.POSITIVE_INFINITY) {
      const left = new Date(deadline).getTime() - Date.now();
      this.deadlineAt = this.startedAt + left;
      this.deadlineTimer = setTimeout(() => this.expire(), Math.max(0, left));
    }
    // A call not started yet names the channel's target as its peer: the throttle's key.
    this.firstCall = this.nextCall(this.options);
    const target = this.firstCall.getPeer();
    this.budget = this.settings.budgetOf(target);
    this.buffer.pool = this.settings.poolOf(target);
    this.budget?.recordRequest(this.startedAt);
    if (callChannel.hasSubscribers) {
      callChannel.publish({ type: 'start', call: this.callRef(), atMs: this.startedAt });
    }
    if (attemptChannel.hasSubscribers) {
      attemptChannel.publish({
        type: 'start',
        call: this.callRef(),
        attempt: 1,
        atMs: this.startedAt,
      });
    }
    // A6: the first attempt is always sent, whatever the throttle says.
    this.send();
    this.scheduleNext(this.settings.policy.delayMs, false);
  }

  private callRef(): CallRef {
    this.ref ??= callRef(undefined);
    return this.ref;
  }

  private hedgeEvent(type: HedgeMessage['type'], reason?: GrpcHedgeRefusal): void {
    if (!hedgeChannel.hasSubscribers) return;
    hedgeChannel.publish({ type, call: this.callRef(), attempt: 1, reason });
  }

  /** Sends the next attempt, numbered in order of sending, and writes it what was sent so far. */
  private send(): void {
    const index = this.attempts.length;
    let metadata = this.metadata!;
    if (index > 0) {
      metadata = metadata.clone();
      metadata.set(PREVIOUS_ATTEMPTS_HEADER, String(index));
      this.counts.sent++;
      this.hedgeEvent('sent');
    }
    const call = this.firstCall ?? this.nextCall(this.options);
    this.firstCall = undefined;
    const attempt: Attempt = {
      call,
      index,
      next: 0,
      writing: false,
      halfClosed: false,
      done: false,
    };
    this.attempts.push(attempt);
    if (this.attempts.length >= this.settings.policy.maxAttempts) this.stopped = true;
    const begin = () => {
      call.start(metadata, {
        onReceiveMetadata: (received) => {
          if (this.take(attempt)) this.listener.onReceiveMetadata(received);
        },
        onReceiveMessage: (message) => {
          // grpc-js hands a unary call that ends without a message a `null` before its status.
          if (this.committed === undefined && this.unaryResponse && message === null) return;
          if (this.take(attempt)) this.listener.onReceiveMessage(message);
        },
        onReceiveStatus: (status) => this.ended(attempt, status),
      });
    };
    // Inside the event source's attempt wrappers (stormproof/otel's context), as the engine
    // runs an attempt, while someone watches attempts.
    if (attemptChannel.hasSubscribers && attemptWrappers().length > 0) {
      runWrapped(this.callRef(), 1, begin);
    } else begin();
    this.pump(attempt);
    if (this.readStarted && !attempt.done) call.startRead();
  }

  /** Writes `attempt` its next message, one write at a time, and then its half-close. */
  private pump(attempt: Attempt): void {
    if (attempt.done) return;
    const entry = attempt.writing ? undefined : this.queue[attempt.next - this.dropped];
    if (entry !== undefined) {
      attempt.writing = true;
      attempt.call.sendMessageWithContext(
        {
          ...(entry.flags === undefined ? {} : { flags: entry.flags }),
          callback: (error?: Error | null) => {
            const owed = entry.callback;
            entry.callback = undefined;
            owed?.(error);
            if (attempt.done) return;
            attempt.writing = false;
            attempt.next += 1;
            this.dropWritten();
            this.pump(attempt);
          },
        },
        entry.message,
      );
    }
    // Once the last message is with the transport, half-close at once, in the same frame burst
    // (as grpc-js does): waiting for the write to complete would cost a round trip.
    const passed = attempt.next + (attempt.writing ? 1 : 0);
    if (this.halfClosed && !attempt.halfClosed && passed === this.dropped + this.queue.length) {
      attempt.halfClosed = true;
      attempt.call.halfClose();
    }
  }

  /** After the commit, what the committed attempt has written is never needed again. */
  private dropWritten(): void {
    const committed = this.committed;
    if (committed === undefined || committed.next === this.dropped) return;
    this.queue.splice(0, committed.next - this.dropped);
    this.dropped = committed.next;
  }

  /** Waits `ms`, then sends the next attempt if the throttle allows; and so on. */
  private scheduleNext(ms: number, pushedBack: boolean): void {
    this.wait?.abort();
    this.wait = undefined;
    if (this.stopped || this.finished) return;
    const clock = this.settings.clock;
    if (this.deadlineAt !== undefined && clock.now() + ms >= this.deadlineAt) {
      // It could not start before the deadline: no attempt follows.
      this.stopped = true;
      this.stopReason = pushedBack ? 'pushback-beyond-deadline' : 'deadline';
      return;
    }
    const wait = new AbortController();
    this.wait = wait;
    clock.sleep(ms, wait.signal).then(() => {
      if (this.wait !== wait) return;
      this.wait = undefined;
      this.hedge();
    }, noop);
  }

  /** The next attempt is due: sent when the buffer holds the request and the budget allows. */
  private hedge(): void {
    if (this.stopped || this.finished) return;
    if (!this.kept()) {
      this.overflow();
      return;
    }
    if (this.budget !== undefined && !this.budget.tryRetry(this.settings.clock.now())) {
      this.refuse('budget');
      this.stopped = true;
      this.stopReason = 'budget';
      this.endIfAllFailed();
      return;
    }
    this.send();
    this.scheduleNext(this.settings.policy.delayMs, false);
  }

  /**
   * Whether the buffer holds every request message. A single request is sized here, when a
   * hedge needs it: a call answered before its first hedge never serializes it twice.
   */
  private kept(): boolean {
    for (const entry of this.queue) {
      if (entry.size !== undefined) continue;
      entry.size = serializedSize(this.options.method_definition.requestSerialize, entry.message);
      if (!this.buffer.keep(entry.size)) return false;
    }
    return true;
  }

  /**
   * The request no longer fits the buffer (A6): the call is committed to the attempt in flight
   * that has sent the most messages, the others are cancelled, and no attempt follows. With none
   * in flight, the call fails with the last failure once nothing else can answer.
   */
  private overflow(): void {
    let chosen: Attempt | undefined;
    for (const attempt of this.attempts) {
      if (attempt.done) continue;
      const sent = attempt.next + (attempt.writing ? 1 : 0);
      if (chosen === undefined || sent > chosen.next + (chosen.writing ? 1 : 0)) chosen = attempt;
    }
    if (!this.stopped) this.refuse('buffer');
    this.stopped = true;
    this.stopReason = 'body-not-replayable';
    this.wait?.abort();
    this.wait = undefined;
    if (chosen === undefined) {
      this.endIfAllFailed();
      return;
    }
    this.commit(chosen);
  }

  private refuse(reason: GrpcHedgeRefusal): void {
    this.counts.refused[reason] = (this.counts.refused[reason] ?? 0) + 1;
    this.hedgeEvent('refused', reason);
  }

  /** Commits the call to `attempt`: the others cancelled, no attempt after it, its writes freed. */
  private commit(attempt: Attempt): void {
    this.committed = attempt;
    this.stopped = true;
    this.wait?.abort();
    this.wait = undefined;
    this.cancelOthers(attempt);
    this.buffer.release();
    this.dropWritten();
  }

  /** An attempt got headers or a message: the call is committed to it. False for the others. */
  private take(attempt: Attempt): boolean {
    if (this.finished) return false;
    if (this.committed === undefined) {
      if (attempt.index > 0) {
        this.counts.won++;
        this.hedgeEvent('won');
      }
      this.commit(attempt);
    }
    return this.committed === attempt;
  }

  /** Cancels every attempt in flight but `winner`: another one answered, or ended the call. */
  private cancelOthers(winner: Attempt | undefined): void {
    for (const other of this.attempts) {
      if (other === winner || other.done) continue;
      other.done = true;
      this.counts.cancelled++;
      this.hedgeEvent('cancelled');
      other.call.cancelWithStatus(CODE.CANCELLED, 'Another hedged attempt answered first');
    }
  }

  /** Whether the call's deadline has passed, on the clock grpc-js keeps it by. */
  private pastDeadline(): boolean {
    const deadline = this.options.deadline;
    return deadline !== undefined && Date.now() >= new Date(deadline).getTime();
  }

  private ended(attempt: Attempt, status: StatusObject): void {
    if (attempt.done) return; // cancelled: not the call's status
    attempt.done = true;
    if (this.finished) return;
    const clock = this.settings.clock;
    if (status.code === CODE.OK) {
      this.take(attempt);
      this.budget?.recordSuccess();
      this.finish(status, undefined);
      return;
    }
    const nonFatal = this.settings.policy.nonFatal.has(status.code);
    const pushback = parsePushback(status.metadata.get(PUSHBACK_TRAILER));
    // A6: only non-fatal statuses and "don't retry" pushback count against the throttle.
    if (nonFatal || pushback === 'do-not-retry') this.budget?.recordFailure(clock.now(), true);
    const verdict: Verdict =
      pushback === 'do-not-retry'
        ? DO_NOT_RETRY
        : nonFatal
          ? { retryable: this.committed === undefined, kind: failureKindOf(status.code) }
          : PERMANENT;
    if (status.code === CODE.DEADLINE_EXCEEDED && this.pastDeadline()) {
      // A6: once the deadline has passed, the call fails, whatever else is in flight.
      this.finish(status, { reason: 'deadline', verdict });
      return;
    }
    if (this.committed === attempt || !nonFatal) {
      // Committed, or fatal: the call ends with this status, the other attempts cancelled.
      const reason =
        this.committed === attempt && nonFatal && this.stopReason === 'body-not-replayable'
          ? 'body-not-replayable'
          : 'not-retryable';
      this.finish(status, { reason, verdict });
      return;
    }
    this.lastFailure = status;
    if (pushback === 'do-not-retry') {
      if (!this.stopped) {
        this.refuse('pushback');
        this.stopped = true;
        this.stopReason = 'not-retryable';
      }
      this.wait?.abort();
      this.wait = undefined;
    } else if (pushback !== undefined) {
      // The next attempt after the pushback; the ones after it hedgingDelay apart again.
      this.scheduleNext(pushback, true);
    } else if (!this.stopped) {
      this.wait?.abort();
      this.wait = undefined;
      this.hedge();
    }
    this.endIfAllFailed();
  }

  /** Every attempt sent has failed and none will follow: the call fails, with no retry. */
  private endIfAllFailed(): void {
    // Not while an attempt runs or the next one is still to come.
    if (this.finished || this.wait !== undefined) return;
    if (this.attempts.some((a) => !a.done)) return;
    const status = this.lastFailure!;
    const pushback = parsePushback(status.metadata.get(PUSHBACK_TRAILER));
    // A "don't retry" pushback that stopped hedging is why, whichever attempt failed last.
    const told = pushback === 'do-not-retry' || this.stopReason === 'not-retryable';
    this.finish(status, {
      reason: this.stopReason ?? 'max-attempts',
      verdict: told ? DO_NOT_RETRY : { retryable: true, kind: failureKindOf(status.code) },
    });
  }

  /** The call's deadline passed while it still waited or ran: it ends now, every attempt too. */
  private expire(): void {
    this.deadlineTimer = undefined;
    if (this.finished) return;
    const status: StatusObject = {
      code: CODE.DEADLINE_EXCEEDED,
      details: 'Deadline exceeded',
      metadata: new Metadata(),
    };
    this.stopAll(status.code, status.details);
    this.finish(status, { reason: 'deadline', verdict: undefined });
  }

  /** Cancels every attempt in flight, as the call's own end (not counted as hedges cancelled). */
  private stopAll(code: number, details: string): void {
    for (const attempt of this.attempts) {
      if (attempt.done) continue;
      attempt.done = true;
      attempt.call.cancelWithStatus(code, details);
    }
  }

  /** Ends the call with `status`: OK, or a failure and how it gave up. Reports it, once. */
  private finish(status: StatusObject, ending: Ending | undefined): void {
    if (this.finished) return;
    this.finished = true;
    this.stopped = true;
    this.wait?.abort();
    this.wait = undefined;
    clearTimeout(this.deadlineTimer);
    this.deadlineTimer = undefined;
    this.cancelOthers(this.committed);
    this.firstCall?.cancelWithStatus(CODE.CANCELLED, 'Cancelled before it started');
    this.firstCall = undefined;
    this.queue = [];
    this.buffer.release();
    this.report(status, ending);
    this.listener.onReceiveStatus(status);
  }

  /** Hooks, report and events of the call that ends with `status`. */
  private report(status: StatusObject, ending: Ending | undefined): void {
    const clock = this.settings.clock;
    const atMs = clock.now();
    const elapsedMs = atMs - this.startedAt;
    const hedges: HedgeReport = { ...this.counts, refused: { ...this.counts.refused } };
    let report: RetryReport | undefined;
    if (ending === undefined) {
      emit(this.settings.onSuccess, { attempts: 1, totalDelayMs: 0, elapsedMs, hedges });
    } else {
      report = {
        reason: ending.reason,
        attempts: 1,
        totalDelayMs: 0,
        elapsedMs,
        ...(ending.verdict === undefined ? {} : { verdict: ending.verdict }),
        hedges,
      };
      keepReport(status, report);
      emit(this.settings.onGiveUp, { ...report, error: status });
    }
    if (attemptChannel.hasSubscribers) {
      attemptChannel.publish({
        type: 'end',
        call: this.callRef(),
        attempt: 1,
        durationMs: elapsedMs,
        outcome:
          ending === undefined
            ? 'success'
            : ending.reason === 'deadline'
              ? 'deadline'
              : ending.reason === 'aborted'
                ? 'aborted'
                : 'failure',
        error: ending === undefined ? undefined : status,
        atMs,
      });
    }
    if (!callChannel.hasSubscribers) return;
    const call = this.callRef();
    if (report !== undefined && REFUSALS.has(report.reason)) {
      callChannel.publish({ type: 'refused', call, attempt: 1, reason: report.reason, atMs });
    }
    callChannel.publish({
      type: 'end',
      call,
      outcome: report === undefined ? 'success' : 'failure',
      reason: report?.reason,
      attempts: 1,
      totalDelayMs: 0,
      elapsedMs,
      hedges: this.counts.sent,
      error: report === undefined ? undefined : status,
      atMs,
    });
  }

  sendMessageWithContext(
    context: { flags?: number; callback?: (error?: Error | null) => void },
    message: unknown,
  ): void {
    if (this.finished) return;
    let callback = context.callback;
    let size: number | undefined;
    if (this.committed === undefined) {
      // A single request waits to be sized until a hedge needs it; a stream is counted as it
      // grows, since any message may be the one that no longer fits.
      if (!this.singleRequest || this.attempts.length > 1)
        size = serializedSize(this.options.method_definition.requestSerialize, message);
      if (size === undefined || this.buffer.keep(size)) {
        // Kept for later attempts, so acknowledged now, as grpc-js does for its buffer.
        if (callback !== undefined) queueMicrotask(callback);
        callback = undefined;
      } else {
        this.overflow();
        if (this.finished) return;
      }
    }
    this.queue.push({ message, flags: context.flags, callback, size });
    for (const attempt of this.attempts) this.pump(attempt);
  }

  sendMessage(message: unknown): void {
    this.sendMessageWithContext({}, message);
  }

  halfClose(): void {
    this.halfClosed = true;
    for (const attempt of this.attempts) this.pump(attempt);
  }

  startRead(): void {
    this.readStarted = true;
    for (const attempt of this.attempts) if (!attempt.done) attempt.call.startRead();
  }

  cancelWithStatus(code: number, details: string): void {
    if (this.finished) return;
    this.stopAll(code, details);
    this.finish(
      { code, details, metadata: new Metadata() },
      { reason: 'aborted', verdict: undefined },
    );
  }

  getPeer(): string {
    return (this.committed ?? this.attempts[0])?.call.getPeer() ?? '';
  }

  getAuthContext(): ReturnType<InterceptingCallInterface['getAuthContext']> {
    return (this.committed ?? this.attempts[0])?.call.getAuthContext() ?? null;
  }
}
