// "Jitter your timers too": partner devices that refresh forecasts once a morning, all at exactly
// 06:00:00, against the same devices each refreshing at a fixed offset of its own, spread
// uniformly from 05:50 to 06:10. Counts requests per second; no retries are involved.
import { checkKnownKeys, checkNumber, checkOptionsObject } from '../core/validate.js';
import { checkSeed, PythonRandom } from './python-random.js';

/** The options of {@link runTimers}. Every field is optional. */
export interface TimersOptions {
  /**
   * How many devices refresh once each morning. The default, 100,000, is a made-up but plausible
   * installed base of farm and delivery apps for an API whose 6 am peak is about 4,000 requests
   * per second (the storm story's figure): spread over 20 minutes they add about 83
   * requests per second, 2% of that peak; at one instant they are 25 times it. An integer from 0
   * to 10,000,000.
   * @default 100_000
   * @example
   * ```ts
   * runTimers({ devices: 1_000_000 })
   * ```
   */
  devices?: number | undefined;
  /**
   * The width, in seconds, of the window the offsets are spread over, centred on 06:00:00. The
   * storm story's team asked for a random minute between 05:50 and 06:10: 1200 s. An
   * integer from 1 to 86,400.
   * @default 1200
   * @example
   * ```ts
   * runTimers({ spreadSeconds: 600 }) // 05:55 to 06:05
   * ```
   */
  spreadSeconds?: number | undefined;
  /**
   * Seed of the CPython-compatible generator that fixes each device's offset: device `i` gets the
   * `i`-th `uniform(-spread / 2, spread / 2)` draw, once, and keeps it every morning.
   * @default 7
   * @example
   * ```ts
   * runTimers({ seed: 1 })
   * ```
   */
  seed?: number | bigint | undefined;
}

/** Requests in one second. */
export interface TimersSecond {
  /** Start of the second, in seconds from 06:00:00 (negative before it). */
  readonly t: number;
  /** Requests that started in that second. */
  readonly requests: number;
}

/** One schedule's load. */
export interface TimersLoad {
  /** The most requests in one second. */
  readonly peakRps: number;
  /**
   * Requests per second over the whole window plus a minute either side (from
   * `-(spread / 2) - 60` to `spread / 2 + 60`), the same span for both schedules.
   */
  readonly series: readonly TimersSecond[];
}

/** What {@link runTimers} reports. */
export interface TimersResult {
  /** Every device at exactly 06:00:00. */
  readonly aligned: TimersLoad;
  /** Every device at its own fixed offset in the window. */
  readonly offset: TimersLoad;
}

const OWNER = 'runTimers';
const KNOWN_KEYS = ['devices', 'spreadSeconds', 'seed'] as const;

function load(counts: Map<number, number>, from: number, to: number): TimersLoad {
  let peakRps = 0;
  for (const n of counts.values()) if (n > peakRps) peakRps = n;
  const series: TimersSecond[] = [];
  for (let t = from; t < to; t++) series.push({ t, requests: counts.get(t) ?? 0 });
  return { peakRps, series };
}

/**
 * Counts the requests per second of `devices` devices refreshing once a morning, two ways: all
 * at exactly 06:00:00, and each at a fixed offset of its own drawn uniformly over
 * `spreadSeconds` centred on 06:00 (Brooker's advice for timers: a fixed offset per host rather
 * than a fresh random one, so a pattern of overload repeats and can be debugged).
 *
 * @throws TypeError or RangeError naming the option and value when an option is invalid or unknown.
 * @example
 * ```ts
 * const r = runTimers();
 * r.aligned.peakRps; // 100000: every device in the same second
 * r.offset.peakRps;  // 123: a gentle hump of about 83 per second
 * ```
 */
export function runTimers(options?: TimersOptions): TimersResult {
  const o = checkOptionsObject(OWNER, options);
  checkKnownKeys(OWNER, o, KNOWN_KEYS);
  const devices = checkNumber(OWNER, 'devices', o.devices ?? 100_000, {
    min: 0,
    max: 10_000_000,
    integer: true,
  });
  const spread = checkNumber(OWNER, 'spreadSeconds', o.spreadSeconds ?? 1200, {
    min: 1,
    max: 86_400,
    integer: true,
  });
  const seed = checkSeed(OWNER, o.seed ?? 7);
  const half = spread / 2;
  const from = Math.floor(-half) - 60;
  const to = Math.ceil(half) + 60;

  const aligned = new Map<number, number>();
  if (devices > 0) aligned.set(0, devices);

  const rng = new PythonRandom(seed);
  const offset = new Map<number, number>();
  for (let i = 0; i < devices; i++) {
    const second = Math.floor(rng.uniform(-half, half));
    offset.set(second, (offset.get(second) ?? 0) + 1);
  }
  return { aligned: load(aligned, from, to), offset: load(offset, from, to) };
}
