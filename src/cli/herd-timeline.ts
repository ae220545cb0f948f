// The herd's calls slot by slot, for its chart: the real `runHerd`, watched through `onSlot`. A
// long herd is kept to a bounded number of points: a counted herd of 10^9 clients has 4 * 10^7
// slots with calls (2 * 10^10 slots in all without jitter), far more than a chart can show or an
// array should hold, so past `maxPoints` each point stands for a span of slots, by its busiest.
import { type HerdOptions, runHerd } from '../sim/herd.js';

/** The herd's options that shape the timeline: runHerd's, without its callbacks. */
export type HerdTimelineOptions = Omit<HerdOptions, 'onProgress' | 'onSlot'>;

/**
 * The most points a timeline keeps. The storm story's herd without jitter has 37,621 slots, kept
 * one by one; the chart itself draws at most a few thousand (plot.ts decimates).
 */
export const MAX_TIMELINE_POINTS = 2 ** 16;

/** Calls per slot, from slot 0 to the last one that had any. */
export interface HerdTimeline {
  /** Width of one slot in milliseconds. */
  readonly slotMs: number;
  /**
   * How many slots each point stands for: 1, or a power of two when the herd ran longer than
   * `maxPoints` slots. A point of several slots shows the busiest of them (the most calls; the
   * first of equals), so the waves keep their height.
   */
  readonly slotsPerPoint: number;
  /** Calls served in each point's slot. */
  readonly served: readonly number[];
  /** Calls that failed in each point's slot. */
  readonly failed: readonly number[];
  /** All calls: the sum over every slot. */
  readonly calls: number;
  /** The most calls in one slot, slot 0 excluded (runHerd's `busiestSlot`). */
  readonly busiestSlot: number;
  /** Slots from slot 0 to the last that had calls, both included. */
  readonly slots: number;
}

/**
 * Runs the herd and records, for each slot, how many calls were served and how many failed; past
 * `maxPoints` slots, for each span of `slotsPerPoint` slots, its busiest slot's.
 */
export function herdTimeline(
  options: HerdTimelineOptions = {},
  maxPoints = MAX_TIMELINE_POINTS,
): HerdTimeline {
  const slotMs = options.slotMs ?? 10;
  let served: number[] = [];
  let failed: number[] = [];
  let slotsPerPoint = 1;
  let busiestSlot = 0;
  let slots = 0;
  /** Halves the points: each new one keeps the busier of two neighbours. */
  const merge = () => {
    const s: number[] = [];
    const f: number[] = [];
    for (let i = 0; i < served.length; i += 2) {
      const j =
        i + 1 < served.length && served[i + 1]! + failed[i + 1]! > served[i]! + failed[i]!
          ? i + 1
          : i;
      s.push(served[j]!);
      f.push(failed[j]!);
    }
    served = s;
    failed = f;
    slotsPerPoint *= 2;
  };
  const result = runHerd({
    ...options,
    onSlot: (ms, servedInSlot, failedInSlot) => {
      const slot = ms / slotMs;
      const calls = servedInSlot + failedInSlot;
      if (slot > 0 && calls > busiestSlot) busiestSlot = calls;
      slots = slot + 1;
      while (Math.floor(slot / slotsPerPoint) >= Math.max(1, maxPoints)) merge();
      const point = Math.floor(slot / slotsPerPoint);
      while (served.length <= point) {
        served.push(0);
        failed.push(0);
      }
      if (calls > served[point]! + failed[point]!) {
        served[point] = servedInSlot;
        failed[point] = failedInSlot;
      }
    },
  });
  return { slotMs, slotsPerPoint, served, failed, calls: result.calls, busiestSlot, slots };
}
