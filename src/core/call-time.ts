// When a call starts, without a clock read per call. A read of the system's monotonic clock costs
// about as much as a bare await, more than the rest of a successful call's bookkeeping, so calls
// that start close together share one: the first call reads the clock and arms a timer of the
// clock's `coarseMs`; every call that starts before that timer fires counts from that reading.
// Their deadlines therefore count from up to one window before they started (never after): at
// most `coarseMs`, plus however long the event loop keeps the timer from firing.
import { type Clock, systemClock } from './clock.js';

type PlatformTimer = ReturnType<typeof setTimeout> & {
  unref?: () => unknown;
  refresh?: () => unknown;
};

/** One clock's shared reading. */
class SharedReading {
  private at = 0;
  /** The reading may still be shared: its window's timer has not fired. */
  private fresh = false;
  /** The system clock's timer: one, unreferenced, re-armed by `refresh` where the platform has it. */
  private platformTimer: PlatformTimer | undefined;
  private readonly stale = () => {
    this.fresh = false;
  };

  constructor(
    private readonly clock: Clock,
    private readonly windowMs: number,
  ) {}

  read(): number {
    if (this.fresh) return this.at;
    const at = this.clock.now();
    this.at = at;
    this.arm();
    return at;
  }

  /** Starts a window (a clock without `setTimer` has none: every call reads it). */
  private arm(): void {
    if (this.clock === systemClock) {
      const timer = this.platformTimer;
      if (timer?.refresh !== undefined) timer.refresh();
      else {
        // Never holds the process open: a pending call's deadline timer does that.
        this.platformTimer = setTimeout(this.stale, this.windowMs) as PlatformTimer;
        this.platformTimer.unref?.();
      }
      this.fresh = true;
    } else if (this.clock.setTimer !== undefined) {
      this.clock.setTimer(this.windowMs, this.stale);
      this.fresh = true;
    }
  }
}

const readings = new WeakMap<Clock, SharedReading | null>();
let lastClock: Clock | undefined;
let lastReading: SharedReading | null = null;

/**
 * The time a call starting now counts from, on `clock`: `clock.now()`, or, for a clock with
 * `coarseMs` (the system clock has 1), a reading shared with the calls that started in the same
 * window, at most that window earlier than now.
 */
export function callTime(clock: Clock): number {
  let reading: SharedReading | null | undefined;
  if (clock === lastClock) reading = lastReading;
  else {
    reading = readings.get(clock);
    if (reading === undefined) {
      const windowMs = clock.coarseMs;
      reading = windowMs === undefined ? null : new SharedReading(clock, windowMs);
      readings.set(clock, reading);
    }
    lastClock = clock;
    lastReading = reading;
  }
  return reading === null ? clock.now() : reading.read();
}
