// The client policy: every retry layer of the setup (partner wrapper, client library, gateway)
// is the library's own engine, `resolvePolicy` and `step`, on the simulator's clock and random
// source; the stormproof library may add the engine's CircuitBreaker per partner instance. This
// file builds the layers as the setup says; clients.ts and gateway.ts drive them.
import { CircuitBreaker } from '../../core/breaker/breaker.js';
import type { BreakerOptions } from '../../core/breaker/options.js';
import type { Budget } from '../../core/budgets/budget.js';
import { RetryBudget } from '../../core/budgets/retry-budget.js';
import { type ResolvedPolicy, type RetryPolicyOptions, resolvePolicy } from '../../core/options.js';
import { type Outcome, type RetryState, startState, step } from '../../core/step.js';
import type { Measurements } from './measurements.js';
import { OWNER, type StormRetryPolicy } from './options.js';
import type { World } from './world.js';

/** A deadline long enough never to bind: the naive layers have none. */
const NO_DEADLINE_MS = 1e12;

/**
 * A retry layer of the old stack (a partner wrapper, the gateway, the old client library): the
 * engine with 4 attempts, no wait, no budget, no deadline and Retry-After ignored. Its decisions
 * then depend only on the attempt number and the failure, never on time, chance or history (the
 * other fields of the engine's state only matter for backoff, which is 0 here, and for 500s,
 * which the model never sends), so the engine's `step` is asked once per attempt number and
 * failure, the first time it comes up, and its answer reused. These layers make tens of
 * millions of decisions in a storm; asking once keeps a run to seconds. A library with a budget,
 * jitter or a deadline (the stormproof one, or any `retryPolicy` that adds them) calls `step`
 * for every decision.
 *
 * The old stack predates the server's headers: it sees a failure's status (or its timeout) and
 * nothing else, so `step` is shown the failure without its headers (a stormproof server's
 * `stormproof-pushback-ms`, which the engine would obey exactly, means nothing to it).
 */
export class FixedLayer {
  readonly #policy: ResolvedPolicy;
  /** Per failure (its status, or -1 for a timeout): the wait after attempt n (at index n - 1), or -1 for giving up. */
  readonly #answers = new Map<number, number[]>();

  /**
   * Whether the policy's decisions depend on nothing but the attempt number and the failure: no
   * budget, no override, Retry-After ignored, no random or growing wait, a deadline that never
   * binds.
   */
  static fits(policy: ResolvedPolicy): boolean {
    return (
      policy.budget === undefined &&
      policy.shouldRetry === undefined &&
      !policy.honorRetryAfter &&
      policy.jitter.kind === 'none' &&
      policy.maxDelayMs === 0 &&
      policy.deadlineMs >= NO_DEADLINE_MS
    );
  }

  constructor(policy: ResolvedPolicy) {
    if (!FixedLayer.fits(policy)) {
      throw new Error('stormproof: a FixedLayer needs a policy that depends only on the attempt');
    }
    this.#policy = policy;
  }

  /** The engine's wait before the next attempt after `attempt` failed with `outcome`, or -1. */
  afterFailure(attempt: number, outcome: Outcome): number {
    const error = (outcome as { error?: { status?: number; timedOut?: boolean } }).error;
    const failure = error?.timedOut === true ? -1 : (error?.status ?? 0);
    let answers = this.#answers.get(failure);
    if (answers === undefined) {
      const seen: Outcome = {
        ok: false,
        error: failure === -1 ? { timedOut: true } : { status: failure },
      };
      answers = [];
      let state: RetryState = startState(this.#policy, 0);
      for (;;) {
        const d = step(this.#policy, state, seen, 0);
        if (d.action !== 'retry') break;
        answers.push(d.delayMs);
        state = d.state;
      }
      this.#answers.set(failure, answers);
    }
    return answers[attempt - 1] ?? -1;
  }
}

/** The retry layers of one run. */
export interface ClientPolicy {
  /** The partner wrapper (naive setup, when some instances wrap), or none. */
  readonly wrapper: FixedLayer | undefined;
  /** Instances numbered below this wrap the client library. */
  readonly wrappedInstances: number;
  /** The gateway's retries (naive setup), or none: it answers with the first failure. */
  readonly gateway: FixedLayer | undefined;
  /** Each partner instance's client library (its own budget, if any). */
  readonly libraries: readonly ResolvedPolicy[];
  /** The libraries' shared answers when they depend only on the attempt (see FixedLayer). */
  readonly fixedLibrary: FixedLayer | undefined;
  /** One circuit breaker per instance's client library, or none. */
  readonly breakers: readonly CircuitBreaker[] | undefined;
}

/** Builds the setup's retry layers; breaker openings are counted into `m`. */
export function clientPolicy(
  world: World,
  m: Measurements,
  retryPolicy: StormRetryPolicy | undefined,
): ClientPolicy {
  const { p, clock, random } = world;
  const naive = p.policy === 'naive';
  const naiveLayer: RetryPolicyOptions = {
    maxAttempts: 4,
    baseDelayMs: 0,
    maxDelayMs: 0,
    jitter: 'none',
    honorRetryAfter: false,
    budget: false,
    deadlineMs: NO_DEADLINE_MS,
    clock,
    random,
  };
  const layer = (name: string, o: RetryPolicyOptions) =>
    resolvePolicy(`${OWNER} ${name}`, o, { defaultBudget: false, allowCallKeys: false });
  const wrapper =
    naive && p.wrappedShare > 0 ? new FixedLayer(layer('wrapper', naiveLayer)) : undefined;
  const gateway = naive ? new FixedLayer(layer('gateway', naiveLayer)) : undefined;
  const wrappedInstances = Math.round(p.wrappedShare * p.partnerInstances);
  const { budget: budgetFactory, ...libraryOverrides } = retryPolicy ?? {};
  const libraryBase: RetryPolicyOptions = naive
    ? { ...naiveLayer, attemptTimeoutMs: p.clientTimeoutMs }
    : { attemptTimeoutMs: p.clientTimeoutMs, clock, random };
  const libraries: ResolvedPolicy[] = [];
  for (let i = 0; i < p.partnerInstances; i++) {
    let budget: Budget | false = false;
    if (budgetFactory !== undefined && budgetFactory !== false) budget = budgetFactory();
    else if (budgetFactory === undefined && !naive) budget = new RetryBudget();
    libraries.push(
      layer('retryPolicy', { ...libraryBase, ...libraryOverrides, budget, clock, random }),
    );
  }
  // Without a budget every instance's library decides alike, and the old library depends on
  // nothing but the attempt: then its answers are asked once (see FixedLayer).
  const fixedLibrary = FixedLayer.fits(libraries[0]!) ? new FixedLayer(libraries[0]!) : undefined;
  // One breaker per instance's client library, as the engine's `breaker` option is per policy.
  const breakerOptions: BreakerOptions | false = p.breaker && {
    ...p.breaker,
    clock,
    random,
    onStateChange: (t) => {
      if (t.to === 'open') m.breakerOpenings++;
    },
  };
  const breakers = breakerOptions
    ? Array.from(
        { length: p.partnerInstances },
        (_, i) => new CircuitBreaker(`partner-${i}`, breakerOptions),
      )
    : undefined;
  return { wrapper, wrappedInstances, gateway, libraries, fixedLibrary, breakers };
}
