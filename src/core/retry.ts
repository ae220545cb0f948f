// The async driver around `step`: run an attempt, hand its outcome to `step`, sleep, repeat.
// It owns the timers and listeners of a call and releases every one of them before it settles.
import type { Budget } from './budgets/budget.js';
import { systemClock } from './clock.js';
import { AttemptTimeoutError, DeadlineExceededError } from './errors.js';
import {
  type AttemptContext,
  type CallOptions,
  checkCallOptions,
  type GiveUpReason,
  type ResolvedPolicy,
  type RetryHooks,
  type RetryOptions,
  type RetryPolicyOptions,
  type RetryReport,
  resolvePolicy,
  type UnrepeatableReason,
} from './options.js';
import { type RetryState, startState, step } from './step.js';

/** The work to retry: called once per attempt. */
export type Operation<T> = (context: AttemptContext) => T | PromiseLike<T>;

/**
 * Lets an adapter treat some resolved values as failed attempts (a fetch Response with status
 * 503, say). Such a value is classified like an error; if the call gives up on it, the call
 * resolves with it, and a value that is retried is handed to `discard` first.
 * @internal
 */
export interface ResultJudge<T> {
  isFailure(value: T): boolean;
  discard?(value: T): void;
}

const reports = new WeakMap<object, RetryReport>();

/**
 * What the engine knows about a call that gave up with `error`: why, after how many attempts,
 * and how long it waited. The error itself is never wrapped or changed; the report is kept
 * beside it. Undefined for errors that did not come out of a retrying call, and for thrown
 * primitives (which cannot carry one).
 *
 * @example
 * ```ts
 * try {
 *   await retry(callApi);
 * } catch (error) {
 *   const report = getRetryReport(error); // { reason: 'deadline', attempts: 3, ... }
 * }
 * ```
 */
export function getRetryReport(error: unknown): RetryReport | undefined {
  return typeof error === 'object' && error !== null ? reports.get(error) : undefined;
}

const noop = () => {};
const SUCCESS = Object.freeze({ ok: true as const });

/** Calls a hook so that nothing it does (throw, reject) can reach the caller. */
function emit<E>(hook: ((event: E) => unknown) | undefined, event: E): void {
  if (hook === undefined) return;
  try {
    const result = hook(event) as { then?: unknown } | undefined;
    if (result !== null && typeof result === 'object' && typeof result.then === 'function') {
      (result as PromiseLike<unknown>).then(undefined, noop);
    }
  } catch {
    // A broken hook must not change the outcome of the call.
  }
}

/**
 * One attempt: its context (handed to the operation), its signal (made on first read), and the
 * timer and listener that end it early. `release()` frees all of them.
 */
class Attempt implements AttemptContext {
  readonly attempt: number;
  private controller: AbortController | undefined;
  private timer: ReturnType<typeof setTimeout> | AbortController | undefined;
  private failEarly: ((reason: unknown) => void) | undefined;
  private onCallerAbort: (() => void) | undefined;
  private released = false;

  constructor(
    private readonly policy: ResolvedPolicy,
    attempt: number,
    private readonly startedAt: number,
    private readonly callerSignal: AbortSignal | undefined,
  ) {
    this.attempt = attempt;
  }

  get signal(): AbortSignal {
    if (this.controller === undefined) {
      const controller = new AbortController();
      this.controller = controller;
      const caller = this.callerSignal;
      if (caller?.aborted) controller.abort(caller.reason);
      // Read after the attempt settled (a stashed context): nothing left to arm, nothing to leak.
      if (this.released) return controller.signal;
      if (caller !== undefined && !caller.aborted) this.listenToCaller(caller);
      // Without an attempt timeout nothing else ends the attempt at the deadline: arm it now.
      if (this.policy.attemptTimeoutMs === undefined) {
        const left = this.policy.deadlineMs - (this.policy.clock.now() - this.startedAt);
        this.arm(left, () => new DeadlineExceededError(this.policy.deadlineMs));
      }
    }
    return this.controller.signal;
  }

  run<T>(operation: Operation<T>): T | PromiseLike<T> {
    const timeout = this.policy.attemptTimeoutMs;
    const caller = this.callerSignal;
    // The common case: nothing can end the attempt early, so there is nothing to race.
    if (timeout === undefined && caller === undefined) return operation(this);
    return new Promise<T>((resolve, reject) => {
      this.failEarly = reject;
      if (caller !== undefined) this.listenToCaller(caller);
      if (timeout !== undefined) {
        const left = this.policy.deadlineMs - (this.policy.clock.now() - this.startedAt);
        const limit = Math.max(0, Math.min(timeout, left));
        this.arm(limit, () => new AttemptTimeoutError(limit));
      }
      try {
        Promise.resolve(operation(this)).then(resolve, reject);
      } catch (error) {
        reject(error);
      }
    });
  }

  private listenToCaller(caller: AbortSignal): void {
    if (this.onCallerAbort !== undefined) return;
    const onAbort = () => this.end(caller.reason);
    this.onCallerAbort = onAbort;
    caller.addEventListener('abort', onAbort, { once: true });
  }

  /**
   * Ends the attempt after `ms` with the error `reason()` makes, unless it is released first. The
   * error is made only if the timer fires: capturing a stack costs more than the whole attempt's
   * bookkeeping, and almost every timer is cleared.
   */
  private arm(ms: number, reason: () => Error): void {
    if (this.policy.clock === systemClock) {
      // On the platform's own clock a plain timer does the same for less than an abortable sleep:
      // this runs once per attempt of every fetch.
      this.timer = setTimeout(() => this.end(reason()), ms);
      return;
    }
    const cancel = new AbortController();
    this.timer = cancel;
    this.policy.clock.sleep(ms, cancel.signal).then(() => this.end(reason()), noop);
  }

  private end(reason: unknown): void {
    this.controller?.abort(reason);
    this.failEarly?.(reason);
  }

  release(): void {
    this.released = true;
    const timer = this.timer;
    if (timer instanceof AbortController) timer.abort();
    else if (timer !== undefined) clearTimeout(timer);
    if (this.onCallerAbort !== undefined) {
      this.callerSignal?.removeEventListener('abort', this.onCallerAbort);
    }
    this.failEarly = undefined;
  }
}

function giveUpReport(
  reason: GiveUpReason,
  state: RetryState,
  nowMs: number,
  error: unknown,
  verdict?: RetryReport['verdict'],
): RetryReport {
  const report: RetryReport = {
    reason,
    attempts: state.attempt,
    totalDelayMs: state.totalDelayMs,
    elapsedMs: nowMs - state.startedAt,
    ...(verdict === undefined ? {} : { verdict }),
  };
  if (typeof error === 'object' && error !== null) reports.set(error, report);
  return report;
}

/** A failed attempt: what it threw, or the resolved value that counted as a failure. */
interface Failure {
  readonly error: unknown;
  readonly isValue: boolean;
}

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
  judge?: ResultJudge<T>,
  unrepeatable?: UnrepeatableReason,
): Promise<T> {
  const signal = call?.signal;
  const startedAt = policy.clock.now();
  if (signal?.aborted) {
    return Promise.reject(abandon(policy, call, startState(policy, startedAt), signal.reason));
  }
  policy.budget?.recordRequest(startedAt);
  if (
    signal !== undefined ||
    policy.attemptTimeoutMs !== undefined ||
    judge !== undefined ||
    unrepeatable !== undefined
  ) {
    const state = startState(policy, startedAt);
    const first = unrepeatable === undefined ? state : { ...state, unrepeatable };
    return attemptLoop(policy, operation, call, judge, first, undefined);
  }
  // The common case, kept free of async frames and of the state object: nothing can end the
  // first attempt early and no result needs judging, so its promise is only observed.
  const attempt = new Attempt(policy, 1, startedAt, undefined);
  let result: T | PromiseLike<T>;
  try {
    result = operation(attempt);
  } catch (error) {
    attempt.release();
    return attemptLoop(policy, operation, call, judge, startState(policy, startedAt), {
      error,
      isValue: false,
    });
  }
  return Promise.resolve(result).then(
    (value) => {
      attempt.release();
      if (
        policy.budget !== undefined ||
        policy.onSuccess !== undefined ||
        call?.onSuccess !== undefined
      ) {
        succeed(policy, call, startState(policy, startedAt));
      }
      return value;
    },
    (error: unknown) => {
      attempt.release();
      return attemptLoop(policy, operation, call, judge, startState(policy, startedAt), {
        error,
        isValue: false,
      });
    },
  );
}

/** Reports a caller's abort as the call's end and returns the reason to reject with. */
function abandon(
  policy: ResolvedPolicy,
  call: CallOptions | undefined,
  state: RetryState,
  reason: unknown,
): unknown {
  const report = giveUpReport('aborted', state, policy.clock.now(), reason);
  emitGiveUp(policy, call, { ...report, error: reason });
  return reason;
}

/** After a success: tell the budget (through `step`) and the hooks. */
function succeed(policy: ResolvedPolicy, call: CallOptions | undefined, state: RetryState): void {
  const hooked = policy.onSuccess !== undefined || call?.onSuccess !== undefined;
  if (!hooked) {
    // Nobody will read the time, and a success does not need it: spare the clock read.
    if (policy.budget !== undefined) step(policy, state, SUCCESS, state.startedAt);
    return;
  }
  const now = policy.clock.now();
  step(policy, state, SUCCESS, now);
  emitSuccess(policy, call, {
    attempts: state.attempt,
    totalDelayMs: state.totalDelayMs,
    elapsedMs: now - state.startedAt,
  });
}

/** Runs attempts (starting with `failure` if the first one already failed) until the call ends. */
async function attemptLoop<T>(
  policy: ResolvedPolicy,
  operation: Operation<T>,
  call: CallOptions | undefined,
  judge: ResultJudge<T> | undefined,
  first: RetryState,
  failure: Failure | undefined,
): Promise<T> {
  const clock = policy.clock;
  const signal = call?.signal;
  let state = first;
  let pending = failure;
  for (;;) {
    if (pending === undefined) {
      const attempt = new Attempt(policy, state.attempt, state.startedAt, signal);
      try {
        const value = await attempt.run(operation);
        if (judge?.isFailure(value)) {
          pending = { error: value, isValue: true };
        } else {
          attempt.release();
          succeed(policy, call, state);
          return value;
        }
      } catch (error) {
        pending = { error, isValue: false };
      } finally {
        attempt.release();
      }
    }
    const { error, isValue } = pending;
    pending = undefined;
    // A caller's abort is final: never classified, never retried.
    if (signal?.aborted) throw abandon(policy, call, state, signal.reason);

    const now = clock.now();
    const decision = step(policy, state, { ok: false, error }, now);
    if (decision.action !== 'retry') {
      const reason = decision.action === 'give-up' ? decision.reason : 'not-retryable';
      const verdict = decision.action === 'give-up' ? decision.verdict : undefined;
      const report = giveUpReport(reason, state, now, error, verdict);
      emitGiveUp(policy, call, { ...report, error });
      if (isValue) return error as T;
      throw error;
    }

    if (policy.onRetry !== undefined || call?.onRetry !== undefined) {
      const event = {
        attempt: state.attempt,
        error,
        verdict: decision.verdict,
        delayMs: decision.delayMs,
        elapsedMs: now - state.startedAt,
      };
      emit(policy.onRetry, event);
      emit(call?.onRetry, event);
    }
    if (isValue) judge?.discard?.(error as T);
    state = decision.state;
    if (decision.delayMs > 0) {
      try {
        await clock.sleep(decision.delayMs, signal);
      } catch (reason) {
        if (signal?.aborted) throw abandon(policy, call, state, signal.reason);
        throw reason;
      }
    }
    // An abort that came while no sleep was listening (a hook, a zero wait) ends the call here:
    // an attempt started on an aborted signal would never hear of it.
    if (signal?.aborted) throw abandon(policy, call, state, signal.reason);
  }
}

function emitSuccess(
  policy: RetryHooks,
  call: RetryHooks | undefined,
  event: Parameters<NonNullable<RetryHooks['onSuccess']>>[0],
) {
  emit(policy.onSuccess, event);
  emit(call?.onSuccess, event);
}

function emitGiveUp(
  policy: RetryHooks,
  call: RetryHooks | undefined,
  event: Parameters<NonNullable<RetryHooks['onGiveUp']>>[0],
) {
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
  const resolved = resolvePolicy('createRetryPolicy', options, {
    defaultBudget: true,
    allowCallKeys: false,
  });
  return Object.freeze({
    options: resolved,
    budget: resolved.budget,
    retry: <T>(operation: Operation<T>, call?: CallOptions): Promise<T> => {
      try {
        checkOperation(operation);
        checkCallOptions('policy.retry', call);
      } catch (error) {
        return Promise.reject(error);
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

/** `retry(op)` with no options: the defaults, filled once. */
const DEFAULT_ONE_OFF = resolvePolicy('retry', undefined, {
  defaultBudget: false,
  allowCallKeys: true,
});

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
    policy =
      options === undefined
        ? DEFAULT_ONE_OFF
        : resolvePolicy('retry', options, { defaultBudget: false, allowCallKeys: true });
  } catch (error) {
    return Promise.reject(error);
  }
  // The hooks are the policy's already; only the signal is the call's own.
  const signal = options?.signal;
  return execute(policy, operation, signal === undefined ? undefined : { signal });
}
