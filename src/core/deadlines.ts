// Deadlines without a timer per call. Every call keeps its deadline (and each attempt its timeout),
// but arming and clearing a platform timer costs several times a whole successful call. Calls
// that share a clock and a duration expire in the order they started, so they wait in one FIFO
// list behind one timer, armed for the oldest entry. Adding and removing an entry is O(1); the
// timer fires at most about once per duration, when the entry it was armed for is long gone.
import { type Clock, MAX_TIMER_MS, systemClock } from './clock.js';

/**
 * Something with a deadline, linked into its list by its own fields (no entry object per call:
 * on the success path every allocation shows).
 */
export interface Deadline {
  /** When it expires, on the list's clock. Set by `add`. */
  expiresAt: number;
  nextDeadline: Deadline | undefined;
  prevDeadline: Deadline | undefined;
  /** In a list now. */
  listed: boolean;
  /** Its time is up (it has already left the list). */
  expire(nowMs: number): void;
}

type PlatformTimer = ReturnType<typeof setTimeout> & {
  ref?: () => unknown;
  unref?: () => unknown;
};

/** The entries of one (clock, duration): they expire in the order they were added. */
export class DeadlineList {
  private head: Deadline | undefined;
  private tail: Deadline | undefined;
  /** The system clock's timer: unreferenced, not cleared, while the list is empty (cheaper). */
  private platformTimer: PlatformTimer | undefined;
  private holdsProcess = false;
  /** An injected clock's timer: cancelled when the list empties. */
  private cancelTimer: (() => void) | undefined;
  private readonly fire = () => this.expireDue();

  constructor(
    private readonly clock: Clock,
    private readonly onIdle: (list: DeadlineList) => void,
  ) {}

  isEmpty(): boolean {
    return this.head === undefined;
  }

  /** Adds `entry`, expiring at `at` (at or after every entry already in the list). */
  add(entry: Deadline, at: number, nowMs: number): void {
    entry.expiresAt = at;
    entry.listed = true;
    entry.nextDeadline = undefined;
    entry.prevDeadline = this.tail;
    if (this.tail === undefined) this.head = entry;
    else this.tail.nextDeadline = entry;
    this.tail = entry;
    if (!this.armed) this.arm(at - nowMs);
    else if (this.platformTimer !== undefined && !this.holdsProcess) {
      // A pending call must keep the process alive until it settles, as its own timer would.
      this.platformTimer.ref?.();
      this.holdsProcess = true;
    }
  }

  /** Removes an entry before it expires (nothing happens if it is not in the list). */
  remove(entry: Deadline): void {
    if (!entry.listed) return;
    entry.listed = false;
    const prev = entry.prevDeadline;
    const next = entry.nextDeadline;
    if (prev === undefined) this.head = next;
    else prev.nextDeadline = next;
    if (next === undefined) this.tail = prev;
    else next.prevDeadline = prev;
    entry.nextDeadline = entry.prevDeadline = undefined;
    if (this.head !== undefined) return;
    if (this.platformTimer !== undefined) {
      if (this.holdsProcess) {
        this.platformTimer.unref?.();
        this.holdsProcess = false;
      }
    } else if (this.cancelTimer !== undefined) {
      this.cancelTimer();
      this.cancelTimer = undefined;
    }
  }

  private get armed(): boolean {
    return this.platformTimer !== undefined || this.cancelTimer !== undefined;
  }

  /** Arms the timer to fire in `ms` (a clock without `setTimer` has none to arm). */
  private arm(ms: number): void {
    if (this.clock === systemClock) {
      this.platformTimer = setTimeout(this.fire, Math.min(Math.max(0, ms), MAX_TIMER_MS));
      this.holdsProcess = true;
    } else if (this.clock.setTimer !== undefined) {
      this.cancelTimer = this.clock.setTimer(Math.max(0, ms), this.fire);
    }
  }

  private expireDue(): void {
    this.platformTimer = undefined;
    this.cancelTimer = undefined;
    const now = this.clock.now();
    for (let entry = this.head; entry !== undefined && entry.expiresAt <= now; entry = this.head) {
      this.remove(entry);
      entry.expire(now);
    }
    const head = this.head;
    if (head === undefined) this.onIdle(this);
    // An owner that expired may have added an entry, and armed a timer for it, already.
    else if (!this.armed) this.arm(head.expiresAt - now);
  }
}

const lists = new WeakMap<Clock, Map<number, DeadlineList>>();
let lastClock: Clock | undefined;
let lastMs = Number.NaN;
let lastList: DeadlineList | undefined;

function forget(clock: Clock, ms: number, list: DeadlineList): void {
  const byMs = lists.get(clock);
  if (byMs?.get(ms) === list && list.isEmpty()) byMs.delete(ms);
  if (lastList === list) lastClock = lastList = undefined;
}

/**
 * The list for deadlines `ms` after their start on `clock`. Lists that go idle (their timer fired
 * with nothing left) are dropped, so one-off durations do not pile up.
 */
export function deadlineList(clock: Clock, ms: number): DeadlineList {
  if (clock === lastClock && ms === lastMs && lastList !== undefined) return lastList;
  let byMs = lists.get(clock);
  if (byMs === undefined) {
    byMs = new Map();
    lists.set(clock, byMs);
  }
  let list = byMs.get(ms);
  if (list === undefined) {
    list = new DeadlineList(clock, (idle) => forget(clock, ms, idle));
    byMs.set(ms, list);
  }
  lastClock = clock;
  lastMs = ms;
  lastList = list;
  return list;
}
