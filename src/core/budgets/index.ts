// The retry budgets: the interface and the four built-in rules.
export type { Budget } from './budget.js';
export { RatioBudget, type RatioBudgetOptions } from './ratio-budget.js';
export { RetryBudget, type RetryBudgetOptions } from './retry-budget.js';
export { RetryQuota, type RetryQuotaOptions } from './retry-quota.js';
export { TokenBucket, type TokenBucketOptions } from './token-bucket.js';
