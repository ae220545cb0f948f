// Hedging and per-origin policies, shared by the HTTP adapters (stormproof/fetch, stormproof/undici,
// stormproof/axios): which requests may be sent twice at once, and the policies of each origin,
// its own budget and its own hedging (the delay learned from that origin's answers only), in
// the same bounded map as the budgets. One place, so every adapter hedges by the same rule.
import { type HedgeOptions, Hedging } from '../core/hedge.js';
import type { ResolvedPolicy, UnrepeatableReason } from '../core/options.js';
import { type BudgetFactory, OriginBudgets } from '../fetch/budgets.js';
import { HEDGED_METHODS } from '../fetch/request.js';
import { checkMadeBudget } from './checks.js';

/**
 * The policies of one origin. `hedged` (when `hedge` is set) shares `plain`'s budget and adds the
 * origin's own hedging: its delay is learned from that origin's answers only.
 */
export interface OriginPolicies {
  readonly plain: ResolvedPolicy;
  readonly hedged: ResolvedPolicy | undefined;
}

/** The `hedge` option, checked once (a Hedging made and dropped): its options, or undefined. */
export function checkHedge(owner: string, value: unknown): HedgeOptions | undefined {
  if (value === undefined || value === false) return undefined;
  new Hedging(owner, value);
  return Object.freeze({ ...(value as HedgeOptions) });
}

/**
 * The policies of each origin, made on first use from `shared`: with the budget `makeBudget`
 * makes for it and, with `hedge`, a hedged twin paid from that budget. Undefined when one
 * budget serves all and nothing is hedged: then `shared` serves every request.
 */
export function originPolicies(
  owner: string,
  maxOrigins: number,
  shared: ResolvedPolicy,
  makeBudget: BudgetFactory | undefined,
  hedge: HedgeOptions | undefined,
): OriginBudgets<OriginPolicies> | undefined {
  if (makeBudget === undefined && hedge === undefined) return undefined;
  return new OriginBudgets(maxOrigins, (origin) => {
    const plain =
      makeBudget === undefined
        ? shared
        : Object.freeze({ ...shared, budget: checkMadeBudget(owner, makeBudget(origin), origin) });
    const hedged =
      hedge === undefined
        ? undefined
        : Object.freeze({ ...plain, hedge: new Hedging(owner, hedge) });
    return { plain, hedged };
  });
}

/**
 * Whether a request may be sent twice at once: only one the adapter would retry (an idempotent
 * method or a key, a body it can send again), and among those only reads (GET, HEAD) and keyed
 * requests. Two PUTs or DELETEs in flight together may race (the older one landing last), which
 * one after the other cannot.
 */
export function isHedgeable(
  method: string,
  isKeyed: boolean,
  unrepeatable: UnrepeatableReason | undefined,
): boolean {
  return unrepeatable === undefined && (isKeyed || HEDGED_METHODS.has(method));
}

/** The policy of one request to `origin`: its origin's, hedged when `hedgeable`, else `shared`. */
export function policyFor(
  shared: ResolvedPolicy,
  origins: OriginBudgets<OriginPolicies> | undefined,
  origin: string,
  hedgeable: boolean,
): ResolvedPolicy {
  if (origins === undefined) return shared;
  const policies = origins.get(origin);
  return hedgeable && policies.hedged !== undefined ? policies.hedged : policies.plain;
}
