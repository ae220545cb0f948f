// One dispatch of a request to the next dispatcher: one attempt. Its response head is held (a
// success paused, a failure's body read ahead) while the engine decides; then it is forwarded to
// the caller's handler through the request's controller, or drained so its connection is kept.
import type { Exchange } from './exchange.js';
import type { UndiciController, UndiciHandler } from './types.js';

/** How much of a retried response's body is read and dropped to keep its connection; past it, the connection is closed. */
const DRAIN_LIMIT = 65_536;

/** An attempt's response head and what came after it, held until the engine decides. */
export type AttemptState = 'waiting' | 'held' | 'forwarding' | 'draining' | 'dead';

/**
 * Checks the head of a range request that resumes a body (a status below 400): the error that
 * ends the body when it does not continue the same bytes, or undefined.
 */
export type HeadCheck = (
  status: number,
  headers: Record<string, string | string[] | undefined>,
) => Error | undefined;

/** One dispatch to the next dispatcher: one attempt. */
export class Attempt implements UndiciHandler {
  controller: UndiciController | undefined;
  state: AttemptState = 'waiting';
  status = 0;
  headers: Record<string, string | string[] | undefined> = {};
  statusMessage: string | undefined;
  private chunks: Uint8Array[] = [];
  private ended = false;
  private trailers: Record<string, string | string[] | undefined> = {};
  private error: Error | undefined;
  private drained = 0;
  private deadReason: unknown;

  constructor(
    private readonly exchange: Exchange,
    private readonly resolve: (attempt: Attempt) => void,
    private readonly reject: (error: unknown) => void,
    /** Set on a range request that resumes a body: its head is checked, never passed on. */
    private readonly checkHead?: HeadCheck,
  ) {}

  onRequestStart(controller: UndiciController): void {
    this.controller = controller;
    if (this.state === 'dead') controller.abort(asError(this.deadReason));
  }

  onResponseStart(
    controller: UndiciController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
    statusMessage?: string,
  ): void {
    this.controller = controller;
    if (this.state !== 'waiting') {
      if (this.state === 'dead') controller.abort(asError(this.deadReason));
      return;
    }
    if (statusCode < 200) {
      // An informational response (103 Early Hints): passed on as it comes; the final one
      // follows. Not once the caller has its final head (a resume).
      if (this.checkHead === undefined) {
        this.exchange.handler.onResponseStart?.(this.exchange, statusCode, headers, statusMessage);
      }
      return;
    }
    if (this.checkHead !== undefined && statusCode < 400) {
      const refusal = this.checkHead(statusCode, headers ?? {});
      if (refusal !== undefined) {
        // Not the rest of the same body: the resume ends here, and the body with this error.
        this.state = 'dead';
        this.deadReason = refusal;
        controller.abort(refusal);
        this.reject(refusal);
        return;
      }
    }
    this.status = statusCode;
    this.headers = headers ?? {};
    this.statusMessage = statusMessage;
    this.state = 'held';
    // A success is not read on until the engine decides that it is the one. A failed response's
    // body is read ahead (up to DRAIN_LIMIT bytes, failures are short) while the engine decides
    // and waits: its connection then goes back to undici's pool during the wait, unreferenced
    // when idle (so `unref: true` lets the process exit), and free for the retry.
    if (statusCode < 400) controller.pause();
    this.resolve(this);
  }

  onResponseData(controller: UndiciController, chunk: Uint8Array): void {
    switch (this.state) {
      case 'held':
        this.chunks.push(chunk);
        this.drained += chunk.byteLength;
        if (this.drained > DRAIN_LIMIT) controller.pause();
        return;
      case 'forwarding':
        this.exchange.forwardData(this, chunk);
        return;
      case 'draining':
        this.drained += chunk.byteLength;
        if (this.drained > DRAIN_LIMIT)
          controller.abort(new Error('stormproof: retried response dropped'));
        return;
      default:
        return;
    }
  }

  onResponseEnd(
    _controller: UndiciController,
    trailers: Record<string, string | string[] | undefined>,
  ): void {
    if (this.state === 'held') {
      this.ended = true;
      this.trailers = trailers ?? {};
    } else if (this.state === 'forwarding') {
      this.exchange.bodyEnded(this, trailers ?? {});
    }
  }

  onResponseError(_controller: UndiciController | undefined, error: Error): void {
    switch (this.state) {
      case 'waiting':
        this.state = 'dead';
        this.reject(error);
        return;
      case 'held':
        this.error = error;
        return;
      case 'forwarding':
        this.exchange.bodyFailed(this, error);
        return;
      default:
        return;
    }
  }

  /** The engine ended this attempt (its timeout, the deadline, the caller's abort). */
  kill(reason: unknown): void {
    if (this.state !== 'waiting') return;
    this.state = 'dead';
    this.deadReason = reason;
    this.controller?.abort(asError(reason));
    this.reject(reason);
  }

  /** Its body is no longer read: nothing more of it reaches the caller; `reason` closes it. */
  stop(reason?: Error): void {
    this.state = 'dead';
    if (reason !== undefined) this.controller?.abort(reason);
  }

  /** Not the response the caller gets: read and drop the rest of its body, or close it. */
  discard(): void {
    if (this.state !== 'held') return;
    this.state = 'draining';
    this.chunks = [];
    if (this.ended || this.error !== undefined) return;
    if (this.drained > DRAIN_LIMIT) {
      this.controller?.abort(new Error('stormproof: retried response dropped'));
    } else {
      this.controller?.resume();
    }
  }

  /** The response the caller gets: its head, what was held, then the rest as it comes. */
  forward(): void {
    const exchange = this.exchange;
    this.state = 'forwarding';
    exchange.target = this.controller;
    exchange.headForwarded(this);
    exchange.handler.onResponseStart?.(exchange, this.status, this.headers, this.statusMessage);
    this.pump();
  }

  /** A resume's 206: its body continues the one the caller is reading, without a second head. */
  continueBody(): void {
    this.state = 'forwarding';
    this.exchange.target = this.controller;
    this.pump();
  }

  /** Passes on what was held while the engine decided, then lets the rest flow. */
  private pump(): void {
    const exchange = this.exchange;
    const chunks = this.chunks;
    this.chunks = [];
    for (const chunk of chunks) {
      if (exchange.done || this.state !== 'forwarding') return;
      exchange.forwardData(this, chunk);
    }
    if (exchange.done || this.state !== 'forwarding') return;
    if (this.error !== undefined) {
      exchange.bodyFailed(this, this.error);
    } else if (this.ended) {
      exchange.bodyEnded(this, this.trailers);
    } else if (exchange.paused) {
      // A failed response read ahead was not paused; the caller's handler has asked to pause.
      this.controller?.pause();
    } else {
      this.controller?.resume();
    }
  }
}

export function asError(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error(String(reason));
}
