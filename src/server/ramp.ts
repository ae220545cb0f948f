// Reopening in steps: the on-call engineer's procedure from a real retry storm, automated.
// After an episode of failures (or when told a dependency is back), let a growing share of the
// concurrency limit run at once, check the error rate and latency over each step's window, and
// step back on failure.

/** Why the ramp moved. */
export type RampReason =
  | 'errors' // while fully open, a window's error rate passed the trip threshold
  | 'reopen' // the application said a dependency is healthy again
  | 'passed' // the step's window passed its checks: one step up
  | 'error-rate' // the step's window failed its error check: one step back
  | 'latency' // the step's window failed its latency check: one step back
  | 'open'; // the last step passed: all traffic admitted again

/** One move of the ramp. */
export interface RampEvent {
  /** The share of the concurrency limit that may run at once from now on, in (0, 1]. */
  readonly share: number;
  /** The index of the step in `steps`, or -1 at the floor. */
  readonly step: number;
  /** Why it moved. */
  readonly reason: RampReason;
  /** The window's error rate and mean latency that led here, when a window led here. */
  readonly errorRate?: number;
  readonly meanLatencyMs?: number;
}

/** The ramp's settings, filled. */
export interface RampSettings {
  readonly steps: readonly number[];
  readonly floor: number;
  readonly windowMs: number;
  readonly minRequests: number;
  readonly maxErrorRate: number;
  readonly tripErrorRate: number;
  readonly latencyTolerance: number;
}

export class Ramp {
  /** The step index while ramping; `steps.length` when fully open; -1 at the floor. */
  private step: number;
  private windowStart = Number.NaN;
  private requests = 0;
  private errors = 0;
  private latencySum = 0;
  /** Mean latency of healthy, fully open windows: what a step is compared with. */
  private baselineMs: number | undefined;
  /**
   * Mean latency of the last window at the floor that passed its error check, since the ramp
   * left the open state: the service's latency as it is now (a cache still cold after an outage,
   * say) at the least load the ramp admits. A step is compared with the larger of the two, so
   * the check catches latency that the step's load adds, not latency the load did not cause.
   */
  private floorMs: number | undefined;
  /** A request was refused for the step's cap in this window. */
  private held = false;
  /** When the ramp last moved. */
  private stepSince = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly settings: RampSettings,
    private readonly onMove: (event: RampEvent) => void,
  ) {
    this.step = settings.steps.length;
  }

  /** The share of the concurrency limit that may run at once now. */
  get share(): number {
    const { steps, floor } = this.settings;
    if (this.step >= steps.length) return 1;
    return this.step < 0 ? floor : steps[this.step]!;
  }

  /** The current step index (`steps.length` when open, -1 at the floor). */
  get stepIndex(): number {
    return this.step;
  }

  /** A request was refused because the step's share of the limit was running. */
  refused(): void {
    this.held = true;
  }

  /** Starts a ramp from the first step (a dependency is healthy again). */
  reopen(nowMs: number): void {
    this.move(0, 'reopen', nowMs);
  }

  /**
   * One admitted request finished. While ramping, a step is judged only on the requests admitted
   * in it: a request admitted before (say, during the outage, finishing after `reopen()`) says
   * nothing about the step.
   */
  record(nowMs: number, latencyMs: number, failed: boolean, admittedAtMs: number): void {
    if (this.step < this.settings.steps.length && admittedAtMs < this.stepSince) return;
    if (Number.isNaN(this.windowStart)) this.windowStart = nowMs;
    this.requests++;
    if (failed) this.errors++;
    this.latencySum += latencyMs;
    if (this.requests < this.settings.minRequests) return; // too few to judge: the window grows
    // While ramping, a clear signal need not wait out the window: `minRequests` admitted in the
    // step, every one served, ends it early (clients that obey their pushback come back a few at
    // a time, and each window held them back a second more). At the floor that is enough: its
    // cap is small and always full, and the first step is small too. Above it, only a step that
    // refused nothing for its cap ends early: a flood fills each step, and the load it adds may
    // take the window to show. One failure, and the step is judged when its window ends.
    const clear =
      this.step < this.settings.steps.length && this.errors === 0 && (this.step < 0 || !this.held);
    if (!clear && nowMs - this.windowStart < this.settings.windowMs) return;
    this.judge(nowMs);
  }

  private judge(nowMs: number): void {
    const { steps, maxErrorRate, tripErrorRate, latencyTolerance } = this.settings;
    const errorRate = this.errors / this.requests;
    const meanLatencyMs = this.latencySum / this.requests;
    const figures = { errorRate, meanLatencyMs };
    const open = this.step >= steps.length;
    if (open) {
      if (errorRate > tripErrorRate) {
        this.move(0, 'errors', nowMs, figures);
        return;
      }
      if (errorRate <= maxErrorRate) {
        this.baselineMs =
          this.baselineMs === undefined
            ? meanLatencyMs
            : this.baselineMs * 0.8 + meanLatencyMs * 0.2;
      }
      this.resetWindow(nowMs);
      return;
    }
    if (errorRate > maxErrorRate) {
      this.move(this.step - 1, 'error-rate', nowMs, figures);
      return;
    }
    // At the floor there is no less load to compare with: a healthy window sets the reference
    // and the ramp tries the first step.
    if (this.step < 0) this.floorMs = meanLatencyMs;
    // The floor only ever raises the reference: with no healthy baseline there is no latency
    // check at all (a ratio of sub-millisecond loopback latencies is noise, not overload).
    const referenceMs =
      this.baselineMs === undefined ? undefined : Math.max(this.baselineMs, this.floorMs ?? 0);
    if (
      this.step >= 0 &&
      referenceMs !== undefined &&
      meanLatencyMs > referenceMs * latencyTolerance
    ) {
      this.move(this.step - 1, 'latency', nowMs, figures);
    } else {
      const next = this.step + 1;
      this.move(next, next >= steps.length ? 'open' : 'passed', nowMs, figures);
    }
  }

  private move(
    step: number,
    reason: RampReason,
    nowMs: number,
    figures?: { errorRate: number; meanLatencyMs: number },
  ): void {
    this.step = Math.max(-1, Math.min(this.settings.steps.length, step));
    if (this.step >= this.settings.steps.length || reason === 'errors') this.floorMs = undefined;
    this.stepSince = nowMs;
    this.resetWindow(nowMs);
    this.onMove({ share: this.share, step: this.step, reason, ...figures });
  }

  private resetWindow(nowMs: number): void {
    this.windowStart = nowMs;
    this.requests = 0;
    this.errors = 0;
    this.latencySum = 0;
    this.held = false;
  }
}
