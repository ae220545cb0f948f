// What an attempt (or one copy of it) hands its operation as `signal`: an AbortSignal made only
// when the operation reads it (most never do, and an AbortController costs more than a whole
// successful call), aborted when the attempt is ended from outside, before or after that read.

/** A signal made on first read, aborted by `end`. */
export class LazyAbort {
  // One field, so that an attempt's record stays small: an attempt ended before its signal was
  // read (rare: a deadline, a timeout, an abort) makes the controller then, already aborted.
  private controller: AbortController | undefined = undefined;

  get signal(): AbortSignal {
    let controller = this.controller;
    if (controller === undefined) {
      controller = new AbortController();
      this.controller = controller;
    }
    return controller.signal;
  }

  /** Ends it from outside: its signal aborts with `reason` (once). */
  end(reason: unknown): void {
    let controller = this.controller;
    if (controller === undefined) {
      controller = new AbortController();
      this.controller = controller;
    } else if (controller.signal.aborted) return;
    controller.abort(reason);
  }
}
