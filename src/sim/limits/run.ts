// One cell of `stormproof sim limits`: the real server engine (`createShedder`) on virtual time
// in front of a backend that serves `concurrency` requests at once (a connection pool: the rest
// wait in its own first-come queue, out of the shedder's reach), each taking about `serviceMs`.
// Open-loop Poisson arrivals at a multiple of the backend's capacity. Measures how long the limit
// takes to find the backend's concurrency, and what the clients get once it has.
import type { ConcurrencyLimit, LimitOption } from '../../server/limits.js';
import { type Admission, createShedder, type Ticket } from '../../server/shedder.js';
import { earliest, MinHeap, type Timed } from '../min-heap.js';

/** How a backend's service times spread around their mean. */
export type ServiceSpread = 'uniform' | 'exponential';

/**
 * A change of the backend at a point in time: its concurrency (a failover to a smaller replica),
 * and how much slower each request is served from then on (a database failing over, a cold
 * cache: 5 serves at a fifth of the speed; 1, the default, at full speed again).
 */
export interface ConcurrencyStep {
  readonly atMs: number;
  readonly concurrency: number;
  readonly slowdown?: number;
}

export interface LimitCellOptions {
  /**
   * The limit under test: what `createShedder` takes, or a factory for a fresh one.
   * @default (required)
   * @example
   * ```ts
   * { limit: { kind: 'knee' } }
   * ```
   */
  readonly limit: LimitOption | (() => ConcurrencyLimit);
  /**
   * The backend's true concurrency at the start.
   * @default (required)
   * @example
   * ```ts
   * { concurrency: 4 }
   * ```
   */
  readonly concurrency: number;
  /**
   * Mean service time of one request, ms (how it spreads: `service`).
   * @default (required)
   * @example
   * ```ts
   * { serviceMs: 20 }
   * ```
   */
  readonly serviceMs: number;
  /**
   * How one request's service time spreads around `serviceMs`: `'uniform'` over [0.9, 1.1]
   * times it (a steady backend), or `'exponential'` (as wide as its mean: a mix of cache hits and
   * slow queries, the map's server).
   * @default 'uniform'
   * @example
   * ```ts
   * { service: 'exponential' }
   * ```
   */
  readonly service?: ServiceSpread;
  /**
   * Offered load as a multiple of the starting capacity (concurrency / serviceMs).
   * @default (required)
   * @example
   * ```ts
   * { load: 2 }
   * ```
   */
  readonly load: number;
  /**
   * Virtual time simulated, ms.
   * @default (required)
   * @example
   * ```ts
   * { durationMs: 10_000 }
   * ```
   */
  readonly durationMs: number;
  /**
   * Measure goodput and latencies from this time on, ms.
   * @default (required)
   * @example
   * ```ts
   * { measureFromMs: 5000 }
   * ```
   */
  readonly measureFromMs: number;
  /**
   * Changes of the backend's concurrency during the run.
   * @default []
   * @example
   * ```ts
   * { steps: [{ atMs: 5000, concurrency: 4 }] }
   * ```
   */
  readonly steps?: readonly ConcurrencyStep[];
  /**
   * The seed of the arrivals and service times.
   * @default (required)
   * @example
   * ```ts
   * { seed: 1 }
   * ```
   */
  readonly seed: number;
  /**
   * The engine's timers fire this many ms late, as real timers do on a busy machine.
   * @default 0
   * @example
   * ```ts
   * { lateMs: 3 }
   * ```
   */
  readonly lateMs?: number;
}

/** One move of the limit. */
export interface LimitPoint {
  readonly atMs: number;
  readonly limit: number;
}

export interface LimitCellResult {
  /** Every move of the limit, the first at time 0. */
  readonly trace: readonly LimitPoint[];
  /** Completions per ms from `measureFromMs` on, over the backend's capacity then. */
  readonly goodput: number;
  /** p99 of admitted requests' latency (queue, pool and service) over the mean service time. */
  readonly admittedP99: number;
  /** p99 of admitted requests' wait in the shedder's queue, over the mean service time. */
  readonly queueWaitP99: number;
  /** p99 of the time to a rejection, ms. */
  readonly rejectionP99Ms: number;
  readonly admitted: number;
  readonly rejected: number;
  /** Requests arrived from `measureFromMs` on, and the share of them rejected. */
  readonly offered: number;
  readonly rejectedShare: number;
  /** The share of the time from `measureFromMs` on that the limit was below the concurrency. */
  readonly belowShare: number;
}

/** Park-Miller's minimal standard generator: seeded, exact, fast. */
export function seededRandom(seed: number): () => number {
  let s = (Math.abs(Math.floor(seed)) % 2147483646) + 1;
  return () => {
    s = (s * 48271) % 2147483647;
    return (s - 1) / 2147483646;
  };
}

interface Event extends Timed {
  readonly run: () => void;
}

function p99(values: number[]): number {
  if (values.length === 0) return 0;
  values.sort((a, b) => a - b);
  return values[Math.min(values.length - 1, Math.floor(values.length * 0.99))]!;
}

/**
 * The share of [fromMs, toMs) that the traced limit spent below the backend's concurrency at the
 * time: the stretch is cut at every move of the limit and every step of the backend.
 */
function belowShare(
  trace: readonly LimitPoint[],
  o: Pick<LimitCellOptions, 'concurrency' | 'steps'>,
  fromMs: number,
  toMs: number,
): number {
  if (!(toMs > fromMs)) return 0;
  const steps = [...(o.steps ?? [])].sort((a, b) => a.atMs - b.atMs);
  // Both lists are in time order: walk them together.
  let t = 0;
  let s = 0;
  let limit = trace[0]?.limit ?? 0;
  let concurrency = o.concurrency;
  const advance = (atMs: number) => {
    while (t < trace.length && trace[t]!.atMs <= atMs) limit = trace[t++]!.limit;
    while (s < steps.length && steps[s]!.atMs <= atMs) concurrency = steps[s++]!.concurrency;
  };
  let below = 0;
  let at = fromMs;
  advance(at);
  while (at < toMs) {
    const next = Math.min(trace[t]?.atMs ?? toMs, steps[s]?.atMs ?? toMs, toMs);
    if (limit < concurrency) below += next - at;
    at = next;
    advance(at);
  }
  return below / (toMs - fromMs);
}

/** Runs one cell. Exact and repeatable for a seed. */
export function runLimitCell(o: LimitCellOptions): LimitCellResult {
  const random = seededRandom(o.seed);
  const engineRandom = seededRandom(o.seed * 31 + 7);
  const calendar = new MinHeap<Event>(earliest);
  let seq = 0;
  let now = 0;
  const at = (time: number, run: () => void) => {
    const event: Event = { at: time, seq: seq++, run };
    calendar.push(event);
    return event;
  };
  const cancelled = new Set<Event>();
  const clock = {
    now: () => now,
    sleep: () => Promise.reject(new Error('sim limits: the engine must use setTimer')),
    setTimer: (ms: number, callback: () => void) => {
      const event = at(now + ms + (o.lateMs ?? 0), callback);
      return () => {
        cancelled.add(event);
      };
    },
  };
  const trace: LimitPoint[] = [];
  const limit = typeof o.limit === 'function' ? o.limit() : o.limit;
  const shedder = createShedder({
    limit,
    clock,
    random: engineRandom,
    ramp: false,
    onLimit: (e) => trace.push({ atMs: now, limit: e.limit }),
  });
  trace.push({ atMs: 0, limit: shedder.stats().limit });

  // The backend: `slots` at once, the rest in its own first-come queue.
  let slots = o.concurrency;
  let slowdown = 1;
  let busy = 0;
  const pool: Array<{ ticket: Ticket; arrivedAt: number }> = [];
  const latencies: number[] = [];
  const queueWaits: number[] = [];
  const rejections: number[] = [];
  let completed = 0;
  let admitted = 0;
  let rejected = 0;
  let offered = 0;
  // Capacity served from measureFromMs on, in requests (the concurrency may step).
  const serve = (ticket: Ticket, arrivedAt: number) => {
    busy++;
    const service =
      slowdown *
      (o.service === 'exponential'
        ? -Math.log(1 - random()) * o.serviceMs
        : o.serviceMs * (0.9 + 0.2 * random()));
    at(now + service, () => {
      busy--;
      if (arrivedAt >= o.measureFromMs) latencies.push((now - arrivedAt) / o.serviceMs);
      if (now >= o.measureFromMs) completed++;
      // The pool's next waiter takes the place before the finish lets the shedder admit more.
      while (busy < slots && pool.length > 0) {
        const next = pool.shift()!;
        serve(next.ticket, next.arrivedAt);
      }
      ticket.finish(200);
    });
  };
  const decided = (arrivedAt: number) => (a: Admission) => {
    if (a.admitted) {
      admitted++;
      if (arrivedAt >= o.measureFromMs) queueWaits.push((now - arrivedAt) / o.serviceMs);
      if (busy < slots && pool.length === 0) serve(a, arrivedAt);
      else pool.push({ ticket: a, arrivedAt });
    } else {
      rejected++;
      if (arrivedAt >= o.measureFromMs) rejections.push(now - arrivedAt);
    }
  };
  const perMs = (o.load * o.concurrency) / o.serviceMs;
  const arrive = () => {
    const arrivedAt = now;
    if (arrivedAt >= o.measureFromMs) offered++;
    const settle = decided(arrivedAt);
    const answer = shedder.admitOrQueue(() => undefined, settle);
    if (answer !== undefined) settle(answer);
    const next = now - Math.log(1 - random()) / perMs;
    if (next < o.durationMs) at(next, arrive);
  };
  at(0, arrive);
  for (const step of o.steps ?? []) {
    at(step.atMs, () => {
      slots = step.concurrency;
      slowdown = step.slowdown ?? 1;
      while (busy < slots && pool.length > 0) {
        const next = pool.shift()!;
        serve(next.ticket, next.arrivedAt);
      }
    });
  }
  while (calendar.size > 0) {
    const event = calendar.pop();
    if (event.at > o.durationMs) break;
    if (cancelled.delete(event)) continue;
    now = event.at;
    event.run();
  }
  now = o.durationMs;
  shedder.close();
  // Capacity from measureFromMs to the end, stepping with the backend.
  let capacity = 0;
  let from = o.measureFromMs;
  let c = o.concurrency;
  let perRequestMs = o.serviceMs;
  for (const step of [...(o.steps ?? [])].sort((a, b) => a.atMs - b.atMs)) {
    if (step.atMs > from) {
      capacity += ((Math.min(step.atMs, o.durationMs) - from) * c) / perRequestMs;
      from = Math.min(step.atMs, o.durationMs);
    }
    c = step.concurrency;
    perRequestMs = o.serviceMs * (step.slowdown ?? 1);
  }
  capacity += ((o.durationMs - from) * c) / perRequestMs;
  return {
    trace,
    goodput: capacity > 0 ? completed / capacity : 0,
    offered,
    rejectedShare: offered > 0 ? rejections.length / offered : 0,
    belowShare: belowShare(trace, o, o.measureFromMs, o.durationMs),
    admittedP99: p99(latencies),
    queueWaitP99: p99(queueWaits),
    rejectionP99Ms: p99(rejections),
    admitted,
    rejected,
  };
}

/**
 * How long after `fromMs` the limit entered the band [low, high] for good: it stays inside from
 * then to `untilMs` (the end of the trace by default). Undefined when it is outside at the end.
 */
export function bandEntryMs(
  trace: readonly LimitPoint[],
  low: number,
  high: number,
  fromMs = 0,
  untilMs = Number.POSITIVE_INFINITY,
): number | undefined {
  const within = (limit: number) => limit >= low && limit <= high;
  let inside = false;
  let entered = fromMs;
  for (const point of trace) {
    if (point.atMs > untilMs) break;
    if (point.atMs <= fromMs) {
      inside = within(point.limit);
      continue;
    }
    if (within(point.limit) && !inside) entered = point.atMs;
    inside = within(point.limit);
  }
  return inside ? entered - fromMs : undefined;
}
