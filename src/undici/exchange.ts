// One request through the interceptor, from its dispatch to the caller's last callback: its
// engine call, each attempt's dispatch (a retry, a hedge), the hooks shaped as the request's
// events, and the resume of a GET's body that broke after its head was forwarded.
import type { FailureKind } from '../core/classify.js';
import type {
  AttemptContext,
  CallOptions,
  GiveUpReason,
  ResolvedPolicy,
  RetryReport,
  SuccessEvent,
  UnrepeatableReason,
} from '../core/options.js';
import { addReportFinder, getRetryReport, setReport } from '../core/report.js';
import { execute } from '../core/retry.js';
import { isThenable } from '../core/validate.js';
import { originOf } from '../fetch/budgets.js';
import { redactUrl } from '../fetch/redact.js';
import {
  AUTO_KEY_METHODS,
  HEDGE_HEADER,
  IDEMPOTENCY_KEY_HEADER,
  newIdempotencyKey,
} from '../fetch/request.js';
import { isHedgeable, policyFor } from '../http/hedging.js';
import { Attempt, asError, type HeadCheck } from './attempt.js';
import { type AttemptBody, attemptBody } from './body.js';
import { isRetryFromAbove, readHeader, withHeader } from './headers.js';
import { guardBody, isFailure, type Judge } from './judge.js';
import type { InterceptorOptions, Settings } from './options.js';
import { BodyResumeError, checkResumed, type ResumePoint, resumePoint } from './resume.js';
import type {
  UndiciController,
  UndiciDispatch,
  UndiciDispatchArgs,
  UndiciHandler,
} from './types.js';

/** Errors this interceptor handed to a caller's handler, each with the engine's report. */
const delivered = new WeakSet<object>();

// undici's fetch hands the caller `TypeError('fetch failed', { cause })`, with the error this
// interceptor delivered as its cause: `getRetryReport` finds the report through it, and so does
// a stormproof layer above (stormproof/fetch over the global fetch), which then does not retry
// a request that was retried here already: one retry layer.
addReportFinder((error) => {
  const cause = (error as { cause?: unknown }).cause;
  if (typeof cause !== 'object' || cause === null || !delivered.has(cause)) return undefined;
  return getRetryReport(cause);
});

/**
 * A resume's engine call counted as part of its request: the request's attempts before it (the
 * broken body's attempt is the resume call's first), its waits, and its time.
 */
interface Shift {
  readonly attempts: number;
  readonly delayMs: number;
  readonly elapsedMs: number;
  /** The byte the resume asks for. */
  readonly resumeFrom: number;
}

/** A resume call's report, in the request's numbers. */
function shiftReport<R extends RetryReport>(report: R, shift: Shift | undefined): R {
  if (shift === undefined) return report;
  return {
    ...report,
    // A resume refused before its range request (breaker, abort) still made the broken attempt.
    attempts: shift.attempts + Math.max(1, report.attempts),
    totalDelayMs: shift.delayMs + report.totalDelayMs,
    elapsedMs: shift.elapsedMs + report.elapsedMs,
  };
}

/**
 * The policy of a resume: the origin's, with the attempts its request has left, no hedging, and
 * a budget that is not told of a new request (the request was counted when it started; its
 * resume is one of its retries, paid like any other).
 */
function resumePolicy(base: ResolvedPolicy, maxAttempts: number): ResolvedPolicy {
  const budget = base.budget;
  return Object.freeze({
    ...base,
    maxAttempts,
    hedge: undefined,
    budget:
      budget === undefined
        ? undefined
        : {
            recordRequest: () => {},
            recordSuccess: (retried?: FailureKind) => budget.recordSuccess(retried),
            recordFailure: (nowMs: number, retryable: boolean) =>
              budget.recordFailure(nowMs, retryable),
            tryRetry: (nowMs: number, kind?: FailureKind) => budget.tryRetry(nowMs, kind),
          },
  });
}

/**
 * One request through the interceptor, from dispatch to the caller's last callback. It is also
 * the controller the caller's handler holds: the same object across attempts, forwarding pause,
 * resume and abort to the attempt whose response the caller reads (undici's RetryHandler keeps a
 * stable controller the same way).
 */
export class Exchange implements UndiciController {
  target: UndiciController | undefined;
  readonly body: AttemptBody;
  bodyRefused = false;
  /** The caller's handler has had its last callback (end or error). */
  done = false;
  private readonly caller = new AbortController();
  private isPaused = false;
  private abortReason: Error | null = null;
  private readonly headers: unknown;
  private readonly unrepeatable: UnrepeatableReason | undefined;
  private readonly isKeyed: boolean;
  /** Sent with the origin's hedging policy: two copies of it may be in flight at once. */
  private readonly hedgeable: boolean;
  /** A GET whose body may be resumed with a range request if it breaks. */
  private readonly mayResume: boolean;
  private origin = '';
  /** When the request was dispatched, on the policy's clock: its deadline counts from here. */
  private startedAt = 0;
  /** Dispatches of this request so far: attempts, hedges and resumes. */
  private copies = 0;
  /** Attempts made and ms waited, as of the last head that came (the request's numbers). */
  private counts = { attempts: 0, delayMs: 0 };
  /** The response the caller reads, when its body can be resumed. */
  private point: ResumePoint | undefined;
  /** Body bytes passed to the caller. */
  private received = 0;
  /** The body the caller reads was resumed at least once: its length is checked here. */
  private resumed = false;

  constructor(
    private readonly settings: Settings,
    private readonly dispatch: UndiciDispatch,
    private readonly opts: UndiciDispatchArgs,
    private readonly method: string,
    readonly handler: UndiciHandler,
  ) {
    let headers = opts.headers;
    if (
      settings.autoKey &&
      AUTO_KEY_METHODS.has(method) &&
      readHeader(headers, 'idempotency-key') === undefined
    ) {
      headers = withHeader(headers, IDEMPOTENCY_KEY_HEADER.toLowerCase(), newIdempotencyKey());
    }
    this.headers = headers;
    this.isKeyed = readHeader(headers, 'idempotency-key') !== undefined;
    let unrepeatable: UnrepeatableReason | undefined;
    if (isRetryFromAbove(headers, settings.attemptHeader)) unrepeatable = 'already-retried';
    else if (!this.isKeyed && !settings.retryMethods.has(method)) unrepeatable = 'not-idempotent';
    this.unrepeatable = unrepeatable;
    // A request sent once keeps its body as given; others may need to send it again.
    this.body =
      unrepeatable === undefined && settings.policy.maxAttempts > 1
        ? attemptBody(opts.body, settings.maxReplayBodyBytes)
        : attemptBody(opts.body, 0);
    // A streamed body is recorded as its first dispatch sends it: a copy sent meanwhile would
    // have nothing whole to send. Only bodies held whole (or none) are hedged.
    this.hedgeable =
      settings.hedging &&
      isHedgeable(method, this.isKeyed, unrepeatable) &&
      this.body.alwaysReplayable;
    this.mayResume = settings.resumeBody && method === 'GET' && unrepeatable === undefined;
  }

  // The controller the caller's handler holds.
  pause(): void {
    this.isPaused = true;
    this.target?.pause();
  }

  resume(): void {
    this.isPaused = false;
    this.target?.resume();
  }

  abort(reason: Error): void {
    if (this.abortReason !== null) return;
    this.abortReason = reason ?? new Error('aborted');
    this.caller.abort(this.abortReason);
    this.target?.abort(this.abortReason);
  }

  get aborted(): boolean {
    return this.abortReason !== null;
  }

  get paused(): boolean {
    return this.isPaused;
  }

  get reason(): Error | null {
    return this.abortReason;
  }

  finish(): void {
    this.done = true;
  }

  /** Ends the caller's request with `error`, once. */
  fail(error: Error): void {
    if (this.done) return;
    this.done = true;
    this.handler.onResponseError?.(this, error);
  }

  /** The head the caller gets: whether its body can be resumed, and from where. */
  headForwarded(attempt: Attempt): void {
    if (this.mayResume) this.point = resumePoint(attempt.status, attempt.headers);
  }

  /** A chunk of the body the caller reads. */
  forwardData(attempt: Attempt, chunk: Uint8Array): void {
    const point = this.point;
    if (
      this.resumed &&
      point?.end !== undefined &&
      point.start + this.received + chunk.byteLength > point.end + 1
    ) {
      // A resumed part longer than its Content-Range said: not the bytes that were asked for.
      const error = new BodyResumeError(
        `stormproof: the resumed body ran past the end of its Content-Range (byte ${point.end})`,
      );
      attempt.stop(error);
      this.fail(error);
      return;
    }
    this.received += chunk.byteLength;
    try {
      this.handler.onResponseData?.(this, chunk);
    } catch (error) {
      this.callerThrew(attempt, error);
    }
  }

  /**
   * The caller's handler threw: the request is closed and the handler told, as undici does, and
   * its body is never resumed (the break is the reader's, not the connection's).
   */
  callerThrew(attempt: Attempt, thrown: unknown): void {
    const error = asError(thrown);
    attempt.stop(error);
    this.fail(error);
  }

  /** The body the caller reads ended. */
  bodyEnded(attempt: Attempt, trailers: Record<string, string | string[] | undefined>): void {
    if (this.done) return;
    attempt.stop();
    const point = this.point;
    if (this.resumed && point?.end !== undefined && point.start + this.received !== point.end + 1) {
      this.fail(
        new BodyResumeError(
          `stormproof: the resumed body ended at byte ${point.start + this.received}, before the end of its Content-Range (byte ${point.end})`,
        ),
      );
      return;
    }
    this.finish();
    this.handler.onResponseEnd?.(this, trailers);
  }

  /**
   * The body the caller reads broke (a dropped connection, a body timeout). A resumable one is
   * resumed if the engine allows the retry; otherwise the error reaches the body's reader.
   */
  bodyFailed(attempt: Attempt, error: Error): void {
    if (this.done) return;
    attempt.stop();
    if (this.point === undefined || this.aborted || !this.body.replayable) {
      this.fail(error);
      return;
    }
    this.resumeBody(error);
  }

  start(): void {
    const { settings } = this;
    const origin = originOf(String(this.opts.origin ?? ''));
    this.origin = origin;
    this.startedAt = settings.policy.clock.now();
    // Once, before any attempt, so that the caller can abort at once (also during a wait).
    this.handler.onRequestStart?.(this, {});
    const call: CallOptions = { signal: this.caller.signal };
    if (settings.breakers !== undefined) call.breaker = settings.breakers.get(origin);
    /** The latest successful response of a copy still in the race: the one onSuccess describes. */
    let succeeded: Attempt | undefined;
    this.addHooks(call, () => succeeded, undefined);
    const operation = (context: AttemptContext) =>
      this.send(context, this.headers).then((value) => {
        if (!context.signal.aborted && !isFailure(value)) succeeded = value;
        if (this.isKeyed) settings.keyed.add(value);
        return value;
      });
    let policy = policyFor(settings.policy, settings.origins, origin, this.hedgeable);
    if (!this.body.alwaysReplayable && this.unrepeatable === undefined) {
      policy = { ...policy, shouldRetry: guardBody(policy.shouldRetry as Judge, this) };
    }
    execute(policy, operation, call, settings.check, this.unrepeatable).then(
      (attempt) => {
        if (this.bodyRefused) amendReason(attempt, 'body-not-replayable');
        try {
          attempt.forward();
        } catch (error) {
          this.callerThrew(attempt, error);
        }
      },
      (error: unknown) => {
        if (this.bodyRefused) amendReason(error, 'body-not-replayable');
        this.deliver(error);
      },
    );
  }

  /** Ends the request with the engine's error, its report found through it (and fetch's cause). */
  private deliver(error: unknown): void {
    if (typeof error === 'object' && error !== null) delivered.add(error);
    this.fail(asError(error));
  }

  /** One dispatch of the request with `headers`: an attempt, a hedge or a resume. */
  private send({ signal, hedge }: AttemptContext, headers: unknown, checkHead?: HeadCheck) {
    const { settings } = this;
    return new Promise<Attempt>((resolve, reject) => {
      // Without hedging, each dispatch is one attempt and this is its attempt number.
      const sendNumber = ++this.copies;
      const settle = () => signal.removeEventListener('abort', onAbort);
      const done = (value: Attempt) => {
        settle();
        resolve(value);
      };
      const failed = (error: unknown) => {
        settle();
        reject(error);
      };
      const one = new Attempt(this, done, failed, checkHead);
      const onAbort = () => one.kill(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      if (signal.aborted) {
        one.kill(signal.reason);
        return;
      }
      let sent = headers;
      if (sendNumber > 1 && settings.attemptHeader !== undefined) {
        sent = withHeader(sent, settings.attemptHeader, String(sendNumber));
        if (hedge !== undefined && hedge > 0) {
          sent = withHeader(sent, HEDGE_HEADER, String(hedge));
        }
      }
      const attemptOpts: UndiciDispatchArgs = {
        ...this.opts,
        headers: sent,
        body: this.body.forAttempt(sendNumber),
      };
      try {
        this.dispatch(attemptOpts, one);
      } catch (error) {
        one.onResponseError(undefined, error as Error);
      }
    });
  }

  /**
   * Resumes the body that broke with `error`: a retry through the engine like any other (the
   * request's attempts left, its deadline, the origin's budget and breaker, backoff and
   * Retry-After, the hooks), whose first attempt is the broken body and whose next ones ask for
   * the rest with `Range` and `If-Match`. A 206 that continues the same bytes feeds the caller's
   * handler as if nothing happened; anything else ends the body with an error.
   */
  private resumeBody(error: Error): void {
    const { settings } = this;
    const point = this.point!;
    const from = point.start + this.received;
    const base = policyFor(settings.policy, settings.origins, this.origin, false);
    const elapsedMs = base.clock.now() - this.startedAt;
    const shift: Shift = {
      attempts: this.counts.attempts - 1,
      delayMs: this.counts.delayMs,
      elapsedMs,
      resumeFrom: from,
    };
    // The request's deadline, not a new one: what is left of it.
    const leftMs = Math.floor(base.deadlineMs - elapsedMs);
    if (leftMs < 1) {
      // No time left for any retry: the engine would refuse it with 'deadline', and an engine
      // call cannot start with its deadline already behind it.
      this.refuseResume(error, shift, 'deadline');
      return;
    }
    const policy = resumePolicy(base, Math.max(1, base.maxAttempts - shift.attempts));
    const call: CallOptions = { signal: this.caller.signal, deadlineMs: leftMs };
    if (settings.breakers !== undefined) call.breaker = settings.breakers.get(this.origin);
    this.addHooks(call, () => undefined, shift);
    let headers = withHeader(this.headers, 'range', `bytes=${from}-${point.end ?? ''}`);
    headers = withHeader(headers, 'if-match', point.etag);
    let next: ResumePoint | undefined;
    const checkHead: HeadCheck = (status, head) => {
      const checked = checkResumed(point, from, status, head);
      if (checked instanceof BodyResumeError) return checked;
      next = checked;
      return undefined;
    };
    const operation = (context: AttemptContext) =>
      context.attempt === 1 ? Promise.reject(error) : this.send(context, headers, checkHead);
    execute(policy, operation, call, settings.check).then(
      (attempt) => {
        if (this.done) {
          attempt.discard();
          return;
        }
        if (isFailure(attempt)) {
          // The range request failed with a status for good (412: the ETag no longer matches).
          const failure = new BodyResumeError(
            `stormproof: the body broke at byte ${from} and could not be resumed: the server answered ${attempt.status} to "Range: bytes=${from}-${point.end ?? ''}"`,
          );
          const report = getRetryReport(attempt);
          if (report !== undefined) setReport(failure, shiftReport(report, shift));
          attempt.discard();
          this.deliver(failure);
          return;
        }
        this.point = next;
        this.resumed = true;
        try {
          attempt.continueBody();
        } catch (thrown) {
          this.callerThrew(attempt, thrown);
        }
      },
      (refusal: unknown) => {
        const report = getRetryReport(refusal);
        if (report !== undefined) setReport(refusal, shiftReport(report, shift));
        this.deliver(refusal);
      },
    );
  }

  /** Ends the body with its own error, the resume refused for `reason` before any engine call. */
  private refuseResume(error: Error, shift: Shift, reason: GiveUpReason): void {
    const report: RetryReport = {
      reason,
      attempts: shift.attempts + 1,
      totalDelayMs: shift.delayMs,
      elapsedMs: shift.elapsedMs,
    };
    setReport(error, report);
    const onGiveUp = this.settings.hooks.onGiveUp;
    if (onGiveUp !== undefined) {
      try {
        const result = onGiveUp({ ...report, ...this.describe(), error });
        if (isThenable(result)) result.then(undefined, () => {});
      } catch {
        // A broken hook must not change the outcome, as in the engine.
      }
    }
    this.deliver(error);
  }

  /**
   * Request-shaped hooks for one engine call of this request (its first, or a resume's, whose
   * numbers `shift` turns into the request's), and the count of attempts a resume starts from.
   */
  private addHooks(
    call: CallOptions,
    succeeded: () => Attempt | undefined,
    shift: Shift | undefined,
  ): void {
    const { onRetry, onGiveUp, onSuccess } = this.settings.hooks;
    if (this.mayResume) {
      // What a resume counts from: every head that came, the first one's and each resume's.
      const user = shift === undefined ? onSuccess : undefined;
      call.onSuccess = (event) => {
        this.counts = {
          attempts: (shift?.attempts ?? 0) + event.attempts,
          delayMs: (shift?.delayMs ?? 0) + event.totalDelayMs,
        };
        return user === undefined ? undefined : this.successEvent(user, event, succeeded());
      };
    } else if (onSuccess !== undefined) {
      call.onSuccess = (event) => this.successEvent(onSuccess, event, succeeded());
    }
    if (onRetry === undefined && onGiveUp === undefined) return;
    const shape = <E extends { readonly error: unknown }>(event: E) => {
      const { error, ...rest } = event;
      // A failed response is passed on as a status; only errors are described as errors.
      return error instanceof Attempt
        ? { ...rest, ...this.describe(), status: error.status }
        : { ...rest, ...this.describe(), error };
    };
    if (onRetry !== undefined) {
      call.onRetry =
        shift === undefined
          ? (event) => onRetry(shape(event))
          : (event) =>
              onRetry({
                ...shape(event),
                attempt: shift.attempts + event.attempt,
                elapsedMs: shift.elapsedMs + event.elapsedMs,
                resumeFrom: shift.resumeFrom,
              });
    }
    if (onGiveUp !== undefined) {
      call.onGiveUp = (event) =>
        onGiveUp({
          ...shape(shiftReport(event, shift)),
          ...(this.bodyRefused ? { reason: 'body-not-replayable' as GiveUpReason } : {}),
        });
    }
  }

  private successEvent(
    hook: NonNullable<InterceptorOptions['onSuccess']>,
    event: SuccessEvent,
    response: Attempt | undefined,
  ): unknown {
    return hook({
      ...event,
      ...this.describe(),
      ...(response === undefined ? {} : { status: response.status }),
    });
  }

  private described: { method: string; url: string } | undefined;

  /** The method and redacted URL every event carries, made once. */
  private describe(): { method: string; url: string } {
    this.described ??= { method: this.method, url: describeUrl(this.opts) };
    return this.described;
  }
}

/** The engine gave up with 'not-retryable' only because the body could not be sent again. */
function amendReason(value: unknown, reason: GiveUpReason): void {
  const report = getRetryReport(value);
  if (report !== undefined && report.reason === 'not-retryable')
    setReport(value, { ...report, reason });
}

function describeUrl(opts: UndiciDispatchArgs): string {
  try {
    return redactUrl(new URL(opts.path ?? '/', String(opts.origin ?? '')));
  } catch {
    return redactUrl(`${String(opts.origin ?? '')}${opts.path ?? ''}`);
  }
}
