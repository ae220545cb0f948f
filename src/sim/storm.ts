// The `storm` scenario's public face: the model itself is in parts in ./storm/ (run.ts assembles
// them); see docs/storm-model.md.
export {
  GOODPUT_SHARE,
  type StormRecovery,
  type StormResult,
  type StormSecond,
  type StormServerRampStep,
  type StormServerReport,
  type StormTotals,
} from './storm/measurements.js';
export {
  STORM_DEFAULTS,
  type StormBreakerOptions,
  type StormLiveSecond,
  type StormOptions,
  type StormParameters,
  type StormPolicy,
  type StormRetryPolicy,
  type StormServer,
} from './storm/options.js';
export { runStorm } from './storm/run.js';
