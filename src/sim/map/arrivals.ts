// Open-loop arrivals: user requests come as a Poisson stream whatever the server does (the
// clients do not wait for each other), at a base rate multiplied by a load spike while it lasts.
import { loadFactorAt, type Trigger } from './trigger.js';

/**
 * The next arrival after `nowMs`, for a Poisson stream of `ratePerSecond` scaled by the trigger.
 * The rate changes only at the trigger's edges; an exponential gap that would cross an edge is
 * drawn again from the edge at the new rate, which is exact because the exponential forgets.
 */
export function nextArrivalMs(
  nowMs: number,
  ratePerSecond: number,
  trigger: Trigger,
  random: () => number,
): number {
  let t = nowMs;
  for (;;) {
    const rate = (ratePerSecond * loadFactorAt(trigger, t)) / 1000;
    const gap = -Math.log(1 - random()) / rate;
    const edge =
      t < trigger.startMs ? trigger.startMs : t < trigger.endMs ? trigger.endMs : Infinity;
    if (trigger.kind !== 'load-spike' || t + gap < edge) return t + gap;
    t = edge;
  }
}
