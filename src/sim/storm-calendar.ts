// The storm simulator's event calendar: a ring of one bucket per virtual millisecond, so that
// scheduling and taking an event cost O(1). Events due in the same millisecond run in the order
// they were scheduled, which (with one seeded generator) makes a run repeatable bit for bit.
import { earliest, MinHeap, type Timed } from './min-heap.js';

/** The events due in one millisecond: parallel arrays of items and integer codes. */
export interface CalendarBucket<T> {
  /** The event's subject (a request, an attempt, a server job). */
  readonly items: T[];
  /** What happens to it (the simulator packs an event kind and a small number here). */
  readonly codes: number[];
  /** How many events the bucket holds; grows while the bucket is being read. */
  size: number;
}

/** An event too far ahead for the ring, kept in a min-heap until its millisecond comes near. */
interface FarEvent<T> extends Timed {
  readonly item: T;
  readonly code: number;
}

/**
 * A calendar queue keyed by whole milliseconds of virtual time. The ring covers `2^horizonBits`
 * ms ahead of the current millisecond; later events wait in a heap and move into the ring when
 * their millisecond is taken.
 *
 * Usage: `schedule` events at or after the current millisecond; once per millisecond, `take` its
 * bucket, read `items[i]` and `codes[i]` for `i < bucket.size` (events scheduled for that same
 * millisecond while reading are appended and must be read too), then `clear` it.
 */
export class Calendar<T> {
  readonly #mask: number;
  readonly #horizon: number;
  readonly #buckets: CalendarBucket<T>[];
  readonly #far = new MinHeap<FarEvent<T>>(earliest);
  #seq = 0;
  #nowMs = 0;

  /** @param horizonBits The ring covers `2^horizonBits` ms (16: about 65 s). */
  constructor(horizonBits = 16) {
    this.#horizon = 2 ** horizonBits;
    this.#mask = this.#horizon - 1;
    this.#buckets = [];
    for (let i = 0; i < this.#horizon; i++) this.#buckets.push({ items: [], codes: [], size: 0 });
  }

  /**
   * Schedules `item` with `code` at millisecond `atMs` (a whole number). A time before the
   * current millisecond is taken as the current one: the calendar never runs backwards.
   */
  schedule(atMs: number, item: T, code: number): void {
    const at = Math.max(atMs, this.#nowMs);
    if (at - this.#nowMs >= this.#horizon) {
      this.#far.push({ at, seq: this.#seq++, item, code });
      return;
    }
    const bucket = this.#buckets[at & this.#mask]!;
    bucket.items[bucket.size] = item;
    bucket.codes[bucket.size] = code;
    bucket.size++;
  }

  /** Makes `nowMs` the current millisecond and returns its bucket (far events included). */
  take(nowMs: number): CalendarBucket<T> {
    this.#nowMs = nowMs;
    const far = this.#far;
    while (far.size > 0 && far.peek()!.at <= nowMs) {
      const event = far.pop();
      this.schedule(nowMs, event.item, event.code);
    }
    return this.#buckets[nowMs & this.#mask]!;
  }

  /** Empties a bucket once read, letting go of its items so that they can be collected young. */
  clear(bucket: CalendarBucket<T>): void {
    bucket.items.fill(undefined as T, 0, bucket.size);
    bucket.size = 0;
  }
}
