// "Jitter your timers too": partner devices that refresh forecasts once a morning, all at exactly
// 06:00:00, against the same devices each running stormproof's real `daily` timer with a window
// centred on 06:00. Every device's timer runs on one virtual calendar; the model counts the
// requests that start in each second. No retries are involved.
import { daily } from '../core/timers/daily.js';
import type { TimerKey } from '../core/timers/spread.js';
import { checkKnownKeys, checkNumber, checkOptionsObject, show } from '../core/validate.js';
import { checkSeed, PythonRandom } from './python-random.js';
import { VirtualCalendar } from './virtual-calendar.js';

/** How the simulated devices name themselves to their timer. */
export type TimersIds = 'numbered' | 'named' | 'random';

/** The options of {@link runTimers}. Every field is optional. */
export interface TimersOptions {
  /**
   * How many devices refresh once each morning. The default, 10,000, is a made-up installed base
   * of partner apps for an API whose 6 am peak is about 4,000 requests per second (the storm
   * story's figure): spread over 20 minutes they add about 8 requests per second; at one
   * instant they are 2.5 times that peak. Each device runs a real timer on virtual time, about
   * 60 us of CPU each. An integer from 0 to 1,000,000.
   * @default 10_000
   * @example
   * ```ts
   * await runTimers({ devices: 100_000 })
   * ```
   */
  devices?: number | undefined;
  /**
   * The width, in seconds, of the window, centred on 06:00:00. The storm story's team
   * asked for a minute between 05:50 and 06:10: 1200 s. An even integer from 2 to 43,200.
   * @default 1200
   * @example
   * ```ts
   * await runTimers({ spreadSeconds: 600 }) // 05:55 to 06:05
   * ```
   */
  spreadSeconds?: number | undefined;
  /**
   * What each device passes as its timer's `key`: `'numbered'`, its number 0 to devices - 1
   * (spread almost exactly evenly); `'named'`, a name `device-<n>` (hashed, so spread like
   * independent random draws); `'random'`, no key (a fresh random second each morning).
   * @default 'numbered'
   * @example
   * ```ts
   * await runTimers({ ids: 'named' })
   * ```
   */
  ids?: TimersIds | undefined;
  /**
   * Seed of the CPython-compatible generator that the timers draw from when `ids` is
   * `'random'`; the other schedules use no randomness.
   * @default 7
   * @example
   * ```ts
   * await runTimers({ ids: 'random', seed: 1 })
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
  /** Every device's timer set to `'06:00'`. */
  readonly aligned: TimersLoad;
  /** Every device's timer set to the window, with its key as `ids` says. */
  readonly offset: TimersLoad;
  /** The mean requests per second over the window: devices / spreadSeconds. */
  readonly uniformRps: number;
}

const OWNER = 'runTimers';
const KNOWN_KEYS = ['devices', 'spreadSeconds', 'ids', 'seed'] as const;
const IDS: readonly TimersIds[] = ['numbered', 'named', 'random'];
const SIX = 6 * 3600;
const DAY0 = Date.UTC(2026, 0, 1);

function hhmmss(second: number): string {
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(Math.floor(second / 3600))}:${two(Math.floor(second / 60) % 60)}:${two(second % 60)}`;
}

/** Runs one `daily(window)` timer per device through one morning; counts starts per second. */
async function morning(
  devices: number,
  window: string,
  keyOf: (device: number) => TimerKey | undefined,
  random: () => number,
  from: number,
  to: number,
): Promise<TimersLoad> {
  const calendar = new VirtualCalendar(DAY0);
  const wallClock = calendar.now;
  const counts = new Map<number, number>();
  const count = () => {
    const second = Math.floor((wallClock() - DAY0) / 1000) - SIX;
    counts.set(second, (counts.get(second) ?? 0) + 1);
  };
  const done: Promise<void>[] = [];
  for (let device = 0; device < devices; device++) {
    done.push(daily(window, count, { key: keyOf(device), clock: calendar, wallClock, random }));
  }
  await calendar.runUntil(DAY0 + 12 * 3_600_000);
  calendar.close(new Error('the morning is over'));
  await Promise.all(done);
  let peakRps = 0;
  for (const n of counts.values()) if (n > peakRps) peakRps = n;
  const series: TimersSecond[] = [];
  for (let t = from; t < to; t++) series.push({ t, requests: counts.get(t) ?? 0 });
  return { peakRps, series };
}

/**
 * Counts the requests per second of `devices` devices refreshing once a morning through
 * stormproof's `daily` timer, two ways: each timer set to 06:00, and each set to a window of
 * `spreadSeconds` centred on 06:00 with a key per device (Brooker's advice for timers: a fixed
 * offset per host rather than a fresh random one, so a pattern of overload repeats and can be
 * debugged).
 *
 * @throws TypeError or RangeError naming the option and value when an option is invalid or unknown.
 * @example
 * ```ts
 * const r = await runTimers({ devices: 10_000 });
 * r.aligned.peakRps; // 10000: every device in the same second
 * r.offset.peakRps;  // 9: a flat 8.3 a second from 05:50 to 06:10
 * ```
 */
export async function runTimers(options?: TimersOptions): Promise<TimersResult> {
  const o = checkOptionsObject(OWNER, options);
  checkKnownKeys(OWNER, o, KNOWN_KEYS);
  const devices = checkNumber(OWNER, 'devices', o.devices === undefined ? 10_000 : o.devices, {
    min: 0,
    max: 1_000_000,
    integer: true,
  });
  const spread = checkNumber(
    OWNER,
    'spreadSeconds',
    o.spreadSeconds === undefined ? 1200 : o.spreadSeconds,
    {
      min: 2,
      max: 43_200,
      integer: true,
    },
  );
  if (spread % 2 !== 0) {
    throw new RangeError(`stormproof: ${OWNER} spreadSeconds must be even, got ${spread}`);
  }
  const ids = o.ids === undefined ? 'numbered' : o.ids;
  if (!IDS.includes(ids as TimersIds)) {
    throw new TypeError(
      `stormproof: ${OWNER} ids must be one of ${IDS.join(', ')}, got ${show(ids)}`,
    );
  }
  const seed = checkSeed(OWNER, o.seed === undefined ? 7 : o.seed);
  const half = spread / 2;
  const from = -half - 60;
  const to = half + 60;
  const rng = new PythonRandom(seed);
  const random = () => rng.random();
  const keyOf = (device: number): TimerKey | undefined =>
    ids === 'numbered' ? device : ids === 'named' ? `device-${device}` : undefined;
  const window = `${hhmmss(SIX - half)}-${hhmmss(SIX + half)}`;
  const aligned = await morning(devices, '06:00', keyOf, random, from, to);
  const offset = await morning(devices, window, keyOf, random, from, to);
  return { aligned, offset, uniformRps: devices / spread };
}
