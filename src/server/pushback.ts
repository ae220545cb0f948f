// How long each rejected client is told to wait. One number for everyone brings everyone back
// together; so the values are spread, and in the load-aware mode each client gets its own slot
// in the queue of clients already told to come back.

/**
 * The wait handed to rejected clients (defaults filled by `createShedder`):
 *
 * - `{ mode: 'spread', minMs: 1000, maxMs: 5000 }`: uniform over [minMs, maxMs].
 * - `{ mode: 'load-aware', capMs: 30_000, minMs: 0, drainWindowMs: 100, initialDrainPerSecond }`:
 *   the k-th rejected client gets a slot about k / drain rate ahead (at least `minMs`), the
 *   drain rate an exponential average of completions per second over `drainWindowMs` windows,
 *   seeded by `initialDrainPerSecond` when given.
 * - `{ mode: 'fixed', ms }`: one value for everyone (for comparison).
 *
 * @example
 * ```ts
 * createShedder({ retryAfter: { mode: 'load-aware', capMs: 10_000 } })
 * ```
 */
export type RetryAfterOption =
  | { mode: 'spread'; minMs?: number | undefined; maxMs?: number | undefined }
  | {
      mode: 'load-aware';
      capMs?: number | undefined;
      minMs?: number | undefined;
      drainWindowMs?: number | undefined;
      initialDrainPerSecond?: number | undefined;
    }
  | { mode: 'fixed'; ms: number };

/** Measures completions per second as an exponential average over fixed windows. */
export class DrainRate {
  private windowStart = Number.NaN;
  private count = 0;
  private rate: number | undefined;

  constructor(
    private readonly windowMs: number,
    initialPerSecond: number | undefined,
    private readonly smoothing = 0.3,
  ) {
    this.rate = initialPerSecond;
  }

  /** One request finished at `nowMs`. */
  record(nowMs: number): void {
    this.roll(nowMs);
    this.count++;
  }

  /** Completions per second, or undefined before the first full window. */
  perSecond(nowMs: number): number | undefined {
    this.roll(nowMs);
    return this.rate;
  }

  private roll(nowMs: number): void {
    if (Number.isNaN(this.windowStart)) {
      this.windowStart = nowMs;
      return;
    }
    const elapsed = nowMs - this.windowStart;
    if (elapsed < this.windowMs) return;
    const windows = Math.floor(elapsed / this.windowMs);
    const measured = (this.count * 1000) / this.windowMs;
    this.rate =
      this.rate === undefined ? measured : this.rate + (measured - this.rate) * this.smoothing;
    // Windows that passed with no completion at all pull the rate down too.
    for (let i = 1; i < windows && i < 50; i++) this.rate -= this.rate * this.smoothing;
    this.count = 0;
    this.windowStart += windows * this.windowMs;
  }
}

/** Picks the wait for each rejected client, in milliseconds. */
export interface Pushback {
  /** The wait for the next rejected client, in ms. */
  next(nowMs: number): number;
  /** A request finished: the drain rate hears of it. */
  completed(nowMs: number): void;
  /** Completions per second as measured, undefined before the first full window. */
  drainPerSecond(nowMs: number): number | undefined;
}

/**
 * Builds the chosen Retry-After source.
 *
 * - `spread`: uniform over [minMs, maxMs].
 * - `load-aware`: the k-th client told to come back gets a slot k / drain rate ahead of now, so
 *   returning clients arrive no faster than the server finishes requests; capped at `capMs`
 *   (past the cap, uniform over the last half of it, so capped clients do not collide). Until a
 *   drain rate is measured it spreads like `spread` over [minMs, capMs].
 * - `fixed`: one value for everyone (to compare with; it brings a herd back at once).
 */
export function createPushback(option: RetryAfterOption, random: () => number): Pushback {
  // Every mode measures the drain rate, for stats(); only the load-aware one uses it.
  const drainOf = (d: DrainRate) => ({
    completed: (nowMs: number) => d.record(nowMs),
    drainPerSecond: (nowMs: number) => d.perSecond(nowMs),
  });
  if (option.mode === 'fixed') {
    const ms = option.ms;
    return { next: () => ms, ...drainOf(new DrainRate(100, undefined)) };
  }
  if (option.mode === 'spread') {
    const minMs = option.minMs ?? 1000;
    const maxMs = option.maxMs ?? 5000;
    return {
      next: () => minMs + (maxMs - minMs) * random(),
      ...drainOf(new DrainRate(100, undefined)),
    };
  }
  const capMs = option.capMs ?? 30_000;
  const minMs = option.minMs ?? 0;
  const drain = new DrainRate(option.drainWindowMs ?? 100, option.initialDrainPerSecond);
  // When the last client already told to come back is due.
  let lastSlotMs = Number.NEGATIVE_INFINITY;
  return {
    next(nowMs) {
      const perSecond = drain.perSecond(nowMs);
      if (perSecond === undefined || perSecond <= 0) {
        return Math.max(minMs, 1000) + (capMs - Math.max(minMs, 1000)) * random();
      }
      const slot = Math.max(lastSlotMs, nowMs + minMs) + 1000 / perSecond;
      const wait = slot - nowMs;
      if (wait > capMs) return capMs / 2 + (capMs / 2) * random();
      lastSlotMs = slot;
      return wait;
    },
    ...drainOf(drain),
  };
}
