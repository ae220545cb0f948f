// Local wall time in a named time zone, through Intl alone (no tz database of our own). Local
// times are "local epoch ms": the instant whose UTC fields equal the local fields.

const DAY = 86_400_000;

/** Converts between instants and local wall time in one time zone. */
export interface Zone {
  /** The local wall time of an instant. */
  local(instant: number): number;
  /**
   * The instant of a local wall time. In a repeated hour, the earlier of the two; in a skipped
   * hour, the instant as far past the gap's start as the wall time is (02:30 in a gap from
   * 02:00 to 03:00 becomes 03:30), as JavaScript's Temporal does by default.
   */
  instant(local: number): number;
}

const UTC: Zone = { local: (t) => t, instant: (t) => t };

// Making an Intl.DateTimeFormat costs tens of microseconds: one per zone name is enough.
const zones = new Map<string, Zone>();

/** The zone named `timeZone`; throws a RangeError from Intl when the name is unknown. */
export function zone(timeZone: string): Zone {
  let found = zones.get(timeZone);
  if (found === undefined) {
    found = makeZone(timeZone);
    zones.set(timeZone, found);
  }
  return found;
}

function makeZone(timeZone: string): Zone {
  const format = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  });
  if (format.resolvedOptions().timeZone === 'UTC') return UTC;
  const offset = (instant: number): number => {
    const f: Record<string, number> = {};
    for (const part of format.formatToParts(instant)) {
      if (part.type !== 'literal') f[part.type] = Number(part.value);
    }
    const whole = Math.floor(instant / 1000) * 1000;
    return Date.UTC(f.year!, f.month! - 1, f.day!, f.hour, f.minute, f.second) - whole;
  };
  return {
    local: (instant) => instant + offset(instant),
    instant(local) {
      // A zone changes its offset at most once in a day here: try the offsets half a day
      // either side and keep the candidates that really show this wall time.
      const before = offset(local - DAY / 2);
      const after = offset(local + DAY / 2);
      const early = local - before;
      const late = local - after;
      const earlyFits = offset(early) === before;
      const lateFits = offset(late) === after;
      if (earlyFits && lateFits) return Math.min(early, late);
      if (earlyFits) return early;
      if (lateFits) return late;
      return early; // in the gap: the offset before it carries the time past the gap
    },
  };
}
