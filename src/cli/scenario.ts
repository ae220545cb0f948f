// What every `stormproof sim` scenario is made of, and the small helpers they share. Each scenario
// lives in its own module under scenarios/, loaded only when it runs (see scenarios.ts).
import type { Report } from '../sim/plot.js';
import type { OptionSpec } from './args.js';
import type { Job } from './runners.js';

/** Parsed option values by key. */
export type Values = Readonly<Record<string, string | number | bigint | boolean | undefined>>;

/** A `stormproof sim` scenario. */
export interface Scenario {
  readonly name: string;
  /** Its own options (the common ones are added by the CLI). */
  readonly options: readonly OptionSpec[];
  /**
   * Refuses option values that cannot go together, before anything runs: throws a UsageError
   * naming the flags.
   */
  check?(command: string, values: Values): void;
  /** The runs it needs; `plot` asks for what its chart compares too. */
  jobs(values: Values, plot: boolean): Job[];
  /** What `--json` prints. */
  json(results: readonly unknown[], values: Values): unknown;
  /** What it prints for people. */
  text(results: readonly unknown[], values: Values): string;
  /** What `--plot` draws. */
  report(results: readonly unknown[], values: Values): Report;
}

export const INT32 = 2 ** 31 - 1;

export const seedOption = (fallback: number): OptionSpec => ({
  flag: 'seed',
  key: 'seed',
  kind: { type: 'seed' },
  default: fallback,
  help: 'seed of the CPython-compatible random generator',
});

/** Drops undefined values, so a model fills its own defaults. */
export function defined(values: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined));
}
