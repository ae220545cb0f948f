// What an attempt (or one copy of it) hands its operation as `signal`: an AbortSignal made only
// when the operation reads it (most never do, and an AbortController costs more than a whole
// successful call), aborted when the attempt is ended from outside, before or after that read.

/** A signal made on first read, aborted by `end`. */
export class LazyAbort {
  private controller: AbortController | undefined;
  private ended = false;
  private endReason: unknown;

  get signal(): AbortSignal {
    let controller = this.controller;
    if (controller === undefined) {
      controller = this.controller = new AbortController();
      if (this.ended) controller.abort(this.endReason);
    }
    return controller.signal;
  }

  /** Ends it from outside: its signal aborts with `reason` (once). */
  end(reason: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.endReason = reason;
    this.controller?.abort(reason);
  }
}
