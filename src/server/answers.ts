// The two answers a server gives a request it does not admit: "come back later", with a wait
// spread so the rejected do not return together (pushback.ts picks it), or "overloaded, do not
// retry" while the whole service is overloaded. Also counts every rejection by its reason.
import { OVERLOADED_HEADER } from '../core/classify.js';
import { channels } from '../core/instrument.js';
import type { Pushback } from './pushback.js';
import { PUSHBACK_HEADER } from './request-info.js';

/**
 * Why a request was not admitted.
 *
 * - `'limit'`: the concurrency limit was reached and there is no queue.
 * - `'queue-full'`: the queue was full, or the request was pushed out by a more important one.
 * - `'queue-wait'`: the queue's predicted wait (its length over the rate it drains at) was already
 *   past what a request may wait there: rejected on arrival rather than after waiting.
 * - `'queue-timeout'`: it waited in the queue past its time (CoDel).
 * - `'abandoned'`: its caller went away while it waited.
 * - `'ramp'`: the server is reopening in steps and the step's share of the limit was running.
 * - `'throttle'`: gateway mode: the downstream is failing and this request was rejected here.
 */
export type ShedReason =
  | 'limit'
  | 'queue-full'
  | 'queue-wait'
  | 'queue-timeout'
  | 'abandoned'
  | 'ramp'
  | 'throttle';

export const SHED_REASONS: readonly ShedReason[] = [
  'limit',
  'queue-full',
  'queue-wait',
  'queue-timeout',
  'abandoned',
  'ramp',
  'throttle',
];

/** The two answers: come back later (with a wait), or overloaded, do not retry. */
export type AnswerKind = 'come-back-later' | 'do-not-retry';

/** A rejection, ready to send: a status, headers, no body to parse. */
export interface Rejection {
  readonly admitted: false;
  readonly reason: ShedReason;
  readonly kind: AnswerKind;
  readonly status: number;
  /** Lower-case header names and values. */
  readonly headers: ReadonlyArray<[string, string]>;
  /** The wait handed out, in ms, for `come-back-later`. */
  readonly waitMs?: number;
}

/** One rejection, as an event (no request data: nothing to redact). */
export interface ShedEvent {
  readonly reason: ShedReason;
  readonly kind: AnswerKind;
  readonly retry: boolean;
  readonly waitMs?: number;
}

/** What the answers need, filled by the options. */
export interface AnswerSettings {
  readonly status: 503 | 429;
  readonly doNotRetryStatus: 503 | 429;
  /** Whether the wait is spread (every mode but `fixed`): then a stormproof client obeys it exactly. */
  readonly spread: boolean;
  readonly serviceOverloaded: (() => boolean) | undefined;
  readonly onShed: ((event: ShedEvent) => void) | undefined;
}

const serverChannel = channels.server;

const DO_NOT_RETRY_HEADERS: ReadonlyArray<[string, string]> = [[OVERLOADED_HEADER, '1']];

/** Builds each rejection and counts it. */
export class Answers {
  /** The engine these answers are for: named in `stormproof:server` messages. */
  owner: object = this;
  /** Rejections so far, by reason. */
  readonly shed = Object.fromEntries(SHED_REASONS.map((r) => [r, 0])) as Record<ShedReason, number>;

  constructor(
    private readonly settings: AnswerSettings,
    private readonly pushback: Pushback,
  ) {}

  /** Come back later, with a wait; "do not retry" instead while the service is overloaded. */
  comeBackLater(reason: ShedReason, retry: boolean, nowMs: number): Rejection {
    this.shed[reason]++;
    const { settings } = this;
    if (settings.serviceOverloaded?.() === true) return this.answerDoNotRetry(reason, retry);
    const waitMs = Math.ceil(this.pushback.next(nowMs));
    const headers: Array<[string, string]> = [
      ['retry-after', String(Math.ceil(waitMs / 1000))],
      ['retry-after-ms', String(waitMs)],
    ];
    if (settings.spread) headers.push([PUSHBACK_HEADER, String(waitMs)]);
    settings.onShed?.({ reason, kind: 'come-back-later', retry, waitMs });
    if (serverChannel.hasSubscribers) {
      serverChannel.publish({
        type: 'shed',
        shedder: this.owner,
        reason,
        kind: 'come-back-later',
        retry,
        waitMs,
      });
    }
    return {
      admitted: false,
      reason,
      kind: 'come-back-later',
      status: settings.status,
      headers,
      waitMs,
    };
  }

  /** Overloaded, do not retry. */
  doNotRetry(reason: ShedReason, retry: boolean): Rejection {
    this.shed[reason]++;
    return this.answerDoNotRetry(reason, retry);
  }

  private answerDoNotRetry(reason: ShedReason, retry: boolean): Rejection {
    this.settings.onShed?.({ reason, kind: 'do-not-retry', retry });
    if (serverChannel.hasSubscribers) {
      serverChannel.publish({
        type: 'shed',
        shedder: this.owner,
        reason,
        kind: 'do-not-retry',
        retry,
        waitMs: undefined,
      });
    }
    return {
      admitted: false,
      reason,
      kind: 'do-not-retry',
      status: this.settings.doNotRetryStatus,
      headers: DO_NOT_RETRY_HEADERS,
    };
  }
}
