// The classification rule of the map, after Bronson et al. (HotOS 2021: stable, vulnerable,
// metastable; a metastable failure outlives its trigger) and anchors for the thresholds: a cell
// is judged on the horizon after the trigger ends, in sliding windows of goodput over offered load.
import type { MapSeries } from './measure.js';

/** How a run (or a cell, by most of its seeds) ended. */
export type MapClass = 'stable' | 'vulnerable' | 'metastable';

/** The thresholds of the rule. */
export interface ClassifyRule {
  /** Goodput at or above this share of the offered load is recovered. @default 0.95 */
  readonly recoveredShare: number;
  /** Goodput below this share all through the horizon is metastable. @default 0.5 */
  readonly collapsedShare: number;
  /** The sliding window, in seconds. @default 5 */
  readonly windowSeconds: number;
}

/** The map's rule. */
export const MAP_RULE: ClassifyRule = Object.freeze({
  recoveredShare: 0.95,
  collapsedShare: 0.5,
  windowSeconds: 5,
});

/** The rule in words, printed with every map. */
export function ruleText(rule: ClassifyRule = MAP_RULE): string {
  const w = rule.windowSeconds;
  return (
    `Rule, judged on the horizon after the trigger ends, in sliding ${w} s windows of goodput over offered load (the share of the user requests offered in the window that got an answer in time): ` +
    `stable = goodput back to >= ${rule.recoveredShare * 100}% of offered within the horizon and staying there in every later window; ` +
    `metastable = goodput below ${rule.collapsedShare * 100}% of offered in every window of the horizon; ` +
    'vulnerable = anything else (a partial or late recovery).'
  );
}

/** One run's class and, when stable, how long after the trigger's end it recovered. */
export interface RunClass {
  readonly class: MapClass;
  /** Seconds from the trigger's end to the start of the first window from which every window is recovered; null unless stable. */
  readonly recoverySeconds: number | null;
  /** Goodput over offered in the last window of the run. */
  readonly finalShare: number;
}

/** Classifies one run from its series: the horizon is the seconds `[fromSecond, toSecond)`. */
export function classifyRun(
  series: MapSeries,
  fromSecond: number,
  toSecond: number = series.offered.length,
  rule: ClassifyRule = MAP_RULE,
): RunClass {
  const end = toSecond;
  const w = rule.windowSeconds;
  const shares: number[] = [];
  for (let s = fromSecond; s + w <= end; s++) {
    let offered = 0;
    let good = 0;
    for (let i = s; i < s + w; i++) {
      offered += series.offered[i]!;
      good += series.goodput[i]!;
    }
    shares.push(offered === 0 ? 1 : good / offered);
  }
  if (shares.length === 0)
    throw new RangeError('stormproof: the horizon is shorter than one window');
  let recoveredFrom = shares.length;
  while (recoveredFrom > 0 && shares[recoveredFrom - 1]! >= rule.recoveredShare) recoveredFrom--;
  const finalShare = shares[shares.length - 1]!;
  if (recoveredFrom < shares.length) {
    return { class: 'stable', recoverySeconds: recoveredFrom, finalShare };
  }
  if (shares.every((s) => s < rule.collapsedShare)) {
    return { class: 'metastable', recoverySeconds: null, finalShare };
  }
  return { class: 'vulnerable', recoverySeconds: null, finalShare };
}
