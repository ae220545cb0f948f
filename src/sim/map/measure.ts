// What a run measures, second by second: user requests offered, user requests that succeeded
// (goodput) or failed, and the calls that reached the server (attempts, retries included).

/** Per-second counts of one run. Index = second from the start of the run. */
export interface MapSeries {
  /** User requests that arrived (the offered load). */
  readonly offered: number[];
  /**
   * User requests that got an answer in time (goodput), counted in the second they were offered,
   * so that goodput over offered is the share of that second's requests that succeeded.
   */
  readonly goodput: number[];
  /** User requests that failed (gave up, refused), counted in the second they were offered. */
  readonly failed: number[];
  /** Attempts that reached the server (admitted or rejected there). */
  readonly calls: number[];
  /** Requests the server finished after their client had hung up: work thrown away. */
  readonly wasted: number[];
}

/** Counters for a run of `seconds` seconds. */
export class Meter {
  readonly series: MapSeries;
  users = 0;
  calls = 0;
  retries = 0;
  budgetRefusals = 0;
  breakerRefusals = 0;

  constructor(seconds: number) {
    const zeros = () => new Array<number>(seconds).fill(0);
    this.series = {
      offered: zeros(),
      goodput: zeros(),
      failed: zeros(),
      calls: zeros(),
      wasted: zeros(),
    };
  }

  #second(tMs: number): number {
    return Math.min(this.series.offered.length - 1, Math.floor(tMs / 1000));
  }

  user(tMs: number): void {
    this.users++;
    this.series.offered[this.#second(tMs)]!++;
  }

  /** A user request offered at `offeredMs` ended. */
  ended(offeredMs: number, ok: boolean): void {
    const s = this.#second(offeredMs);
    if (ok) this.series.goodput[s]!++;
    else this.series.failed[s]!++;
  }

  call(tMs: number): void {
    this.calls++;
    this.series.calls[this.#second(tMs)]!++;
  }

  wasted(tMs: number): void {
    this.series.wasted[this.#second(tMs)]!++;
  }
}
