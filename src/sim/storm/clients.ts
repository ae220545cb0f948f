// The client side: each tap goes through its partner instance's wrapper (naive setup, some
// instances) and client library, which sends attempts to the edge and decides after each one
// with the engine's `step` (or its fixed answers, see FixedLayer), asking the instance's circuit
// breaker before every attempt when it has one, as the engine's driver does.
import type { Outcome } from '../../core/step.js';
import { startState, step } from '../../core/step.js';
import type { Arrivals } from './arrivals.js';
import type { ClientPolicy } from './client-policy.js';
import type { Gateway } from './gateway.js';
import type { Measurements } from './measurements.js';
import {
  type Attempt,
  CLIENT_TIMEOUT,
  EV_CLIENT_TIMEOUT,
  EV_EDGE,
  EV_LIBRARY_RETRY,
  EV_WRAPPER_RETRY,
  IN_GATEWAY,
  OK,
  TO_EDGE,
  type UserRequest,
  type World,
} from './world.js';

export class Clients {
  constructor(
    private readonly world: World,
    private readonly m: Measurements,
    private readonly policy: ClientPolicy,
    private readonly arrivals: Arrivals,
    private readonly gateway: Gateway,
  ) {}

  /** A farmer taps: a new user request at a partner instance. */
  startUser(): void {
    const { world, m, policy, arrivals } = this;
    m.users[world.sec]!++;
    const instance = arrivals.pickInstance();
    const key = arrivals.pickKey();
    const u: UserRequest = {
      instance,
      key,
      wrapperAttempt: policy.wrapper !== undefined && instance < policy.wrappedInstances ? 1 : 0,
      libAttempt: 1,
      libStartedAt: world.now,
      lib: undefined,
    };
    this.startLibraryCall(u);
  }

  /** The wrapper (or the tap itself) calls the client library (also EV_WRAPPER_RETRY). */
  startLibraryCall(u: UserRequest): void {
    const now = this.world.now;
    u.libAttempt = 1;
    u.libStartedAt = now;
    if (this.policy.fixedLibrary === undefined) {
      const library = this.policy.libraries[u.instance]!;
      u.lib = startState(library, now);
      library.budget?.recordRequest(now);
    }
    this.startAttempt(u);
  }

  /** The client library sends an attempt (also EV_LIBRARY_RETRY). */
  startAttempt(u: UserRequest): void {
    const { world, m, policy } = this;
    // As the engine's driver: the breaker is asked before every attempt. A refused first attempt
    // fails the call at once (BreakerOpenError), a refused retry gives up with the last failure;
    // either way no attempt is sent, and the stormproof setup has no wrapper to retry it.
    const admission =
      policy.breakers === undefined ? undefined : policy.breakers[u.instance]!.admit();
    if (admission !== undefined && !admission.admitted) {
      m.breakerRefusals++;
      m.refused[world.sec]!++;
      this.#finishUser(false);
      return;
    }
    const a: Attempt = {
      user: u,
      done: false,
      stage: TO_EDGE,
      gatewayAttempt: 0,
      tryNo: 0,
      answer: OK,
      admission,
    };
    // The engine's attempt timeout: fresh for each attempt, cut short by the deadline.
    const library = policy.libraries[u.instance]!;
    const left = library.deadlineMs - (world.now - u.libStartedAt);
    const limit = Math.max(0, Math.min(library.attemptTimeoutMs ?? left, left));
    world.calendar.schedule(world.now + Math.ceil(limit), a, EV_CLIENT_TIMEOUT);
    world.calendar.schedule(world.now + world.latency(), a, EV_EDGE);
  }

  /** The attempt's time limit passed (EV_CLIENT_TIMEOUT): the client hangs up. */
  timedOut(a: Attempt): void {
    if (a.done) return;
    a.done = true;
    if (a.stage === IN_GATEWAY) this.gateway.hungUp();
    this.#libraryOutcome(a, CLIENT_TIMEOUT);
  }

  /** The attempt's answer arrives (EV_ANSWER). */
  answered(a: Attempt): void {
    if (a.done) return;
    a.done = true;
    this.#libraryOutcome(a, a.answer);
  }

  /** The client library sees the outcome of attempt `a`: its answer, or its own timeout. */
  #libraryOutcome(a: Attempt, outcome: Outcome): void {
    const { world, m, policy } = this;
    const u = a.user;
    let delayMs: number;
    if (policy.fixedLibrary !== undefined) {
      delayMs = outcome.ok ? -1 : policy.fixedLibrary.afterFailure(u.libAttempt, outcome);
    } else {
      const d = step(policy.libraries[u.instance]!, u.lib!, outcome, world.now);
      if (d.action === 'retry') {
        u.lib = d.state;
        delayMs = d.delayMs;
      } else {
        if (d.action === 'give-up' && d.reason === 'budget') m.budgetRefusals++;
        delayMs = -1;
      }
    }
    // After the decision, as the driver records it. Every failure the model sends (a 503, a 504,
    // a timeout) is one the engine counts against the service.
    if (a.admission !== undefined) {
      policy.breakers![u.instance]!.record(a.admission, outcome.ok ? 'success' : 'failure');
    }
    if (delayMs < 0) {
      this.#wrapperOutcome(u, outcome);
      return;
    }
    m.libraryRetries++;
    m.retries[world.sec]!++;
    u.libAttempt++;
    if (delayMs === 0) this.startAttempt(u);
    else world.calendar.schedule(world.now + Math.ceil(delayMs), u, EV_LIBRARY_RETRY);
  }

  /** The wrapper sees the outcome of a library call. */
  #wrapperOutcome(u: UserRequest, outcome: Outcome): void {
    const wrapper = this.policy.wrapper;
    if (outcome.ok || u.wrapperAttempt === 0 || wrapper === undefined) {
      this.#finishUser(outcome.ok);
      return;
    }
    const delayMs = wrapper.afterFailure(u.wrapperAttempt, outcome);
    if (delayMs < 0) {
      this.#finishUser(false);
      return;
    }
    this.m.wrapperRetries++;
    u.wrapperAttempt++;
    if (delayMs === 0) this.startLibraryCall(u);
    else this.world.calendar.schedule(this.world.now + Math.ceil(delayMs), u, EV_WRAPPER_RETRY);
  }

  #finishUser(ok: boolean): void {
    if (ok) this.m.succeeded[this.world.sec]!++;
    else this.m.failed[this.world.sec]!++;
  }
}
