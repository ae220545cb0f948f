// What an attempt (or one copy of it) hands its operation as `signal`: an AbortSignal made only
// when the operation reads it (most never do, and an AbortController costs more than a whole
// successful call), aborted when the attempt is ended from outside, before or after that read.
import type { AttemptContext } from './options.js';

/** A running attempt as the engine sees it: what its operation is given, and how it is ended. */
export interface Attempt extends AttemptContext {
  /** Ends it from outside: its signal aborts with `reason` (once). */
  end(reason: unknown): void;
  /** The reactions to the attempt's promise. */
  returned(value: unknown): void;
  threw(error: unknown): void;
}

/** What runs an attempt, told how the attempt's promise settled. */
export interface AttemptOwner {
  attemptReturned(attempt: Attempt, value: unknown): void;
  attemptFailed(attempt: Attempt, error: unknown): void;
}

/**
 * An attempt's signal, in `holder.controller`: made on first read, or already aborted when the
 * attempt was ended before that read.
 */
export function signalOf(holder: { controller: AbortController | undefined }): AbortSignal {
  let controller = holder.controller;
  if (controller === undefined) {
    controller = new AbortController();
    holder.controller = controller;
  }
  return controller.signal;
}

/** Aborts `holder`'s signal with `reason`, once, making it first when it was never read. */
export function endSignal(holder: { controller: AbortController | undefined }, reason: unknown) {
  let controller = holder.controller;
  if (controller === undefined) {
    controller = new AbortController();
    holder.controller = controller;
  } else if (controller.signal.aborted) return;
  controller.abort(reason);
}

/**
 * One attempt as the operation sees it: its number and its signal (made on first read). The
 * signal aborts when the attempt is ended from outside: the caller's abort, its timeout, the
 * call's deadline. Read after the attempt ended that way, it is already aborted.
 *
 * The engine makes one per attempt as this class itself, not a subclass: V8 builds it inline,
 * where the `super()` call of a subclass was an out-of-line construct, 8% of a successful call.
 */
export class AttemptScope implements Attempt {
  // One field for the signal, so that an attempt's record stays small: an attempt ended before
  // its signal was read (rare: a deadline, a timeout, an abort) makes the controller then,
  // already aborted.
  controller: AbortController | undefined = undefined;
  readonly attempt: number;
  /** Who is told how the attempt's promise settled, through `returned` and `threw`. */
  private readonly owner: AttemptOwner | undefined;

  constructor(attempt: number, owner?: AttemptOwner) {
    this.attempt = attempt;
    this.owner = owner;
  }

  /** The attempt's promise resolved with `value`: bound to the scope as a promise reaction. */
  returned(value: unknown): void {
    this.owner!.attemptReturned(this, value);
  }

  /** The attempt's promise rejected with `error`: bound to the scope as a promise reaction. */
  threw(error: unknown): void {
    this.owner!.attemptFailed(this, error);
  }

  get signal(): AbortSignal {
    return signalOf(this);
  }

  end(reason: unknown): void {
    endSignal(this, reason);
  }
}
