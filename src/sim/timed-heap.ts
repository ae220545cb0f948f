// A min-heap of timed entries for the models' calendars: earliest `at` first, and entries due at
// the same time in the order they were pushed (`seq`), so a seeded run repeats bit for bit.

/** An entry of a {@link TimedHeap}: when it is due, and its place in the order of pushes. */
export interface Timed {
  readonly at: number;
  readonly seq: number;
}

function before(a: Timed, b: Timed): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

/** Binary min-heap ordered by `at`, then `seq`. */
export class TimedHeap<E extends Timed> {
  readonly #heap: E[] = [];

  get size(): number {
    return this.#heap.length;
  }

  /** The earliest entry, without removing it; undefined when empty. */
  peek(): E | undefined {
    return this.#heap[0];
  }

  push(entry: E): void {
    const heap = this.#heap;
    let i = heap.length;
    heap.push(entry);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(entry, heap[parent]!)) break;
      heap[i] = heap[parent]!;
      i = parent;
    }
    heap[i] = entry;
  }

  /** Removes and returns the earliest entry. Only call when not empty. */
  pop(): E {
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
        const child = right < n && before(heap[right]!, heap[left]!) ? right : left;
        if (!before(heap[child]!, last)) break;
        heap[i] = heap[child]!;
        i = child;
      }
      heap[i] = last;
    }
    return top;
  }

  /** Removes every entry and returns them, in no particular order. */
  drain(): E[] {
    return this.#heap.splice(0);
  }
}
