// A binary min-heap of numbers: the herd models keep the slots that have pending calls in one,
// so that empty slots are skipped instead of scanned.

/** A binary min-heap of numbers. */
export class NumberHeap {
  readonly #heap: number[] = [];

  get size(): number {
    return this.#heap.length;
  }

  /** The smallest number. Only call when not empty. */
  peek(): number {
    return this.#heap[0]!;
  }

  push(value: number): void {
    const heap = this.#heap;
    let i = heap.length;
    heap.push(value);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const above = heap[parent]!;
      if (above <= value) break;
      heap[i] = above;
      i = parent;
    }
    heap[i] = value;
  }

  /** Removes and returns the smallest number. Only call when not empty. */
  pop(): number {
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
        const child = right < n && heap[right]! < heap[left]! ? right : left;
        if (heap[child]! >= last) break;
        heap[i] = heap[child]!;
        i = child;
      }
      heap[i] = last;
    }
    return top;
  }
}
