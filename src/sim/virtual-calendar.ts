// Virtual wall time for many timers at once: a heap of pending sleeps, fired in time order, with
// the waiting code let run between two instants, so each wakes at exactly its own time.
import type { Clock } from '../core/clock.js';

interface Sleeper {
  readonly at: number;
  readonly seq: number;
  readonly wake: () => void;
  readonly stop: (reason: unknown) => void;
}

// Enough microtask turns for a woken timer loop to run its task and sleep again.
const TURNS = 8;

/** A clock whose time moves only in {@link VirtualCalendar.runUntil}; `now` is wall time. */
export class VirtualCalendar implements Clock {
  #t: number;
  #seq = 0;
  readonly #heap: Sleeper[] = [];

  constructor(startMs: number) {
    this.#t = startMs;
  }

  now = (): number => this.#t;

  /**
   * Sleeps in virtual time. A model stops its timers with {@link close} rather than a signal:
   * Node's AbortSignal listeners cost about 15 us each, which is most of a model's time.
   */
  sleep = (ms: number, signal?: AbortSignal): Promise<void> => {
    if (signal !== undefined) throw new TypeError('VirtualCalendar: use close(), not a signal');
    return new Promise((wake, stop) => {
      this.#push({ at: this.#t + Math.max(0, ms), seq: this.#seq++, wake, stop });
    });
  };

  /** Ends every pending sleep with `reason`: timers sleeping on this calendar stop. */
  close(reason: unknown): void {
    for (const sleeper of this.#heap.splice(0)) sleeper.stop(reason);
  }

  /** Fires every sleep due up to `endMs`, in order, then leaves time at `endMs`. */
  async runUntil(endMs: number): Promise<void> {
    const heap = this.#heap;
    while (heap.length > 0 && heap[0]!.at <= endMs) {
      this.#t = heap[0]!.at;
      while (heap.length > 0 && heap[0]!.at === this.#t) this.#pop().wake();
      for (let i = 0; i < TURNS; i++) await Promise.resolve();
    }
    this.#t = endMs;
  }

  #before(a: Sleeper, b: Sleeper): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }

  #push(s: Sleeper): void {
    const heap = this.#heap;
    let i = heap.length;
    heap.push(s);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#before(s, heap[parent]!)) break;
      heap[i] = heap[parent]!;
      i = parent;
    }
    heap[i] = s;
  }

  #pop(): Sleeper {
    const heap = this.#heap;
    const top = heap[0]!;
    const last = heap.pop()!;
    const n = heap.length;
    if (n > 0) {
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        if (left >= n) break;
        const right = left + 1;
        const child = right < n && this.#before(heap[right]!, heap[left]!) ? right : left;
        if (!this.#before(heap[child]!, last)) break;
        heap[i] = heap[child]!;
        i = child;
      }
      heap[i] = last;
    }
    return top;
  }
}
