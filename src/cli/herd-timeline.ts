// The herd's calls slot by slot, for its chart. `runHerd` returns only the document's three
// figures; this runs the same world through `runHerdSchedule` with clients that count what each
// slot did and wait as the document's model waits (the same formulas, drawn from the same
// generator in the same order), so its totals equal runHerd's (a test checks it).
import type { HerdJitter } from '../sim/herd.js';
import { runHerdSchedule } from '../sim/herd-schedules.js';

/** The herd's options that shape the timeline (the same names and defaults as runHerd's). */
export interface HerdTimelineOptions {
  /**
   * Clients that failed together at time 0.
   * @default 2000
   * @example
   * ```ts
   * herdTimeline({ clients: 500 })
   * ```
   */
  clients?: number | undefined;
  /**
   * Calls the service answers per slot.
   * @default 25
   * @example
   * ```ts
   * herdTimeline({ perSlot: 10 })
   * ```
   */
  perSlot?: number | undefined;
  /**
   * Width of one slot in whole milliseconds.
   * @default 10
   * @example
   * ```ts
   * herdTimeline({ slotMs: 1, perSlot: 3 })
   * ```
   */
  slotMs?: number | undefined;
  /**
   * Backoff base in milliseconds.
   * @default 200
   * @example
   * ```ts
   * herdTimeline({ baseMs: 100 })
   * ```
   */
  baseMs?: number | undefined;
  /**
   * Backoff cap in milliseconds.
   * @default 5000
   * @example
   * ```ts
   * herdTimeline({ capMs: 20_000 })
   * ```
   */
  capMs?: number | undefined;
  /**
   * Seed of the herd's one generator.
   * @default 7
   * @example
   * ```ts
   * herdTimeline({ seed: 1 })
   * ```
   */
  seed?: number | bigint | undefined;
  /**
   * How a failed client's wait is drawn below its ceiling, as in `runHerd`.
   * @default 'full'
   * @example
   * ```ts
   * herdTimeline({ jitter: 'none' })
   * ```
   */
  jitter?: HerdJitter | undefined;
}

/** Calls per slot, from slot 0 to the last one that had any. */
export interface HerdTimeline {
  /** Width of one slot in milliseconds. */
  readonly slotMs: number;
  /** Calls served in each slot. */
  readonly served: readonly number[];
  /** Calls that failed in each slot. */
  readonly failed: readonly number[];
  /** All calls: the sum of both. */
  readonly calls: number;
}

/** Runs the herd and records, for each slot, how many calls were served and how many failed. */
export function herdTimeline(options: HerdTimelineOptions = {}): HerdTimeline {
  const slotMs = options.slotMs ?? 10;
  const base = (options.baseMs ?? 200) / 1000;
  const cap = (options.capMs ?? 5000) / 1000;
  const jitter = options.jitter ?? 'full';
  const served: number[] = [];
  const failed: number[] = [];
  const count = (list: number[], nowMs: number) => {
    const slot = nowMs / slotMs;
    while (list.length <= slot) list.push(0);
    list[slot]!++;
  };
  const result = runHerdSchedule({
    clients: options.clients,
    perSlot: options.perSlot,
    slotMs,
    seed: options.seed,
    schedule: (_client, random) => {
      let tries = 0;
      let previous = base;
      return {
        failed(nowMs) {
          count(failed, nowMs);
          // Past 1023 doublings 2 ** tries is Infinity (and 0 * Infinity is NaN): the cap holds.
          const ceiling = Math.min(cap, base * 2 ** Math.min(tries, 1023));
          tries++;
          switch (jitter) {
            case 'none':
              return ceiling;
            case 'full':
              return 0 + (ceiling - 0) * random();
            case 'equal':
              return ceiling / 2 + (0 + (ceiling / 2 - 0) * random());
            case 'decorrelated':
              previous = Math.min(cap, base + (previous * 3 - base) * random());
              return previous;
            case 'band':
              return ceiling * (0.8 + (1.2 - 0.8) * random());
          }
        },
        served(nowMs) {
          count(served, nowMs);
        },
      };
    },
  });
  const length = Math.max(served.length, failed.length);
  while (served.length < length) served.push(0);
  while (failed.length < length) failed.push(0);
  return { slotMs, served, failed, calls: result.calls };
}
