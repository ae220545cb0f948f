// The storm story's herd with a retry schedule of your choosing. `runHerd` (herd.ts) is the
// storm story's model itself, tuned for a million clients; this runner keeps the same world (every
// client fails at time 0, the service answers `perSlot` calls per slot and fails the rest, one
// CPython-compatible generator drawn in the model's order) but asks a schedule, or a stateful
// client such as stormproof's own engine, what each failed client does next: wait and call
// again, or give up. Configured like the storm story's full jitter, it prints the storm story's figures.
import type { RandomSource } from '../core/clock.js';
import { checkKnownKeys, checkNumber, checkOptionsObject, show } from '../core/validate.js';
import { checkHerdService, type HerdResult, roundLikePython, slotOf } from './herd.js';
import { ascending, MinHeap } from './min-heap.js';
import { checkSeed, PythonRandom } from './python-random.js';

/**
 * A retry schedule without state beyond the retry count: how many retries a client makes, how
 * long it waits before each, and an optional deadline. Describes most libraries' defaults.
 *
 * @example
 * ```ts
 * // The storm story's full jitter, with no limit on retries.
 * const fullJitter: RetrySchedule = {
 *   maxRetries: Number.POSITIVE_INFINITY,
 *   waitSeconds: (n, random) => Math.min(5, 0.2 * 2 ** n) * random(),
 * };
 * ```
 */
export interface RetrySchedule {
  /**
   * How many retries a client makes after its first call before it gives up: an integer >= 0,
   * or `Infinity` for no limit (the client then calls until it is served).
   * @default none: required
   * @example
   * ```ts
   * { maxRetries: 10 } // p-retry's default
   * ```
   */
  readonly maxRetries: number;
  /**
   * The wait in seconds before retry `retryIndex` (0 for the first retry). `random` is the herd's
   * seeded generator, uniform in [0, 1): draw from it (as often as the schedule needs) so that a
   * run repeats for a seed. Must return a finite number >= 0.
   * @default none: required
   * @example
   * ```ts
   * { waitSeconds: (n) => 2 ** n } // 1 s, 2 s, 4 s, ... no jitter
   * ```
   */
  readonly waitSeconds: (retryIndex: number, random: RandomSource) => number;
  /**
   * A per-client deadline in seconds from the client's first call (time 0). A retry whose wait
   * would end past it is not made: the client gives up at once, as the storm story's loop
   * does (`elapsed + wait > deadline`). The wait is drawn before the check. A finite number > 0,
   * or `undefined` for none.
   * @default undefined (no deadline)
   * @example
   * ```ts
   * { deadlineSeconds: 3 }
   * ```
   */
  readonly deadlineSeconds?: number | undefined;
}

/**
 * One client of the herd with state of its own, for retry logic that a {@link RetrySchedule}
 * cannot describe (an engine with budgets, deadlines and per-call state). Made by a
 * {@link HerdClientFactory}.
 */
export interface HerdClient {
  /**
   * The client's call failed at `nowMs` (the start of its slot, whole milliseconds since time 0).
   * Returns the wait in seconds before it calls again (a finite number >= 0), or `undefined` to
   * give up.
   */
  failed(nowMs: number): number | undefined;
  /** The client's call was served at `nowMs`; it makes no more calls. Optional. */
  served?(nowMs: number): void;
}

/**
 * Makes client number `client` (from 0) of the herd. `random` is the herd's seeded generator,
 * uniform in [0, 1), shared by every client; draw jitter from it so that a run repeats.
 * Called once per client, in client order, before the first slot.
 *
 * @example
 * ```ts
 * const neverRetry: HerdClientFactory = () => ({ failed: () => undefined });
 * ```
 */
export type HerdClientFactory = (client: number, random: RandomSource) => HerdClient;

/** The options of {@link runHerdSchedule}. All but `schedule` default to the storm story's. */
export interface HerdScheduleOptions {
  /**
   * What each failed client does next: a {@link RetrySchedule}, or a {@link HerdClientFactory}
   * for clients with state of their own.
   * @default none: required
   * @example
   * ```ts
   * runHerdSchedule({ schedule: { maxRetries: 2, waitSeconds: (n) => 0.3 * 2 ** n } })
   * ```
   */
  schedule: RetrySchedule | HerdClientFactory;
  /**
   * How many clients failed together at time 0. An integer from 0 to 2^31 - 1.
   * @default 2000
   * @example
   * ```ts
   * runHerdSchedule({ schedule, clients: 10_000 })
   * ```
   */
  clients?: number | undefined;
  /**
   * How many calls the service answers in each slot; the calls beyond that fail. An integer >= 1.
   * @default 25
   * @example
   * ```ts
   * runHerdSchedule({ schedule, perSlot: 10 })
   * ```
   */
  perSlot?: number | undefined;
  /**
   * The width of one slot in whole milliseconds. An integer >= 1.
   * @default 10
   * @example
   * ```ts
   * runHerdSchedule({ schedule, slotMs: 1, perSlot: 3 })
   * ```
   */
  slotMs?: number | undefined;
  /**
   * The seed of the herd's one generator, `random.Random(seed)` in the Python model: an integer
   * `number` or a `bigint`.
   * @default 7
   * @example
   * ```ts
   * runHerdSchedule({ schedule, seed: 1 })
   * ```
   */
  seed?: number | bigint | undefined;
}

/** What {@link runHerdSchedule} reports: the model's three figures and the clients that gave up. */
export interface HerdScheduleResult extends HerdResult {
  /**
   * When the last client was served or gave up: the end of that slot in seconds, rounded to 2
   * decimals as Python's `f"{ms / 1000:.2f}"` prints it.
   */
  readonly doneAfterSeconds: number;
  /** Clients that gave up without being served. */
  readonly gaveUp: number;
}

const OWNER = 'runHerdSchedule';
const KNOWN_KEYS = ['schedule', 'clients', 'perSlot', 'slotMs', 'seed'] as const;
const SCHEDULE_KEYS = ['maxRetries', 'waitSeconds', 'deadlineSeconds'] as const;

/** Pending client ids grouped by slot, with a binary min-heap of the slots that have any. */
class Slots {
  readonly #buckets = new Map<number, number[]>();
  readonly #heap = new MinHeap(ascending);

  get isEmpty(): boolean {
    return this.#heap.size === 0;
  }

  push(slot: number, client: number): void {
    const bucket = this.#buckets.get(slot);
    if (bucket !== undefined) {
      bucket.push(client);
      return;
    }
    this.#buckets.set(slot, [client]);
    this.#heap.push(slot);
  }

  /** Removes and returns the earliest slot and its clients. Only call when not empty. */
  pop(): [slot: number, clients: number[]] {
    const top = this.#heap.pop();
    const clients = this.#buckets.get(top)!;
    this.#buckets.delete(top);
    return [top, clients];
  }
}

function checkSchedule(value: unknown): RetrySchedule | HerdClientFactory {
  if (typeof value === 'function') return value as HerdClientFactory;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TypeError(
      `stormproof: ${OWNER} schedule must be a RetrySchedule ({ maxRetries, waitSeconds }) or a client factory function, got ${show(value)}`,
    );
  }
  const s = value as Record<string, unknown>;
  checkKnownKeys(`${OWNER} schedule`, s, SCHEDULE_KEYS);
  const maxRetries = s.maxRetries;
  if (maxRetries !== Number.POSITIVE_INFINITY) {
    checkNumber(OWNER, 'schedule.maxRetries', maxRetries, { min: 0, integer: true });
  }
  if (typeof s.waitSeconds !== 'function') {
    throw new TypeError(
      `stormproof: ${OWNER} schedule.waitSeconds must be a function, got ${show(s.waitSeconds)}`,
    );
  }
  if (s.deadlineSeconds !== undefined) {
    checkNumber(OWNER, 'schedule.deadlineSeconds', s.deadlineSeconds, {
      min: 0,
      minExclusive: true,
    });
  }
  return value as RetrySchedule;
}

/** A wait must be a finite number >= 0, or the client could never be placed in a slot. */
function checkWait(wait: unknown, client: number): number {
  if (typeof wait === 'number' && wait >= 0 && wait < Number.POSITIVE_INFINITY) return wait;
  throw new RangeError(
    `stormproof: ${OWNER} schedule gave client ${client} a wait of ${show(wait)}; a wait must be a finite number of seconds >= 0`,
  );
}

/**
 * The clients of a plain schedule: one retry counter each, no objects. Draw order per failure:
 * the schedule's draws for this wait, nothing else.
 */
function scheduleClients(schedule: RetrySchedule, clients: number) {
  const retries = new Int32Array(clients);
  const { maxRetries, waitSeconds, deadlineSeconds } = schedule;
  return {
    failed(client: number, nowMs: number, random: RandomSource): number | undefined {
      const n = retries[client]!;
      if (n >= maxRetries) return undefined;
      const wait = checkWait(waitSeconds(n, random), client);
      if (deadlineSeconds !== undefined && nowMs / 1000 + wait > deadlineSeconds) return undefined;
      retries[client] = n + 1;
      return wait;
    },
    served(_client: number, _nowMs: number): void {},
  };
}

/** The clients of a factory: one object each, made in client order before the first slot. */
function factoryClients(factory: HerdClientFactory, clients: number, random: RandomSource) {
  const made: HerdClient[] = [];
  for (let c = 0; c < clients; c++) {
    const client = factory(c, random);
    if (typeof client !== 'object' || client === null || typeof client.failed !== 'function') {
      throw new TypeError(
        `stormproof: ${OWNER} schedule factory must return a HerdClient ({ failed(nowMs) }), got ${show(client)} for client ${c}`,
      );
    }
    made.push(client);
  }
  return {
    failed(client: number, nowMs: number, _random: RandomSource): number | undefined {
      const wait = made[client]!.failed(nowMs);
      return wait === undefined ? undefined : checkWait(wait, client);
    },
    served(client: number, nowMs: number): void {
      made[client]!.served?.(nowMs);
    },
  };
}

/**
 * Runs the storm story's herd with the retry schedule of your choosing: `clients` clients
 * all fail at time 0, the service answers `perSlot` calls per `slotMs` slot and fails the rest,
 * and each failed client asks `schedule` whether to call again and when, or to give up.
 *
 * Each slot runs as the storm story's model runs it: the slot's callers in ascending client order,
 * shuffled by the herd's one `random.Random(seed)`; the first `perSlot` are served; then each of
 * the others, in shuffled order, is asked for its next wait (a schedule's `waitSeconds` draws from
 * the same generator, so the draws interleave exactly as the model's `uniform` calls do). The
 * next call lands in the first slot `k` after this one with `now + wait < (k + 1) * slotMs / 1000`,
 * in the model's arithmetic. So a schedule of `maxRetries: Infinity` and
 * `waitSeconds: (n, r) => Math.min(5, 0.2 * 2 ** n) * r()` gives the storm story's 6487 calls,
 * busiest slot 205, done after 3.45 s, bit for bit.
 *
 * The work grows with the number of calls; a schedule that never gives up and never waits
 * (`maxRetries: Infinity`, wait 0) makes about `clients^2 / (2 * perSlot)` calls.
 *
 * @throws TypeError or RangeError naming the option and value when an option is invalid or
 *   unknown, or when a schedule returns a wait that is not a finite number >= 0.
 * @example
 * ```ts
 * runHerdSchedule({
 *   schedule: { maxRetries: 10, waitSeconds: (n) => 2 ** n }, // p-retry's default
 * }); // { calls, busiestSlot, doneAfterSeconds, gaveUp }
 * ```
 */
export function runHerdSchedule(options: HerdScheduleOptions): HerdScheduleResult {
  const o = checkOptionsObject(OWNER, options);
  checkKnownKeys(OWNER, o, KNOWN_KEYS);
  const schedule = checkSchedule(o.schedule);
  const { clients, perSlot, slotMs } = checkHerdService(OWNER, o);
  const seed = checkSeed(OWNER, o.seed ?? 7);

  const rng = new PythonRandom(seed);
  const random: RandomSource = () => rng.random();
  const herd =
    typeof schedule === 'function'
      ? factoryClients(schedule, clients, random)
      : scheduleClients(schedule, clients);

  const slots = new Slots();
  for (let c = 0; c < clients; c++) slots.push(0, c);

  let calls = 0;
  let busiest = 0;
  let gaveUp = 0;
  let lastSlot = -1;
  while (!slots.isEmpty) {
    const [slot, bucket] = slots.pop();
    // The Python loop lists the due clients in dict order, which is ascending client id.
    const now = Int32Array.from(bucket).sort();
    rng.shuffle(now);
    const count = now.length;
    const ms = slot * slotMs;
    calls += count;
    if (ms > 0 && count > busiest) busiest = count;
    const seconds = ms / 1000;
    for (let i = perSlot; i < count; i++) {
      const client = now[i]!;
      const wait = herd.failed(client, ms, random);
      if (wait === undefined) gaveUp++;
      else slots.push(slotOf(seconds + wait, slot, slotMs), client);
    }
    const served = Math.min(count, perSlot);
    for (let i = 0; i < served; i++) herd.served(now[i]!, ms);
    lastSlot = slot;
  }

  return {
    calls,
    busiestSlot: busiest,
    doneAfterSeconds: roundLikePython((lastSlot + 1) * slotMs),
    gaveUp,
  };
}

/** The options of {@link idealHerd}: the herd's size and the service's capacity. */
export interface IdealHerdOptions {
  /**
   * How many clients failed together at time 0. An integer >= 0.
   * @default 2000
   * @example
   * ```ts
   * idealHerd({ clients: 500 })
   * ```
   */
  clients?: number | undefined;
  /**
   * How many calls the service answers in each slot. An integer >= 1.
   * @default 25
   * @example
   * ```ts
   * idealHerd({ perSlot: 10 })
   * ```
   */
  perSlot?: number | undefined;
  /**
   * The width of one slot in whole milliseconds. An integer >= 1.
   * @default 10
   * @example
   * ```ts
   * idealHerd({ slotMs: 1 })
   * ```
   */
  slotMs?: number | undefined;
}

/**
 * The best any schedule could do in the herd: every client calls exactly once, in its turn, and
 * is served; the service is never idle until everyone is done. That is `clients` calls,
 * `perSlot` calls in the busiest slot after the first, and done after
 * `ceil(clients / perSlot)` slots: 2000 calls and 0.80 s at the defaults.
 *
 * @throws TypeError or RangeError naming the option and value when an option is invalid.
 * @example
 * ```ts
 * idealHerd(); // { calls: 2000, busiestSlot: 25, doneAfterSeconds: 0.8, gaveUp: 0 }
 * ```
 */
export function idealHerd(options?: IdealHerdOptions): HerdScheduleResult {
  const owner = 'idealHerd';
  const o = checkOptionsObject(owner, options);
  checkKnownKeys(owner, o, ['clients', 'perSlot', 'slotMs']);
  const { clients, perSlot, slotMs } = checkHerdService(owner, o);
  return {
    calls: clients,
    busiestSlot: Math.min(perSlot, Math.max(0, clients - perSlot)),
    doneAfterSeconds: roundLikePython(Math.ceil(clients / perSlot) * slotMs),
    gaveUp: 0,
  };
}
