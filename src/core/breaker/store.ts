// Where a fleet keeps its breakers' shared state. The breaker decides each call from its local
// copy and talks to the store in the background: outcomes go in batches, the fleet's state comes
// back, and a single lease per key lets one probe go across the whole fleet.
import type { BreakerOutcome } from './breaker.js';
import type { BreakerState } from './options.js';

/** The rules the store applies to a key: the breaker's options, sent with every call. */
export interface BreakerRules {
  readonly consecutiveFailures: number;
  readonly failureRatio: number | undefined;
  readonly windowMs: number;
  readonly minimumCalls: number;
  readonly openMs: number;
  readonly maxOpenMs: number;
  readonly successesToClose: number;
}

/** The fleet's state of one key, as the store sees it on its own clock. */
export interface SharedBreakerState {
  /** `'half-open'`: a probe is out somewhere in the fleet. */
  readonly state: BreakerState;
  /** Failed probes since the key last closed. */
  readonly level: number;
  /** Consecutive failures counted while closed. */
  readonly failures: number;
  /** Open: ms until a probe may be claimed (0: now). Half-open: ms until the probe's lease ends. */
  readonly retryInMs: number;
}

/** Outcomes a breaker recorded since its last report, in order-free form. */
export interface BreakerReport {
  /** A success came after the last report: the consecutive count starts again from it. */
  readonly reset: boolean;
  /** Failures since the last report (after the last success, in consecutive mode). */
  readonly failures: number;
  /** Successes since the last report. */
  readonly successes: number;
  /** A uniform draw in [0, 1) for the jitter of the open period, should this report open it. */
  readonly draw: number;
}

/**
 * Shared state for breakers across processes. Each method is one atomic step on one key, run
 * by the store on its own clock (so the fleet agrees on time), and returns the key's state.
 * `stormproof/redis` implements it over Redis or Valkey.
 */
export interface BreakerStore {
  /** Adds a batch of outcomes (opening the key when they trip it). */
  report(key: string, rules: BreakerRules, report: BreakerReport): Promise<SharedBreakerState>;
  /**
   * Asks for the key's single probe: granted when the open period has ended and no other
   * process holds the lease; the lease lasts `leaseMs` (the open period's ceiling) at most.
   */
  claimProbe(
    key: string,
    rules: BreakerRules,
    token: string,
  ): Promise<SharedBreakerState & { readonly granted: boolean }>;
  /** Ends the probe holding `token`: closes, opens again (using `draw`), or frees the lease. */
  settleProbe(
    key: string,
    rules: BreakerRules,
    token: string,
    outcome: BreakerOutcome,
    draw: number,
  ): Promise<SharedBreakerState>;
  /** Isolates (forces open) or resets the key for the whole fleet. */
  control(key: string, action: 'isolate' | 'reset'): Promise<SharedBreakerState>;
}

/** What a breaker with a store tells of the store's health. */
export interface BreakerStoreEvent {
  /** `'unavailable'`: a store call failed; the breaker now decides on local state alone. */
  readonly type: 'unavailable' | 'available';
  readonly key: string;
  /** The store's error, for `'unavailable'`. */
  readonly error?: unknown;
}
