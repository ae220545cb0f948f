// Virtual wall time for many timers at once: a heap of pending sleeps, fired in time order, with
// the waiting code let run between two instants, so each wakes at exactly its own time.
import type { Clock } from '../core/clock.js';
import { earliest, MinHeap, type Timed } from './min-heap.js';

interface Sleeper extends Timed {
  readonly wake: () => void;
  readonly stop: (reason: unknown) => void;
}

// Enough microtask turns for a woken timer loop to run its task and sleep again.
const TURNS = 8;

/** A clock whose time moves only in {@link VirtualCalendar.runUntil}; `now` is wall time. */
export class VirtualCalendar implements Clock {
  #t: number;
  #seq = 0;
  readonly #heap = new MinHeap<Sleeper>(earliest);

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
      this.#heap.push({ at: this.#t + Math.max(0, ms), seq: this.#seq++, wake, stop });
    });
  };

  /** Ends every pending sleep with `reason`: timers sleeping on this calendar stop. */
  close(reason: unknown): void {
    for (const sleeper of this.#heap.drain()) sleeper.stop(reason);
  }

  /** Fires every sleep due up to `endMs`, in order, then leaves time at `endMs`. */
  async runUntil(endMs: number): Promise<void> {
    const heap = this.#heap;
    while (heap.size > 0 && heap.peek()!.at <= endMs) {
      this.#t = heap.peek()!.at;
      while (heap.size > 0 && heap.peek()!.at === this.#t) heap.pop().wake();
      for (let i = 0; i < TURNS; i++) await Promise.resolve();
    }
    this.#t = endMs;
  }
}
