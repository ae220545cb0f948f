/**
 * stormproof/sim: the storm lab's models, on virtual time with seeded randomness. Every client in
 * them decides with the library's own engine (its `step` function, backoff, jitter, budgets and
 * Retry-After), so the simulator tests the real code; the storm story's `herd` toy model is
 * the one exception, re-run bit for bit as the storm story wrote it. No `node:` imports: the models
 * run anywhere the library runs. The models are described in docs/simulator.md.
 *
 * @module
 */
export {
  BROOKER_STRATEGIES,
  type BrookerBucket,
  type BrookerFigures,
  type BrookerOptions,
  type BrookerResult,
  type BrookerStrategy,
  runBrooker,
} from './brooker.js';
export {
  type BudgetTestOptions,
  type BudgetTestResult,
  type BudgetTestRun,
  runBudgetTest,
} from './budget-test.js';
export {
  checkStack,
  type Stack,
  type StackBreaker,
  type StackBreakerReport,
  type StackJitter,
  type StackLayer,
  type StackLayerReport,
  type StackReport,
} from './check.js';
export { type HedgeSimOptions, type HedgeSimResult, runHedgeSim } from './hedge.js';
export { type HerdJitter, type HerdOptions, type HerdResult, runHerd } from './herd.js';
export {
  type HerdClient,
  type HerdClientFactory,
  type HerdScheduleOptions,
  type HerdScheduleResult,
  type IdealHerdOptions,
  idealHerd,
  type RetrySchedule,
  runHerdSchedule,
} from './herd-schedules.js';
export { type LayersOptions, type LayersResult, type RetryAt, runLayers } from './layers.js';
export {
  type ClassifyRule,
  classifyRun,
  MAP_RULE,
  type MapClass,
  type RunClass,
  ruleText,
} from './map/classify.js';
export type { MapSeries } from './map/measure.js';
export {
  type MapModelOptions,
  type MapModelParameters,
  type MapRunResult,
  type MapRunTotals,
  type MapShedderOptions,
  resolveMapModel,
  runMapModel,
} from './map/model.js';
export { MAP_POLICIES, type MapPolicy, POLICY_SUMMARY } from './map/policies.js';
export {
  CLASS_COLORS,
  type Heatmap,
  type HeatmapCell,
  mapReport,
  mapSvg,
  mapText,
  renderHeatmapSvg,
  scenarioReport,
  scenarioText,
} from './map/report.js';
export {
  HUANG_CAPACITY,
  MAP_SCENARIOS,
  type MapScenarioName,
  type MapScenarioOptions,
  type MapScenarioResult,
  type MapScenarioSetup,
  runMapScenario,
} from './map/scenarios.js';
export {
  type MapBoundary,
  type MapCell,
  type MapCellKey,
  type MapGrid,
  type MapResult,
  type MapSweepOptions,
  runMap,
} from './map/sweep.js';
export type { TriggerKind } from './map/trigger.js';
export {
  asyncRetrySchedule,
  awsStandardSchedule,
  axiosRetrySchedule,
  cockatielSchedule,
  exponentialBackoffSchedule,
  gotSchedule,
  grpcJsSchedule,
  type HerdOutcome,
  type HerdOutcomesOptions,
  type HerdPolicyOptions,
  herdOutcomes,
  kySchedule,
  PEER_SCHEDULES,
  type PeerSchedule,
  pRetrySchedule,
  stormproofHerdClients,
  undiciRetryAgentSchedule,
} from './peer-schedules.js';
export {
  type BarChart,
  type Chart,
  type ChartBand,
  type ChartBar,
  type ChartGridOptions,
  type ChartLine,
  type ChartSizeOptions,
  chartTop,
  escapeXml,
  formatTick,
  formatValue,
  type LineChart,
  type Report,
  type ReportSection,
  type ReportTable,
  renderChartSvg,
  renderChartsSvg,
  renderReportHtml,
  renderReportSvg,
} from './plot.js';
export { type MutableIndexed, PythonRandom } from './python-random.js';
export {
  runStorm,
  type StormBreakerOptions,
  type StormLiveSecond,
  type StormOptions,
  type StormParameters,
  type StormPolicy,
  type StormRecovery,
  type StormResult,
  type StormRetryPolicy,
  type StormSecond,
  type StormServer,
  type StormServerRampStep,
  type StormServerReport,
  type StormTotals,
} from './storm.js';
export {
  runTimers,
  type TimersIds,
  type TimersLoad,
  type TimersOptions,
  type TimersResult,
  type TimersSecond,
} from './timers.js';
