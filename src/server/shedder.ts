// The server engine: admits, queues or rejects each request from its headers alone, and answers
// every rejection with one of two distinct answers. Runtime-agnostic: time and randomness are
// injected, the adapters (web, node, gRPC) only translate requests and responses. This file
// assembles the parts, each in its own file: the options (options.ts), the concurrency limit
// (limits.ts), the queue (queue.ts), the shares and criticality (shares.ts), the answers and
// their Retry-After (answers.ts, pushback.ts), the ramp (ramp.ts) and the gateway throttle
// (throttle.ts).
import { channels } from '../core/instrument.js';
import { Answers, type Rejection, type ShedReason } from './answers.js';
import { resolveShedderOptions, type ShedderOptions } from './options.js';
import { createPushback } from './pushback.js';
import { type CallerState, CodelQueue, type Waiter } from './queue.js';
import { Ramp } from './ramp.js';
import { type HeaderReader, isRetry } from './request-info.js';
import { RANKS, Shares } from './shares.js';
import { AdaptiveThrottle, saysDoNotRetry } from './throttle.js';

/** An admitted request. Call `finish` exactly once when its answer is sent (more calls are ignored). */
export interface Ticket {
  readonly admitted: true;
  /** Whether the request was a retry. */
  readonly retry: boolean;
  /**
   * The request is done. `status` is the status sent (undefined when the handler threw);
   * `header` reads the response's headers. Returns true in gateway mode when the downstream said
   * "do not retry": the adapter then marks the answer upward the same way.
   */
  finish(status: number | undefined, header?: HeaderReader): boolean;
}

export type Admission = Ticket | Rejection;

/** A snapshot of the server's state and counters since it was made. */
export interface ShedderStats {
  readonly inflight: number;
  readonly limit: number;
  readonly queued: number;
  readonly admitted: number;
  readonly shed: Readonly<Record<ShedReason, number>>;
  /** Exponential average of the time admitted requests spent queued, in ms. */
  readonly queueDelayMs: number;
  /**
   * Whether the queue is overloaded (LIFO, short waits): it was not empty for a whole interval,
   * and in the last interval a request waited past the target.
   */
  readonly overloaded: boolean;
  /** Completions per second: an exponential average over 100 ms windows (undefined at first). */
  readonly drainPerSecond: number | undefined;
  /**
   * The share of the limit the ramp lets run at once, and its step (-1 at the floor, `steps.length`
   * when open, undefined when the ramp is off).
   */
  readonly rampShare: number;
  readonly rampStep: number | undefined;
  /** Gateway mode: the probability of rejecting locally now. */
  readonly throttleProbability: number;
}

/** The server engine. Make one per server (or per route group) and share it. */
export interface Shedder {
  /**
   * Decides on one request from its headers: admitted now (a ticket), rejected now, or a promise
   * when it waits in the queue. `caller.aborted` (an `AbortSignal` will do) turns true when the
   * caller goes away: a queued request whose caller left is not run.
   */
  admit(header: HeaderReader, caller?: CallerState): Admission | Promise<Admission>;
  /**
   * `admit` without a promise, for callers that run on virtual time and cannot wait for promise
   * callbacks (the storm simulator): returns the admission when it is decided at once, or
   * undefined when the request waits in the queue; `settle` is then called with its admission
   * when the queue decides (from inside the engine, when a request finishes or the queue's timer
   * fires), exactly once.
   */
  admitOrQueue(
    header: HeaderReader,
    settle: (admission: Admission) => void,
    caller?: CallerState,
  ): Admission | undefined;
  /** Whether gateway mode is on. */
  readonly gateway: boolean;
  /** Starts reopening in steps from the first step (say, a dependency is healthy again). */
  reopen(): void;
  /** A snapshot of state and counters. */
  stats(): ShedderStats;
  /** Rejects everything still queued and stops the queue's timer (on server shutdown). */
  close(): void;
}

/**
 * Makes the server engine. Options are checked and filled once, here.
 *
 * @example
 * ```ts
 * const shedder = createShedder({ limit: { kind: 'gradient2' }, status: 429 });
 * const admission = await shedder.admit((name) => request.headers.get(name));
 * if (!admission.admitted) return new Response(null, { status: admission.status, headers: admission.headers });
 * ```
 */
export function createShedder(options?: ShedderOptions): Shedder {
  const settings = resolveShedderOptions(options);
  const { clock, random, limiter, onLimit } = settings;
  const pushback = createPushback(settings.retryAfter, random);
  const answers = new Answers(
    {
      status: settings.status,
      doNotRetryStatus: settings.doNotRetryStatus,
      spread: settings.retryAfter.mode !== 'fixed',
      serviceOverloaded: settings.serviceOverloaded,
      onShed: settings.onShed,
    },
    pushback,
  );
  const shares = new Shares(settings.shares);
  const queue =
    settings.queue === false
      ? undefined
      : new CodelQueue<Admission>(settings.queue, RANKS, clock, (waiter, nowMs) =>
          waiter.resolve(answers.comeBackLater('queue-timeout', waiter.retry, nowMs)),
        );
  const ramp =
    settings.ramp &&
    new Ramp(settings.ramp, (event) => {
      settings.onRamp?.(event);
      if (serverChannel.hasSubscribers) {
        serverChannel.publish({
          type: 'ramp',
          shedder,
          share: event.share,
          step: event.step,
          atMs: clock.now(),
        });
      }
    });
  const throttle = settings.gateway && new AdaptiveThrottle(settings.gateway);
  const drainPerMs = (nowMs: number): number | undefined => {
    const perSecond = pushback.drainPerSecond(nowMs);
    return perSecond === undefined ? undefined : perSecond / 1000;
  };
  /** While the ramp is not open: how many may run at once, its share of the limit (at least 1). */
  const rampCap = (): number =>
    ramp !== undefined && ramp.share < 1
      ? Math.max(1, ramp.share * limiter.current)
      : Number.POSITIVE_INFINITY;
  let admittedCount = 0;
  let queueDelayMs = 0;

  const ticket = (retry: boolean, startedAt: number, queuedMs = 0): Ticket => {
    // The throttle counts what goes downstream, not what this instance shed for itself.
    throttle?.request(startedAt);
    shares.start(retry);
    admittedCount++;
    const inflightAtStart = shares.inflight;
    if (serverChannel.hasSubscribers) {
      serverChannel.publish({
        type: 'admitted',
        shedder,
        retry,
        queuedMs,
        inflight: inflightAtStart,
        atMs: startedAt,
      });
    }
    let done = false;
    return {
      admitted: true,
      retry,
      finish(finalStatus, header) {
        if (done) return false;
        done = true;
        shares.end(retry);
        const nowMs = clock.now();
        const latencyMs = nowMs - startedAt;
        const downstreamSaysStop =
          throttle !== undefined && header !== undefined && saysDoNotRetry(header);
        const failed = finalStatus === undefined || finalStatus >= 500 || downstreamSaysStop;
        const dropped =
          finalStatus === undefined ||
          finalStatus === 429 ||
          finalStatus === 503 ||
          finalStatus === 504;
        const before = limiter.current;
        limiter.sample(nowMs, latencyMs, inflightAtStart, dropped);
        if (limiter.current !== before) {
          onLimit?.({ limit: limiter.current, previous: before });
          if (serverChannel.hasSubscribers) {
            serverChannel.publish({
              type: 'limit',
              shedder,
              limit: limiter.current,
              previous: before,
              atMs: nowMs,
            });
          }
        }
        if (serverChannel.hasSubscribers) {
          serverChannel.publish({
            type: 'finished',
            shedder,
            durationMs: latencyMs,
            status: finalStatus,
            inflight: shares.inflight,
            atMs: nowMs,
          });
        }
        pushback.completed(nowMs);
        queue?.demand?.completed();
        ramp?.record(nowMs, latencyMs, failed, startedAt);
        if (throttle && !failed) throttle.accept(nowMs);
        if (queue !== undefined && queue.length > 0) drain(queue, nowMs);
        return downstreamSaysStop;
      },
    };
  };

  /** Serves waiters while there is room under the limit. */
  const drain = (q: CodelQueue<Admission>, nowMs: number): void => {
    const retriesFirst = () => shares.retriesFirst(limiter.current);
    while (q.length > 0 && shares.inflight < Math.min(limiter.current, rampCap())) {
      const maxWait = q.maxWait(nowMs);
      const waiter = q.take(nowMs, retriesFirst)!;
      const delay = nowMs - waiter.enqueuedAt;
      if (waiter.caller?.aborted) {
        waiter.resolve(answers.comeBackLater('abandoned', waiter.retry, nowMs));
      } else if (delay > maxWait) {
        waiter.resolve(answers.comeBackLater('queue-timeout', waiter.retry, nowMs));
      } else {
        queueDelayMs += (delay - queueDelayMs) * 0.1;
        waiter.resolve(ticket(waiter.retry, nowMs, delay));
      }
    }
    q.schedule(nowMs);
  };

  /**
   * Decides on one request. When it must wait in the queue: with `settle`, queues it and returns
   * undefined (`settle` hears the decision); without, returns a promise of the decision.
   */
  function decide(
    header: HeaderReader,
    caller: CallerState | undefined,
    settle: ((admission: Admission) => void) | undefined,
  ): Admission | Promise<Admission> | undefined {
    const nowMs = clock.now();
    queue?.demand?.arrived();
    if (throttle) {
      const p = throttle.rejectProbability(nowMs);
      if (p > 0 && random() < p) {
        // Counted as a request that was not accepted, as the SRE book counts local rejections.
        throttle.request(nowMs);
        return answers.doNotRetry('throttle', isRetry(header));
      }
    }
    const retry = isRetry(header);
    // Reopening in steps caps how many run at once at the step's share of the limit: it holds
    // back a flood, and never refuses traffic that would not fill its share (clients that obey
    // their Retry-After, breakers probing, a quiet hour).
    if (shares.inflight >= rampCap()) {
      ramp?.refused();
      return answers.comeBackLater('ramp', retry, nowMs);
    }
    // The limit is a cap, whatever the mix: the shares only decide who waits in the queue goes
    // first (Netflix's partitions let a share under its guarantee run past the limit; a pool of
    // 32 then saw nearly twice that in a storm). A queue only holds requests while the limit is
    // full: every finish serves it before anything else.
    if (shares.inflight < limiter.current && (queue === undefined || queue.length === 0))
      return ticket(retry, nowMs);
    if (queue === undefined) return answers.comeBackLater('limit', retry, nowMs);
    const rank = shares.rank(shares.levelOf(header), retry);
    // Full, or full in time: a request that would wait past its time (or make the oldest do so)
    // is told at once, not after the wait. Either way a less important waiter makes room.
    const reason = queue.full
      ? 'queue-full'
      : queue.wouldOverrun(nowMs, drainPerMs(nowMs))
        ? 'queue-wait'
        : undefined;
    if (reason !== undefined) {
      const victim = queue.evictBelow(rank);
      if (victim === undefined) return answers.comeBackLater(reason, retry, nowMs);
      victim.resolve(answers.comeBackLater(reason, victim.retry, clock.now()));
    }
    const enqueue = (resolve: (admission: Admission) => void): void => {
      const waiter: Waiter<Admission> = { enqueuedAt: nowMs, retry, caller, resolve };
      queue.push(rank, waiter, nowMs);
      if (serverChannel.hasSubscribers) {
        serverChannel.publish({
          type: 'queued',
          shedder,
          retry,
          queued: queue.length,
          atMs: nowMs,
        });
      }
    };
    if (settle !== undefined) {
      enqueue(settle);
      return undefined;
    }
    return new Promise<Admission>(enqueue);
  }

  const shedder: Shedder = {
    gateway: throttle !== undefined,
    admit: (header, caller) => decide(header, caller, undefined) as Admission | Promise<Admission>,
    admitOrQueue: (header, settle, caller) =>
      decide(header, caller, settle) as Admission | undefined,
    reopen() {
      ramp?.reopen(clock.now());
    },
    stats() {
      const nowMs = clock.now();
      return {
        inflight: shares.inflight,
        limit: limiter.current,
        queued: queue?.length ?? 0,
        admitted: admittedCount,
        shed: { ...answers.shed },
        queueDelayMs,
        overloaded: queue?.isOverloaded(nowMs) ?? false,
        drainPerSecond: pushback.drainPerSecond(nowMs),
        rampShare: ramp?.share ?? 1,
        rampStep: ramp?.stepIndex,
        throttleProbability: throttle?.rejectProbability(nowMs) ?? 0,
      };
    },
    close() {
      if (queue === undefined) return;
      const nowMs = clock.now();
      for (const waiter of queue.clear())
        waiter.resolve(answers.comeBackLater('queue-full', waiter.retry, nowMs));
      queue.schedule(nowMs);
    },
  };
  answers.owner = shedder;
  return shedder;
}

const serverChannel = channels.server;
