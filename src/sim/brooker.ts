// Marc Brooker's 2015 optimistic-concurrency model ("Exponential Backoff And Jitter", AWS
// Architecture Blog, and its simulator `aws-samples/aws-arch-backoff-simulator`), re-run with the
// library's own retry decision. Every client updates one row once: read the version, write with
// it; a write with a stale version fails, and the client waits and starts over with a read. The
// wait comes from `step` (the engine's backoff and jitter) with this model's clock and random
// source, never from a copy of the formulas.
import type { Jitter } from '../core/backoff.js';
import type { ResolvedPolicy } from '../core/options.js';
import { resolvePolicy } from '../core/options.js';
import { type Outcome, type RetryState, startState, step } from '../core/step.js';
import { checkKnownKeys, checkNumber, checkOptionsObject, show } from '../core/validate.js';
import { checkSeed, PythonRandom } from './python-random.js';

/**
 * The five ways to wait after a conflict, as Brooker's simulator names them:
 *
 * - `'exponential'`: capped exponential backoff with no jitter (his `ExpoBackoff`).
 * - `'full'`: full jitter, uniform in [0, ceiling) (`ExpoBackoffFullJitter`).
 * - `'equal'`: equal jitter, half the ceiling plus uniform in [0, ceiling/2) (`ExpoBackoffEqualJitter`).
 * - `'decorrelated'`: `min(cap, uniform(base, previous * 3))` (`ExpoBackoffDecorr`).
 * - `'none'`: no backoff at all, an immediate retry (`NoBackoff`).
 */
export type BrookerStrategy = 'exponential' | 'full' | 'equal' | 'decorrelated' | 'none';

/** The strategies in the order the results list them. */
export const BROOKER_STRATEGIES: readonly BrookerStrategy[] = Object.freeze([
  'exponential',
  'full',
  'equal',
  'decorrelated',
  'none',
]);

/** The options of {@link runBrooker}. Every field is optional; the defaults are Brooker's. */
export interface BrookerOptions {
  /**
   * How many clients race to update the row in each run. An integer from 1 to 100,000.
   * @default 100
   * @example
   * ```ts
   * runBrooker({ clients: 50 })
   * ```
   */
  clients?: number | undefined;
  /**
   * How many runs each strategy's figures are averaged over. An integer from 1 to 1,000,000.
   * @default 100
   * @example
   * ```ts
   * runBrooker({ runs: 10 }) // quicker, noisier
   * ```
   */
  runs?: number | undefined;
  /**
   * The seed of the model's generator (CPython's `random.seed(seed)`), set afresh before each
   * strategy's runs, so a strategy's figures do not depend on which others were run.
   * @default 7
   * @example
   * ```ts
   * runBrooker({ seed: 1 })
   * ```
   */
  seed?: number | bigint | undefined;
  /**
   * Brooker's `base`, in ms. His `backoff(attempt)` counts attempts from 1, so the first wait's
   * ceiling is `2 * base`; the engine counts retries from 0, so the model hands the engine a
   * base of `2 * baseMs` for the exponential kinds (and `baseMs` itself to decorrelated jitter,
   * which starts from the base). A finite number > 0.
   * @default 5
   * @example
   * ```ts
   * runBrooker({ baseMs: 10 })
   * ```
   */
  baseMs?: number | undefined;
  /**
   * Brooker's `cap`, in ms: no wait is longer. A finite number >= `2 * baseMs`.
   * @default 2000
   * @example
   * ```ts
   * runBrooker({ capMs: 1000 })
   * ```
   */
  capMs?: number | undefined;
  /**
   * The mean delay of one network hop, in ms. Each hop takes `abs(normal(mean, sd))`, drawn as
   * CPython's `random.normalvariate` draws it. A finite number >= 0.
   * @default 10
   * @example
   * ```ts
   * runBrooker({ networkMeanMs: 1 }) // one data centre
   * ```
   */
  networkMeanMs?: number | undefined;
  /**
   * The standard deviation of one network hop's delay, in ms. A finite number >= 0.
   * @default 2
   * @example
   * ```ts
   * runBrooker({ networkSdMs: 0.5 })
   * ```
   */
  networkSdMs?: number | undefined;
  /**
   * Width of the time buckets of each strategy's `timeline` (the first run's writes), in ms.
   * A finite number > 0.
   * @default 10
   * @example
   * ```ts
   * runBrooker({ timelineBucketMs: 100 })
   * ```
   */
  timelineBucketMs?: number | undefined;
  /**
   * Called after each run with the runs done so far and the total (`runs` times 5 strategies).
   * The model is synchronous, so this is the only way to watch a long one. An error it throws
   * stops the model and propagates.
   * @default undefined
   * @example
   * ```ts
   * runBrooker({ runs: 1000, onProgress: (done, total) => console.log(`${done}/${total}`) })
   * ```
   */
  onProgress?: ((doneRuns: number, totalRuns: number) => void) | undefined;
}

/** Writes to the row in one bucket of time of a strategy's first run. */
export interface BrookerBucket {
  /** Start of the bucket, in ms from the start of the run. */
  readonly tMs: number;
  /** Writes that arrived in the bucket. */
  readonly writes: number;
  /** Of those, the writes that succeeded. */
  readonly succeeded: number;
  /** Of those, the writes that failed (stale version). */
  readonly failed: number;
}

/** One strategy's figures. */
export interface BrookerFigures {
  /** Writes per run, averaged over the runs (Brooker counts only writes as calls). */
  readonly calls: number;
  /** When a run's last event happened, in ms, averaged over the runs. */
  readonly timeMs: number;
  /** The writes of the first run, bucketed in time (every bucket up to the last write). */
  readonly timeline: readonly BrookerBucket[];
}

/** What {@link runBrooker} reports: each strategy's figures. */
export type BrookerResult = { readonly [K in BrookerStrategy]: BrookerFigures };

const OWNER = 'runBrooker';
const KNOWN_KEYS = [
  'clients',
  'runs',
  'seed',
  'baseMs',
  'capMs',
  'networkMeanMs',
  'networkSdMs',
  'timelineBucketMs',
  'onProgress',
] as const;

/** CPython's `random.NV_MAGICCONST`, `4 * exp(-0.5) / sqrt(2.0)`, as CPython computes it. */
const NV_MAGICCONST = 1.7155277699214135;

/**
 * CPython's `random.normalvariate(mu, sigma)` (Kinderman and Monahan's ratio method), drawing
 * from `rng` in the same order.
 */
function normalvariate(rng: PythonRandom, mu: number, sigma: number): number {
  for (;;) {
    const u1 = rng.random();
    const u2 = 1 - rng.random();
    const z = (NV_MAGICCONST * (u1 - 0.5)) / u2;
    const zz = (z * z) / 4;
    if (zz <= -Math.log(u2)) return mu + z * sigma;
  }
}

/** What a message does when it arrives. */
const Kind = {
  /** A read arrives at the row's server. */
  Read: 0,
  /** The row's version arrives back at the client. */
  ReadReply: 1,
  /** A write (with the version read) arrives at the server. */
  Write: 2,
  /** The write's outcome arrives back at the client. */
  WriteReply: 3,
} as const;
type Kind = (typeof Kind)[keyof typeof Kind];

/** Messages in flight: a binary min-heap on arrival time, in parallel arrays. */
class MessageQueue {
  time: number[] = [];
  kind: Kind[] = [];
  client: number[] = [];
  payload: number[] = [];

  get size(): number {
    return this.time.length;
  }

  push(time: number, kind: Kind, client: number, payload: number): void {
    let i = this.time.length;
    this.time.push(time);
    this.kind.push(kind);
    this.client.push(client);
    this.payload.push(payload);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.time[parent]! <= time) break;
      this.#move(parent, i);
      i = parent;
    }
    this.time[i] = time;
    this.kind[i] = kind;
    this.client[i] = client;
    this.payload[i] = payload;
  }

  /** Removes the earliest message into `out`. Only call when not empty. */
  pop(out: { time: number; kind: Kind; client: number; payload: number }): void {
    out.time = this.time[0]!;
    out.kind = this.kind[0]!;
    out.client = this.client[0]!;
    out.payload = this.payload[0]!;
    const time = this.time.pop()!;
    const kind = this.kind.pop()!;
    const client = this.client.pop()!;
    const payload = this.payload.pop()!;
    const n = this.time.length;
    if (n === 0) return;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && this.time[right]! < this.time[left]! ? right : left;
      if (this.time[child]! >= time) break;
      this.#move(child, i);
      i = child;
    }
    this.time[i] = time;
    this.kind[i] = kind;
    this.client[i] = client;
    this.payload[i] = payload;
  }

  #move(from: number, to: number): void {
    this.time[to] = this.time[from]!;
    this.kind[to] = this.kind[from]!;
    this.client[to] = this.client[from]!;
    this.payload[to] = this.payload[from]!;
  }
}

/** The error a failed write hands to the engine. */
const CONFLICT = Object.freeze({
  name: 'WriteConflict',
  message: 'the row changed since it was read',
});
const FAILED: Outcome = Object.freeze({ ok: false as const, error: CONFLICT });
const SUCCEEDED: Outcome = Object.freeze({ ok: true as const });

/** The engine's policy that reproduces one of Brooker's backoff classes. */
function policyFor(
  strategy: BrookerStrategy,
  baseMs: number,
  capMs: number,
  random: () => number,
): ResolvedPolicy {
  let jitter: Jitter;
  let baseDelayMs: number;
  let maxDelayMs = capMs;
  switch (strategy) {
    case 'exponential':
      // Brooker: min(cap, 2^attempt * base), attempt from 1. Engine: min(cap, base' * 2^n), n
      // from 0. The same ceilings, exactly, with base' = 2 * base.
      jitter = 'none';
      baseDelayMs = 2 * baseMs;
      break;
    case 'full':
    case 'equal':
      jitter = strategy;
      baseDelayMs = 2 * baseMs;
      break;
    case 'decorrelated':
      // Ignores the attempt: min(cap, uniform(base, previous * 3)), previous starting at base.
      jitter = 'decorrelated';
      baseDelayMs = baseMs;
      break;
    case 'none':
      jitter = 'none';
      baseDelayMs = 0;
      maxDelayMs = 0;
      break;
  }
  return resolvePolicy(
    OWNER,
    {
      baseDelayMs,
      maxDelayMs,
      jitter,
      // Brooker's clients never give up: no attempt limit, no deadline, no budget.
      maxAttempts: Number.MAX_SAFE_INTEGER,
      deadlineMs: Number.MAX_SAFE_INTEGER,
      budget: false,
      // A stale-version conflict is not an HTTP failure the default classifier knows; in this
      // model every conflict is worth another try.
      shouldRetry: () => true,
      random,
    },
    { defaultBudget: false, allowCallKeys: false },
  );
}

/** Buckets of writes over time, for the first run's timeline. */
class Timeline {
  readonly #bucketMs: number;
  readonly #succeeded: number[] = [];
  readonly #failed: number[] = [];

  constructor(bucketMs: number) {
    this.#bucketMs = bucketMs;
  }

  add(timeMs: number, ok: boolean): void {
    const i = Math.floor(timeMs / this.#bucketMs);
    while (this.#succeeded.length <= i) {
      this.#succeeded.push(0);
      this.#failed.push(0);
    }
    if (ok) this.#succeeded[i]!++;
    else this.#failed[i]!++;
  }

  buckets(): BrookerBucket[] {
    return this.#succeeded.map((succeeded, i) => {
      const failed = this.#failed[i]!;
      return { tMs: i * this.#bucketMs, writes: succeeded + failed, succeeded, failed };
    });
  }
}

/**
 * Runs Brooker's 2015 optimistic-concurrency model for each of the five strategies and returns
 * each one's writes per run and time per run, averaged over `runs` runs.
 *
 * The model is his simulator's, message for message: each of `clients` clients reads the row's
 * version, then writes with it; every message hop takes `abs(normalvariate(mean, sd))`; a write
 * whose version is stale fails, and the client then waits (one more hop plus the backoff) and
 * reads again; a run ends at its last event. The random draws come from one CPython-compatible
 * generator, in his order (the hop's delay, then the backoff's draw), so with the same seed the
 * figures are the ones his Python prints, bit for bit. The backoff itself is the engine's: each
 * client keeps a `RetryState`, and every conflict goes through `step` with a policy resolved for
 * the strategy (see {@link BrookerOptions.baseMs} for how his attempt count maps onto the engine's).
 *
 * @throws TypeError or RangeError naming the option and value when an option is invalid or unknown.
 * @example
 * ```ts
 * const r = runBrooker();
 * r.full.calls;        // 795.87 writes per run at 100 clients
 * r.exponential.calls; // 1846.09: backoff alone barely helps
 * ```
 */
export function runBrooker(options?: BrookerOptions): BrookerResult {
  const o = checkOptionsObject(OWNER, options);
  checkKnownKeys(OWNER, o, KNOWN_KEYS);
  const clients = checkNumber(OWNER, 'clients', o.clients ?? 100, {
    min: 1,
    max: 100_000,
    integer: true,
  });
  const runs = checkNumber(OWNER, 'runs', o.runs ?? 100, { min: 1, max: 1_000_000, integer: true });
  const seed = checkSeed(OWNER, o.seed ?? 7);
  const baseMs = checkNumber(OWNER, 'baseMs', o.baseMs ?? 5, { min: 0, minExclusive: true });
  const capMs = checkNumber(OWNER, 'capMs', o.capMs ?? 2000, { min: 2 * baseMs });
  const mean = checkNumber(OWNER, 'networkMeanMs', o.networkMeanMs ?? 10, { min: 0 });
  const sd = checkNumber(OWNER, 'networkSdMs', o.networkSdMs ?? 2, { min: 0 });
  const bucketMs = checkNumber(OWNER, 'timelineBucketMs', o.timelineBucketMs ?? 10, {
    min: 0,
    minExclusive: true,
  });
  const onProgress = o.onProgress;
  if (onProgress !== undefined && typeof onProgress !== 'function') {
    throw new TypeError(
      `stormproof: ${OWNER} onProgress must be a function, got ${show(onProgress)}`,
    );
  }
  const progress = onProgress as BrookerOptions['onProgress'];

  const totalRuns = runs * BROOKER_STRATEGIES.length;
  let doneRuns = 0;
  const result = {} as Record<BrookerStrategy, BrookerFigures>;
  for (const strategy of BROOKER_STRATEGIES) {
    const rng = new PythonRandom(seed);
    const policy = policyFor(strategy, baseMs, capMs, () => rng.random());
    const hop = () => Math.abs(normalvariate(rng, mean, sd));
    const queue = new MessageQueue();
    const message: { time: number; kind: Kind; client: number; payload: number } = {
      time: 0,
      kind: Kind.Read,
      client: 0,
      payload: 0,
    };
    const states: RetryState[] = new Array<RetryState>(clients);
    const timeline = new Timeline(bucketMs);
    let writes = 0;
    let totalTime = 0;
    for (let run = 0; run < runs; run++) {
      let version = 0;
      let now = 0;
      for (let c = 0; c < clients; c++) {
        states[c] = startState(policy, 0);
        queue.push(0 + hop(), Kind.Read, c, 0);
      }
      while (queue.size > 0) {
        queue.pop(message);
        now = message.time;
        const c = message.client;
        switch (message.kind) {
          case Kind.Read:
            queue.push(now + hop(), Kind.ReadReply, c, version);
            break;
          case Kind.ReadReply:
            queue.push(now + hop(), Kind.Write, c, message.payload);
            break;
          case Kind.Write: {
            writes++;
            const ok = message.payload === version;
            if (ok) version++;
            if (run === 0) timeline.add(now, ok);
            queue.push(now + hop(), Kind.WriteReply, c, ok ? 1 : 0);
            break;
          }
          case Kind.WriteReply: {
            const state = states[c]!;
            if (message.payload === 1) {
              step(policy, state, SUCCEEDED, now);
              break;
            }
            // Brooker's order: the hop's delay is drawn before the backoff's jitter.
            const delay = now + hop();
            const decision = step(policy, state, FAILED, now);
            if (decision.action !== 'retry') break; // cannot happen: no limit, deadline or budget
            states[c] = decision.state;
            queue.push(delay + decision.delayMs, Kind.Read, c, 0);
            break;
          }
        }
      }
      totalTime += now;
      doneRuns++;
      progress?.(doneRuns, totalRuns);
    }
    result[strategy] = {
      calls: writes / runs,
      timeMs: totalTime / runs,
      timeline: timeline.buckets(),
    };
  }
  return result;
}
