// The herd counted instead of followed: clients in the same state (the same number of failed
// tries) due in the same slot are interchangeable, so a slot holds one count per state, and what
// happens to a group is drawn as numbers: how many of each state are served (the shuffle's
// first `perSlot`), and how many of each state's failures land in each later slot (a multinomial,
// drawn as binomial splits). The cost grows with the slots and the states, not with the clients.
// Where a slot has so many callers that its draws no longer matter, the failures move by their
// expected numbers instead (see `fluidCalls`). Used by `runHerd` (herd.ts) for large herds.
import { binomial } from './binomial.js';
import type { PythonRandom } from './python-random.js';

/** The jitter kinds the counted herd can count: a wait uniform over a range, or a fixed one. */
export type CountedJitter = 'none' | 'full' | 'equal' | 'band';

/** What the counted herd needs: the model's parameters, checked by `runHerd`. */
export interface CountedHerdParams {
  readonly clients: number;
  readonly perSlot: number;
  readonly slotMs: number;
  /** `min(cap, base * 2 ** tries)` in seconds, for tries from 0 to the saturated count. */
  readonly ceilings: Float64Array;
  readonly jitter: CountedJitter;
  /** `'spread'`: every rejected client waits uniformly in [spreadMs[0], spreadMs[1]] ms and restarts its backoff. */
  readonly pushback: 'none' | 'fixed' | 'spread';
  /** What `'fixed'` adds to each wait, in ms. */
  readonly fixedMs: number;
  /** The told waits of `'spread'`, in ms, already shifted for the client's round-up to whole ms. */
  readonly spreadMs: readonly [number, number];
  readonly rng: PythonRandom;
  /**
   * A slot with at least this many callers (and at least twice `perSlot`) moves its failures by
   * their expected numbers instead of drawing them.
   */
  readonly fluidCalls: number;
  readonly onProgress?: ((done: number, total: number) => void) | undefined;
  readonly onSlot?: ((slotStartMs: number, served: number, failed: number) => void) | undefined;
}

/**
 * The default `fluidCalls`: 5,000 callers in one slot. Such a slot always serves exactly
 * `perSlot` (it has at least twice as many callers), so its expected path is the drawn one's
 * mean; what moving by the mean leaves out is the draw's spread, a standard deviation of at most
 * `sqrt(C)` calls on the `C` calls of a later slot: 1.4% of them at 5,000, less above.
 */
export const DEFAULT_FLUID_CALLS = 5000;

/** The most cells (ring slots times states) the counted herd allocates. */
export const MAX_COUNTED_CELLS = 2 ** 22;

/** A wait range in slot units (`ms / slotMs`) and the state a client moves to after it. */
interface Move {
  readonly lo: number;
  readonly hi: number;
  readonly next: number;
}

/**
 * The slot offset of a wait of `x` slot widths: the first later slot whose end is past it,
 * `max(1, floor(x))` (slotOf in herd.ts, in exact arithmetic).
 */
function cellOf(x: number): number {
  return Math.max(1, Math.floor(x));
}

/** The cell of a range's upper end: a range ending on a boundary ends in the cell before it. */
function cellOfEnd(x: number): number {
  return Math.max(1, Math.ceil(x) - 1);
}

/** Where cell `d` starts and ends, in slot widths: cell 1 is [0, 2), cell d >= 2 is [d, d + 1). */
const cellStart = (d: number) => (d === 1 ? 0 : d);
const cellEnd = (d: number) => d + 1;

/** Each state's wait range, in slot widths, and where its clients go next. */
export function countedMoves(p: CountedHerdParams): Move[] {
  const saturated = p.ceilings.length - 1;
  const moves: Move[] = [];
  for (let t = 0; t <= saturated; t++) {
    const c = (p.ceilings[t]! * 1000) / p.slotMs;
    if (p.pushback === 'spread') {
      moves.push({ lo: p.spreadMs[0] / p.slotMs, hi: p.spreadMs[1] / p.slotMs, next: 0 });
      continue;
    }
    const shift = p.pushback === 'fixed' ? p.fixedMs / p.slotMs : 0;
    const [lo, hi] =
      p.jitter === 'none'
        ? [c, c]
        : p.jitter === 'full'
          ? [0, c]
          : p.jitter === 'equal'
            ? [c / 2, c]
            : [0.8 * c, 1.2 * c];
    moves.push({ lo: lo + shift, hi: hi + shift, next: Math.min(t + 1, saturated) });
  }
  return moves;
}

/** The ring of future slots the counted herd needs for `moves`, or undefined when it is too big. */
export function countedRingSize(moves: readonly Move[]): number | undefined {
  let farthest = 1;
  for (const m of moves) farthest = Math.max(farthest, cellOf(m.hi));
  let size = 2;
  while (size < farthest + 2) size *= 2;
  return size * moves.length <= MAX_COUNTED_CELLS ? size : undefined;
}

/**
 * Runs the herd as counts (see the file's header). The same world as `runHerd`'s exact mode, the
 * same figures in distribution, not bit for bit: the draws differ.
 */
export function runHerdCounted(p: CountedHerdParams): {
  calls: number;
  busiestSlot: number;
  lastSlot: number;
} {
  const { clients, perSlot, slotMs, rng, fluidCalls, onProgress, onSlot } = p;
  const moves = countedMoves(p);
  const states = moves.length;
  const size = countedRingSize(moves);
  if (size === undefined) throw new RangeError('stormproof: runHerd counted ring too large');
  const mask = size - 1;
  const random = () => rng.random();

  // point[slot * states + state]: clients due in that slot; density and its changes: clients per
  // slot spread evenly over a run of slots (by the fluid step), added where a run starts and
  // taken off after it ends; runs counts the runs so a state's density snaps back to exactly 0.
  const point = new Float64Array(size * states);
  const change = new Float64Array(size * states);
  const runsChange = new Int32Array(size * states);
  const marked = new Uint8Array(size);
  const density = new Float64Array(states);
  const runs = new Int32Array(states);
  let markedSlots = 0;
  let runningStates = 0;
  const count = new Float64Array(states);

  const mark = (slot: number) => {
    const i = slot & mask;
    if (marked[i] === 0) {
      marked[i] = 1;
      markedSlots++;
    }
  };
  const addPoint = (slot: number, state: number, n: number) => {
    point[(slot & mask) * states + state]! += n;
    mark(slot);
  };
  const addRun = (from: number, to: number, state: number, perSlotN: number) => {
    change[(from & mask) * states + state]! += perSlotN;
    runsChange[(from & mask) * states + state]!++;
    change[((to + 1) & mask) * states + state]! -= perSlotN;
    runsChange[((to + 1) & mask) * states + state]!--;
    mark(from);
    mark(to + 1);
  };

  /** Draws where `n` clients of one move land, from slot `slot`, over waits [lo, hi] slot widths. */
  const spreadDrawn = (slot: number, n: number, lo: number, hi: number, state: number): void => {
    if (n === 0) return;
    const first = cellOf(lo);
    const last = cellOfEnd(hi);
    if (first >= last || hi <= lo) {
      addPoint(slot + first, state, n);
      return;
    }
    const cells = last - first + 1;
    if (n <= 8 || n * 2 <= cells) {
      // Fewer clients than cells: each draws its own wait.
      for (let i = 0; i < n; i++) addPoint(slot + cellOf(lo + (hi - lo) * random()), state, 1);
      return;
    }
    if (n <= cells * 16) {
      // A few clients per cell: cell by cell, each taking a binomial share of those left, in
      // proportion to its width among the widths left; the small means keep each draw short.
      let left = n;
      for (let d = first; d <= last && left > 0; d++) {
        const from = Math.max(lo, cellStart(d));
        const to = Math.min(hi, cellEnd(d));
        const here = d === last ? left : binomial(left, (to - from) / (hi - from), random);
        if (here > 0) addPoint(slot + d, state, here);
        left -= here;
      }
      return;
    }
    // Many per cell: split at a cell boundary near the middle; each side gets a binomial share.
    let cut = Math.floor((lo + hi) / 2);
    cut = Math.min(Math.max(cut, Math.max(2, first + 1)), last);
    const left = binomial(n, (cut - lo) / (hi - lo), random);
    spreadDrawn(slot, left, lo, cut, state);
    spreadDrawn(slot, n - left, cut, hi, state);
  };

  /** Moves `n` clients (a real number) by their expected shares: boundary cells and a run. */
  const spreadMean = (slot: number, n: number, lo: number, hi: number, state: number): void => {
    const first = cellOf(lo);
    const last = cellOfEnd(hi);
    if (first >= last || hi <= lo) {
      addPoint(slot + first, state, n);
      return;
    }
    const perWidth = n / (hi - lo);
    addPoint(slot + first, state, perWidth * (cellEnd(first) - lo));
    addPoint(slot + last, state, perWidth * (hi - cellStart(last)));
    if (last - first >= 2) addRun(slot + first + 1, slot + last - 1, state, perWidth);
  };

  /** The one state with callers in `count`, if it keeps its state and moves by a fixed wait; else -1. */
  const loneState = (counts: Float64Array): number => {
    let lone = -1;
    for (let s = 0; s < states; s++) {
      if (counts[s] === 0) continue;
      if (lone >= 0) return -1;
      lone = s;
    }
    if (lone < 0) return -1;
    const m = moves[lone]!;
    const fixed = cellOf(m.lo) >= cellOfEnd(m.hi) || m.hi <= m.lo;
    return m.next === lone && fixed ? lone : -1;
  };

  addPoint(0, 0, clients);
  const progressStep = Math.max(1, Math.floor(clients / 100));
  let nextProgress = progressStep;
  let calls = 0;
  let busiest = 0;
  let done = 0;
  let lastSlot = -1;
  let slot = 0;
  let carry = 0;

  for (;;) {
    if (runningStates === 0) {
      if (markedSlots === 0) break;
      while (marked[slot & mask] === 0) slot++;
    }
    const at = slot & mask;
    if (marked[at] === 1) {
      marked[at] = 0;
      markedSlots--;
    }
    let total = 0;
    for (let s = 0, i = at * states; s < states; s++, i++) {
      if (runsChange[i] !== 0 || change[i] !== 0) {
        const before = runs[s]!;
        runs[s] = before + runsChange[i]!;
        density[s] = runs[s] === 0 ? 0 : density[s]! + change[i]!;
        if (before === 0 && runs[s]! > 0) runningStates++;
        else if (before > 0 && runs[s] === 0) runningStates--;
        runsChange[i] = 0;
        change[i] = 0;
      }
      const n = point[i]! + density[s]!;
      point[i] = 0;
      count[s] = n;
      total += n;
    }

    const fluid = total >= fluidCalls && total >= 2 * perSlot;
    if (!fluid) {
      // Whole clients: a share left by the fluid step rounds up or down at random, in proportion,
      // and what rounding added or took is carried to the next share, so that no client is made
      // or lost: the carry stays within (-1, 1).
      total = 0;
      for (let s = 0; s < states; s++) {
        const n = count[s]!;
        if (n === 0) continue;
        const x = n + carry;
        const whole = Math.floor(x);
        const rounded = x < 0 ? 0 : x > whole && random() < x - whole ? whole + 1 : whole;
        carry = x - rounded;
        count[s] = rounded;
        total += rounded;
      }
    }
    if (total === 0) {
      slot++;
      continue;
    }
    const alone = fluid && runningStates === 0 && markedSlots === 0 ? loneState(count) : -1;
    if (alone >= 0) {
      // One group left, due in one slot, that stays in its state and lands in one later slot (no
      // jitter, every try at the cap): its waves are known in advance. Run them here, one step per
      // wave, instead of walking every empty slot between them (10^9 clients without jitter make
      // 4 * 10^7 waves 500 slots apart). The arithmetic is the loop's, so the figures are too.
      const step = cellOf(moves[alone]!.lo);
      let n = total;
      while (n >= fluidCalls && n >= 2 * perSlot) {
        const calledHere = Math.round(n);
        calls += calledHere;
        if (slot > 0 && calledHere > busiest) busiest = calledHere;
        onSlot?.(slot * slotMs, perSlot, calledHere - perSlot);
        n *= 1 - perSlot / n;
        done += perSlot;
        lastSlot = slot;
        if (onProgress !== undefined && done >= nextProgress && done < clients) {
          onProgress(Math.floor(done), clients);
          nextProgress = (Math.floor(done / progressStep) + 1) * progressStep;
        }
        slot += step;
      }
      addPoint(slot, alone, n);
      continue;
    }
    const calledHere = fluid ? Math.round(total) : total;
    const served = Math.min(calledHere, perSlot);
    calls += calledHere;
    if (slot > 0 && calledHere > busiest) busiest = calledHere;
    onSlot?.(slot * slotMs, served, calledHere - served);

    if (fluid) {
      const failedShare = 1 - perSlot / total;
      for (let s = 0; s < states; s++) {
        const n = count[s]!;
        if (n === 0) continue;
        const m = moves[s]!;
        spreadMean(slot, n * failedShare, m.lo, m.hi, m.next);
      }
    } else if (total > perSlot) {
      serveDrawn(count, states, total, perSlot, random);
      for (let s = 0; s < states; s++) {
        const n = count[s]!;
        if (n === 0) continue;
        const m = moves[s]!;
        spreadDrawn(slot, n, m.lo, m.hi, m.next);
      }
    }
    done += served;
    lastSlot = slot;
    if (onProgress !== undefined && done >= nextProgress && done < clients) {
      onProgress(Math.floor(done), clients);
      nextProgress = (Math.floor(done / progressStep) + 1) * progressStep;
    }
    slot++;
  }
  onProgress?.(clients, clients);
  return { calls, busiestSlot: busiest, lastSlot };
}

/**
 * Takes the `perSlot` served clients out of `count` (whole numbers, `total` of them), as the
 * shuffle's first `perSlot` would: one client at a time, uniformly among those left, whichever
 * is fewer of the served and the failed. Leaves the failed in `count`.
 */
function serveDrawn(
  count: Float64Array,
  states: number,
  total: number,
  perSlot: number,
  random: () => number,
): void {
  let nonEmpty = 0;
  for (let s = 0; s < states; s++) if (count[s]! > 0) nonEmpty++;
  if (nonEmpty === 1) {
    for (let s = 0; s < states; s++) if (count[s]! > 0) count[s] = total - perSlot;
    return;
  }
  const failed = total - perSlot;
  const pickServed = perSlot <= failed;
  const picks = pickServed ? perSlot : failed;
  const taken = new Float64Array(states);
  let left = total;
  for (let i = 0; i < picks; i++) {
    let r = Math.floor(random() * left);
    let s = 0;
    while (r >= count[s]! - taken[s]!) {
      r -= count[s]! - taken[s]!;
      s++;
    }
    taken[s]!++;
    left--;
  }
  for (let s = 0; s < states; s++) count[s] = pickServed ? count[s]! - taken[s]! : taken[s]!;
}
