// The storm story's `herd` toy model, re-run in TypeScript bit for bit. Its figures
// (81000 calls without jitter, 6487 with full jitter) are the project's first promise, so this
// file keeps the Python model's arithmetic (seconds, in the same order of operations) and its
// random draws (one CPython-compatible generator, drawn in the same order). What it changes is
// the bookkeeping: an event queue keyed by slot instead of a scan of every client every slot,
// which makes a million clients take seconds instead of hours.
import { checkKnownKeys, checkNumber, checkOptionsObject, show } from '../core/validate.js';
import { createPushback } from '../server/pushback.js';
import {
  type CountedJitter,
  countedMoves,
  countedRingSize,
  DEFAULT_FLUID_CALLS,
  runHerdCounted,
} from './herd-counted.js';
import { ascending, MinHeap } from './min-heap.js';
import { checkSeed, PythonRandom } from './python-random.js';

/** How a failed client's wait is drawn from its backoff ceiling in the herd model. */
export type HerdJitter = 'none' | 'full' | 'equal' | 'decorrelated' | 'band';

/**
 * What the service tells each rejected call, in the herd model.
 *
 * - `'none'`: nothing (the original model: clients wait their own jittered backoff).
 * - `'load-aware'`: stormproof/server's load-aware wait, sent with `stormproof-pushback-ms`: the
 *   k-th rejected client gets a slot k / drain rate ahead; the client waits exactly that and
 *   restarts its backoff.
 * - `'spread'`: stormproof/server's default, a wait drawn uniformly from 1 s to 5 s, sent with
 *   `stormproof-pushback-ms`: the client waits exactly that and restarts its backoff.
 * - `'fixed'`: everyone is told the same 2 s (`Retry-After: 2`, no pushback header): the client
 *   adds its own jittered backoff on top, as the retry loop does with Retry-After.
 */
export type HerdPushback = 'none' | 'load-aware' | 'spread' | 'fixed';

/**
 * How {@link runHerd} runs the herd.
 *
 * - `'exact'`: client by client, the Python model's draws in its order: the published figures,
 *   bit for bit. Its work grows with the calls made.
 * - `'counted'`: clients in the same state due in the same slot are one count, and what happens to
 *   them is drawn as counts (binomial splits, from the same seeded generator): the same herd in
 *   distribution, not bit for bit, at a cost that grows with the slots, not the clients. Not for
 *   `jitter: 'decorrelated'` (every client has its own last wait) or `pushback: 'load-aware'`
 *   (every rejected call gets its own slot).
 * - `'auto'`: `'exact'` up to {@link HERD_EXACT_MAX_CLIENTS} clients
 *   ({@link HERD_EXACT_MAX_CLIENTS_NO_JITTER} with `jitter: 'none'`) and whenever counting is not
 *   possible, `'counted'` above.
 */
export type HerdMode = 'auto' | 'exact' | 'counted';

/** `mode: 'auto'` runs the herd client by client up to this many clients. */
export const HERD_EXACT_MAX_CLIENTS = 100_000;
/**
 * `mode: 'auto'` with `jitter: 'none'` runs client by client only up to this many clients: without
 * jitter the calls grow with the square of the herd (100,000 clients make about 200 million).
 */
export const HERD_EXACT_MAX_CLIENTS_NO_JITTER = 10_000;

/** The options of {@link runHerd}. Every field is optional; the defaults are the storm story's. */
export interface HerdOptions {
  /**
   * How many clients failed together at time 0. An integer from 0 to 2^31 - 1.
   * @default 2000
   * @example
   * ```ts
   * runHerd({ clients: 1_000_000 })
   * ```
   */
  clients?: number | undefined;
  /**
   * How many calls the service answers in each slot; the calls beyond that fail again. The
   * model shuffles each slot's callers and serves the first `perSlot`. An integer >= 1.
   * @default 25
   * @example
   * ```ts
   * runHerd({ perSlot: 10 })
   * ```
   */
  perSlot?: number | undefined;
  /**
   * The width of one slot in milliseconds. An integer >= 1, as the model counts time in whole
   * milliseconds.
   * @default 10
   * @example
   * ```ts
   * runHerd({ slotMs: 1, perSlot: 3 })
   * ```
   */
  slotMs?: number | undefined;
  /**
   * The backoff base in milliseconds: retry `n` (from 0) has the ceiling
   * `min(cap, base * 2 ** n)`. A finite number >= 0; the model uses `baseMs / 1000` seconds.
   * @default 200
   * @example
   * ```ts
   * runHerd({ baseMs: 100 })
   * ```
   */
  baseMs?: number | undefined;
  /**
   * The backoff cap in milliseconds: no ceiling exceeds it. A finite number >= 0; the model uses
   * `capMs / 1000` seconds.
   * @default 5000
   * @example
   * ```ts
   * runHerd({ capMs: 20_000 })
   * ```
   */
  capMs?: number | undefined;
  /**
   * The seed of the model's one generator, `random.Random(seed)` in the Python model: an integer
   * `number` or a `bigint`.
   * @default 7
   * @example
   * ```ts
   * runHerd({ seed: 1 })
   * ```
   */
  seed?: number | bigint | undefined;
  /**
   * How a failed client picks its wait from the ceiling `min(cap, base * 2 ** tries)`:
   *
   * - `'none'`: the ceiling itself, no draw (the storm story's `jitter=False`).
   * - `'full'`: `uniform(0, ceiling)` (the storm story's `jitter=True`).
   * - `'equal'`: `ceiling / 2 + uniform(0, ceiling / 2)`.
   * - `'decorrelated'`: Brooker's `min(cap, uniform(base, previous * 3))`, where `previous` is
   *   this client's last wait, starting at `base`.
   * - `'band'`: gRPC's `ceiling * uniform(0.8, 1.2)`.
   *
   * Every kind but `'none'` draws exactly one `uniform` per failed call.
   * @default 'full'
   * @example
   * ```ts
   * runHerd({ jitter: 'none' }) // { calls: 81000, busiestSlot: 1975, doneAfterSeconds: 376.21 }
   * ```
   */
  jitter?: HerdJitter | undefined;
  /**
   * Called with the number of clients done (served) so far and the total: each time another
   * hundredth of the clients is done, and always once at the end with `(clients, clients)`. The
   * run is synchronous, so this is the only way to watch a long one. An error it throws stops
   * the run and propagates.
   * @default undefined
   * @example
   * ```ts
   * runHerd({ clients: 1_000_000, onProgress: (done, total) => console.log(`${done}/${total}`) })
   * ```
   */
  onProgress?: ((doneClients: number, totalClients: number) => void) | undefined;
  /**
   * What the service tells each rejected call (see {@link HerdPushback}). The server's waits
   * come from stormproof/server's own code (`createPushback`); its drain rate starts at the
   * service's capacity (`perSlot` per `slotMs`), as a server that was serving at capacity before
   * the failure would have measured, and then counts the calls served. Spread draws come from
   * the model's one generator, one per rejected call, before the client's own draw.
   * @default 'none'
   * @example
   * ```ts
   * runHerd({ pushback: 'load-aware' }) // every client that misses the first slot calls about twice
   * ```
   */
  pushback?: HerdPushback | undefined;
  /**
   * Called once for every slot that had calls, in time order, with the slot's start in ms and how
   * many of its calls were served and failed: the herd's timeline, for a chart.
   * @default undefined
   * @example
   * ```ts
   * const failedPerSlot: number[] = [];
   * runHerd({ onSlot: (ms, served, failed) => { failedPerSlot[ms / 10] = failed; } })
   * ```
   */
  onSlot?: ((slotStartMs: number, served: number, failed: number) => void) | undefined;
  /**
   * How the herd is run (see {@link HerdMode}): `'exact'` client by client (the published figures,
   * bit for bit), `'counted'` as counts per state and slot (the same in distribution, in time that
   * does not grow with the clients), or `'auto'`: exact up to 100,000 clients (10,000 without
   * jitter), counted above.
   * @default 'auto'
   * @example
   * ```ts
   * runHerd({ clients: 1_000_000_000, mode: 'counted' }) // seconds, not hours
   * ```
   */
  mode?: HerdMode | undefined;
}

/** What {@link runHerd} reports: the three figures the storm story's model prints. */
export interface HerdResult {
  /** Every call made, first calls included. */
  readonly calls: number;
  /** The most calls in one slot, slot 0 (where every client makes its first call) excluded. */
  readonly busiestSlot: number;
  /**
   * When the last client was served: the end of its slot in seconds, rounded to 2 decimals as
   * Python's `f"{ms / 1000:.2f}"` prints it.
   */
  readonly doneAfterSeconds: number;
}

const OWNER = 'runHerd';
const KNOWN_KEYS = [
  'clients',
  'perSlot',
  'slotMs',
  'baseMs',
  'capMs',
  'seed',
  'jitter',
  'onProgress',
  'onSlot',
  'pushback',
  'mode',
] as const;
const MODES: readonly string[] = ['auto', 'exact', 'counted'];
const PUSHBACK_KINDS: readonly string[] = ['none', 'load-aware', 'spread', 'fixed'];
/** The one Retry-After everyone gets with `pushback: 'fixed'`: the storm story's API said 2 s. */
const FIXED_RETRY_AFTER_MS = 2000;
const JITTER_KINDS: readonly string[] = ['none', 'full', 'equal', 'decorrelated', 'band'];

/**
 * A pending call is one double: `client * TRIES_SPAN + tries`. Carrying `tries` with the client id
 * spares a random read of a per-client array on every call (a cache miss at a million clients),
 * and sorting the doubles sorts by client id, since ids are unique within a slot.
 */
const TRIES_SPAN = 2048;
/** Beyond 1023 tries `2 ** tries` is no longer a finite double. */
const MAX_TRIES = 1024;

/** A growable list of pending calls (packed doubles) due in one slot. */
interface Bucket {
  calls: Float64Array;
  size: number;
}

/**
 * Pending calls grouped by the slot (`ms / slotMs`) in which they happen: a map from slot to
 * bucket plus a binary min-heap of the slots that have a bucket. Cost per call: one map lookup
 * and one append; the heap sees each slot once.
 */
class SlotQueue {
  readonly #buckets = new Map<number, Bucket>();
  readonly #heap = new MinHeap(ascending);
  readonly #spare: Bucket[] = [];

  get isEmpty(): boolean {
    return this.#heap.size === 0;
  }

  push(slot: number, call: number): void {
    let bucket = this.#buckets.get(slot);
    if (bucket === undefined) {
      bucket = this.#spare.pop() ?? { calls: new Float64Array(64), size: 0 };
      this.#buckets.set(slot, bucket);
      this.#heap.push(slot);
    }
    if (bucket.size === bucket.calls.length) {
      const grown = new Float64Array(bucket.calls.length * 2);
      grown.set(bucket.calls);
      bucket.calls = grown;
    }
    bucket.calls[bucket.size++] = call;
  }

  /** The earliest slot that has calls. Only call when not empty. */
  peekSlot(): number {
    return this.#heap.peek()!;
  }

  /** Removes the earliest slot's bucket; give it back with `recycle` once read. */
  popBucket(): Bucket {
    const slot = this.#heap.pop();
    const bucket = this.#buckets.get(slot)!;
    this.#buckets.delete(slot);
    return bucket;
  }

  recycle(bucket: Bucket): void {
    bucket.size = 0;
    this.#spare.push(bucket);
  }
}

/**
 * Sorts one slot's packed calls by client id: insertion sort for a few, else an LSD radix sort
 * on the id in `passes` digits of `digitBits` bits (typed-array `sort()` is several times
 * slower). Returns a view of the sorted calls, which live in either `a` or `b`.
 */
class BatchSorter {
  a = new Float64Array(64);
  b = new Float64Array(64);
  #keys = new Int32Array(64);
  #keysB = new Int32Array(64);
  readonly #counts: Int32Array;
  readonly #passes: number;
  readonly #digitBits: number;

  constructor(clients: number) {
    const bits = Math.max(1, 32 - Math.clz32(Math.max(0, clients - 1)));
    this.#passes = Math.ceil(bits / 11);
    this.#digitBits = Math.ceil(bits / this.#passes);
    this.#counts = new Int32Array(1 << this.#digitBits);
  }

  /** Room for `n` calls in `a` (copy the bucket there before `sort`). */
  reserve(n: number): Float64Array {
    if (this.a.length < n) {
      const size = Math.max(n, this.a.length * 2);
      this.a = new Float64Array(size);
      this.b = new Float64Array(size);
      this.#keys = new Int32Array(size);
      this.#keysB = new Int32Array(size);
    }
    return this.a;
  }

  sort(n: number): Float64Array {
    const a = this.a;
    if (n <= 48) {
      for (let i = 1; i < n; i++) {
        const v = a[i]!;
        let j = i - 1;
        while (j >= 0 && a[j]! > v) {
          a[j + 1] = a[j]!;
          j--;
        }
        a[j + 1] = v;
      }
      return a.subarray(0, n);
    }
    let values = a;
    let keys = this.#keys;
    let otherValues = this.b;
    let otherKeys = this.#keysB;
    for (let i = 0; i < n; i++) keys[i] = Math.floor(values[i]! / TRIES_SPAN);
    const counts = this.#counts;
    const mask = counts.length - 1;
    for (let pass = 0, shift = 0; pass < this.#passes; pass++, shift += this.#digitBits) {
      counts.fill(0);
      for (let i = 0; i < n; i++) counts[(keys[i]! >>> shift) & mask]!++;
      if (counts[(keys[0]! >>> shift) & mask] === n) continue; // one digit for all: no move
      let sum = 0;
      for (let d = 0; d <= mask; d++) {
        const count = counts[d]!;
        counts[d] = sum;
        sum += count;
      }
      for (let i = 0; i < n; i++) {
        const key = keys[i]!;
        const at = counts[(key >>> shift) & mask]!++;
        otherValues[at] = values[i]!;
        otherKeys[at] = key;
      }
      const swapValues = values;
      values = otherValues;
      otherValues = swapValues;
      const swapKeys = keys;
      keys = otherKeys;
      otherKeys = swapKeys;
    }
    return values.subarray(0, n);
  }
}

/** The herd models' common options, checked, with their defaults: 2000 clients, 25 answered per 10 ms slot. */
export function checkHerdService(
  owner: string,
  o: Record<string, unknown>,
): { clients: number; perSlot: number; slotMs: number } {
  const clients = checkNumber(owner, 'clients', o.clients ?? 2000, {
    min: 0,
    max: 2 ** 31 - 1,
    integer: true,
  });
  const perSlot = checkNumber(owner, 'perSlot', o.perSlot ?? 25, { min: 1, integer: true });
  const slotMs = checkNumber(owner, 'slotMs', o.slotMs ?? 10, { min: 1, integer: true });
  return { clients, perSlot, slotMs };
}

/**
 * The slot in which a client due at `due` seconds next calls, when the wait was drawn in slot
 * `current`: the first slot `k > current` whose test `due < (k * slotMs + slotMs) / 1000` holds,
 * evaluated exactly as the Python loop evaluates it (integer milliseconds, then one division).
 */
export function slotOf(due: number, current: number, slotMs: number): number {
  let k = Math.floor((due * 1000) / slotMs);
  if (k <= current) k = current + 1;
  while (!(due < (k * slotMs + slotMs) / 1000)) k++;
  while (k - 1 > current && due < (k * slotMs) / 1000) k--;
  return k;
}

/** Seconds as Python's `f"{seconds:.2f}"` prints them, for `ms / 1000` with whole `ms`. */
export function roundLikePython(ms: number): number {
  // toFixed and Python both round the double's exact value; they differ only on an exact tie,
  // where Python rounds half to even and toFixed rounds up. ms / 1000 is an exact tie at two
  // decimals when ms is an odd multiple of 125 (0.125 s, 0.375 s, ...).
  if (ms % 250 === 125) {
    const hundredths = (ms - 5) / 10;
    return (hundredths % 2 === 0 ? hundredths : hundredths + 1) / 100;
  }
  return Number((ms / 1000).toFixed(2));
}

/**
 * The waits `pushback: 'spread'` tells, in ms, as the counted herd reads them: stormproof/server's
 * own range (its `next` at a draw of 0 and of 1), shifted by the 1 ms the client's round-up to
 * whole ms adds at most, since `ceil(x)` falls in a slot exactly when `x + 1` does.
 */
function spreadRange(): [number, number] {
  const at = (u: number) => createPushback({ mode: 'spread' }, () => u).next(0);
  return [at(0) + 1, at(1) + 1];
}

function checkJitter(value: unknown): HerdJitter {
  if (typeof value === 'string' && JITTER_KINDS.includes(value)) return value as HerdJitter;
  throw new TypeError(
    `stormproof: ${OWNER} jitter must be one of ${JITTER_KINDS.map((k) => `'${k}'`).join(', ')}, got ${show(value)}`,
  );
}

function checkPushback(value: unknown): HerdPushback {
  if (typeof value === 'string' && PUSHBACK_KINDS.includes(value)) return value as HerdPushback;
  throw new TypeError(
    `stormproof: ${OWNER} pushback must be one of ${PUSHBACK_KINDS.map((k) => `'${k}'`).join(', ')}, got ${show(value)}`,
  );
}

function checkMode(value: unknown): HerdMode {
  if (typeof value === 'string' && MODES.includes(value)) return value as HerdMode;
  throw new TypeError(
    `stormproof: ${OWNER} mode must be one of ${MODES.map((k) => `'${k}'`).join(', ')}, got ${show(value)}`,
  );
}

function checkCallback<F>(name: string, value: unknown): F | undefined {
  if (value === undefined || typeof value === 'function') return value as F | undefined;
  throw new TypeError(`stormproof: ${OWNER} ${name} must be a function, got ${show(value)}`);
}

/**
 * Runs the storm story's `herd` toy model: `clients` clients all fail at time 0, the
 * service answers `perSlot` calls per `slotMs` slot, and every failed client retries after a
 * capped exponential backoff with the chosen jitter. Returns the model's three printed figures.
 *
 * The result is bit for bit the Python model's for the same options (one `random.Random(seed)`,
 * each slot `shuffle`d in ascending client order, then one draw per failed client in shuffled
 * order; all arithmetic in seconds in the model's order). The work grows with the number of calls,
 * not clients times slots: a million clients with full jitter (about 85 million calls) take
 * seconds. Without jitter the calls themselves grow with the square of `clients` (every wave
 * brings back almost everyone); with no pushback either, the herd moves as one and is run a wave
 * at a time, with the same figures.
 *
 * Where the Python model would stop with `OverflowError` (a client failing 1024 times, so that
 * `2 ** tries` no longer fits a float), this model carries on with the ceiling at the cap.
 *
 * @throws TypeError or RangeError naming the option and value when an option is invalid or
 *   unknown.
 * @example
 * ```ts
 * runHerd({ jitter: 'none' }); // { calls: 81000, busiestSlot: 1975, doneAfterSeconds: 376.21 }
 * runHerd();                   // { calls: 6487, busiestSlot: 205, doneAfterSeconds: 3.45 }
 * ```
 */
export function runHerd(options?: HerdOptions): HerdResult {
  const o = checkOptionsObject(OWNER, options);
  checkKnownKeys(OWNER, o, KNOWN_KEYS);
  const { clients, perSlot, slotMs } = checkHerdService(OWNER, o);
  const baseMs = checkNumber(OWNER, 'baseMs', o.baseMs ?? 200, { min: 0 });
  const capMs = checkNumber(OWNER, 'capMs', o.capMs ?? 5000, { min: 0 });
  const seed = checkSeed(OWNER, o.seed ?? 7);
  const jitter = checkJitter(o.jitter ?? 'full');
  const onProgress = checkCallback<HerdOptions['onProgress']>('onProgress', o.onProgress);
  const onSlot = checkCallback<HerdOptions['onSlot']>('onSlot', o.onSlot);
  const pushback = checkPushback(o.pushback ?? 'none');
  const mode = checkMode(o.mode ?? 'auto');

  const base = baseMs / 1000;
  const cap = capMs / 1000;
  // ceilings[t] = min(cap, base * 2 ** t), in the model's arithmetic. Past the first t whose
  // ceiling is the cap (or 0 when base is 0) it never changes, so tries saturate there.
  const ceilings: number[] = [];
  for (let t = 0, power = 1; t < MAX_TRIES; t++, power *= 2) {
    const ceiling = Math.min(cap, base * power); // power = 2 ** t, exact by doubling
    ceilings.push(ceiling);
    if (ceiling === cap || base === 0) break;
  }
  if (ceilings.length === MAX_TRIES) ceilings.push(cap);
  const ceilingOf = Float64Array.from(ceilings);
  const saturated = ceilingOf.length - 1;

  const rng = new PythonRandom(seed);
  if (mode !== 'exact') {
    const why =
      jitter === 'decorrelated'
        ? "jitter 'decorrelated' (every client has its own last wait)"
        : pushback === 'load-aware'
          ? "pushback 'load-aware' (every rejected call gets its own slot)"
          : undefined;
    const params =
      why === undefined
        ? {
            clients,
            perSlot,
            slotMs,
            ceilings: ceilingOf,
            jitter: jitter as CountedJitter,
            pushback: pushback as 'none' | 'fixed' | 'spread',
            fixedMs: FIXED_RETRY_AFTER_MS,
            spreadMs: spreadRange(),
            rng,
            fluidCalls: DEFAULT_FLUID_CALLS,
            onProgress,
            onSlot,
          }
        : undefined;
    const fits = params !== undefined && countedRingSize(countedMoves(params)) !== undefined;
    if (mode === 'counted' && !fits) {
      throw new RangeError(
        why !== undefined
          ? `stormproof: ${OWNER} mode 'counted' cannot count ${why}; use mode 'exact' or 'auto'`
          : `stormproof: ${OWNER} mode 'counted' needs capMs / slotMs (${show(capMs)} / ${show(slotMs)}) small enough for its ring of future slots; use mode 'exact' or a wider slotMs`,
      );
    }
    const large =
      clients >
      (jitter === 'none' && pushback !== 'spread'
        ? HERD_EXACT_MAX_CLIENTS_NO_JITTER
        : HERD_EXACT_MAX_CLIENTS);
    if (fits && (mode === 'counted' || large)) {
      const r = runHerdCounted(params!);
      return {
        calls: r.calls,
        busiestSlot: r.busiestSlot,
        doneAfterSeconds: roundLikePython((r.lastSlot + 1) * slotMs),
      };
    }
  }
  if (jitter === 'none' && pushback === 'none') {
    return runLockstep(clients, perSlot, slotMs, ceilingOf, onProgress, onSlot);
  }
  const previous = jitter === 'decorrelated' ? new Float64Array(clients).fill(base) : undefined;
  const queue = new SlotQueue();
  for (let c = 0; c < clients; c++) queue.push(0, c * TRIES_SPAN);
  const sorter = new BatchSorter(clients);
  // The server's answer to a rejected call, from stormproof/server's own code.
  const server =
    pushback === 'none'
      ? undefined
      : createPushback(
          pushback === 'load-aware'
            ? { mode: 'load-aware', initialDrainPerSecond: (perSlot * 1000) / slotMs }
            : pushback === 'spread'
              ? { mode: 'spread' }
              : { mode: 'fixed', ms: FIXED_RETRY_AFTER_MS },
          () => rng.random(),
        );
  const exact = pushback === 'load-aware' || pushback === 'spread';

  const progressStep = Math.max(1, Math.floor(clients / 100));
  let nextProgress = progressStep;
  let calls = 0;
  let busiest = 0;
  let done = 0;
  let lastSlot = -1;

  while (!queue.isEmpty) {
    const slot = queue.peekSlot();
    const bucket = queue.popBucket();
    const count = bucket.size;
    sorter.reserve(count).set(bucket.calls.subarray(0, count));
    queue.recycle(bucket);
    // The Python loop lists the due clients in dict order, which is ascending client id.
    const now = sorter.sort(count);
    rng.shuffle(now);

    const ms = slot * slotMs;
    calls += count;
    if (ms > 0 && count > busiest) busiest = count;
    onSlot?.(ms, Math.min(count, perSlot), Math.max(0, count - perSlot));
    const seconds = ms / 1000;
    if (server !== undefined)
      for (let i = Math.min(count, perSlot); i > 0; i--) server.completed(ms);
    for (let i = perSlot; i < count; i++) {
      const call = now[i]!;
      const tries = call - Math.floor(call / TRIES_SPAN) * TRIES_SPAN; // call % TRIES_SPAN, faster
      // What the server said, as the client reads it: whole milliseconds (retry-after-ms).
      const toldMs = server === undefined ? 0 : Math.ceil(server.next(ms));
      if (exact) {
        // stormproof-pushback-ms: wait exactly that, no jitter, and restart the backoff.
        queue.push(slotOf(seconds + toldMs / 1000, slot, slotMs), call - tries);
        continue;
      }
      const ceiling = ceilingOf[tries]!;
      let wait: number;
      switch (jitter) {
        case 'none':
          wait = ceiling;
          break;
        case 'full':
          wait = rng.uniform(0, ceiling);
          break;
        case 'equal':
          wait = ceiling / 2 + rng.uniform(0, ceiling / 2);
          break;
        case 'decorrelated': {
          const c = (call - tries) / TRIES_SPAN;
          wait = Math.min(cap, rng.uniform(base, previous![c]! * 3));
          previous![c] = wait;
          break;
        }
        case 'band':
          wait = ceiling * rng.uniform(0.8, 1.2);
          break;
      }
      // A Retry-After is added to the jittered wait (the retry loop's rule).
      if (toldMs > 0) wait += toldMs / 1000;
      queue.push(slotOf(seconds + wait, slot, slotMs), tries < saturated ? call + 1 : call);
    }
    done += Math.min(count, perSlot);
    lastSlot = slot;
    if (onProgress !== undefined && done >= nextProgress && done < clients) {
      onProgress(done, clients);
      nextProgress = (Math.floor(done / progressStep) + 1) * progressStep;
    }
  }
  onProgress?.(clients, clients);

  return {
    calls,
    busiestSlot: busiest,
    doneAfterSeconds: roundLikePython((lastSlot + 1) * slotMs),
  };
}

/**
 * The exact herd without jitter or pushback, a wave at a time. Every client starts in slot 0 with
 * no failed try and waits exactly its ceiling, so all the clients due in a slot have failed as
 * often as each other: they move as one. The shuffle then only decides who is served, which
 * changes none of the figures, and the generator is drawn for nothing else, so skipping both
 * gives the client-by-client loop's figures, callbacks included, in time that grows with the
 * waves instead of the calls (the 81,000 calls of the storm story's `jitter=False` in 80 steps).
 */
function runLockstep(
  clients: number,
  perSlot: number,
  slotMs: number,
  ceilingOf: Float64Array,
  onProgress: HerdOptions['onProgress'],
  onSlot: HerdOptions['onSlot'],
): HerdResult {
  const saturated = ceilingOf.length - 1;
  const progressStep = Math.max(1, Math.floor(clients / 100));
  let nextProgress = progressStep;
  let calls = 0;
  let busiest = 0;
  let done = 0;
  let lastSlot = -1;
  let waiting = clients;
  let slot = 0;
  let tries = 0;
  while (waiting > 0) {
    const ms = slot * slotMs;
    const served = Math.min(waiting, perSlot);
    calls += waiting;
    if (ms > 0 && waiting > busiest) busiest = waiting;
    onSlot?.(ms, served, waiting - served);
    waiting -= served;
    done += served;
    lastSlot = slot;
    if (onProgress !== undefined && done >= nextProgress && done < clients) {
      onProgress(done, clients);
      nextProgress = (Math.floor(done / progressStep) + 1) * progressStep;
    }
    if (waiting > 0) {
      slot = slotOf(ms / 1000 + ceilingOf[tries]!, slot, slotMs);
      if (tries < saturated) tries++;
    }
  }
  onProgress?.(clients, clients);
  return {
    calls,
    busiestSlot: busiest,
    doneAfterSeconds: roundLikePython((lastSlot + 1) * slotMs),
  };
}
