// Whether requests arrive faster than the backend finishes them, from counts alone. A queue that
// arrivals below the backend's capacity built drains by itself; one that arrivals above it built
// never does. Near capacity the two look alike over a round trip (an M/M/4 queue at 95 % load
// waits 4.5 service times on average), so the shedder must tell them apart by counting, before
// it cuts the first kind short.

/** Completions a block counts before it is judged. */
const BLOCK = 32;
/** At least this many arrivals per completion in a block: above capacity. */
const ABOVE = 1.5;
/** Blocks in a row that must say above before the queue turns strict: one, to protect at once. */
const CONFIRM_ABOVE = 1;
/** Blocks in a row that must say below before the queue turns patient. */
const CONFIRM_BELOW = 4;

/**
 * Counts arrivals (every request decided on, shed or not) and completions in blocks of 32
 * completions, or 48 arrivals when the backend completes too few. A block with 1.5 arrivals a
 * completion or more says above capacity, one with fewer says below: a 2x overload counts about
 * 2, a load at capacity 1 give or take a quarter. One block that says above turns the queue
 * strict; four in a row that say below turn it patient. Slow to trust, quick to protect: with
 * exponential service a block of a 2x overload strays by about a fifth, and one in ten says
 * below; four in a row are one in 10,000. A step from half load to 2x is seen after one block
 * (48 arrivals); the requests the patient queue let wait meanwhile are what a step costs.
 *
 * It starts above capacity: a process started into a storm (a restart, a failover) is strict
 * from its first request, and is patient only once it counted that it can be.
 */
export class DemandGauge {
  private arrivals = 0;
  private completions = 0;
  /** Blocks in a row that said the opposite of the judgement in force. */
  private against = 0;
  /** Whether requests arrive slower than the backend finishes them, as last judged. */
  belowCapacity = false;

  /** A request arrived (admitted, queued or shed). */
  arrived(): void {
    this.arrivals++;
    if (this.arrivals >= ABOVE * BLOCK) this.judge();
  }

  /** A request finished, however it ended. */
  completed(): void {
    this.completions++;
    if (this.completions >= BLOCK) this.judge();
  }

  private judge(): void {
    const below = this.arrivals < ABOVE * this.completions;
    this.arrivals = 0;
    this.completions = 0;
    if (below === this.belowCapacity) {
      this.against = 0;
      return;
    }
    if (++this.against >= (below ? CONFIRM_BELOW : CONFIRM_ABOVE)) {
      this.belowCapacity = below;
      this.against = 0;
    }
  }
}
