/**
 * One call of the fetch that `createFetch` returns: what may be repeated, the copies sent through
 * the engine, the caller's signal carried to each, and the responses held until one is returned.
 *
 * A call is one `FetchCall` record whose methods are on its prototype, not a closure per step: the
 * wrapper is on every request of its users, and each closure and its context is heap to allocate
 * and collect on every call (ten closures over one context took 0.7 KB a call more than this).
 *
 * @module
 */
import { type AbortWatcher, unwatchAbort, watchAbort } from '../core/abort-watch.js';
import { channels, type FetchMessage } from '../core/instrument.js';
import type { AttemptContext, CallOptions, UnrepeatableReason } from '../core/options.js';
import { setReport } from '../core/report.js';
import { execute, getRetryReport as getReport, type ResultCheck } from '../core/retry.js';
import type { ClientSettings } from '../http/checks.js';
import { isHedgeable, policyFor } from '../http/hedging.js';
import { originOf } from './budgets.js';
import type {
  FetchEventContext,
  FetchFunction,
  FetchGiveUpEvent,
  FetchRetryEvent,
  FetchRetryReport,
  FetchSuccessEvent,
  TransparentRetries,
} from './index.js';
import { isLostToKeepAliveRace } from './keep-alive-race.js';
import { isFetchNetworkError } from './network-error.js';
import { redactUrl } from './redact.js';
import {
  AUTO_KEY_METHODS,
  cancelBody,
  HEDGE_HEADER,
  IDEMPOTENCY_KEY_HEADER,
  isReplayableBody,
  isRequest,
  newIdempotencyKey,
} from './request.js';

const fetchChannel = channels.fetch;

/** Everything a `createFetch` decided once, shared by all its calls. */
export interface Settings extends ClientSettings {
  readonly fetch: FetchFunction | undefined;
  /** The caller's hooks, told fetch events. */
  readonly hooks: {
    readonly onRetry: ((event: FetchRetryEvent) => unknown) | undefined;
    readonly onGiveUp: ((event: FetchGiveUpEvent) => unknown) | undefined;
    readonly onSuccess: ((event: FetchSuccessEvent) => unknown) | undefined;
  };
  /** Responses to requests that carry an Idempotency-Key: a 409 or 422 on them is final. */
  readonly keyed: WeakSet<object>;
  /** Bare TypeErrors that a fetch call threw for a failed connection (a browser's). */
  readonly networkErrors: WeakSet<object>;
}

/** One call of the fetch that `createFetch` returns. */
export function send(
  settings: Settings,
  input: string | URL | Request,
  init: RequestInit | undefined,
): Promise<Response> {
  return new FetchCall(settings, input, init).run();
}

/** `globalThis.fetch`, looked up at each call and called as a method of the global object. */
const globalFetch: FetchFunction = (input, init) => globalThis.fetch(input, init);

/**
 * A call's state, and the engine's `ResultCheck` for its responses: a response counts as a failed
 * attempt only for an error status, never a 2xx or a 3xx.
 */
class FetchCall implements ResultCheck<Response> {
  /** The URL as given (a string or URL) or the Request's: for the budget's origin and the events. */
  private readonly url: string | URL;
  private readonly method: string;
  /** The call's headers when it has some of its own or adds a key; undefined for most calls. */
  private readonly headers: Headers | undefined;
  /** Whether `headers` differ from what the caller gave (a key was added). */
  private readonly changedHeaders: boolean;
  private readonly isKeyed: boolean;
  /** Why the request must not be sent twice; undefined when it may be. */
  private readonly unrepeatable: UnrepeatableReason | undefined;
  private readonly hedgeable: boolean;
  /**
   * A Request's body is a stream that its first send consumes: each copy sends a clone, and
   * `spare` keeps a copy for the next. Only when there can be a next attempt or a hedge.
   */
  private readonly spare: Request | undefined;
  /**
   * A request lost to the keep-alive race is sent again at once, inside its attempt, when the
   * engine would retry it anyway (an idempotent method or a key, a body it can send again): the
   * budget is not charged, no attempt is counted. At most one per call.
   */
  private readonly resendable: boolean;
  private transparentRetries = 0;
  private readonly callerSignal: AbortSignal | undefined;
  private readonly fetchImpl: FetchFunction;
  /**
   * The responses of attempts (and hedged copies) not yet returned or discarded, latest last: the
   * latest is the one the hooks describe.
   */
  private readonly held: Response[] = [];
  /** Each response's link to the caller's signal, until it is discarded or returned. */
  private readonly links: Map<Response, CallerLink> | undefined;
  /** Physical sends so far in this call: the next one's `http.request.resend_count`. */
  private sends = 0;
  /** Copies of the request sent so far in this call, attempts and hedges (not resends). */
  private copies = 0;
  /** What the engine is told of the call: the caller's signal, the breaker, the hooks. */
  private readonly options: CallOptions;
  private readonly origin: string;

  constructor(
    private readonly settings: Settings,
    private readonly input: string | URL | Request,
    private readonly init: RequestInit | undefined,
  ) {
    const request = isRequest(input) ? input : undefined;
    const url = request === undefined ? (input as string | URL) : request.url;
    this.url = url;
    const method = String(init?.method ?? request?.method ?? 'GET').toUpperCase();
    this.method = method;
    // init.headers replace the Request's, as in `new Request(request, init)`. Copied only when
    // there are some: most calls have none, and a Headers costs a little on every request.
    const given = init?.headers ?? request?.headers;
    let headers = given === undefined ? undefined : new Headers(given);
    let changedHeaders = false;
    if (settings.autoKey && AUTO_KEY_METHODS.has(method) && !headers?.has(IDEMPOTENCY_KEY_HEADER)) {
      headers ??= new Headers();
      headers.set(IDEMPOTENCY_KEY_HEADER, newIdempotencyKey());
      changedHeaders = true;
    }
    this.headers = headers;
    this.changedHeaders = changedHeaders;
    const isKeyed = headers?.has(IDEMPOTENCY_KEY_HEADER) ?? false;
    this.isKeyed = isKeyed;

    // A body given in init wins over the Request's, as in `new Request(request, init)`.
    const bodyOfRequest = init?.body == null && request !== undefined && request.body != null;
    const replayable = bodyOfRequest ? !request.bodyUsed : isReplayableBody(init?.body);
    let unrepeatable: UnrepeatableReason | undefined;
    if (!isKeyed && !settings.retryMethods.has(method)) unrepeatable = 'not-idempotent';
    else if (!replayable) unrepeatable = 'body-not-replayable';
    this.unrepeatable = unrepeatable;
    const hedgeable = settings.hedging && isHedgeable(method, isKeyed, unrepeatable);
    this.hedgeable = hedgeable;
    const spare =
      bodyOfRequest && unrepeatable === undefined && (settings.policy.maxAttempts > 1 || hedgeable)
        ? request
        : undefined;
    this.spare = spare;
    this.resendable = unrepeatable === undefined && (!bodyOfRequest || spare !== undefined);

    const initSignal = init?.signal;
    // An explicit `signal: null` in init drops the Request's signal, as in `new Request`.
    const callerSignal = initSignal !== undefined ? (initSignal ?? undefined) : request?.signal;
    this.callerSignal = callerSignal;
    this.links = callerSignal === undefined ? undefined : new Map();
    this.fetchImpl = settings.fetch ?? globalFetch;

    // Read once: both the breaker and the budget are the origin's.
    const origin =
      settings.breakers !== undefined || settings.origins !== undefined ? originOf(url) : '';
    this.origin = origin;
    const options: CallOptions = { signal: callerSignal };
    if (settings.breakers !== undefined) options.breaker = settings.breakers.get(origin);
    this.options = options;
    const { onRetry, onGiveUp, onSuccess } = settings.hooks;
    if (onRetry !== undefined || onGiveUp !== undefined || onSuccess !== undefined) {
      this.addHooks(settings.hooks);
    }
  }

  async run(): Promise<Response> {
    const { settings, spare } = this;
    try {
      const policy = policyFor(settings.policy, settings.origins, this.origin, this.hedgeable);
      const response = await execute(
        policy,
        (context) => this.attempt(context),
        this.options,
        this,
        this.unrepeatable,
      );
      // The caller keeps this response: its link now lasts as long as the response does.
      this.links?.delete(response);
      if (this.transparentRetries > 0) addTransparentRetries(response, this.transparentRetries);
      return response;
    } catch (error) {
      // A failed response the call will not return (the caller aborted as it came): free it.
      for (const response of [...this.held]) this.discard(response);
      if (this.transparentRetries > 0) addTransparentRetries(error, this.transparentRetries);
      throw error;
    } finally {
      // The spare copy of a Request's body is not needed any more: drop what it buffered.
      if (spare !== undefined) cancelBody(spare);
    }
  }

  /** One attempt (or hedged copy): its request sent, and re-sent once if lost to the race. */
  private async attempt(context: AttemptContext): Promise<Response> {
    const { signal } = context;
    const { init, settings } = this;
    // Without hedging, each attempt sends one copy and this is its attempt number.
    const sendNumber = ++this.copies;
    const hedge = context.hedge ?? 0;
    // (Spreading an absent init costs more than making the object.)
    const attemptInit: RequestInit = init === undefined ? { signal } : { ...init, signal };
    if (sendNumber > 1 && settings.attemptHeader !== undefined) {
      const retryHeaders = new Headers(this.headers);
      retryHeaders.set(settings.attemptHeader, String(sendNumber));
      if (hedge > 0) retryHeaders.set(HEDGE_HEADER, String(hedge));
      attemptInit.headers = retryHeaders;
    } else if (this.changedHeaders && this.headers !== undefined) {
      attemptInit.headers = this.headers;
    }
    let response: Response;
    try {
      response = await this.dispatch(attemptInit, signal, context);
    } catch (error) {
      if (!this.mayResend(error, signal)) throw error;
      // Counted before the send: a hedged copy failing the same way meanwhile does not resend.
      this.transparentRetries++;
      response = await this.dispatch({ ...attemptInit, signal }, signal, context);
    }
    // The attempt ended (timeout, deadline, abort) just as the response came: nobody will read it.
    if (signal.aborted) {
      this.dropLink(response);
      cancelBody(response);
      throw signal.reason;
    }
    this.held.push(response);
    if (this.isKeyed) settings.keyed.add(response);
    return response;
  }

  /**
   * One send of an attempt's request: a fetch call and its link to the caller's signal. Not an
   * async function: most sends have no caller signal and nobody listening, and then this is the
   * runtime's fetch and one reaction for a failure.
   */
  private dispatch(
    attemptInit: RequestInit,
    signal: AbortSignal,
    context: AttemptContext,
  ): Promise<Response> {
    const resendCount = this.sends++;
    let send: object | undefined;
    if (fetchChannel.hasSubscribers) {
      send = {};
      fetchChannel.publish(
        this.message('request', send, context, resendCount, undefined, undefined),
      );
    }
    let link: CallerLink | undefined;
    const callerSignal = this.callerSignal;
    if (callerSignal !== undefined) {
      const linked = linkSignals(callerSignal, signal);
      attemptInit.signal = linked.signal;
      link = linked.link;
    }
    const spare = this.spare;
    let sent: Promise<Response>;
    try {
      sent = this.fetchImpl(spare === undefined ? this.input : spare.clone(), attemptInit);
    } catch (error) {
      // A fetch that throws instead of rejecting is judged as if it rejected.
      sent = Promise.reject(error);
    }
    return sent.then(
      send === undefined && link === undefined
        ? undefined
        : (response) => this.sent(response, link, send, context, resendCount),
      (error: unknown) => this.sendFailed(error, attemptInit, link, send, context, resendCount),
    ) as Promise<Response>;
  }

  /** A send answered: said to the listeners, and its link kept with its response. */
  private sent(
    response: Response,
    link: CallerLink | undefined,
    send: object | undefined,
    context: AttemptContext,
    resendCount: number,
  ): Response {
    if (send !== undefined && fetchChannel.hasSubscribers) {
      fetchChannel.publish(
        this.message('response', send, context, resendCount, response.status, undefined),
      );
    }
    if (link !== undefined) {
      this.links?.set(response, link);
      responseLinks?.register(response, link, link);
    }
    return response;
  }

  /** A send failed: its link let go, a browser's network TypeError recorded, then rethrown. */
  private sendFailed(
    error: unknown,
    attemptInit: RequestInit,
    link: CallerLink | undefined,
    send: object | undefined,
    context: AttemptContext,
    resendCount: number,
  ): never {
    link?.release();
    // A browser's (or Deno's) TypeError for a failed connection: recorded, so it is judged a
    // network error (a TypeError for a bad argument is not: see network-error.ts).
    if (isFetchNetworkError(error, this.url, this.method, attemptInit.headers)) {
      this.settings.networkErrors.add(error as object);
    }
    if (send !== undefined && fetchChannel.hasSubscribers) {
      fetchChannel.publish(this.message('error', send, context, resendCount, undefined, error));
    }
    throw error;
  }

  /**
   * Whether a failed send may go again inside its attempt: the request was lost to the keep-alive
   * race (keep-alive-race.ts), none was re-sent yet in this call, and nothing has stopped the
   * call since: not the deadline or attempt timeout, not the caller's abort, not the breaker.
   */
  private mayResend(error: unknown, signal: AbortSignal): boolean {
    const breaker = this.options.breaker;
    return (
      this.resendable &&
      this.transparentRetries === 0 &&
      !signal.aborted &&
      this.callerSignal?.aborted !== true &&
      (breaker === undefined || breaker.state === 'closed') &&
      isLostToKeepAliveRace(error)
    );
  }

  isFailure(response: Response): boolean {
    return response.status >= 400;
  }

  /** A response the call will not return: let go, its body cancelled. */
  discard(response: Response): void {
    const held = this.held;
    const at = held.indexOf(response);
    if (at >= 0) held.splice(at, 1);
    this.dropLink(response);
    cancelBody(response);
  }

  /**
   * A hedge of a keyed request told 409 met its own first copy in progress: that says nothing of
   * the request, so another copy's failure decides the attempt.
   */
  isCopyConflict(failure: unknown): boolean {
    return (
      this.isKeyed &&
      typeof failure === 'object' &&
      failure !== null &&
      (failure as { status?: unknown }).status === 409
    );
  }

  private dropLink(response: Response): void {
    const links = this.links;
    if (links === undefined) return;
    links.get(response)?.release();
    links.delete(response);
  }

  /** The hooks the caller gave, told of fetch events: no Response, ever. */
  private addHooks({ onRetry, onGiveUp, onSuccess }: Settings['hooks']): void {
    const options = this.options;
    let about: { method: string; url: string } | undefined;
    const describe = () => {
      about ??= { method: this.method, url: redactUrl(String(this.url)) };
      return about;
    };
    if (onRetry !== undefined) {
      options.onRetry = (event) =>
        onRetry(fetchEvent(event, this.held.at(-1), describe(), this.transparentRetries));
    }
    if (onGiveUp !== undefined) {
      options.onGiveUp = (event) =>
        onGiveUp(fetchEvent(event, this.held.at(-1), describe(), this.transparentRetries));
    }
    if (onSuccess !== undefined) {
      // The hook's result is returned: the engine catches a rejected promise from an async hook.
      options.onSuccess = (event) => {
        const latest = this.held.at(-1);
        return onSuccess({
          ...event,
          ...describe(),
          ...(latest === undefined ? {} : { status: latest.status }),
          ...transparent(this.transparentRetries),
        });
      };
    }
  }

  /** What `stormproof:fetch` says of one send (only built while someone listens). */
  private message(
    type: FetchMessage['type'],
    send: object,
    context: AttemptContext,
    resendCount: number,
    status: number | undefined,
    error: unknown,
  ): FetchMessage {
    const url = String(this.url);
    let host = '';
    try {
      host = new URL(url).host;
    } catch {
      // A relative URL (a browser's): no host to report.
    }
    return {
      type,
      send,
      call: undefined,
      attempt: context.attempt,
      hedge: context.hedge ?? 0,
      resendCount,
      method: this.method,
      url: redactUrl(url),
      host,
      status,
      error,
      atMs: this.settings.policy.clock.now(),
    };
  }
}

/**
 * Carries the caller's abort to one attempt's fetch, also after the call returned its response,
 * so that aborting still stops the body being read, as with plain fetch. It listens through the
 * engine's one listener per caller signal (a long-lived signal shared by every call gains no
 * listener per call), holds the attempt's controller weakly, and lets go when the response is
 * discarded, when the attempt failed, or when the response is garbage-collected.
 */
class CallerLink implements AbortWatcher {
  private readonly target: WeakRef<AbortController> | AbortController;
  private linked = true;

  constructor(
    controller: AbortController,
    private readonly caller: AbortSignal,
  ) {
    this.target = typeof WeakRef === 'function' ? new WeakRef(controller) : controller;
    watchAbort(caller, this);
  }

  onAbort(reason: unknown): void {
    const target = this.target;
    (target instanceof AbortController ? target : target.deref())?.abort(reason);
  }

  release(): void {
    if (!this.linked) return;
    this.linked = false;
    unwatchAbort(this.caller, this);
    responseLinks?.unregister(this);
  }
}

/** Releases a returned response's link to the caller's signal once nobody holds the response. */
const responseLinks =
  typeof FinalizationRegistry === 'function'
    ? new FinalizationRegistry<CallerLink>((link) => link.release())
    : undefined;

/** The signal for one attempt's fetch: the engine's, joined with the caller's by a `CallerLink`. */
function linkSignals(
  caller: AbortSignal,
  engine: AbortSignal,
): { signal: AbortSignal; link: CallerLink } {
  const controller = new AbortController();
  if (engine.aborted) controller.abort(engine.reason);
  else engine.addEventListener('abort', () => controller.abort(engine.reason), { once: true });
  return { signal: controller.signal, link: new CallerLink(controller, caller) };
}

/** `transparentRetries` for an event or a report: present only when the call made one. */
function transparent(count: number): TransparentRetries {
  return count === 0 ? {} : { transparentRetries: count };
}

/** Builds the event a fetch hook receives from the engine's: no Response, ever. */
function fetchEvent<E extends { readonly error: unknown }>(
  event: E,
  response: Response | undefined,
  about: { readonly method: string; readonly url: string },
  transparentRetries: number,
): Omit<E, 'error'> & FetchEventContext & TransparentRetries & { readonly error?: unknown } {
  const { error, ...rest } = event;
  if (response !== undefined && error === response) {
    return { ...rest, ...about, status: response.status, ...transparent(transparentRetries) };
  }
  return { ...rest, ...about, error, ...transparent(transparentRetries) };
}

/** Adds the call's transparent retries to the engine's report of a failed call, if it has one. */
function addTransparentRetries(responseOrError: unknown, count: number): void {
  const report = getReport(responseOrError);
  if (report === undefined) return;
  const amended: FetchRetryReport = { ...report, transparentRetries: count };
  setReport(responseOrError, amended);
}
