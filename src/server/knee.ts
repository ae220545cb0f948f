// The knee limit: finds how many requests the backend serves at once, by itself, from the
// requests alone. Little's law at the knee of the throughput curve: in a round (about one round
// trip, measured from the requests rather than configured), the requests in flight are the ones
// in service plus the ones queued inside the handler (a connection pool's own queue), and their
// latency over the unloaded latency says how many of them are queued. So
//
//   in service = requests in flight / (latency / unloaded latency)
//
// which is peak throughput x unloaded latency (go-zero's and Kratos' estimate) measured without
// a CPU gate, and without a rate measurement's noise. Startup doubles the limit each round while
// nothing queues (as TCP BBR's startup does), then the limit sits a little above the estimate:
// a fifth more, so the backend never idles for want of work and the excess waits in
// the shedder's queue, where CoDel and LIFO reach it. Every constant is a ratio or a count.
import { checkKnownKeys, checkNumber, checkOptionsObject } from '../core/validate.js';
import type { ConcurrencyLimit } from './limits.js';

/** Options of the knee limit. None is a time: every rule is a ratio or a count of rounds. */
export interface KneeOptions {
  /**
   * The limit before the first round. 1 makes the first round's latency the unloaded one.
   * @default 1
   * @example
   * ```ts
   * { kind: 'knee', initial: 4 }
   * ```
   */
  initial?: number | undefined;
  /**
   * The limit never goes below this.
   * @default 1
   * @example
   * ```ts
   * { kind: 'knee', min: 2 }
   * ```
   */
  min?: number | undefined;
  /**
   * The limit never goes above this.
   * @default 10000
   * @example
   * ```ts
   * { kind: 'knee', max: 500 }
   * ```
   */
  max?: number | undefined;
  /**
   * How far above the estimated concurrency the limit sits, as a share of it: enough that the
   * backend is never idle between a finish and the next start, little enough that requests wait
   * in the shedder's queue rather than inside the handler; at least one request (a fifth of a
   * small estimate rounds to nothing), unless it is 0. (Where that is less than a tenth over the
   * estimate, one round in 16 tries a quarter more, at least one request, to find capacity the
   * backend gained.)
   * @default 0.2
   * @example
   * ```ts
   * { kind: 'knee', headroom: 0.25 }
   * ```
   */
  headroom?: number | undefined;
}

const KNEE_KEYS = ['kind', 'initial', 'min', 'max', 'headroom'];

/**
 * A round needs this many completions, so one slow or lucky request does not decide it: a few
 * in startup (as many as the limit, up to 4), where the signal is a doubling of the latency,
 * more once the limit sits at the knee, where it is a few percent.
 */
const STARTUP_SAMPLES = 4;
const CRUISE_SAMPLES = 16;
/** Startup ends when the latency grows by a quarter over the unloaded one: the knee is behind. */
const STARTUP_EXIT = 1.25;
/** Latency within this share of the unloaded latency: nothing is queued. */
const NO_QUEUE = 0.05;
/** How much of a round's estimate enters the smoothed one, when the estimate does not fall fast. */
const SMOOTHING = 0.5;
/** An estimate this far below the smoothed one is taken at once (the backend lost capacity). */
const FAST_FALL = 0.8;
/** One round in this many probes for more capacity, with this much more than the estimate. */
const PROBE_EVERY = 16;
const PROBE = 0.25;
/** After this many falls of the estimate in a row, the service itself got slower. */
const SLOWER_AFTER_FALLS = 3;
/** The backend gained capacity: this many rounds in a row served more than the estimate unqueued. */
const GAIN_ROUNDS = 2;
/** Queueing must stand this many of an unqueued round's standard errors above the floor. */
const SPREAD_Z = 1.5;
/** A round this many times slower than its requests in flight can queue: the floor is wrong. */
const BEYOND_QUEUEING = 1.25;
/** How much of an unqueued round's latency enters the unloaded latency. */
const FLOOR_SMOOTHING = 0.25;
/**
 * A round faster than the unloaded latency by this share, past its noise: the service got faster
 * (a slowdown ended), or the unloaded latency was read from queued requests. It is measured again.
 */
const FASTER = 0.05;
/** A measure of the unloaded latency runs this share of the estimate, at least one request. */
const MEASURE_SHARE = 0.5;
/**
 * The unloaded latency raised this many times at once: the service got slower (a database
 * failing over). Until it is measured again, a round faster than it is measured (`FASTER`).
 */
const RAISED = 1.5;
/**
 * A service whose latencies spread more than this share of their mean (an exponential one spreads
 * as much as its mean): its rounds stray too far for a jump of the latency to be told from a
 * slowdown, and a measure from a lucky round. Such a service is not measured again.
 */
const STEADY_SPREAD = 0.5;

function count(owner: string, name: string, value: unknown, fallback: number, min: number) {
  return value === undefined ? fallback : checkNumber(owner, name, value, { min, integer: true });
}

/**
 * The knee limit: learns the backend's concurrency with no setting, in a few rounds, and
 * follows it when it changes.
 *
 * - A round hears only the requests admitted in it, and ends once enough of them finished (as
 *   many as the limit up to 4 in startup, 16 after). A request that failed with "overloaded" or
 *   no answer, or took no measurable time, is not heard: its latency is not the service's.
 * - Requests served one at a time cannot queue behind each other: such a round's latency is the
 *   unloaded one, however it spreads.
 * - Startup: the limit full and the latency within a quarter of the unloaded one: double.
 * - What queueing a round shows is judged past its noise: the service's own spread over the root
 *   of the round's size and of the floor's, one and a half times (a service of widely spread
 *   latencies must not read its spread as queueing).
 * - A round that queued: the limit becomes the estimated concurrency plus the headroom, at once
 *   when the estimate fell by a fifth or more, smoothed otherwise. Rounds with demand below the
 *   limit and nothing queued teach it nothing. More in flight than the estimate with nothing
 *   queued raises the estimate at once; twice in a row, the backend gained capacity and startup
 *   runs again. Where the headroom is under a tenth, one round in 16 probes a quarter higher.
 * - The unloaded latency is the mean of startup's rounds below the knee, then of rounds in
 *   which nothing queued; three falls of the estimate in a row mean the service got slower, and
 *   its latency then is the new unloaded one. So does a round slower than its requests in
 *   flight could make it by queueing (n in flight: n service times), past its noise.
 * - A slowdown of a steady service (the unloaded latency raised by half or more at once: a
 *   database failing over; latencies spread less than half their mean) keeps the estimate from
 *   before it: the backend serves as many at once, each more slowly.
 *   Once a round is faster than the raised latency, the latency is measured again with half the
 *   estimate in flight, and half again while it keeps falling: a limit that grew while the
 *   service was slow holds a queue inside the backend, and the latency read from it agrees with
 *   itself until fewer are in flight.
 */
export function kneeLimit(options: KneeOptions = {}): ConcurrencyLimit {
  const owner = 'server limit (knee)';
  const o = checkOptionsObject(owner, options);
  checkKnownKeys(owner, o, KNEE_KEYS);
  const min = count(owner, 'min', o.min, 1, 1);
  const max = count(owner, 'max', o.max, 10_000, min);
  const initial =
    o.initial === undefined
      ? Math.min(Math.max(1, min), max)
      : checkNumber(owner, 'initial', o.initial, { min, max, integer: true });
  const headroom =
    o.headroom === undefined
      ? 0.2
      : checkNumber(owner, 'headroom', o.headroom, { min: 0, max: 10 });

  let limit = initial;
  /** The smoothed estimate of the backend's concurrency; undefined until something queued. */
  let concurrency: number | undefined;
  /** The unloaded latency, ms; undefined before the first round. */
  let floor: number | undefined;
  // The round in progress.
  let roundStart = Number.NaN;
  let samples = 0;
  let latencySum = 0;
  let latencySquares = 0;
  /** The round's requests that started alone (nothing of ours in flight): their latencies. */
  let soloSum = 0;
  let soloCount = 0;
  let inflightSum = 0;
  let full = false;
  // The last counted round: its mean in flight and its latency.
  /** Latencies of startup rounds below the knee: their mean is the unloaded latency. */
  let startupSum = 0;
  let startupSquares = 0;
  let startupCount = 0;
  /** Rounds in a row whose estimate fell by a fifth or more. */
  let falls = 0;
  /** Rounds in a row with more in flight than the estimate and nothing queued. */
  let gains = 0;
  let rounds = 0;
  /** Whether this round measures the unloaded latency at a share of the estimate. */
  let measuring = false;
  /** Whether the unloaded latency was raised for a slower service, and no measure found it fast again. */
  let slowed = false;
  /** How many requests the unloaded latency was learned from (a lucky few are not a slowdown). */
  let floorWeight = 0;
  /** The estimate before the falls in a row began: a service that got slower serves as many. */
  let beforeFalls: number | undefined;

  const clamp = (n: number) => Math.min(max, Math.max(min, n));
  // The headroom, and at least one request more: a fifth of a small estimate rounds to nothing,
  // and the backend would idle between each finish and the next start.
  const withHeadroom = (c: number) => (headroom > 0 ? Math.max(c * (1 + headroom), c + 1) : c);

  // The service changed: what startup learned of its latency is this round's mean and spread, as
  // many requests' worth as it had learned from (a startup after a gain averages its rounds into
  // the unloaded latency: a weight of one round let a few queued rounds raise it, round after round).
  const relearn = () => {
    const n = Math.max(startupCount, samples);
    startupSum = (latencySum / samples) * n;
    startupSquares = (latencySquares / samples) * n;
    startupCount = n;
  };

  const endRound = () => {
    const latency = latencySum / samples;
    const inflight = inflightSum / samples;
    // What queueing the round shows is judged on its mean less one standard error: a service
    // whose latency spreads widely (exponential, a cache mix) would otherwise read its spread as
    // queueing whenever a round is slow, and never its luck, and settle below its concurrency.
    const standardError = Math.sqrt(
      Math.max(0, latencySquares / samples - latency * latency) / samples,
    );
    // An unqueued round's mean strays from the floor by the service's own spread, over the root
    // of the round's size and of the floor's: queueing must stand out of that by one and a half
    // times (a wide spread read as queueing cuts the limit below the backend's concurrency, round
    // after round; a steady service's spread is a few percent, and changes nothing).
    // The spread is the unloaded requests', or this round's own while fewer than two unloaded
    // requests measured it.
    const spread =
      startupCount > 1
        ? Math.sqrt(Math.max(0, startupSquares / startupCount - (startupSum / startupCount) ** 2))
        : standardError * Math.sqrt(samples);
    const noise =
      floor === undefined ? 0 : spread * Math.sqrt(1 / samples + 1 / Math.max(1, startupCount));
    const seen = latency - Math.max(standardError, SPREAD_Z * noise);
    // How fast the round was at best, past its noise: below the unloaded latency (by a twentieth),
    // that latency is wrong.
    const fastest = latency + Math.max(standardError, SPREAD_Z * noise);
    const faster = floor !== undefined && fastest < (1 - FASTER) * floor;
    if (measuring) {
      // A round at a share of the estimate: with fewer in flight, fewer queue inside the backend.
      // Faster than the unloaded latency: that latency was read from queued requests (a limit
      // that grew while the service was slow, then kept its queue when it sped up). It is this
      // round's, and the next round measures with half as many again, until the latency stops
      // falling or one request runs alone. The estimate is read again from the next round.
      measuring = false;
      if (faster) {
        // Found faster: the slowdown is over (or the latency it learned was a queue's).
        slowed = false;
        floor = latency;
        floorWeight = samples;
        // Its spread is this round's too: the one before mixed the slow service with the fast.
        relearn();
        if (limit > 1) {
          measuring = true;
          limit = clamp(Math.max(1, Math.floor(limit * MEASURE_SHARE)));
          return;
        }
      }
      limit = clamp(concurrency === undefined ? limit : withHeadroom(concurrency));
      return;
    }
    if (concurrency !== undefined && faster && slowed) {
      // The service got slower, and now a round is faster than it: it may have recovered, or
      // the latency it learned was read from queued requests. Measured with half the estimate in
      // flight; the requests held back wait in the shedder's queue, under its rules. (Only after
      // a slowdown: a measure every so many rounds dipped the limit out of its band each time
      // and shed near capacity, where a spread-out service's lucky rounds read as faster.)
      measuring = true;
      limit = clamp(Math.max(1, Math.floor(concurrency * MEASURE_SHARE)));
      return;
    }
    // Demand below the limit, with nothing queued, says nothing about the limit. A round that
    // queued below the limit (requests admitted before it still ahead of them) says the backend
    // is past its knee: it counts.
    if (!full && (floor === undefined || seen <= (1 + NO_QUEUE) * floor)) return;
    // One request at a time cannot queue behind another of ours: whatever its latency, it is
    // the unloaded one (a mix of work with a wide spread must not read as queueing). Such a
    // round's requests all started alone, so the floor learns from them below.
    const alone = inflight <= 1;
    const wasSlowed = slowed;
    // The service got slower: the round's latency is the unloaded one. Raised by half or more
    // from a latency learned from more than a lucky few (a spread-out service's first requests),
    // it is a slowdown: its spread is this round's, and a round faster than it is measured.
    const slower = () => {
      if (
        latency > RAISED * floor! &&
        floorWeight >= STARTUP_SAMPLES &&
        spread <= STEADY_SPREAD * floor!
      ) {
        slowed = true;
        relearn();
      }
      floor = latency;
      floorWeight = samples;
      falls = 0;
    };
    if (floor === undefined || (full && concurrency === undefined && seen < STARTUP_EXIT * floor)) {
      // Startup, below the knee: every request was in service. The unloaded latency is the mean
      // of all of them (a first round of one lucky request must not set it low for good).
      startupSum += latencySum;
      startupSquares += latencySquares;
      startupCount += samples;
      floor = startupSum / startupCount;
      floorWeight = startupCount;
    } else if (seen > BEYOND_QUEUEING * Math.max(1, inflight) * floor) {
      // With n of ours in flight, queueing behind each other in a first-come pool can make a
      // request take at most n service times (n - 1 ahead of it, each at most one service time,
      // on average for a spread-out one too). A round slower than that past its noise was not
      // queueing: the unloaded latency is wrong (a lucky first few requests of a service whose
      // latency spreads widely, or a service that got slower at every load). It is the round's.
      // Waiting for three falls instead took 3 rounds of 16 at a limit of 2: seconds behind a
      // 200 ms service, shedding most of its load all along.
      slower();
    } else if (soloCount > 0) {
      // Requests that started with none of ours ahead of them could not queue behind ours: their
      // latency is the unloaded one as it is now (a cache gone cold, a slower replica), measured
      // without holding anything back.
      floor +=
        (soloSum / soloCount - floor) * FLOOR_SMOOTHING * Math.min(1, soloCount / STARTUP_SAMPLES);
      floorWeight += soloCount;
    } else if (seen <= (1 + NO_QUEUE) * floor) {
      // Nothing queued: the round's latency is the unloaded one. A round of few requests (in
      // startup) moves it less, so one lucky request cannot set it low.
      floor += (latency - floor) * FLOOR_SMOOTHING * Math.min(1, samples / CRUISE_SAMPLES);
      floorWeight += samples;
    } else if (falls >= SLOWER_AFTER_FALLS) {
      // The estimate fell by a fifth or more round after round: a backend that lost capacity
      // settles after one cut, so this is a service that got slower, at every load. Its latency
      // now, with the few requests still admitted, is the unloaded one.
      slower();
    }
    // Whether the round queued is judged past the noise (`seen`); how many it served is read
    // from its mean less its own standard error, as a steady service's rounds are.
    const queued = alone ? 1 : Math.max(1, seen / floor);
    const queuedMean = alone ? 1 : Math.max(1, (latency - standardError) / floor);
    // More in flight than the estimate, and nothing queued: the backend serves at least that
    // many, and the estimate takes it at once (below). Two such rounds in a row, the second at
    // the raised estimate's limit: the backend gained capacity (a failover back to the larger
    // replica); find it as at the start. (One round alone may be an estimate that read the
    // leftovers of startup's overshoot as queueing and fell too far: raising it is enough.)
    const gained =
      concurrency !== undefined &&
      queued <= 1 + NO_QUEUE &&
      inflight >= (1 + 2 * NO_QUEUE) * concurrency;
    gains = gained ? gains + 1 : 0;
    if (gains >= GAIN_ROUNDS) {
      gains = 0;
      concurrency = undefined;
      // The new startup's unloaded latency starts from the one known now, as one round's worth:
      // the first startup's requests may be from a faster or slower service than today's.
      // It keeps the spread measured so far (its mean square over its mean squared).
      const mean = startupSum / startupCount;
      const relativeSquare = mean > 0 ? startupSquares / startupCount / (mean * mean) : 1;
      startupSquares = floor * floor * relativeSquare * CRUISE_SAMPLES;
      startupSum = floor * CRUISE_SAMPLES;
      startupCount = CRUISE_SAMPLES;
    }
    if (full && concurrency === undefined && queued < STARTUP_EXIT) {
      // Startup: everything in flight was in service and the limit was full: double.
      limit = clamp(limit * 2);
      return;
    }
    // The requests in service: all of those in flight when nothing queued, else Little's law.
    // (At least one: whenever requests finish, one was in service.)
    const served = inflight / queuedMean;
    let estimate = Math.max(1, served);
    // Fewer in flight than the estimate, and no clear queueing: the demand, not the backend,
    // set this round (one request at the limit made it full). It may raise the estimate, never
    // lower it: at moderate load a service of spread-out latencies would otherwise be held at
    // what it happened to be asked for.
    const demandSet = concurrency !== undefined && inflight < concurrency && queued < STARTUP_EXIT;
    if (demandSet) estimate = Math.max(estimate, concurrency!);
    // (Judged before the floor of one: a service four times slower reads as a quarter of a
    // request in service, round after round, and that is how a slower service is told apart.)
    // (A fall must show past the noise too.)
    const fell =
      concurrency !== undefined && !demandSet && inflight / queued < FAST_FALL * concurrency;
    if (fell && falls === 0) beforeFalls = concurrency;
    falls = fell ? falls + 1 : 0;
    concurrency =
      concurrency === undefined || fell || gained
        ? estimate
        : concurrency + (estimate - concurrency) * SMOOTHING;
    if (slowed && !wasSlowed && beforeFalls !== undefined) {
      // The falls were the slower service read as lost capacity: it serves as many at once as
      // before, each more slowly. (Found again from a limit of a few, startup took a second.)
      concurrency = Math.max(concurrency, beforeFalls);
      beforeFalls = undefined;
    }
    // Every PROBE_EVERY rounds one round tries a quarter more (at least one more): if the
    // backend serves them without queueing, the estimate grows with them.
    // A probe of one request more than a small estimate adds much more than a quarter: it
    // comes as much less often, so it costs about the same share of requests.
    // A limit with headroom that rounds to more than a tenth over the estimate finds gained
    // capacity by itself (the rule above); one that does not needs the probe.
    rounds++;
    const steady = withHeadroom(concurrency);
    const probes = Math.round(steady) < (1 + 2 * NO_QUEUE) * concurrency;
    const every = PROBE_EVERY * Math.max(1, Math.round(1 / (PROBE * concurrency)));
    limit = clamp(
      probes && rounds % every === 0
        ? concurrency * Math.max(1 + PROBE, 1 + 1 / concurrency)
        : steady,
    );
  };

  return {
    get current() {
      return Math.round(limit);
    },
    get floorMs() {
      return floor;
    },
    sample(nowMs, latencyMs, inflight, dropped) {
      // A request that failed with "overloaded" or no answer measured the failure, not the
      // service: the limit learns from the rest (the ramp answers failures).
      // Nor does one answered in no measurable time (from a cache, or under a coarse clock): the
      // ratios below divide by the unloaded latency, which must not be zero.
      if (dropped || !(latencyMs > 0)) return;
      const startedAt = nowMs - latencyMs;
      if (Number.isNaN(roundStart)) roundStart = startedAt;
      // A round hears only the requests admitted in it, under the limit it set.
      if (startedAt < roundStart) return;
      samples++;
      latencySum += latencyMs;
      latencySquares += latencyMs * latencyMs;
      if (inflight <= 1) {
        soloSum += latencyMs;
        soloCount++;
      }
      inflightSum += inflight;
      if (inflight >= Math.round(limit)) full = true;
      const enough =
        concurrency === undefined ? Math.min(STARTUP_SAMPLES, Math.round(limit)) : CRUISE_SAMPLES;
      if (samples < enough) return;
      endRound();
      roundStart = nowMs;
      samples = 0;
      latencySum = 0;
      latencySquares = 0;
      soloSum = 0;
      soloCount = 0;
      inflightSum = 0;
      full = false;
    },
  };
}
