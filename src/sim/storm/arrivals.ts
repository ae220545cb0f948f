// Arrivals: farmers' taps, a Poisson stream of `rps` a second, each from a partner instance
// picked uniformly and for a forecast picked by popularity (Zipf: the k-th most popular is asked
// for in proportion to 1 / k^zipfExponent).
import type { World } from './world.js';

export class Arrivals {
  /** Cumulative popularity weights of the forecasts, most popular first. */
  readonly #cumulative: Float64Array;
  readonly #meanGapMs: number;
  /** When the next tap arrives, in virtual ms (fractional). */
  nextAt = Number.POSITIVE_INFINITY;

  constructor(private readonly world: World) {
    const p = world.p;
    const cumulative = new Float64Array(p.forecastKeys);
    let total = 0;
    for (let k = 0; k < p.forecastKeys; k++) {
      total += 1 / (k + 1) ** p.zipfExponent;
      cumulative[k] = total;
    }
    this.#cumulative = cumulative;
    this.#meanGapMs = 1000 / p.rps;
  }

  /** Taps a second asking for forecast `k` (0 the most popular). */
  rate(k: number): number {
    const p = this.world.p;
    const c = this.#cumulative;
    return (p.rps * (1 / (k + 1) ** p.zipfExponent)) / c[c.length - 1]!;
  }

  /** Draws the first arrival: the stream starts. */
  start(): void {
    this.nextAt = this.#gap();
  }

  /** Draws the gap to the next arrival, after a tap has arrived. */
  advance(): void {
    this.nextAt += this.#gap();
  }

  /** The partner instance a new tap comes from. */
  pickInstance(): number {
    return Math.floor(this.world.random() * this.world.p.partnerInstances);
  }

  /** The forecast a new tap asks for. */
  pickKey(): number {
    const cumulative = this.#cumulative;
    const target = this.world.random() * cumulative[cumulative.length - 1]!;
    let lo = 0;
    let hi = cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cumulative[mid]! > target) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }

  #gap(): number {
    return -Math.log(1 - this.world.random()) * this.#meanGapMs;
  }
}
