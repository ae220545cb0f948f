// Jittered timers: periodic work and daily windows on slots that a key keeps stable.
export { type DailyOptions, daily } from './daily.js';
export { type EveryOptions, every } from './every.js';
export type { TimerOptions } from './options.js';
export type { TimerRun, TimerSkip } from './schedule.js';
export { spreadOf, type TimerKey } from './spread.js';
