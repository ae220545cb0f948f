// The herd's calls slot by slot, for its chart: the real `runHerd`, watched through `onSlot`.
import { type HerdOptions, runHerd } from '../sim/herd.js';

/** The herd's options that shape the timeline: runHerd's, without its callbacks. */
export type HerdTimelineOptions = Omit<HerdOptions, 'onProgress' | 'onSlot'>;

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
  const served: number[] = [];
  const failed: number[] = [];
  const result = runHerd({
    ...options,
    onSlot: (ms, servedInSlot, failedInSlot) => {
      const slot = ms / slotMs;
      while (served.length <= slot) {
        served.push(0);
        failed.push(0);
      }
      served[slot] = servedInSlot;
      failed[slot] = failedInSlot;
    },
  });
  return { slotMs, served, failed, calls: result.calls };
}
