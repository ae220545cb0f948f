// Deadlines without a timer per call. Every call keeps its deadline (and each attempt its timeout),
// but arming and clearing a platform timer costs several times a whole successful call. Calls
// that share a clock and a duration expire in the order they started, so they wait in one FIFO
// list behind one timer, armed for the oldest entry. Adding and removing an entry is O(1); the
// timer fires at most about once per duration, when the entry it was armed for is long gone.
import { type Clock, MAX_TIMER_MS, systemClock } from './clock.js';

/**
 * Something with a deadline, linked into its list by its own fields (no entry object per call:
 * on the success path every allocation shows). It expires its list's duration after `startedAt`.
 */
export interface Deadline {
  /** When its time started, on the list's clock. */
  startedAt: number;
  /** Its neighbours in the list; both undefined when it is in none. */
  nextDeadline: Deadline | undefined;
  prevDeadline: Deadline | undefined;
  /** Its time is up (it has already left the list). */
  expire(nowMs: number): void;
}

type PlatformTimer = ReturnType<typeof setTimeout> & {
  ref?: () => unknown;
  unref?: () => unknown;
  refresh?: () => unknown;
};

/** Links `entry` in at the end of the list whose ring is `ring`. */
function append(ring: Deadline, entry: Deadline): void {
  const last = ring.prevDeadline!;
  entry.nextDeadline = ring;
  entry.prevDeadline = last;
  last.nextDeadline = entry;
  ring.prevDeadline = entry;
}

/** Joins `entry`'s neighbours (its own links are left as they were). */
function unlink(entry: Deadline): void {
  const next = entry.nextDeadline!;
  const prev = entry.prevDeadline!;
  prev.nextDeadline = next;
  next.prevDeadline = prev;
}

/**
 * The entry a list's ring runs through, so that an entry in a list always has neighbours. It
 * knows its list: an entry that leaves finds it there, without a lookup, when the list empties.
 */
interface Ring extends Deadline {
  readonly list: DeadlineList;
}

/**
 * Takes `entry` out of its list before it expires (nothing happens if it is in none). Only an
 * emptied list needs to know, and then the entry's one neighbour is the list's ring.
 */
export function leave(entry: Deadline): void {
  const next = entry.nextDeadline;
  if (next === undefined) return;
  unlink(entry);
  entry.nextDeadline = entry.prevDeadline = undefined;
  if (next.nextDeadline === next) (next as Ring).list.emptied();
}

/** The entries of one (clock, duration): they expire in the order they were added. */
export class DeadlineList {
  private readonly ring: Ring = {
    startedAt: 0,
    nextDeadline: undefined,
    prevDeadline: undefined,
    expire: () => {},
    list: this,
  };
  /** The system clock's timer: unreferenced, not cleared, while the list is empty (cheaper). */
  private platformTimer: PlatformTimer | undefined;
  private holdsProcess = false;
  /** Waiting for `releaseIdle` to let the process go. */
  releaseQueued = false;
  /** An injected clock's timer: cancelled when the list empties. */
  private cancelTimer: (() => void) | undefined;
  private readonly fire = () => this.expireDue();

  constructor(
    readonly clock: Clock,
    /** How long after its start an entry expires. */
    readonly ms: number,
    private readonly onIdle: (list: DeadlineList) => void,
  ) {
    this.ring.nextDeadline = this.ring.prevDeadline = this.ring;
  }

  isEmpty(): boolean {
    return this.ring.nextDeadline === this.ring;
  }

  /**
   * Adds `entry`, started at `entry.startedAt` (at or after every entry already in the list), at
   * `nowMs`.
   */
  add(entry: Deadline, nowMs: number): void {
    append(this.ring, entry);
    // Most often its timer is armed and holds the process already: the rest is out of line, so
    // that `add` stays small enough for V8 to inline where a call starts.
    if (this.platformTimer === undefined || !this.holdsProcess) this.hold(entry, nowMs);
  }

  /** Arms the timer for `entry` if none is armed, or makes the armed one hold the process. */
  private hold(entry: Deadline, nowMs: number): void {
    const timer = this.platformTimer;
    if (timer !== undefined) {
      // A pending call must keep the process alive until it settles, as its own timer would.
      timer.ref?.();
      this.holdsProcess = true;
    } else if (this.cancelTimer === undefined) this.arm(entry.startedAt + this.ms - nowMs);
  }

  /** Its last entry left before it expired (see `leave`). */
  emptied(): void {
    if (this.platformTimer !== undefined) {
      if (this.holdsProcess && !this.releaseQueued) releaseSoon(this);
    } else if (this.cancelTimer !== undefined) {
      this.cancelTimer();
      this.cancelTimer = undefined;
    }
  }

  /**
   * Its entries that started at `from` start at `to` (later than every entry), and move to the
   * end of the list, in their order. They need not be its newest: a list of attempt timeouts
   * also holds later attempts, which count from the clock read when they started, so one that
   * started in the window can follow first attempts of that window. Stopping at it would leave
   * the first attempts before it counting from `from`, the reading their calls no longer count
   * from. Runs only when a window was held open, so the walk over the list is rare.
   */
  restartFrom(from: number, to: number): void {
    const ring = this.ring;
    const last = ring.prevDeadline!;
    if (last === ring) return;
    let entry = ring.nextDeadline!;
    for (;;) {
      const next = entry.nextDeadline!;
      if (entry.startedAt === from) {
        entry.startedAt = to;
        // To the end: the list stays in the order of `startedAt`.
        if (entry !== ring.prevDeadline) {
          unlink(entry);
          append(ring, entry);
        }
      }
      if (entry === last) return;
      entry = next;
    }
  }

  /** Lets the process go if the list is still empty (called about 1 ms after it emptied). */
  release(): void {
    this.releaseQueued = false;
    const timer = this.platformTimer;
    if (timer !== undefined && this.holdsProcess && this.isEmpty()) {
      timer.unref?.();
      this.holdsProcess = false;
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
    const ring = this.ring;
    const ms = this.ms;
    for (
      let entry = ring.nextDeadline!;
      entry !== ring && entry.startedAt + ms <= now;
      entry = ring.nextDeadline!
    ) {
      leave(entry);
      entry.expire(now);
    }
    const head = ring.nextDeadline!;
    if (head === ring) this.onIdle(this);
    // An owner that expired may have added an entry, and armed a timer for it, already.
    else if (!this.armed) this.arm(head.startedAt + ms - now);
  }
}

// A list that empties lets the process go about 1 ms later, not at once: unreferencing a timer
// and referencing it again are calls into the runtime, which would otherwise cost every call
// that has a list to itself (one call at a time) two of them. One unreferenced timer, armed
// again each time, releases every list that emptied meanwhile and is still empty.
const releasing: DeadlineList[] = [];
let releaseTimer: PlatformTimer | undefined;
let releaseArmed = false;

function releaseIdle(): void {
  releaseArmed = false;
  for (const list of releasing.splice(0)) list.release();
}

function releaseSoon(list: DeadlineList): void {
  list.releaseQueued = true;
  releasing.push(list);
  if (releaseArmed) return;
  releaseArmed = true;
  if (releaseTimer?.refresh !== undefined) releaseTimer.refresh();
  else {
    releaseTimer = setTimeout(releaseIdle, 1) as PlatformTimer;
    releaseTimer.unref?.();
  }
}

const lists = new WeakMap<Clock, Map<number, DeadlineList>>();

/**
 * Entries of `clock`'s lists that started at `from` start at `to` instead (later than every
 * entry), and move to the end of their list, so each list keeps its order.
 */
export function restartFrom(clock: Clock, from: number, to: number): void {
  const byMs = lists.get(clock);
  if (byMs === undefined) return;
  for (const list of byMs.values()) list.restartFrom(from, to);
}
// The two lists asked for last: a call's deadline list and its attempts' timeout list, looked up
// again when they end, cost two comparisons instead of two map lookups.
let recent: DeadlineList | undefined;
let older: DeadlineList | undefined;

function forget(clock: Clock, ms: number, list: DeadlineList): void {
  const byMs = lists.get(clock);
  if (byMs?.get(ms) === list && list.isEmpty()) byMs.delete(ms);
  if (recent === list) recent = undefined;
  if (older === list) older = undefined;
}

/**
 * The list for deadlines `ms` after their start on `clock`. Lists that go idle (their timer fired
 * with nothing left) are dropped, so one-off durations do not pile up; a list with an entry in it
 * is never dropped, so an entry finds its list again by the same clock and duration.
 */
export function deadlineList(clock: Clock, ms: number): DeadlineList {
  const first = recent;
  if (first !== undefined && first.clock === clock && first.ms === ms) return first;
  return lookUp(clock, ms);
}

// Out of line: `deadlineList` stays small enough for V8 to inline where a call starts.
function lookUp(clock: Clock, ms: number): DeadlineList {
  const first = recent;
  const second = older;
  if (second !== undefined && second.clock === clock && second.ms === ms) {
    older = first;
    recent = second;
    return second;
  }
  let byMs = lists.get(clock);
  if (byMs === undefined) {
    byMs = new Map();
    lists.set(clock, byMs);
  }
  let list = byMs.get(ms);
  if (list === undefined) {
    list = new DeadlineList(clock, ms, (idle) => forget(clock, ms, idle));
    byMs.set(ms, list);
  }
  older = first;
  recent = list;
  return list;
}
