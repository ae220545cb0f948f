// Calls and failures over a sliding time window, in ten buckets (Polly samples the same way):
// the window slides a tenth at a time and costs a fixed amount of memory.

const BUCKETS = 10;

export class SlidingWindow {
  readonly #bucketMs: number;
  readonly #calls = new Array<number>(BUCKETS).fill(0);
  readonly #failures = new Array<number>(BUCKETS).fill(0);
  #current = 0; // the number of the current bucket since time 0
  calls = 0;
  failures = 0;

  constructor(windowMs: number) {
    this.#bucketMs = windowMs / BUCKETS;
  }

  /** Counts one outcome at monotonic time `now`. */
  add(now: number, failed: boolean): void {
    this.#slide(now);
    const i = this.#current % BUCKETS;
    this.#calls[i]!++;
    this.calls++;
    if (failed) {
      this.#failures[i]!++;
      this.failures++;
    }
  }

  clear(): void {
    this.#calls.fill(0);
    this.#failures.fill(0);
    this.calls = 0;
    this.failures = 0;
  }

  /** Drops the buckets that have slid out of the window by `now`. */
  #slide(now: number): void {
    const bucket = Math.floor(now / this.#bucketMs);
    const gone = Math.min(bucket - this.#current, BUCKETS);
    for (let k = 1; k <= gone; k++) {
      const i = (this.#current + k) % BUCKETS;
      this.calls -= this.#calls[i]!;
      this.failures -= this.#failures[i]!;
      this.#calls[i] = 0;
      this.#failures[i] = 0;
    }
    if (bucket > this.#current) this.#current = bucket;
  }
}
