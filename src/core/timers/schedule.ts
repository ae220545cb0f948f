// The loop shared by `every` and `daily`: wait for the next slot on wall time, run the task
// unless the previous run is still going, repeat. Each slot is computed from absolute time, so
// a timer that fires late never shifts the ones after it.
import { type Clock, MAX_TIMER_MS } from '../clock.js';
import { channels } from '../instrument.js';

const timerChannel = channels.timer;

/** One run of a timer's task. */
export interface TimerRun {
  /** The wall time (epoch ms) this run was planned for; the run starts at or after it. */
  readonly scheduledAt: number;
  /** Aborts when the timer is stopped: a long task should stop too. */
  readonly signal: AbortSignal;
}

/** A run that did not happen, and why. */
export interface TimerSkip {
  /**
   * `'overlap'`: the previous run was still going at `scheduledAt`, so this one was skipped.
   * `'late'`: the timer woke after one or more later slots had passed too (a suspended machine,
   * a blocked event loop); it runs once, for `scheduledAt`, and skips `skipped` slots after it.
   */
  readonly reason: 'overlap' | 'late';
  /** The wall time (epoch ms) of the slot that ran late, or of the slot skipped for overlap. */
  readonly scheduledAt: number;
  /** How many slots were skipped: 1 for an overlap, 1 or more when late. */
  readonly skipped: number;
}

/**
 * A schedule as numbered slots: `at(i)` is the wall time (epoch ms) of slot `i`, increasing with
 * `i`; `indexOf(t)` is a slot number whose time is not after any slot still due after `t`.
 */
export interface Schedule {
  indexOf(wallMs: number): number;
  at(index: number): number;
}

export interface ScheduleSettings {
  readonly clock: Clock;
  readonly wallClock: () => number;
  readonly signal: AbortSignal | undefined;
  readonly onSkip: ((skip: TimerSkip) => void) | undefined;
  readonly onError: ((error: unknown, run: TimerRun) => void) | undefined;
}

/** Calls a hook; an error from it goes to onError, never to an unhandled rejection. */
function report(s: ScheduleSettings, call: () => void, run: TimerRun): void {
  try {
    call();
  } catch (error) {
    if (s.onError === undefined) return;
    try {
      s.onError(error, run);
    } catch {
      // onError itself threw: nothing is left to tell.
    }
  }
}

/**
 * Runs `task` at every slot of `schedule` until `signal` aborts, then waits for a run still going.
 * The returned promise resolves once stopped; it never rejects.
 */
export async function runSchedule(
  schedule: Schedule,
  task: (run: TimerRun) => unknown,
  s: ScheduleSettings,
): Promise<void> {
  // Made here, not at import: workers forbid making one in global scope.
  const signal = s.signal ?? new AbortController().signal;
  let running: Promise<void> | undefined;
  if (signal.aborted) return;
  let slot = firstAfter(schedule, s.wallClock(), Number.NEGATIVE_INFINITY);
  try {
    for (;;) {
      for (let left = slot.at - s.wallClock(); left > 0; left = slot.at - s.wallClock()) {
        // An injected clock may not chain long waits as the system clock does: take them in steps.
        await s.clock.sleep(Math.min(left, MAX_TIMER_MS), s.signal);
      }
      const following = firstAfter(schedule, s.wallClock(), slot.index + 1);
      const run: TimerRun = { scheduledAt: slot.at, signal };
      const skipped = following.index - slot.index - 1;
      if (skipped > 0) {
        if (timerChannel.hasSubscribers) {
          timerChannel.publish({ type: 'skip', reason: 'late', skipped, error: undefined });
        }
        report(s, () => s.onSkip?.({ reason: 'late', scheduledAt: slot.at, skipped }), run);
      }
      if (running !== undefined) {
        if (timerChannel.hasSubscribers) {
          timerChannel.publish({ type: 'skip', reason: 'overlap', skipped: 1, error: undefined });
        }
        report(s, () => s.onSkip?.({ reason: 'overlap', scheduledAt: slot.at, skipped: 1 }), run);
      } else {
        running = start(task, run, s).finally(() => {
          running = undefined;
        });
      }
      slot = following;
    }
  } catch {
    // Only the sleep can throw here: the signal aborted (or a virtual clock was closed), so the
    // timer stops.
  }
  await running;
}

/** The first slot numbered at least `min` whose time is after `wallMs`. */
function firstAfter(
  schedule: Schedule,
  wallMs: number,
  min: number,
): { index: number; at: number } {
  let index = Math.max(min, schedule.indexOf(wallMs));
  let at = schedule.at(index);
  while (at <= wallMs) at = schedule.at(++index);
  return { index, at };
}

/** Starts one run; a throw or rejection goes to onError. */
async function start(
  task: (run: TimerRun) => unknown,
  run: TimerRun,
  s: ScheduleSettings,
): Promise<void> {
  try {
    await task(run);
  } catch (error) {
    if (timerChannel.hasSubscribers) {
      timerChannel.publish({ type: 'error', reason: undefined, skipped: 0, error });
    }
    try {
      s.onError?.(error, run);
    } catch {
      // onError itself threw: nothing is left to tell.
    }
  }
}
