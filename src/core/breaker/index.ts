// Circuit breakers: one state machine per key, a bounded registry, the open-breaker error.
export {
  type BreakerAdmission,
  type BreakerAdmitted,
  type BreakerOutcome,
  type BreakerRejected,
  type BreakerSnapshot,
  CircuitBreaker,
} from './breaker.js';
export { BreakerOpenError, isBreakerOpenError } from './errors.js';
export { createMemoryBreakerStore } from './memory-store.js';
export type { BreakerOptions, BreakerState, BreakerTransition } from './options.js';
export { BreakerRegistry, type BreakerRegistryOptions } from './registry.js';
export type {
  BreakerReport,
  BreakerRules,
  BreakerStore,
  BreakerStoreEvent,
  SharedBreakerState,
} from './store.js';
