// A binary min-heap ordered by a `before` function given once. The models' calendars keep their
// timed entries in one; the herd models keep the slots that have pending calls in one, so that
// empty slots are skipped instead of scanned.

/** A binary min-heap: `pop` returns the entry that comes `before` every other. */
export class MinHeap<T> {
  readonly #heap: T[] = [];
  readonly #before: (a: T, b: T) => boolean;

  constructor(before: (a: T, b: T) => boolean) {
    this.#before = before;
  }

  get size(): number {
    return this.#heap.length;
  }

  /** The first entry, without removing it; undefined when empty. */
  peek(): T | undefined {
    return this.#heap[0];
  }

  push(entry: T): void {
    const heap = this.#heap;
    const before = this.#before;
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

  /** Removes and returns the first entry. Only call when not empty. */
  pop(): T {
    const heap = this.#heap;
    const before = this.#before;
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
  drain(): T[] {
    return this.#heap.splice(0);
  }
}

/** Smaller numbers first. */
export const ascending = (a: number, b: number): boolean => a < b;

/** An entry of a calendar: when it is due, and its place in the order of pushes. */
export interface Timed {
  readonly at: number;
  readonly seq: number;
}

/**
 * Earliest `at` first, and entries due at the same time in the order they were pushed (`seq`),
 * so a seeded run repeats bit for bit.
 */
export const earliest = (a: Timed, b: Timed): boolean =>
  a.at < b.at || (a.at === b.at && a.seq < b.seq);
