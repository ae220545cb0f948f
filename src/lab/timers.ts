// Timers a lab part owns, so that stopping it clears every one: nothing is left to fire after
// its servers are closed.

/** The lab's clock: milliseconds since the epoch, with sub-millisecond precision, shared by threads. */
export function epochMs(): number {
  return performance.timeOrigin + performance.now();
}

/** A set of timers cleared together. */
export class TimerSet {
  readonly #pending = new Set<ReturnType<typeof setTimeout>>();
  #stopped = false;

  /** Runs `fn` after `ms`, unless the set is cleared first. */
  after(ms: number, fn: () => void): void {
    if (this.#stopped) return;
    const handle = setTimeout(() => {
      this.#pending.delete(handle);
      fn();
    }, ms);
    this.#pending.add(handle);
  }

  /** A promise that resolves after `ms`; never resolves once the set is cleared. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.after(ms, resolve));
  }

  /** Clears every pending timer; later `after` calls do nothing. */
  clear(): void {
    this.#stopped = true;
    for (const handle of this.#pending) clearTimeout(handle);
    this.#pending.clear();
  }
}
