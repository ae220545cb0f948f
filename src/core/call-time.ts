// When a call starts, without a clock read per call. A read of the system's monotonic clock costs
// about as much as a bare await, more than the rest of a successful call's bookkeeping, so calls
// that start close together share one: the first call reads the clock and arms a timer of the
// clock's `coarseMs`; every call that starts before that timer fires counts from that reading.
// A window the event loop held open (its timer fired more than twice `coarseMs` after the
// reading, or a call failed that long after it while it was still open) says nothing about when
// its calls started: they then count from the later reading, so that none loses its deadline to
// a blocked event loop. A call's clock thus starts at most 2 x `coarseMs` before the call, or
// after it, by at most as long as the event loop kept the window's timer from firing.
import { type Clock, systemClock } from './clock.js';
import { restartFrom } from './deadlines.js';

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
  /** The reading that the last window held open restarted its calls at. */
  private restartedAt = Number.NaN;
  private readonly stale = () => {
    this.fresh = false;
    const now = this.clock.now();
    if (now - this.at > 2 * this.windowMs) {
      restartFrom(this.clock, this.at, now);
      this.restartedAt = now;
    }
  };

  constructor(
    private readonly clock: Clock,
    private readonly windowMs: number,
  ) {}

  read(): number {
    if (this.fresh) return this.at;
    const at = this.clock.now();
    // Time has not moved since a restart (a virtual clock): no window, or closing it late would
    // take the restarted calls for its own.
    if (at === this.restartedAt) return at;
    this.at = at;
    this.arm();
    return at;
  }

  /**
   * A call that started at `startedAt` failed at `nowMs`: if its window is still open and has
   * lasted more than twice `coarseMs`, its calls count from `nowMs` instead, and so do calls that
   * start from now on. Returns when the failed call's clock starts.
   */
  checkOpen(startedAt: number, nowMs: number): number {
    if (!this.fresh || startedAt !== this.at || nowMs - startedAt <= 2 * this.windowMs) {
      return startedAt;
    }
    restartFrom(this.clock, startedAt, nowMs);
    this.at = nowMs;
    // The window's timer may fire at this same instant (a virtual clock): a window begun then
    // must not take these restarted calls for its own, as after a restart in `stale`.
    this.restartedAt = nowMs;
    return nowMs;
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
  const reading = readingOf(clock);
  return reading === null ? clock.now() : reading.read();
}

/**
 * When the clock of a call that started at `startedAt` (from `callTime`) starts, now that it
 * failed at `nowMs`: `startedAt`, unless its window has been held open too long.
 */
export function checkedStart(clock: Clock, startedAt: number, nowMs: number): number {
  const reading = readingOf(clock);
  return reading === null ? startedAt : reading.checkOpen(startedAt, nowMs);
}

function readingOf(clock: Clock): SharedReading | null {
  return clock === lastClock ? lastReading : lookUp(clock);
}

// Out of line: `readingOf` stays small, and with it the inlined start of every call.
function lookUp(clock: Clock): SharedReading | null {
  let reading = readings.get(clock);
  if (reading === undefined) {
    const windowMs = clock.coarseMs;
    reading = windowMs === undefined ? null : new SharedReading(clock, windowMs);
    readings.set(clock, reading);
  }
  lastClock = clock;
  lastReading = reading;
  return reading;
}
