// The Tail at Scale, simulated: a request fans out to one leaf in each of `fanOut` shards and
// waits for all of them, so one slow leaf makes the whole request slow (Dean and Barroso, CACM
// 2013). Each shard has two replicas, each serving one request at a time from a bounded FIFO
// queue; a leaf's service time is usually short and now and then very long (a pause, a cold
// cache). With hedging, a leaf that has not answered by the learned delay gets a copy at the
// other replica; the first answer wins and the other copy is dropped (from the queue, or its
// work stopped). Every hedge decision is made by the engine's own rules (`Hedging`: the learned
// delay, pushback, hedges that stop winning) and paid from a real `RetryBudget`, on virtual time.
import { RetryBudget } from '../core/budgets/retry-budget.js';
import { Hedging } from '../core/hedge.js';
import { checkKnownKeys, checkNumber, checkOptionsObject } from '../core/validate.js';
import { MinHeap } from './min-heap.js';
import { PythonRandom } from './python-random.js';

/** The options of {@link runHedgeSim}. */
export interface HedgeSimOptions {
  /**
   * User requests simulated (each fans out to every shard).
   * @default 10000
   * @example
   * ```ts
   * runHedgeSim({ requests: 2000 })
   * ```
   */
  requests?: number | undefined;
  /**
   * Shards a request fans out to: it waits for one leaf of each.
   * @default 100
   * @example
   * ```ts
   * runHedgeSim({ fanOut: 10 })
   * ```
   */
  fanOut?: number | undefined;
  /**
   * Offered load on each replica, as a share of what it can serve (leaf requests alone, before
   * hedges). Above 1 the replicas are overloaded.
   * @default 0.3
   * @example
   * ```ts
   * runHedgeSim({ load: 1.2 })
   * ```
   */
  load?: number | undefined;
  /**
   * Hedge slow leaves (the engine's `hedge: {}` rules), or not.
   * @default true
   * @example
   * ```ts
   * runHedgeSim({ hedge: false })
   * ```
   */
  hedge?: boolean | undefined;
  /**
   * The share of leaf executions that are slow (one in a thousand: with a fan-out of 100, one
   * request in ten meets one).
   * @default 0.001
   * @example
   * ```ts
   * runHedgeSim({ slowShare: 0.02 })
   * ```
   */
  slowShare?: number | undefined;
  /**
   * Mean of a usual leaf's service time (exponential), in ms.
   * @default 5
   * @example
   * ```ts
   * runHedgeSim({ typicalMs: 2 })
   * ```
   */
  typicalMs?: number | undefined;
  /**
   * A slow leaf's service time, in ms: uniform between half and one and a half times this.
   * @default 500
   * @example
   * ```ts
   * runHedgeSim({ slowMs: 1000 })
   * ```
   */
  slowMs?: number | undefined;
  /**
   * Leaves a replica queues at most; one more is refused at once with a 503 (pushback).
   * @default 200
   * @example
   * ```ts
   * runHedgeSim({ queueLimit: 50 })
   * ```
   */
  queueLimit?: number | undefined;
  /**
   * Seed of the model's random generator.
   * @default 1
   * @example
   * ```ts
   * runHedgeSim({ seed: 7 })
   * ```
   */
  seed?: number | undefined;
}

/** What a run measured. */
export interface HedgeSimResult {
  readonly options: Required<{ [K in keyof HedgeSimOptions]: NonNullable<HedgeSimOptions[K]> }>;
  /** User request latency (all leaves answered), ms: successful requests only. */
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly p999Ms: number;
  /** User requests that failed: a leaf was refused (503) and no copy of it answered. */
  readonly failedRequests: number;
  /** Leaf requests sent, first copies only. */
  readonly leaves: number;
  /** Hedge copies sent, and their share of first copies: the extra requests. */
  readonly hedgesSent: number;
  readonly extraRequests: number;
  /** Leaves a hedge answered first. */
  readonly hedgesWon: number;
  /** Hedges due but not sent, by the engine's reason. */
  readonly refused: Readonly<Record<string, number>>;
  /** Replica busy time with hedging over the busy time of first copies alone, minus 1. */
  readonly extraWork: number;
}

const KEYS = [
  'requests',
  'fanOut',
  'load',
  'hedge',
  'slowShare',
  'typicalMs',
  'slowMs',
  'queueLimit',
  'seed',
];
const OWNER = 'runHedgeSim';
/** Leaves a replica serves at once (a server runs many requests side by side). */
const WORKERS = 8;

interface Copy {
  readonly leaf: Leaf;
  readonly replica: Replica;
  readonly hedge: number;
  readonly sentAt: number;
  /** When service started, while it runs. */
  servedFrom: number;
  serviceMs: number;
  /** Dropped: another copy answered first. */
  dropped: boolean;
  /** Its completion event, while in service. */
  end: Event | undefined;
}

interface Leaf {
  readonly request: UserRequest;
  readonly shard: number;
  readonly firstReplica: number;
  copies: Copy[];
  running: number;
  settled: boolean;
}

interface UserRequest {
  readonly at: number;
  pending: number;
  failed: boolean;
}

interface Replica {
  readonly queue: Copy[];
  head: number;
  /** Copies in service now. */
  busy: number;
}

interface Event {
  readonly at: number;
  readonly seq: number;
  run: (() => void) | undefined;
}

function option(name: string, value: unknown, fallback: number, range: object): number {
  return value === undefined ? fallback : checkNumber(OWNER, name, value, range);
}

/**
 * Runs the fan-out on virtual time and measures the user requests' latency and the extra load
 * hedging sent.
 *
 * @example
 * ```ts
 * const plain = runHedgeSim({ hedge: false });
 * const hedged = runHedgeSim();
 * console.log(plain.p999Ms / hedged.p999Ms, hedged.extraRequests);
 * ```
 */
export function runHedgeSim(options: HedgeSimOptions = {}): HedgeSimResult {
  const o = checkOptionsObject(OWNER, options);
  checkKnownKeys(OWNER, o, KEYS);
  const requests = option('requests', o.requests, 10_000, { min: 1, max: 1e6, integer: true });
  const fanOut = option('fanOut', o.fanOut, 100, { min: 1, max: 1000, integer: true });
  const load = option('load', o.load, 0.3, { min: 0, minExclusive: true, max: 10 });
  const slowShare = option('slowShare', o.slowShare, 0.001, { min: 0, max: 1 });
  const typicalMs = option('typicalMs', o.typicalMs, 5, { min: 0, minExclusive: true, max: 1e6 });
  const slowMs = option('slowMs', o.slowMs, 500, { min: 0, max: 1e7 });
  const queueLimit = option('queueLimit', o.queueLimit, 200, { min: 0, max: 1e6, integer: true });
  const seed = option('seed', o.seed, 1, { min: 0, max: Number.MAX_SAFE_INTEGER, integer: true });
  if (o.hedge !== undefined && typeof o.hedge !== 'boolean') {
    throw new TypeError(`stormproof: ${OWNER} hedge must be true or false, got ${String(o.hedge)}`);
  }
  const hedge = o.hedge ?? true;

  const rng = new PythonRandom(seed);
  const random = () => rng.random();
  let now = 0;
  let seq = 0;
  const events = new MinHeap<Event>((a, b) => a.at < b.at || (a.at === b.at && a.seq < b.seq));
  const at = (time: number, run: () => void): Event => {
    const event: Event = { at: time, seq: seq++, run };
    events.push(event);
    return event;
  };
  const hedging = new Hedging(OWNER, {});
  // The default RetryBudget (10 % of requests, a burst of 10) sized for a fan-out: one user
  // request earns `fanOut` credits at once, so the burst must hold a request's worth of hedges.
  const budget = new RetryBudget({ maxCredits: 10 * fanOut });

  const replicas: Replica[] = Array.from({ length: fanOut * 2 }, () => ({
    queue: [],
    head: 0,
    busy: 0,
  }));
  const meanServiceMs = (1 - slowShare) * typicalMs + slowShare * slowMs;
  // Each replica gets half of its shard's leaves: load = (rate / 2) x mean service / workers.
  const ratePerMs = (2 * WORKERS * load) / meanServiceMs;
  const latencies: number[] = [];
  let failedRequests = 0;
  let hedgesSent = 0;
  let hedgesWon = 0;
  let firstCopyWork = 0;
  let hedgeWork = 0;
  const refused: Record<string, number> = {};

  const serviceTime = () =>
    random() < slowShare ? slowMs * (0.5 + random()) : -Math.log(1 - random()) * typicalMs;

  const startNext = (replica: Replica) => {
    while (replica.busy < WORKERS && replica.head < replica.queue.length) {
      const copy = replica.queue[replica.head++]!;
      if (copy.dropped) continue;
      replica.busy++;
      copy.servedFrom = now;
      copy.serviceMs = serviceTime();
      copy.end = at(now + copy.serviceMs, () => finished(copy));
    }
    if (replica.head === replica.queue.length) {
      replica.queue.length = 0;
      replica.head = 0;
    }
  };
  const worked = (copy: Copy, ms: number) => {
    if (copy.hedge === 0) firstCopyWork += ms;
    else hedgeWork += ms;
  };
  const leafDone = (leaf: Leaf, ok: boolean) => {
    leaf.settled = true;
    const request = leaf.request;
    if (!ok) request.failed = true;
    if (--request.pending > 0) return;
    if (request.failed) failedRequests++;
    else latencies.push(now - request.at);
  };
  const finished = (copy: Copy) => {
    const replica = copy.replica;
    worked(copy, copy.serviceMs);
    copy.end = undefined;
    replica.busy--;
    startNext(replica);
    const leaf = copy.leaf;
    leaf.running--;
    if (leaf.settled) return;
    budget.recordSuccess();
    hedging.learn(now - leaf.copies[0]!.sentAt); // from the first copy, as the engine learns
    if (leaf.copies.length > 1) {
      hedging.judge(copy.hedge > 0);
      if (copy.hedge > 0) hedgesWon++;
    }
    // The others are dropped: from the queue, or their work stopped (their signal aborted).
    for (const other of leaf.copies) {
      if (other === copy || other.dropped) continue;
      other.dropped = true;
      if (other.end !== undefined) {
        other.end.run = undefined;
        other.end = undefined;
        worked(other, now - other.servedFrom);
        other.replica.busy--;
        startNext(other.replica);
      }
    }
    leafDone(leaf, true);
  };
  const send = (leaf: Leaf, hedgeIndex: number) => {
    const replica = replicas[leaf.shard * 2 + ((leaf.firstReplica + hedgeIndex) % 2)]!;
    const copy: Copy = {
      leaf,
      replica,
      hedge: hedgeIndex,
      sentAt: now,
      servedFrom: 0,
      serviceMs: 0,
      dropped: false,
      end: undefined,
    };
    leaf.copies.push(copy);
    if (replica.queue.length - replica.head >= queueLimit && replica.busy === WORKERS) {
      // Refused at once: a 503 the engine reads as pushback.
      hedging.pushedBack(now, undefined);
      budget.recordFailure(now, true);
      // Every copy sent has failed: the attempt fails (the engine would then judge a retry), and
      // when it was hedged, as the engine judges it, the hedge did not win.
      if (leaf.running === 0 && !leaf.settled) {
        if (leaf.copies.length > 1) hedging.judge(false);
        leafDone(leaf, false);
      }
      return;
    }
    leaf.running++;
    replica.queue.push(copy);
    startNext(replica);
  };
  const scheduleHedge = (leaf: Leaf) => {
    const delayMs = hedging.delayMs();
    if (delayMs === undefined) {
      refused.learning = (refused.learning ?? 0) + 1;
      return;
    }
    at(now + delayMs, () => {
      if (leaf.settled) return;
      // No timeout and no deadline here: a copy always has the time to answer.
      const reason = hedging.decide(now, Number.POSITIVE_INFINITY, undefined, budget);
      if (reason !== undefined) {
        refused[reason] = (refused[reason] ?? 0) + 1;
        return;
      }
      hedgesSent++;
      send(leaf, 1);
    });
  };

  // Poisson arrivals of user requests.
  let arrivalAt = 0;
  for (let i = 0; i < requests; i++) {
    arrivalAt += -Math.log(1 - random()) / ratePerMs;
    at(arrivalAt, () => {
      const request: UserRequest = { at: now, pending: fanOut, failed: false };
      for (let shard = 0; shard < fanOut; shard++) {
        budget.recordRequest(now);
        const leaf: Leaf = {
          request,
          shard,
          firstReplica: random() < 0.5 ? 0 : 1,
          copies: [],
          running: 0,
          settled: false,
        };
        hedging.started();
        send(leaf, 0);
        if (hedge && !leaf.settled) scheduleHedge(leaf);
      }
    });
  }
  while (events.size > 0) {
    const event = events.pop();
    now = event.at;
    event.run?.();
  }

  const sorted = latencies.sort((a, b) => a - b);
  const quantile = (q: number) =>
    sorted.length === 0
      ? Number.NaN
      : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  const leaves = requests * fanOut;
  return {
    options: { requests, fanOut, load, hedge, slowShare, typicalMs, slowMs, queueLimit, seed },
    p50Ms: quantile(0.5),
    p99Ms: quantile(0.99),
    p999Ms: quantile(0.999),
    failedRequests,
    leaves,
    hedgesSent,
    extraRequests: hedgesSent / leaves,
    hedgesWon,
    refused,
    extraWork: firstCopyWork === 0 ? 0 : hedgeWork / firstCopyWork,
  };
}
