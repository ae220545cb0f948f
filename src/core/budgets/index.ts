// The retry budgets: the interface and the three built-in rules.
export type { Budget } from './budget.js';
export { RatioBudget, type RatioBudgetOptions } from './ratio-budget.js';
export { RetryBudget, type RetryBudgetOptions } from './retry-budget.js';
export { TokenBucket, type TokenBucketOptions } from './token-bucket.js';
