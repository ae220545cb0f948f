// The async driver around `step`: run an attempt, hand its outcome to `step`, wait, repeat. One
// path for every call, whatever options it was given: the same timers, the same checks, the same
// events. It keeps two promises to the caller: the call settles by its deadline whatever the
// operation does (the attempt's signal aborts then, and a later result is dropped), and every
// timer and listener it took is released before it settles.
import { type AbortWatcher, unwatchAbort, watchAbort } from './abort-watch.js';
import {
  type Attempt,
  type AttemptOwner,
  AttemptScope,
  endSignal,
  signalOf,
} from './attempt-scope.js';
import type { BreakerAdmission, BreakerOutcome, CircuitBreaker } from './breaker/breaker.js';
import { BreakerOpenError } from './breaker/errors.js';
import type { Budget } from './budgets/budget.js';
import { callTime, checkedStart } from './call-time.js';
import type { Verdict } from './classify.js';
import { type Deadline, deadlineList, leave } from './deadlines.js';
import { AttemptTimeoutError, DeadlineExceededError } from './errors.js';
import { type HedgeCounts, hedgeCounts, hedgeReport, runHedged } from './hedge.js';
import { attemptWrappers, type CallRef, callRef, channels, runWrapped } from './instrument.js';
import {
  type AttemptContext,
  type CallOptions,
  checkCallOptions,
  type GiveUpEvent,
  type GiveUpReason,
  type ResolvedPolicy,
  type RetryAnswer,
  type RetryHooks,
  type RetryOptions,
  type RetryPolicyOptions,
  type RetryReport,
  resolvePolicy,
  type SuccessEvent,
  type UnrepeatableReason,
} from './options.js';
import { retriedBelow, setReport } from './report.js';
import {
  applyAnswer,
  type Decision,
  deadlinePassed,
  defaultVerdict,
  type RetryState,
  startState,
  step,
} from './step.js';
import { isThenable } from './validate.js';

export { getRetryReport } from './report.js';

/** The work to retry: called once per attempt. */
export type Operation<T> = (context: AttemptContext) => T | PromiseLike<T>;

/**
 * Lets an adapter treat some resolved values as failed attempts (a fetch Response with status
 * 503, say). Such a value is classified like an error; if the call gives up on it, the call
 * resolves with it. A value the call will not return (retried, or arriving after the call
 * ended) is handed to `discard`.
 * @internal
 */
export interface ResultCheck<T> {
  isFailure(value: T): boolean;
  discard?(value: T): void;
  /**
   * Whether a hedge's failure (a thrown error, or a failed value) only says that another copy of
   * the same request was in progress (a keyed request's 409): it then decides the attempt only if
   * no other copy's failure does.
   */
  isCopyConflict?(failure: unknown): boolean;
}

const noop = () => {};
/** Settled once: a job run `.then` of it is a promise job on an empty stack. */
const settledPromise = Promise.resolve();

// Read once: each point that reports checks `hasSubscribers` and builds nothing without one.
const callChannel = channels.call;
const attemptChannel = channels.attempt;

/** The give-up reasons that refuse a failure which could have passed. */
const REFUSALS: ReadonlySet<GiveUpReason> = new Set<GiveUpReason>([
  'max-attempts',
  'deadline',
  'retry-after-beyond-deadline',
  'pushback-beyond-deadline',
  'budget',
  'breaker-open',
  'not-idempotent',
  'body-not-replayable',
]);

/** The stack of whoever called into the engine, without the engine's own frames. */
function callerStackOf(): string | undefined {
  const holder: { stack?: string | undefined } = {};
  const capture = (Error as { captureStackTrace?: (o: object, above: unknown) => void })
    .captureStackTrace;
  if (capture !== undefined) capture(holder, execute);
  else holder.stack = new Error().stack;
  const stack = holder.stack;
  if (typeof stack !== 'string') return undefined;
  // Drop the first line ("Error"): the frames follow.
  const frames = stack.slice(stack.indexOf('\n') + 1);
  return frames === '' ? undefined : frames;
}

/** Errors whose stack already has a caller's section (a nested call's). */
const withCallerStack = new WeakSet<object>();

function appendCallerStack(error: unknown, frames: string): void {
  if (!(error instanceof Error) || withCallerStack.has(error)) return;
  const stack = error.stack;
  if (typeof stack !== 'string') return;
  try {
    error.stack = `${stack}\n    at stormproof retry, called from:\n${frames}`;
    withCallerStack.add(error);
  } catch {
    // A frozen error keeps its stack.
  }
}

/** Calls a hook so that nothing it does (throw, reject) can reach the caller. */
function emit<E>(hook: ((event: E) => unknown) | undefined, event: E): void {
  if (hook === undefined) return;
  try {
    const result = hook(event);
    if (isThenable(result)) result.then(undefined, noop);
  } catch {
    // A broken hook must not change the outcome of the call.
  }
}

/** An attempt's own timeout, in the list of attempts that share its clock and duration. */
class AttemptTimeout<T> implements Deadline {
  nextDeadline: Deadline | undefined = undefined;
  prevDeadline: Deadline | undefined = undefined;

  constructor(
    private readonly call: Call<T>,
    private readonly scope: Attempt,
    public startedAt: number,
  ) {}

  expire(): void {
    this.call.attemptTimedOut(this.scope);
  }
}

// Where a call is between attempts (while one runs, the call holds its scope instead). Numbers,
// not an enum: an enum's members are property reads of an object, at every change of stage and
// every check of one (1% of a successful call).
/** Not yet at its first attempt. */
const STARTING = 0;
/** `shouldRetry` is deciding, asynchronously. */
const JUDGING = 1;
/** Waiting before the next attempt. */
const WAITING = 2;
/** Settled: anything that arrives now is dropped. */
const DONE = 3;
type Between = typeof STARTING | typeof JUDGING | typeof WAITING | typeof DONE;

/** A failed attempt: what it threw, or the resolved value that counted as a failure. */
interface Failure {
  readonly error: unknown;
  readonly isValue: boolean;
}

/**
 * What a call seldom needs, apart from its small record: made when it starts with call options,
 * a result check, a breaker, hedging or `callerStack`, and otherwise on its first failure (or
 * when an event subscriber or an attempt timeout first needs it).
 */
class CallMore<T> {
  /** The breaker's admission of the running attempt, until its outcome is recorded. */
  admission: BreakerAdmission | undefined = undefined;
  /** The first attempt's signal (the call is that attempt's scope), made on first read. */
  controller: AbortController | undefined = undefined;
  state: RetryState | undefined = undefined;
  next: RetryState | undefined = undefined;
  failure: Failure | undefined = undefined;
  verdict: Verdict | undefined = undefined;
  wait: AbortController | undefined = undefined;
  waitStartedAt = 0;
  /** The running attempt's own timeout, when the policy has one. */
  timeout: AttemptTimeout<T> | undefined = undefined;
  /** When the running attempt started; set only while `stormproof:attempt` is watched. */
  observedAt = -1;
  /** What hedging did, when the policy hedges this call. */
  hedges: HedgeCounts | undefined = undefined;
  /** The caller's stack, with `callerStack`. */
  callerStack: string | undefined = undefined;
  /** Its reference in the event source, made when someone first listens. */
  ref: CallRef | undefined = undefined;
  /** Starts the next attempt after a wait of 0, as a promise job (see `decide`). */
  resume: (() => void) | undefined = undefined;

  constructor(
    readonly call: CallOptions | undefined,
    readonly check: ResultCheck<T> | undefined,
    readonly unrepeatable: UnrepeatableReason | undefined,
    readonly breaker: CircuitBreaker | undefined,
  ) {}
}

/**
 * One call: its attempts, waits, timers and listeners, from start to settlement. Its own record
 * holds what a call whose first attempt succeeds needs; the rest is in `more`.
 */
class Call<T> implements Deadline, AbortWatcher, AttemptOwner, Attempt {
  // Its fields are declared here and set in the constructor: fields with initializers (and
  // parameter properties) compile to class fields, set by a function of their own that V8 did
  // not inline (4% of a successful call).
  declare private readonly policy: ResolvedPolicy;
  declare private readonly operation: Operation<T>;
  /** Its promise's resolvers. */
  declare private readonly resolve: (value: T) => void;
  declare private readonly reject: (reason: unknown) => void;
  /** When its clock started; moved later if it started in a window held open too long. */
  declare startedAt: number;
  // Its place in the list of calls that share its clock and deadline.
  declare nextDeadline: Deadline | undefined;
  declare prevDeadline: Deadline | undefined;
  /**
   * The running attempt's scope, or where the call is between attempts: one field for both, so
   * that a call's record stays small (an attempt's outcome counts only while its scope is here).
   */
  declare private stage: Attempt | Between;
  declare private more: CallMore<T> | undefined;
  /**
   * The call is also its first attempt's scope, what that attempt's operation is given (one
   * record fewer on the success path): this is that attempt's number, an own field as a scope's.
   */
  declare readonly attempt: 1;

  constructor(
    policy: ResolvedPolicy,
    operation: Operation<T>,
    resolve: (value: T) => void,
    reject: (reason: unknown) => void,
    startedAt: number,
  ) {
    this.policy = policy;
    this.operation = operation;
    this.resolve = resolve;
    this.reject = reject;
    this.startedAt = startedAt;
    this.nextDeadline = undefined;
    this.prevDeadline = undefined;
    this.stage = STARTING;
    this.more = undefined;
    this.attempt = 1;
  }

  /** The first attempt's signal (see `attempt`). */
  get signal(): AbortSignal {
    return signalOf(this.extra());
  }

  /** Ends the first attempt from outside (see `attempt`). */
  end(reason: unknown): void {
    endSignal(this.extra(), reason);
  }

  /** The first attempt's promise resolved: bound to the call as a promise reaction. */
  returned(value: T): void {
    this.attemptReturned(this, value);
  }

  /** The first attempt's promise rejected: bound to the call as a promise reaction. */
  threw(error: unknown): void {
    this.attemptFailed(this, error);
  }

  /**
   * Starts the call: its seldom-used part when it needs one, its deadline, its first attempt.
   * Not in the constructor, which stays small: V8 then builds the record inline, where a
   * constructor it does not inline costs a generic construct (10% of a successful call).
   */
  begin(
    call: CallOptions | undefined,
    check: ResultCheck<T> | undefined,
    unrepeatable: UnrepeatableReason | undefined,
  ): void {
    const policy = this.policy;
    const breaker = call?.breaker ?? policy.breaker;
    const hedged = policy.hedge !== undefined && unrepeatable === undefined;
    if (
      call !== undefined ||
      check !== undefined ||
      unrepeatable !== undefined ||
      breaker !== undefined ||
      hedged ||
      policy.callerStack
    ) {
      const more = new CallMore(call, check, unrepeatable, breaker);
      if (policy.callerStack) more.callerStack = callerStackOf();
      // A call that must not be repeated is not sent twice at once either.
      if (hedged) more.hedges = hedgeCounts();
      this.more = more;
    }
    deadlineList(policy.clock, call?.deadlineMs ?? policy.deadlineMs).add(this, this.startedAt);
    const signal = call?.signal;
    if (signal !== undefined) watchAbort(signal, this);
    // Out of line, as every report here: the code a report builds would make the hot function
    // too large for V8 to inline, a cost paid with nobody subscribed (bench/instrument.mjs).
    if (callChannel.hasSubscribers) {
      this.publishStart();
      if (this.stage === DONE) return; // A subscriber aborted the call.
    }
    this.runAttempt(1);
  }

  private publishStart(): void {
    callChannel.publish({ type: 'start', call: this.callRef(), atMs: this.startedAt });
  }

  /** The seldom-used part, made on first need. */
  private extra(): CallMore<T> {
    let more = this.more;
    if (more === undefined) {
      more = new CallMore<T>(undefined, undefined, undefined, undefined);
      this.more = more;
    }
    return more;
  }

  /** The call's own deadline: its call options', or its policy's. */
  private get deadlineMs(): number {
    return this.more?.call?.deadlineMs ?? this.policy.deadlineMs;
  }

  /** Its reference in the event source. */
  callRef(): CallRef {
    const more = this.extra();
    let ref = more.ref;
    if (ref === undefined) {
      ref = callRef(this.policy.name);
      more.ref = ref;
    }
    return ref;
  }

  /** Starts attempt `scope` and reports it: only while `stormproof:attempt` is watched. */
  private startObserved(scope: Attempt): T | PromiseLike<T> {
    const ref = this.callRef();
    const atMs = this.policy.clock.now();
    this.extra().observedAt = atMs;
    attemptChannel.publish({ type: 'start', call: ref, attempt: scope.attempt, atMs });
    if (attemptWrappers().length === 0) return this.start(scope);
    return runWrapped(ref, scope.attempt, () => this.start(scope));
  }

  /** Starts the operation for attempt `scope`: once, or as hedged copies. */
  private start(scope: Attempt): T | PromiseLike<T> {
    const more = this.more;
    const hedges = more?.hedges;
    // Called as a plain function, as `runAttempt` calls it: the operation is not a method of
    // the call (nor is the call its `this`).
    if (hedges === undefined) {
      const operation = this.operation;
      return operation(scope);
    }
    // When every copy will be ended: the attempt's timeout, counted as `attempt()` counts it, or
    // the call's deadline.
    const policy = this.policy;
    let endsAtMs = this.startedAt + this.deadlineMs;
    if (policy.attemptTimeoutMs !== undefined) {
      const now = scope.attempt === 1 ? this.startedAt : policy.clock.now();
      endsAtMs = Math.min(endsAtMs, now + policy.attemptTimeoutMs);
    }
    return runHedged(
      policy,
      policy.hedge!,
      this.operation,
      scope,
      endsAtMs,
      more!.check,
      more!.breaker,
      hedges,
      this,
    );
  }

  /**
   * The state of the attempt that runs or last ran; made on the first failure, at `nowMs` when
   * the caller has just read the clock.
   */
  private current(nowMs?: number): RetryState {
    const more = this.extra();
    let state = more.state;
    if (state === undefined) {
      const clock = this.policy.clock;
      checkedStart(clock, this.startedAt, nowMs ?? clock.now());
      state = startState(this.policy, this.startedAt);
      if (more.unrepeatable !== undefined) state = { ...state, unrepeatable: more.unrepeatable };
      const deadlineMs = this.deadlineMs;
      if (deadlineMs !== this.policy.deadlineMs) state = { ...state, deadlineMs };
      more.state = state;
    }
    return state;
  }

  private runAttempt(attempt: number): void {
    const more = this.more;
    if (more !== undefined) {
      const breaker = more.breaker;
      if (breaker !== undefined) {
        const admission = breaker.admit();
        if (!admission.admitted) {
          this.refused(breaker, admission.retryAfterMs, attempt);
          return;
        }
        more.admission = admission;
      }
      // The failed value of the last attempt is dropped only now that a new attempt starts: a
      // call that ends during the wait (deadline, breaker) still returns it whole.
      const last = more.failure;
      if (last?.isValue) {
        more.failure = undefined;
        more.check?.discard?.(last.error as T);
      }
    }
    // The call is its own first attempt's scope: one record fewer on the success path.
    const scope: Attempt = attempt === 1 ? this : new AttemptScope(attempt, this);
    this.stage = scope;
    const timeoutMs = this.policy.attemptTimeoutMs;
    if (timeoutMs !== undefined) {
      const clock = this.policy.clock;
      // The first attempt starts with the call, and counts from the same reading.
      const now = attempt === 1 ? this.startedAt : clock.now();
      // Past the deadline the call's own entry ends the attempt: one timer is enough.
      if (now + timeoutMs < this.startedAt + this.deadlineMs) {
        const timeout = new AttemptTimeout(this, scope, now);
        this.extra().timeout = timeout;
        deadlineList(clock, timeoutMs).add(timeout, now);
      }
    }
    let result: T | PromiseLike<T>;
    try {
      // The operation straight from here when nothing wraps it: each frame between it and the
      // bottom of the stack is a frame that an error it makes captures.
      if (attemptChannel.hasSubscribers) result = this.startObserved(scope);
      else if (more?.hedges !== undefined) result = this.start(scope);
      else {
        const operation = this.operation;
        result = operation(scope);
      }
    } catch (error) {
      this.attemptFailed(scope, error);
      return;
    }
    Promise.resolve(result).then(scope.returned.bind(scope), scope.threw.bind(scope));
  }

  /** Ends the running attempt's own timer, and reports how it ended when someone listens. */
  private endAttempt(scope: Attempt, outcome: AttemptOutcome, error?: unknown): void {
    const more = this.more;
    if (more === undefined) return;
    const timeout = more.timeout;
    if (timeout !== undefined) {
      more.timeout = undefined;
      leave(timeout);
    }
    if (attemptChannel.hasSubscribers && more.observedAt >= 0) {
      const atMs = this.policy.clock.now();
      attemptChannel.publish({
        type: 'end',
        call: this.callRef(),
        attempt: scope.attempt,
        durationMs: atMs - more.observedAt,
        outcome,
        error,
        atMs,
      });
    }
    more.observedAt = -1;
  }

  attemptReturned(scope: Attempt, value: T): void {
    const check = this.more?.check;
    if (scope !== this.stage) {
      check?.discard?.(value); // Too late: the call ended without it.
      return;
    }
    if (check?.isFailure(value)) this.failed(scope, { error: value, isValue: true }, 'failure');
    else this.succeed(scope, value);
  }

  attemptFailed(scope: Attempt, error: unknown): void {
    if (scope !== this.stage) return; // Too late: dropped.
    this.failed(scope, { error, isValue: false }, 'failure');
  }

  /** The attempt's own timeout passed: it fails as a timeout (retryable while time is left). */
  attemptTimedOut(scope: Attempt): void {
    if (scope !== this.stage) return;
    const error = new AttemptTimeoutError(this.policy.attemptTimeoutMs!);
    scope.end(error);
    this.failed(scope, { error, isValue: false }, 'timeout');
  }

  /** Tells the breaker how the admitted attempt ended. */
  private recordOutcome(outcome: BreakerOutcome): void {
    const more = this.more;
    const admission = more?.admission;
    if (admission === undefined) return;
    more!.admission = undefined;
    more!.breaker!.record(admission, outcome);
  }

  /**
   * The breaker did not admit attempt `attempt`. A call that has not made an attempt fails at
   * once with a BreakerOpenError; a call whose retry is refused gives up with its last failure,
   * as when the budget refuses. Either way no retry is made and none is spent.
   */
  private refused(breaker: CircuitBreaker, retryAfterMs: number | undefined, attempt: number) {
    const more = this.extra();
    if (more.failure === undefined) {
      more.failure = { error: new BreakerOpenError(breaker.key, retryAfterMs), isValue: false };
    }
    this.giveUp('breaker-open', more.verdict, undefined, 0, attempt - 1);
  }

  private succeed(scope: Attempt, value: T): void {
    const more = this.more;
    if (more !== undefined) {
      this.endAttempt(scope, 'success');
      this.recordOutcome('success');
    }
    this.settle();
    const policy = this.policy;
    policy.budget?.recordSuccess(more?.state?.retriedKind);
    const call = more?.call;
    if (policy.onSuccess !== undefined || call?.onSuccess !== undefined) {
      const hedges = more?.hedges;
      const event: SuccessEvent = {
        attempts: scope.attempt,
        totalDelayMs: more?.state?.totalDelayMs ?? 0,
        elapsedMs: policy.clock.now() - this.startedAt,
        ...(hedges === undefined ? {} : { hedges: hedgeReport(hedges) }),
      };
      emit(policy.onSuccess, event);
      emit(call?.onSuccess, event);
    }
    if (callChannel.hasSubscribers) this.publishSuccess(scope);
    this.resolve(value);
  }

  private publishSuccess(scope: Attempt): void {
    const more = this.more;
    const now = this.policy.clock.now();
    callChannel.publish({
      type: 'end',
      call: this.callRef(),
      outcome: 'success',
      reason: undefined,
      attempts: scope.attempt,
      totalDelayMs: more?.state?.totalDelayMs ?? 0,
      elapsedMs: now - this.startedAt,
      hedges: more?.hedges?.sent ?? 0,
      error: undefined,
      atMs: now,
    });
  }

  private failed(scope: Attempt, failure: Failure, outcome: AttemptOutcome): void {
    this.endAttempt(scope, outcome, failure.error);
    const more = this.extra();
    more.failure = failure;
    const policy = this.policy;
    // One reading for the call's start (on its first failure) and for the step.
    const nowMs = policy.clock.now();
    const state = this.current(nowMs);
    const error = failure.error;
    const shouldRetry = policy.shouldRetry;
    if (shouldRetry === undefined || (!policy.allowNestedRetries && retriedBelow(error))) {
      this.decide(step(policy, state, { ok: false, error }, nowMs), nowMs);
      return;
    }
    const verdict = defaultVerdict(policy, state, error);
    more.verdict = verdict;
    let answer: RetryAnswer | PromiseLike<RetryAnswer>;
    try {
      answer = shouldRetry({
        error,
        attempt: state.attempt,
        elapsedMs: nowMs - this.startedAt,
        verdict,
      });
    } catch (thrown) {
      this.shouldRetryFailed(thrown);
      return;
    }
    if (!isThenable(answer)) {
      this.answered(verdict, answer);
      return;
    }
    this.stage = JUDGING;
    Promise.resolve(answer).then(
      (late) => {
        if (this.stage === JUDGING && more.failure === failure) this.answered(verdict, late);
      },
      (thrown: unknown) => {
        if (this.stage === JUDGING && more.failure === failure) this.shouldRetryFailed(thrown);
      },
    );
  }

  private answered(verdict: Verdict, answer: RetryAnswer): void {
    let judged: Verdict;
    try {
      judged = applyAnswer(verdict, answer);
    } catch (thrown) {
      this.shouldRetryFailed(thrown);
      return;
    }
    const now = this.policy.clock.now();
    this.decide(
      step(
        this.policy,
        this.current(),
        { ok: false, error: this.extra().failure!.error, verdict: judged },
        now,
      ),
      now,
    );
  }

  /**
   * `shouldRetry` threw: the call ends without retrying and rejects with what it threw, the
   * operation's failure attached as its `cause` when it has none of its own.
   */
  private shouldRetryFailed(thrown: unknown): void {
    const more = this.extra();
    const failure = more.failure!;
    if (
      typeof thrown === 'object' &&
      thrown !== null &&
      !('cause' in thrown) &&
      Object.isExtensible(thrown)
    ) {
      Object.defineProperty(thrown, 'cause', {
        value: failure.error,
        writable: true,
        configurable: true,
      });
    }
    this.policy.budget?.recordFailure(this.policy.clock.now(), more.verdict?.retryable ?? false);
    this.recordOutcome('ignored');
    more.failure = { error: thrown, isValue: false };
    this.giveUp('should-retry-failed', more.verdict, undefined, 0);
  }

  /** Acts on `decision`, made at `nowMs`. */
  private decide(decision: Decision, nowMs: number): void {
    if (decision.action !== 'succeed') {
      const { verdict } = decision;
      // The service's failures count against it; a 4xx (the caller's fault) does not.
      this.recordOutcome(
        verdict.retryable || verdict.kind === 'do-not-retry' ? 'failure' : 'ignored',
      );
    }
    if (decision.action === 'give-up') {
      this.giveUp(decision.reason, decision.verdict, decision.inner, 0);
      return;
    }
    if (decision.action !== 'retry') return;
    const policy = this.policy;
    const more = this.extra();
    const { error } = more.failure!;
    const state = this.current();
    more.verdict = decision.verdict;
    const call = more.call;
    if (policy.onRetry !== undefined || call?.onRetry !== undefined) {
      const event = {
        attempt: state.attempt,
        error,
        verdict: decision.verdict,
        delayMs: decision.delayMs,
        elapsedMs: policy.clock.now() - this.startedAt,
      };
      emit(policy.onRetry, event);
      emit(call?.onRetry, event);
      if (this.stage === DONE) return; // A hook aborted the call.
    }
    if (callChannel.hasSubscribers) {
      const verdict = decision.verdict;
      callChannel.publish({
        type: 'retry',
        call: this.callRef(),
        attempt: state.attempt,
        delayMs: decision.delayMs,
        kind: verdict.kind,
        retryAfterMs: verdict.pushbackMs ?? verdict.retryAfterMs,
        atMs: policy.clock.now(),
      });
      if (this.stage === DONE) return; // A subscriber aborted the call.
    }
    more.next = decision.state;
    this.stage = WAITING;
    if (decision.delayMs <= 0) {
      // The next attempt starts in a promise job of its own, not from here, at the bottom of
      // the stack of the attempt that failed: an error its operation makes then captures a few
      // frames, not this whole chain (capturing a stack is most of a failed attempt's cost).
      more.waitStartedAt = nowMs;
      let resume = more.resume;
      if (resume === undefined) {
        // Bound, not an arrow around it: a bound function adds no frame of its own.
        resume = this.waited.bind(this);
        more.resume = resume;
      }
      settledPromise.then(resume);
      return;
    }
    const wait = new AbortController();
    more.wait = wait;
    more.waitStartedAt = policy.clock.now();
    policy.clock.sleep(decision.delayMs, wait.signal).then(() => {
      if (more.wait === wait) this.waited();
    }, noop);
  }

  private waited(): void {
    const more = this.extra();
    more.wait = undefined;
    if (this.stage === DONE) return;
    const next = more.next!;
    more.state = next;
    this.runAttempt(next.attempt);
  }

  /** The call's deadline passed: it settles now, whatever is still running. */
  expire(nowMs: number): void {
    const stage = this.stage;
    if (stage === DONE) return;
    const state = this.current();
    const more = this.extra();
    let waitedMs = 0;
    if (typeof stage === 'object') {
      const scope = stage;
      const error = new DeadlineExceededError(this.deadlineMs);
      scope.end(error);
      this.endAttempt(scope, 'deadline', error);
      more.failure = { error, isValue: false };
      more.verdict = defaultVerdict(this.policy, state, error);
    } else if (stage === WAITING) {
      waitedMs = nowMs - more.waitStartedAt;
    }
    const verdict = more.verdict ?? defaultVerdict(this.policy, state, more.failure!.error);
    const reason = deadlinePassed(this.policy, verdict, nowMs, stage !== WAITING);
    this.recordOutcome('failure');
    this.giveUp(reason, verdict, undefined, waitedMs);
  }

  /** The caller's signal aborted: the call rejects with its reason, at once. */
  onAbort(reason: unknown): void {
    const stage = this.stage;
    if (stage === DONE) return;
    if (typeof stage === 'object') {
      const scope = stage;
      scope.end(reason);
      this.endAttempt(scope, 'aborted', reason);
    }
    const more = this.extra();
    const waitedMs = stage === WAITING ? this.policy.clock.now() - more.waitStartedAt : 0;
    this.recordOutcome('ignored');
    // A failed value kept through the wait will not be returned now.
    const last = more.failure;
    if (last?.isValue) more.check?.discard?.(last.error as T);
    more.failure = { error: reason, isValue: false };
    const attempts = stage === STARTING ? 0 : this.current().attempt;
    this.giveUp('aborted', undefined, undefined, waitedMs, attempts);
  }

  /** Releases the deadline entry, the caller's signal and any wait. */
  private settle(): void {
    this.stage = DONE;
    leave(this);
    const more = this.more;
    if (more === undefined) return;
    const signal = more.call?.signal;
    if (signal !== undefined) unwatchAbort(signal, this);
    const wait = more.wait;
    if (wait !== undefined) {
      more.wait = undefined;
      wait.abort();
    }
  }

  private giveUp(
    reason: GiveUpReason,
    verdict: Verdict | undefined,
    inner: RetryReport | undefined,
    waitedMs: number,
    attempts = this.current().attempt,
  ): void {
    this.settle();
    const more = this.extra();
    const { error, isValue } = more.failure!;
    const state = this.current();
    const hedges = more.hedges;
    const report: RetryReport = {
      reason,
      attempts,
      totalDelayMs: state.totalDelayMs + waitedMs,
      elapsedMs: this.policy.clock.now() - this.startedAt,
      ...(verdict === undefined ? {} : { verdict }),
      ...(inner === undefined ? {} : { inner }),
      ...(hedges === undefined ? {} : { hedges: hedgeReport(hedges) }),
    };
    setReport(error, report);
    if (more.callerStack !== undefined) appendCallerStack(error, more.callerStack);
    const call = more.call;
    if (this.policy.onGiveUp !== undefined || call?.onGiveUp !== undefined) {
      emitGiveUp(this.policy, call, { ...report, error });
    }
    if (callChannel.hasSubscribers) this.publishGiveUp(report, error);
    if (isValue) this.resolve(error as T);
    else this.reject(error);
  }

  /** Reports a refusal (when the failure could have passed) and the end of the call. */
  private publishGiveUp(report: RetryReport, error: unknown): void {
    const call = this.callRef();
    const atMs = this.policy.clock.now();
    if (REFUSALS.has(report.reason)) {
      callChannel.publish({
        type: 'refused',
        call,
        attempt: report.attempts,
        reason: report.reason,
        atMs,
      });
    }
    callChannel.publish({
      type: 'end',
      call,
      outcome: 'failure',
      reason: report.reason,
      attempts: report.attempts,
      totalDelayMs: report.totalDelayMs,
      elapsedMs: report.elapsedMs,
      hedges: this.more?.hedges?.sent ?? 0,
      error,
      atMs,
    });
  }
}

/** How an attempt ended, as `stormproof:attempt` reports it. */
type AttemptOutcome = 'success' | 'failure' | 'timeout' | 'deadline' | 'aborted';

/**
 * Runs `operation` with retries under `policy`. The one place where attempts are made and waits
 * are slept; everything it decides, it asks `step`. An adapter that knows the call is unsafe to
 * repeat passes `unrepeatable`: the first attempt is then the only one, and a failure that could
 * pass gives up with that reason (the budget is not asked).
 * @internal
 */
export function execute<T>(
  policy: ResolvedPolicy,
  operation: Operation<T>,
  call: CallOptions | undefined,
  check?: ResultCheck<T>,
  unrepeatable?: UnrepeatableReason,
): Promise<T> {
  const startedAt = callTime(policy.clock);
  const signal = call?.signal;
  // Out of line: the entry point stays small enough for V8 to inline on the success path.
  if (signal?.aborted) return rejectAborted(policy, call, signal.reason, startedAt);
  policy.budget?.recordRequest(startedAt);
  // An executor V8 inlines here (its closure and the resolvers' variables then cost nothing):
  // resolvers kept in module variables cost two write barriers a call.
  let resolve!: (value: T) => void;
  let reject!: (reason: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  new Call(policy, operation, resolve, reject, startedAt).begin(call, check, unrepeatable);
  return promise;
}

/** A call whose signal had aborted before it started: no attempt, reported as given up. */
function rejectAborted(
  policy: ResolvedPolicy,
  call: CallOptions | undefined,
  reason: unknown,
  startedAt: number,
): Promise<never> {
  const report: RetryReport = { reason: 'aborted', attempts: 0, totalDelayMs: 0, elapsedMs: 0 };
  setReport(reason, report);
  emitGiveUp(policy, call, { ...report, error: reason });
  if (callChannel.hasSubscribers) {
    const ref = callRef(policy.name);
    callChannel.publish({ type: 'start', call: ref, atMs: startedAt });
    callChannel.publish({
      type: 'end',
      call: ref,
      outcome: 'failure',
      reason: 'aborted',
      attempts: 0,
      totalDelayMs: 0,
      elapsedMs: 0,
      hedges: 0,
      error: reason,
      atMs: startedAt,
    });
  }
  return Promise.reject(reason);
}

function emitGiveUp(policy: RetryHooks, call: RetryHooks | undefined, event: GiveUpEvent) {
  emit(policy.onGiveUp, event);
  emit(call?.onGiveUp, event);
}

/** A retry policy: options filled and checked once, and a budget shared by all its calls. */
export interface RetryPolicy {
  /** The policy's options with every default filled in. */
  readonly options: ResolvedPolicy;
  /** The budget its calls share, if any. */
  readonly budget: Budget | undefined;
  /**
   * Runs `operation` with retries. Resolves with its value; on giving up, rejects with the last
   * error itself (see `getRetryReport` for why it gave up).
   */
  retry<T>(operation: Operation<T>, call?: CallOptions): Promise<T>;
}

/**
 * Makes a retry policy. Every option is checked here, once; a bad value throws a TypeError or
 * RangeError naming the option. The policy has its own `RetryBudget` unless given another
 * budget or `budget: false`: safe by default.
 *
 * @example
 * ```ts
 * const policy = createRetryPolicy({ maxAttempts: 3, deadlineMs: 2000 });
 * const user = await policy.retry(({ signal }) => api.getUser(id, { signal }));
 * ```
 */
export function createRetryPolicy(options?: RetryPolicyOptions): RetryPolicy {
  const resolved = Object.freeze(
    resolvePolicy('createRetryPolicy', options, { defaultBudget: true, allowCallKeys: false }),
  );
  return Object.freeze({
    options: resolved,
    budget: resolved.budget,
    retry: <T>(operation: Operation<T>, call?: CallOptions): Promise<T> => {
      if (typeof operation !== 'function' || call !== undefined) {
        try {
          checkOperation(operation);
          checkCallOptions('policy.retry', call);
        } catch (error) {
          return Promise.reject(error);
        }
      }
      return execute(resolved, operation, call);
    },
  });
}

function checkOperation<T>(operation: Operation<T>): Operation<T> {
  if (typeof operation !== 'function') {
    throw new TypeError(`stormproof: retry operation must be a function, got ${typeof operation}`);
  }
  return operation;
}

// `retry(op, { ... })` is mostly written with an options literal inline, the same values on every
// call: the last literal's values and their resolution are kept, and a literal with the same
// keys and the same values (by identity; the signal aside, which is the call's own) is not
// resolved again. Options whose resolution is more than a check are resolved every time: a
// hedge keeps what it learns per policy, and a jitter band is copied from an array that may
// change. Only plain objects are compared: a class's accessors are read by resolvePolicy but
// not enumerated, and an array is not an options object. The keys and values are kept in one
// array, key then value: one array to read and to fill (a literal that changes on every call
// fills it every time).
// A policy that is reused is frozen, once, on its first reuse: `createRetryPolicy`'s policies are
// frozen, and the engine reading two shapes of policy in one process cost `policy.retry()` 14 %
// more instructions (2,402 against 2,102 alone). Freezing every resolved policy would cost a
// literal that changes on every call as much again.
let lastEntries: unknown[] = [];
let lastPolicy: ResolvedPolicy | undefined;
let lastFrozen = false;

function oneOffPolicy(options: RetryOptions): ResolvedPolicy {
  const o = options as Record<string, unknown>;
  if (typeof o !== 'object' || o === null) return resolveOneOff(o);
  // The signal is read before the prototype on purpose: that read tells V8 the literal's shape,
  // and with it `getPrototypeOf` is a constant; asked first, it was a call that cost about 150
  // instructions, a third of what a literal cost over `policy.retry()` (issue 19).
  const signal = o.signal;
  const proto = Object.getPrototypeOf(o);
  const plain = proto === Object.prototype || proto === null;
  if (plain && lastPolicy !== undefined) {
    const last = lastEntries;
    let i = 0;
    for (const key in o) {
      if (key === 'signal') continue;
      if (last[i] !== key || last[i + 1] !== o[key]) {
        i = -1;
        break;
      }
      i += 2;
    }
    if (i === last.length) {
      if (signal !== undefined) checkCallOptions('retry', { signal });
      if (!lastFrozen) {
        lastPolicy = Object.freeze(lastPolicy);
        lastFrozen = true;
      }
      return lastPolicy;
    }
  }
  const policy = resolveOneOff(o);
  if (plain && o.hedge === undefined && (typeof o.jitter !== 'object' || o.jitter === null)) {
    const entries: unknown[] = [];
    for (const key in o) {
      if (key !== 'signal') entries.push(key, o[key]);
    }
    lastEntries = entries;
    lastPolicy = policy;
    lastFrozen = false;
  }
  return policy;
}

function resolveOneOff(options: unknown): ResolvedPolicy {
  return resolvePolicy('retry', options, { defaultBudget: false, allowCallKeys: true });
}

/** `retry(op)` with no options: the defaults, filled once. */
const DEFAULT_ONE_OFF = Object.freeze(resolveOneOff(undefined));

/**
 * Runs one call with retries: up to 4 attempts, capped exponential backoff with full jitter,
 * a 3 s deadline, Retry-After honoured. Uses a budget only when given one; for many calls,
 * prefer a policy from `createRetryPolicy`, which shares a budget across them.
 *
 * @example
 * ```ts
 * const data = await retry(async ({ signal }) => {
 *   const res = await fetch(url, { signal });
 *   if (!res.ok) throw Object.assign(new Error(`HTTP ${res.status}`), { status: res.status, headers: res.headers });
 *   return res.json();
 * });
 * ```
 */
export function retry<T>(operation: Operation<T>, options?: RetryOptions): Promise<T> {
  let policy: ResolvedPolicy;
  try {
    checkOperation(operation);
    policy = options === undefined ? DEFAULT_ONE_OFF : oneOffPolicy(options);
  } catch (error) {
    return Promise.reject(error);
  }
  // The hooks are the policy's already; only the signal is the call's own.
  const signal = options?.signal;
  return execute(policy, operation, signal === undefined ? undefined : { signal });
}
