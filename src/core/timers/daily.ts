// Once a local day, at a slot within a window of wall time: the cure for every device
// refreshing at 06:00:00 sharp. Slots are numbered by local day, so each day has exactly one,
// whatever daylight saving does to the window.
import { checkKnownKeys, checkOptionsObject, show } from '../validate.js';
import { SHARED_KEYS, settle, type TimerOptions } from './options.js';
import { runSchedule, type Schedule, type TimerRun } from './schedule.js';
import { spreadOf } from './spread.js';
import { type Zone, zone } from './zone.js';

/** The options of {@link daily}. Every field is optional. */
export interface DailyOptions extends TimerOptions {
  /**
   * The IANA time zone whose wall time the window is in, such as `'Europe/Berlin'`, read
   * through `Intl` (no time zone data of stormproof's own). A day with a daylight-saving change
   * still has exactly one run: a slot in the skipped hour runs as far past the gap as it would
   * have been into it (02:30 becomes 03:30), and a slot in the repeated hour runs at its first
   * occurrence only.
   * @default 'UTC'
   * @example
   * ```ts
   * daily('05:50-06:10', refresh, { key: deviceId, timeZone: 'Asia/Kolkata' })
   * ```
   */
  timeZone?: string | undefined;
}

const OWNER = 'daily';
const KNOWN_KEYS = [...SHARED_KEYS, 'timeZone'] as const;
const DAY = 86_400_000;
const TIME = /^([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d))?$/;

/** A parsed window: its start in ms after local midnight and its length in ms. */
export interface DailyWindow {
  readonly startMs: number;
  readonly lengthMs: number;
}

/** Parses `'HH:MM-HH:MM'` (seconds optional; the end is excluded) or a single `'HH:MM'`. */
export function parseWindow(owner: string, window: unknown): DailyWindow {
  const bad = () =>
    new TypeError(
      `stormproof: ${owner} window must be "HH:MM-HH:MM" or "HH:MM" (24-hour, seconds optional), got ${show(window)}`,
    );
  if (typeof window !== 'string') throw bad();
  const ends = window.split('-').map((p) => TIME.exec(p.trim()));
  if (ends.length > 2 || ends.some((m) => m === null)) throw bad();
  const [start, end] = ends.map((m) => {
    const [, h, min, sec] = m!;
    return ((Number(h) * 60 + Number(min)) * 60 + Number(sec ?? 0)) * 1000;
  });
  // An end before the start crosses midnight: 23:50-00:10 is twenty minutes long.
  const lengthMs = end === undefined ? 0 : (end - start! + DAY) % DAY;
  return { startMs: start!, lengthMs };
}

/** The daily schedule in a zone: slot `d` is local day `d` since the epoch. */
export function dailySchedule(window: DailyWindow, local: Zone, slotOf: () => number): Schedule {
  return {
    // Two days back: a window that crosses midnight can hold yesterday's slot in today.
    indexOf: (wallMs) => Math.floor(local.local(wallMs) / DAY) - 2,
    at: (day) => local.instant(day * DAY + window.startMs + Math.floor(slotOf() * window.lengthMs)),
  };
}

/**
 * Runs `task` once a local day at a slot within `window`, such as `'05:50-06:10'`: the same
 * slot every day for a given key, so a fleet spreads over the window instead of arriving at
 * its start. Exactly one run per local day, across daylight-saving changes too.
 *
 * @param window `'HH:MM-HH:MM'` in 24-hour local time, start included, end excluded, seconds
 *   optional; an end before the start crosses midnight; a single `'HH:MM'` runs at that time.
 * @returns a promise that resolves once `signal` has aborted and a run still going has settled.
 * @throws TypeError or RangeError naming the option at fault, at once.
 * @example
 * ```ts
 * // Each device refreshes forecasts once a morning, at its own second between 05:50 and 06:10.
 * daily('05:50-06:10', refresh, { key: deviceId, timeZone: 'Asia/Kolkata', signal });
 * ```
 */
export function daily(
  window: string,
  task: (run: TimerRun) => unknown,
  options?: DailyOptions,
): Promise<void> {
  const parsed = parseWindow(OWNER, window);
  if (typeof task !== 'function') {
    throw new TypeError(`stormproof: ${OWNER} task must be a function, got ${show(task)}`);
  }
  const o = checkOptionsObject(OWNER, options);
  checkKnownKeys(OWNER, o, KNOWN_KEYS);
  const timeZone = o.timeZone === undefined ? 'UTC' : o.timeZone;
  if (typeof timeZone !== 'string') {
    throw new TypeError(`stormproof: ${OWNER} timeZone must be a string, got ${show(timeZone)}`);
  }
  let local: Zone;
  try {
    local = zone(timeZone);
  } catch {
    throw new RangeError(
      `stormproof: ${OWNER} timeZone must be an IANA time zone name such as "Europe/Berlin", got ${show(timeZone)}`,
    );
  }
  const s = settle(OWNER, o);
  const fixed = s.key === undefined ? undefined : spreadOf(s.key);
  return runSchedule(
    dailySchedule(parsed, local, () => fixed ?? s.random()),
    task,
    s,
  );
}
