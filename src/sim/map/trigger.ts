// The trigger of a metastable failure (Bronson et al., HotOS 2021): a temporary event that
// overloads the system. Either the server loses a share of its capacity (a CPU quota cut, a
// failover) or the offered load jumps (a spike). It starts after a warm-up and lasts a while.

/** Which kind of trigger: capacity lost, or load added. */
export type TriggerKind = 'capacity-loss' | 'load-spike';

/** A trigger as the model runs it, in milliseconds of virtual time. */
export interface Trigger {
  readonly kind: TriggerKind;
  /** When it starts, ms from the start of the run. */
  readonly startMs: number;
  /** When it ends (start plus its length), ms. */
  readonly endMs: number;
  /**
   * `'capacity-loss'`: the share of capacity lost, in [0, 1) (0.8: the server runs at 20 %).
   * `'load-spike'`: the factor the arrival rate is multiplied by (2: twice the load).
   */
  readonly magnitude: number;
}

/** The server's speed at `tMs`, as a share of its full capacity. */
export function capacityAt(trigger: Trigger, tMs: number): number {
  if (trigger.kind !== 'capacity-loss' || tMs < trigger.startMs || tMs >= trigger.endMs) return 1;
  return 1 - trigger.magnitude;
}

/** The factor on the arrival rate at `tMs`. */
export function loadFactorAt(trigger: Trigger, tMs: number): number {
  if (trigger.kind !== 'load-spike' || tMs < trigger.startMs || tMs >= trigger.endMs) return 1;
  return trigger.magnitude;
}

/**
 * When `workMs` of work (ms at full speed) started at `startMs` is done, with the server slowed
 * by a capacity loss while it runs: the work advances at `capacityAt` and the speed changes only
 * at the trigger's two edges, so the end is known when the work starts.
 */
export function workDoneAt(trigger: Trigger, startMs: number, workMs: number): number {
  if (trigger.kind !== 'capacity-loss' || trigger.magnitude === 0) return startMs + workMs;
  const slow = 1 - trigger.magnitude;
  let t = startMs;
  let left = workMs;
  if (t < trigger.startMs) {
    if (t + left <= trigger.startMs) return t + left;
    left -= trigger.startMs - t;
    t = trigger.startMs;
  }
  if (t < trigger.endMs) {
    const slowDone = t + left / slow;
    if (slowDone <= trigger.endMs) return slowDone;
    left -= (trigger.endMs - t) * slow;
    t = trigger.endMs;
  }
  return t + left;
}
