// Rules shared by the HTTP adapters (stormproof/fetch, stormproof/undici, stormproof/axios): the
// checks of their common options, each naming its owner (`createFetch`, `interceptor`), the
// settings those fill, and the one rule about keyed requests. One place, so the adapters accept,
// refuse and decide alike.
import { BreakerRegistry, type BreakerRegistryOptions } from '../core/breaker/registry.js';
import { type Budget, isBudget } from '../core/budgets/budget.js';
import { RetryBudget } from '../core/budgets/retry-budget.js';
import type { Clock, RandomSource } from '../core/clock.js';
import type { ResolvedPolicy, RetryDecisionContext, RetryPolicyOptions } from '../core/options.js';
import { show } from '../core/validate.js';
import type { BudgetFactory, OriginBudgets } from '../fetch/budgets.js';
import { DEFAULT_RETRY_METHODS, TOKEN } from '../fetch/request.js';
import type { OriginPolicies } from './hedging.js';

/**
 * What every HTTP adapter (createFetch, the undici interceptor, axiosRetry) decides once from the
 * options it shares with the others, for all its requests; each adds its own.
 */
export interface ClientSettings {
  readonly autoKey: boolean;
  readonly attemptHeader: string | undefined;
  readonly retryMethods: ReadonlySet<string>;
  readonly policy: ResolvedPolicy;
  /** Whether `hedge` is set: some requests are sent with the origin's hedging policy. */
  readonly hedging: boolean;
  /**
   * The policies of each origin, with its own budget and hedging; undefined when one budget
   * serves all and nothing is hedged.
   */
  readonly origins: OriginBudgets<OriginPolicies> | undefined;
  /** A circuit breaker per origin, when enabled. */
  readonly breakers: BreakerRegistry | undefined;
}

/**
 * The engine's options an HTTP adapter (createFetch, the undici interceptor, axiosRetry) takes as
 * they are; each defines the rest itself: its hooks (with the request's method, URL and status),
 * its deadline and attempt timeout (longer defaults), per-origin budgets and breakers, hedging.
 */
export type HttpPolicyOptions = Omit<
  RetryPolicyOptions,
  | 'onRetry'
  | 'onGiveUp'
  | 'onSuccess'
  | 'deadlineMs'
  | 'attemptTimeoutMs'
  | 'budget'
  | 'breaker'
  | 'hedge'
>;

/**
 * The request header that tells the layer below that a request is a retry: its value is the
 * attempt number (`2` on the first retry). Sent on retries only, never on the first attempt.
 */
export const DEFAULT_ATTEMPT_HEADER = 'stormproof-attempt';

const DEFAULT_METHODS: ReadonlySet<string> = new Set(DEFAULT_RETRY_METHODS);

/** Turns a `breaker` option into a registry of breakers per origin, or none. */
export function checkBreakers(
  owner: string,
  breaker: unknown,
  clock: Clock,
  random: RandomSource,
): BreakerRegistry | undefined {
  if (breaker === undefined || breaker === false) return undefined;
  if (breaker instanceof BreakerRegistry) return breaker;
  if (breaker === true) return new BreakerRegistry({ clock, random });
  if (typeof breaker === 'object' && breaker !== null && !Array.isArray(breaker)) {
    return new BreakerRegistry({ clock, random, ...(breaker as BreakerRegistryOptions) });
  }
  throw new TypeError(
    `stormproof: ${owner} breaker must be true, false, a BreakerRegistry or its options, got ${show(breaker)}`,
  );
}

/** The budget of each origin, when budgets are per origin (unset or a function); else undefined. */
export function checkBudgetFactory(value: unknown): BudgetFactory | undefined {
  if (value === undefined) return () => new RetryBudget();
  return typeof value === 'function' ? (value as BudgetFactory) : undefined;
}

/** What a budget factory returned, checked when an origin is first called. */
export function checkMadeBudget(owner: string, made: unknown, origin: string): Budget {
  if (!isBudget(made)) {
    throw new TypeError(
      `stormproof: ${owner} budget function must return a Budget for ${origin || 'an unparsable URL'}, got ${show(made)}`,
    );
  }
  return made;
}

/** The `idempotencyKey` option: whether to add a key to POST and PATCH requests without one. */
export function checkIdempotencyKey(owner: string, value: unknown): boolean {
  if (value === undefined || value === false) return false;
  if (value === 'auto') return true;
  throw new TypeError(
    `stormproof: ${owner} idempotencyKey must be 'auto' or false, got ${show(value)}`,
  );
}

/** The `attemptHeader` option: a header name in lower case, or undefined for none. */
export function checkAttemptHeader(owner: string, value: unknown): string | undefined {
  if (value === undefined) return DEFAULT_ATTEMPT_HEADER;
  if (value === false) return undefined;
  if (typeof value !== 'string' || !TOKEN.test(value)) {
    throw new TypeError(
      `stormproof: ${owner} attemptHeader must be a header name (letters, digits and !#$%&'*+-.^_\`|~) or false, got ${show(value)}`,
    );
  }
  return value.toLowerCase();
}

/** The `retryMethods` option: the methods, in upper case. */
export function checkRetryMethods(owner: string, value: unknown): ReadonlySet<string> {
  if (value === undefined) return DEFAULT_METHODS;
  if (!Array.isArray(value)) {
    throw new TypeError(
      `stormproof: ${owner} retryMethods must be an array of method names, got ${show(value)}`,
    );
  }
  const methods = new Set<string>();
  value.forEach((method: unknown, i) => {
    if (typeof method !== 'string' || !TOKEN.test(method)) {
      throw new TypeError(
        `stormproof: ${owner} retryMethods[${i}] must be a method name, got ${show(method)}`,
      );
    }
    methods.add(method.toUpperCase());
  });
  return methods;
}

/**
 * A 409 (the first request with that key is still in progress) or a 422 (the key was reused
 * with another payload) on a request that carries an `Idempotency-Key` is final. `keyed` holds
 * the failed values (responses) of keyed requests.
 */
export function isKeyConflict(context: RetryDecisionContext, keyed: WeakSet<object>): boolean {
  const { error } = context;
  if (typeof error !== 'object' || error === null || !keyed.has(error)) return false;
  const status = (error as { status?: unknown }).status;
  return status === 409 || status === 422;
}

/** A number option with its default: `null` is an error (the option's check names it), not the default. */
export function withDefault(
  options: Record<string, unknown>,
  key: string,
  fallback: number,
): unknown {
  return options[key] === undefined ? fallback : options[key];
}
