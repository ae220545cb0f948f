// gRFC A6's hedging policy in the client interceptor: the same call sent up to `maxAttempts`
// times, `hedgingDelay` apart; the first attempt that gets response headers, a message or an OK
// wins and the others are cancelled. A non-fatal status sends the next attempt at once; any other
// status ends the call with it; when every attempt has failed the call fails, with no retries.
// A server's pushback delays the next attempt or stops hedging, and every attempt after the
// first asks the budget (A6's throttle per channel target, or a RetryBudget), as a retry would.
import {
  type InterceptingListener,
  type InterceptorOptions,
  Metadata,
  type NextCall,
  type StatusObject,
} from '@grpc/grpc-js';
import type { Budget } from '../core/budgets/budget.js';
import type { Clock } from '../core/clock.js';
import { checkKnownKeys, checkNumber, checkOptionsObject, refuseNulls } from '../core/validate.js';
import { capMaxAttempts } from './limits.js';
import { noListener, wholeListener } from './listener.js';
import { MAX_PUSHBACK_MS, PUSHBACK_TRAILER, parsePushback } from './pushback.js';
import { CODE, resolveStatusCodes, type StatusCodeLike } from './status-codes.js';

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

/**
 * The request header that counts the attempts sent before this one (gRFC A6); the interceptor
 * exports it, and imports this file.
 */
const PREVIOUS_ATTEMPTS_HEADER = 'grpc-previous-rpc-attempts';

type InterceptingCallInterface = ReturnType<NextCall>;

/** One attempt of a hedged call. */
interface Attempt {
  readonly call: InterceptingCallInterface;
  done: boolean;
}

const noop = () => {};

/**
 * One call with a single request message (unary or server-streaming), hedged as gRFC A6 says.
 * The request message is kept until the call is committed, so each attempt sends it.
 */
export class HedgingCall implements InterceptingCallInterface {
  private listener: InterceptingListener = noListener;
  private metadata: Metadata | undefined;
  private readonly attempts: Attempt[] = [];
  private committed: Attempt | undefined;
  private finished = false;
  /** No attempt will follow: committed, throttled, told so by pushback, or all sent. */
  private stopped = false;
  private lastFailure: StatusObject | undefined;
  private message: { value: unknown; flags: number | undefined } | undefined;
  private halfClosed = false;
  private readStarted = false;
  /** Aborts the wait for the next attempt. */
  private wait: AbortController | undefined;
  private budget: Budget | undefined;
  /** The first attempt, made before the call starts: it names the channel's target. */
  private firstCall: InterceptingCallInterface | undefined;
  private readonly unaryResponse: boolean;

  constructor(
    private readonly policy: ResolvedHedging,
    private readonly clock: Clock,
    private readonly budgetOf: (target: string) => Budget | undefined,
    private readonly options: InterceptorOptions,
    private readonly nextCall: NextCall,
  ) {
    this.unaryResponse = !options.method_definition.responseStream;
  }

  start(metadata: Metadata, listener?: Partial<InterceptingListener>): void {
    this.metadata = metadata;
    this.listener = wholeListener(listener);
    // A call not started yet names the channel's target as its peer: the throttle's key.
    this.firstCall = this.nextCall(this.options);
    this.budget = this.budgetOf(this.firstCall.getPeer());
    this.budget?.recordRequest(this.clock.now());
    // A6: the first attempt is always sent, whatever the throttle says.
    this.send();
    this.scheduleNext(this.policy.delayMs);
  }

  /** Sends the next attempt, numbered in order of sending. */
  private send(): void {
    const index = this.attempts.length;
    let metadata = this.metadata!;
    if (index > 0) {
      metadata = metadata.clone();
      metadata.set(PREVIOUS_ATTEMPTS_HEADER, String(index));
    }
    const call = this.firstCall ?? this.nextCall(this.options);
    this.firstCall = undefined;
    const attempt: Attempt = { call, done: false };
    this.attempts.push(attempt);
    if (this.attempts.length >= this.policy.maxAttempts) this.stopped = true;
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
    if (this.message !== undefined) {
      const { value, flags } = this.message;
      call.sendMessageWithContext(flags === undefined ? {} : { flags }, value);
    }
    if (this.halfClosed) call.halfClose();
    if (this.readStarted) call.startRead();
  }

  /** Waits `ms`, then sends the next attempt if the throttle allows; and so on. */
  private scheduleNext(ms: number): void {
    this.wait?.abort();
    this.wait = undefined;
    if (this.stopped || this.finished) return;
    const wait = new AbortController();
    this.wait = wait;
    this.clock.sleep(ms, wait.signal).then(() => {
      if (this.wait !== wait) return;
      this.wait = undefined;
      this.hedge();
    }, noop);
  }

  /** The next attempt is due: sent when the budget allows, else hedging stops. */
  private hedge(): void {
    if (this.stopped || this.finished) return;
    if (this.budget !== undefined && !this.budget.tryRetry(this.clock.now())) {
      this.stopped = true;
      this.endIfAllFailed();
      return;
    }
    this.send();
    this.scheduleNext(this.policy.delayMs);
  }

  /** An attempt got headers or a message: the call is committed to it. False for the others. */
  private take(attempt: Attempt): boolean {
    if (this.committed === undefined) {
      this.committed = attempt;
      this.stopped = true;
      this.wait?.abort();
      this.wait = undefined;
      this.cancelOthers(attempt);
    }
    return this.committed === attempt;
  }

  private cancelOthers(winner: Attempt | undefined): void {
    for (const other of this.attempts) {
      if (other !== winner && !other.done) {
        other.done = true;
        other.call.cancelWithStatus(CODE.CANCELLED, 'Another hedged attempt answered first');
      }
    }
  }

  private ended(attempt: Attempt, status: StatusObject): void {
    if (attempt.done && this.committed !== attempt) return; // cancelled: another one won
    attempt.done = true;
    if (this.finished) return;
    const now = this.clock.now();
    if (this.committed !== undefined && this.committed !== attempt) return;
    if (status.code === CODE.OK) {
      this.take(attempt);
      this.budget?.recordSuccess();
      this.finish(status);
      return;
    }
    const nonFatal = this.policy.nonFatal.has(status.code);
    const pushback = parsePushback(status.metadata.get(PUSHBACK_TRAILER));
    // A6: only non-fatal statuses and "don't retry" pushback count against the throttle.
    if (nonFatal || pushback === 'do-not-retry') this.budget?.recordFailure(now, true);
    if (this.committed === attempt || !nonFatal) {
      // Committed, or fatal: the call ends with this status, the other attempts cancelled.
      this.stopped = true;
      this.finish(status);
      return;
    }
    this.lastFailure = status;
    if (pushback === 'do-not-retry') {
      this.stopped = true;
      this.wait?.abort();
      this.wait = undefined;
    } else if (pushback !== undefined) {
      // The next attempt after the pushback; the ones after it hedgingDelay apart again.
      this.scheduleNext(pushback);
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
    this.finish(this.lastFailure!);
  }

  private finish(status: StatusObject): void {
    if (this.finished) return;
    this.finished = true;
    this.stopped = true;
    this.wait?.abort();
    this.wait = undefined;
    this.cancelOthers(this.committed);
    this.firstCall?.cancelWithStatus(CODE.CANCELLED, 'Cancelled before it started');
    this.firstCall = undefined;
    this.message = undefined;
    this.listener.onReceiveStatus(status);
  }

  sendMessageWithContext(
    context: { flags?: number; callback?: (error?: Error | null) => void },
    message: unknown,
  ): void {
    if (this.finished) return;
    // Kept for later attempts until the call is committed; acknowledged now, as grpc-js does
    // for its retry buffer.
    if (this.committed === undefined) this.message = { value: message, flags: context.flags };
    const forward = context.flags === undefined ? {} : { flags: context.flags };
    for (const attempt of this.attempts) {
      if (!attempt.done) attempt.call.sendMessageWithContext(forward, message);
    }
    if (context.callback !== undefined) queueMicrotask(context.callback);
  }

  sendMessage(message: unknown): void {
    this.sendMessageWithContext({}, message);
  }

  halfClose(): void {
    this.halfClosed = true;
    for (const attempt of this.attempts) if (!attempt.done) attempt.call.halfClose();
  }

  startRead(): void {
    this.readStarted = true;
    for (const attempt of this.attempts) if (!attempt.done) attempt.call.startRead();
  }

  cancelWithStatus(code: number, details: string): void {
    if (this.finished) return;
    for (const attempt of this.attempts) {
      if (!attempt.done) {
        attempt.done = true;
        attempt.call.cancelWithStatus(code, details);
      }
    }
    this.finish({ code, details, metadata: new Metadata() });
  }

  getPeer(): string {
    return (this.committed ?? this.attempts[0])?.call.getPeer() ?? '';
  }

  getAuthContext(): ReturnType<InterceptingCallInterface['getAuthContext']> {
    return (this.committed ?? this.attempts[0])?.call.getAuthContext() ?? null;
  }
}
