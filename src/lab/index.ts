/**
 * The live lab: the weather API's storm for real on 127.0.0.1 (an API server, a gateway and a
 * fleet of client workers), Node only. `stormproof lab --live` runs it.
 *
 * @module
 */

export type { LiveFigures, LiveSecond, LiveTotals } from './measure.js';
export {
  LIVE_RUNS,
  type LiveLabOptions,
  type LiveParameters,
  type LiveRunName,
  liveParameters,
} from './params.js';
export { type LiveLabResult, type LiveRun, runLiveLab } from './run.js';
