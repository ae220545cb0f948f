// How the interceptor judges an attempt: undici's own errors the engine's classifier does not
// read, the shared HTTP rules before the user's shouldRetry, a streamed body that cannot be sent
// again, and which responses are failures.
import type { Verdict } from '../core/classify.js';
import type { ResolvedPolicy, RetryAnswer, RetryDecisionContext } from '../core/options.js';
import type { ResultCheck } from '../core/retry.js';
import { applyAnswer } from '../core/step.js';
import { isThenable } from '../core/validate.js';
import { isKeyConflict } from '../http/checks.js';
import { Attempt } from './attempt.js';
import type { Exchange } from './exchange.js';

/**
 * HTTP/2 stream resets that undici passes on as Node's own error (`ERR_HTTP2_STREAM_ERROR`,
 * "Stream closed with error code NGHTTP2_..."), with how each is retried (RFC 9113 section 7):
 * REFUSED_STREAM says the request was not processed and "can be safely retried" (section 8.7);
 * CANCEL, INTERNAL_ERROR and STREAM_CLOSED end a stream as a reset connection ends a request;
 * ENHANCE_YOUR_CALM says the peer sees too much load, so it is retried as a 429 is, more slowly.
 * The other codes (PROTOCOL_ERROR, FLOW_CONTROL_ERROR, ...) are bugs a retry would repeat.
 */
const H2_RESETS: ReadonlyMap<string, Verdict> = new Map<string, Verdict>([
  ['NGHTTP2_REFUSED_STREAM', { retryable: true, kind: 'network' }],
  ['NGHTTP2_CANCEL', { retryable: true, kind: 'network' }],
  ['NGHTTP2_INTERNAL_ERROR', { retryable: true, kind: 'network' }],
  ['NGHTTP2_STREAM_CLOSED', { retryable: true, kind: 'network' }],
  ['NGHTTP2_ENHANCE_YOUR_CALM', { retryable: true, kind: 'throttled' }],
]);

/**
 * What undici's own errors say that the engine's classifier does not read (undici#5087: its
 * RetryAgent's code list misses them too). undici's `InformationalError` (`UND_ERR_INFO`) says a
 * connection or an HTTP/2 stream ended before the answer: `socket idle timeout`, `reset`,
 * `HTTP/2: "stream timeout after ..."`, `HTTP/2: stream closed before the response was
 * complete`: a dropped connection, or a timeout when it says so; the DNS interceptor's `No DNS
 * entries found` stays final, as ENOTFOUND is. An HTTP/2 reset (`ERR_HTTP2_STREAM_ERROR`) is
 * judged by its code (H2_RESETS).
 */
export function undiciVerdict(error: unknown): Verdict | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (typeof message !== 'string') return undefined;
  if (code === 'ERR_HTTP2_STREAM_ERROR') {
    return H2_RESETS.get(/NGHTTP2_[A-Z_]+/.exec(message)?.[0] ?? '');
  }
  if (code !== 'UND_ERR_INFO') return undefined;
  if (message === 'No DNS entries found') return undefined;
  return /timeout/i.test(message)
    ? { retryable: true, kind: 'timeout' }
    : { retryable: true, kind: 'network' };
}

export type Judge = (context: RetryDecisionContext) => Verdict | PromiseLike<Verdict>;

/** The shouldRetry of every request: the shared HTTP rules, then the user's answer. */
export function makeShouldRetry(
  keyed: WeakSet<object>,
  user: ResolvedPolicy['shouldRetry'],
): Judge {
  return (given) => {
    if (isKeyConflict(given, keyed)) return { ...given.verdict, retryable: false };
    const info = given.verdict.kind === 'permanent' ? undiciVerdict(given.error) : undefined;
    const context = info === undefined ? given : { ...given, verdict: info };
    if (user === undefined) return context.verdict;
    const answer = user(context);
    return isThenable(answer)
      ? Promise.resolve(answer).then((a: RetryAnswer) => applyAnswer(context.verdict, a))
      : applyAnswer(context.verdict, answer);
  };
}

/**
 * The shouldRetry of a request whose streamed body was recorded: whatever the rules answer, a
 * retry is refused when the copy is not whole (the stream was longer than the limit, or the
 * failed attempt had not sent it all), and the request ends with 'body-not-replayable'.
 */
export function guardBody(judge: Judge, exchange: Exchange): Judge {
  const check = (verdict: Verdict): Verdict => {
    if (!verdict.retryable || exchange.body.replayable) return verdict;
    exchange.bodyRefused = true;
    return { ...verdict, retryable: false };
  };
  return (context) => {
    const verdict = judge(context);
    return isThenable(verdict) ? Promise.resolve(verdict).then(check) : check(verdict);
  };
}

export const isFailure = (attempt: Attempt): boolean => attempt.status >= 400;

/** How the engine judges an interceptor's attempts; `keyed` holds the keyed requests' responses. */
export function attemptCheck(keyed: WeakSet<object>): ResultCheck<Attempt> {
  return {
    isFailure,
    discard: (attempt) => attempt.discard(),
    // A hedge of a keyed request told 409 met its own first copy in progress: that says nothing
    // of the request, so another copy's failure decides the attempt.
    isCopyConflict: (failure) =>
      failure instanceof Attempt && failure.status === 409 && keyed.has(failure),
  };
}
