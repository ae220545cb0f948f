// The API gateway: takes each attempt the edge passes on and tries the API servers for it,
// retrying at once in the naive setup (its own retry layer, the engine as the old stack), with
// its own timeout per try. It stops working for an attempt once the client has hung up, as
// nginx and Envoy cancel their upstream request; the API server is not told.
import type { Outcome } from '../../core/step.js';
import type { FixedLayer } from './client-policy.js';
import type { Measurements } from './measurements.js';
import type { ApiServers, ServerCaller } from './servers.js';
import {
  ANSWERED,
  type Attempt,
  EV_ANSWER,
  EV_GATEWAY_RETRY,
  EV_GATEWAY_TIMEOUT,
  GATEWAY_TIMEOUT,
  IN_GATEWAY,
  type Job,
  type World,
} from './world.js';

export class Gateway implements ServerCaller {
  constructor(
    private readonly world: World,
    private readonly m: Measurements,
    private readonly servers: ApiServers,
    /** The gateway's retry layer, or none (it answers with the first failure). */
    private readonly policy: FixedLayer | undefined,
  ) {
    servers.caller = this;
  }

  /** The edge hands over attempt `a`. */
  take(a: Attempt): void {
    a.stage = IN_GATEWAY;
    a.gatewayAttempt = 1;
    this.#try(a);
  }

  /** A retry the gateway's policy delayed is due (EV_GATEWAY_RETRY). */
  retryDue(a: Attempt): void {
    if (!a.done && a.stage === IN_GATEWAY) this.#try(a);
  }

  /** The gateway's timeout for try `tryNo` of `a` passed (EV_GATEWAY_TIMEOUT). */
  timedOut(a: Attempt, tryNo: number): void {
    if (a.done || a.stage !== IN_GATEWAY || a.tryNo !== tryNo) return;
    a.tryNo++; // the try in flight is abandoned; its answer, when it comes, is ignored
    if (this.#failed(a, GATEWAY_TIMEOUT)) this.#try(a);
  }

  /** The client hung up on the gateway while it worked on `a`: an error in its books. */
  hungUp(): void {
    this.m.gatewayErrors[this.world.sec]!++;
  }

  /** An API server answered job `j`; an answer to a try given up on is wasted work. */
  answered(j: Job, outcome: Outcome): void {
    const a = j.attempt;
    if (a.done || a.stage !== IN_GATEWAY || a.tryNo !== j.tryNo) {
      this.m.wasted[this.world.sec]!++;
      return;
    }
    if (outcome.ok) {
      this.#answer(a, outcome, true);
      return;
    }
    if (this.#failed(a, outcome)) this.#try(a);
  }

  /** The servers' protection rejected job `j` after it waited in their queue: a quick answer, no work wasted. */
  rejectedLater(j: Job, outcome: Outcome): void {
    const a = j.attempt;
    if (a.done || a.stage !== IN_GATEWAY || a.tryNo !== j.tryNo) return;
    if (this.#failed(a, outcome)) this.#try(a);
  }

  /** Tries the API servers for `a`, retrying at once while the gateway's policy says so. */
  #try(a: Attempt): void {
    const world = this.world;
    for (;;) {
      const tryNo = a.tryNo + 1;
      const rejection = this.servers.accept(a, tryNo);
      if (rejection === undefined) {
        a.tryNo = tryNo;
        world.calendar.schedule(
          world.now + world.p.gatewayTimeoutMs,
          a,
          EV_GATEWAY_TIMEOUT | (tryNo << 4),
        );
        return;
      }
      if (!this.#failed(a, rejection)) return;
    }
  }

  /**
   * The try for `a` failed with `outcome`: ask the gateway's policy. Returns true when it retries
   * at once (the caller tries again), false when it waits or gave up.
   */
  #failed(a: Attempt, outcome: Outcome): boolean {
    const delayMs =
      this.policy === undefined ? -1 : this.policy.afterFailure(a.gatewayAttempt, outcome);
    if (delayMs < 0) {
      this.#answer(a, outcome, false);
      return false;
    }
    this.m.gatewayRetries++;
    a.gatewayAttempt++;
    if (delayMs === 0) return true;
    this.world.calendar.schedule(this.world.now + Math.ceil(delayMs), a, EV_GATEWAY_RETRY);
    return false;
  }

  /** The gateway's answer for `a` leaves now and reaches the client after the network trip. */
  #answer(a: Attempt, outcome: Outcome, ok: boolean): void {
    const { world, m } = this;
    if (ok) m.gatewayOk[world.sec]!++;
    else m.gatewayErrors[world.sec]!++;
    a.stage = ANSWERED;
    a.answer = outcome;
    world.calendar.schedule(world.now + world.latency(), a, EV_ANSWER);
  }
}
