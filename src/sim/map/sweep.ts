// The sweep: every cell (policy, with or without stormproof/server, trigger kind, offered load,
// trigger length) runs several seeds of the model; each cell gets the probability of each class
// over its seeds, a recovery time and an amplification, and each row of loads the boundary
// trigger length. The runs are independent, so a caller may spread them over threads.
import {
  checkKnownKeys,
  checkNumber,
  checkOptionsObject,
  refuseNulls,
  show,
} from '../../core/validate.js';
import { type MapClass, ruleText } from './classify.js';
import {
  type MapModelOptions,
  type MapModelParameters,
  resolveMapModel,
  runMapModel,
} from './model.js';
import { MAP_POLICIES, type MapPolicy } from './policies.js';
import type { TriggerKind } from './trigger.js';

/** The model options each cell of a grid sets for itself. */
type CellKeys =
  | 'policy'
  | 'load'
  | 'ratePerSecond'
  | 'triggerKind'
  | 'triggerSeconds'
  | 'triggerMagnitude'
  | 'seed'
  | 'stormproofServer';

/** The model options a sweep shares across its cells (the rest is the grid's). */
export type MapBaseOptions = Omit<MapModelOptions, CellKeys>;

/** The options of {@link runMap}. Every field is optional. */
export interface MapSweepOptions {
  /**
   * Offered loads, as shares of the server's capacity.
   * @default [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95]
   * @example
   * ```ts
   * runMap({ loads: [0.5, 0.7, 0.9] })
   * ```
   */
  loads?: readonly number[] | undefined;
  /**
   * Trigger lengths, in seconds.
   * @default [1, 2, 3, 5, 8, 10, 15, 20, 25, 30]
   * @example
   * ```ts
   * runMap({ triggerSeconds: [5, 10, 20] })
   * ```
   */
  triggerSeconds?: readonly number[] | undefined;
  /**
   * Trigger kinds.
   * @default ['capacity-loss', 'load-spike']
   * @example
   * ```ts
   * runMap({ triggerKinds: ['load-spike'] })
   * ```
   */
  triggerKinds?: readonly TriggerKind[] | undefined;
  /**
   * Client policies.
   * @default all eight: ['naive', 'backoff', 'full-jitter', 'budget', 'budget-hedge', 'a6', 'breaker', 'aws-2026']
   * @example
   * ```ts
   * runMap({ policies: ['naive', 'budget'] })
   * ```
   */
  policies?: readonly MapPolicy[] | undefined;
  /**
   * Whether stormproof/server (its defaults) stands in front of the server: each policy without
   * it, with it, or both.
   * @default [false, true]
   * @example
   * ```ts
   * runMap({ stormproofServer: [false] })
   * ```
   */
  stormproofServer?: readonly boolean[] | undefined;
  /**
   * Seeds per cell (seeds 1 to n); at least 5 for a probability worth the name.
   * @default 5
   * @example
   * ```ts
   * runMap({ seeds: 10 })
   * ```
   */
  seeds?: number | undefined;
  /**
   * Model options shared by every cell (server, clients, horizon...); see `MapModelOptions`.
   * @default {} (the model's defaults)
   * @example
   * ```ts
   * runMap({ model: { horizonSeconds: 120, deadlineMs: 3000 } })
   * ```
   */
  model?: MapBaseOptions | undefined;
  /**
   * Called after each run with the runs done and the total.
   * @default undefined
   * @example
   * ```ts
   * runMap({ onProgress: (done, total) => console.log(`${done}/${total}`) })
   * ```
   */
  onProgress?: ((done: number, total: number) => void) | undefined;
}

/** The grid of a sweep, defaults filled. */
export interface MapGrid {
  readonly loads: readonly number[];
  readonly triggerSeconds: readonly number[];
  readonly triggerKinds: readonly TriggerKind[];
  readonly policies: readonly MapPolicy[];
  readonly stormproofServer: readonly boolean[];
  readonly seeds: number;
  readonly model: MapBaseOptions;
}

/** Which cell: one policy, server or not, one trigger kind, load and trigger length. */
export interface MapCellKey {
  readonly policy: MapPolicy;
  readonly stormproofServer: boolean;
  readonly triggerKind: TriggerKind;
  readonly load: number;
  readonly triggerSeconds: number;
}

/** What one run reports to the sweep. */
export interface MapRunSummary {
  readonly class: MapClass;
  readonly recoverySeconds: number | null;
  readonly amplification: number;
}

/** One cell, over its seeds. */
export interface MapCell extends MapCellKey {
  /** The share of seeds in each class. */
  readonly probability: Readonly<Record<MapClass, number>>;
  /** The class of most seeds; a tie goes to the worse class. */
  readonly class: MapClass;
  /** Median seconds from the trigger's end to recovery, over the seeds that recovered; null if none did. */
  readonly recoverySeconds: number | null;
  /** Mean calls per user request at the server over the seeds (the amplification). */
  readonly amplification: number;
  readonly seeds: number;
}

/** Per row of the map (policy, server, kind, load): where the trigger length tips it. */
export interface MapBoundary {
  readonly policy: MapPolicy;
  readonly stormproofServer: boolean;
  readonly triggerKind: TriggerKind;
  readonly load: number;
  /** The longest trigger length up to which every cell is stable; null if the shortest is not. */
  readonly stableUpToSeconds: number | null;
  /** The shortest trigger length whose cell is metastable; null if none is. */
  readonly metastableFromSeconds: number | null;
}

/** The model's parameters that every cell shares (the grid sets the rest). */
export type MapSharedParameters = Omit<MapModelParameters, CellKeys>;

/** The outcome of {@link runMap}. */
export interface MapResult {
  /** The classification rule, in words. */
  readonly rule: string;
  readonly grid: MapGrid;
  /** Every shared parameter of the model, defaults filled (a capacity loss takes 80%, a spike doubles the load unless `model` says otherwise). */
  readonly model: MapSharedParameters;
  readonly cells: readonly MapCell[];
  readonly boundaries: readonly MapBoundary[];
}

const OWNER = 'runMap';
const KEYS = [
  'loads',
  'triggerSeconds',
  'triggerKinds',
  'policies',
  'stormproofServer',
  'seeds',
  'model',
  'onProgress',
];

function list<T>(
  name: string,
  value: unknown,
  fallback: readonly T[],
  check: (v: unknown, i: number) => T,
): readonly T[] {
  if (value === undefined) return fallback;
  if (!Array.isArray(value) || value.length === 0) {
    throw new TypeError(
      `stormproof: ${OWNER} ${name} must be a non-empty array, got ${show(value)}`,
    );
  }
  const out = value.map(check);
  if (new Set(out).size !== out.length) {
    throw new RangeError(
      `stormproof: ${OWNER} ${name} must not repeat a value, got ${show(value)}`,
    );
  }
  return out;
}

function member<T>(name: string, values: readonly T[]) {
  return (v: unknown, i: number): T => {
    if (!values.includes(v as T)) {
      throw new TypeError(
        `stormproof: ${OWNER} ${name}[${i}] must be one of ${values.map((x) => JSON.stringify(x)).join(', ')}, got ${show(v)}`,
      );
    }
    return v as T;
  };
}

/** Checks a sweep's options and fills the defaults; throws naming the option and the value. */
export function resolveMapGrid(options?: MapSweepOptions): MapGrid {
  const o = checkOptionsObject(OWNER, options);
  checkKnownKeys(OWNER, o, KEYS);
  refuseNulls(OWNER, o);
  const model = checkOptionsObject(`${OWNER} model`, o.model) as MapBaseOptions;
  for (const key of [
    'policy',
    'load',
    'ratePerSecond',
    'triggerKind',
    'triggerSeconds',
    'triggerMagnitude',
    'seed',
    'stormproofServer',
  ]) {
    if (key in model) {
      throw new TypeError(
        `stormproof: ${OWNER} model.${key} is set by the sweep (its grid, or the trigger kind: an 80% capacity loss, a 2x load spike)`,
      );
    }
  }
  resolveMapModel(model); // every shared option checked once, here
  if (o.onProgress !== undefined && typeof o.onProgress !== 'function') {
    throw new TypeError(
      `stormproof: ${OWNER} onProgress must be a function, got ${show(o.onProgress)}`,
    );
  }
  return {
    loads: list('loads', o.loads, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95], (v, i) =>
      checkNumber(OWNER, `loads[${i}]`, v, { min: 0, minExclusive: true, max: 10 }),
    ),
    triggerSeconds: list(
      'triggerSeconds',
      o.triggerSeconds,
      [1, 2, 3, 5, 8, 10, 15, 20, 25, 30],
      (v, i) => checkNumber(OWNER, `triggerSeconds[${i}]`, v, { min: 0, max: 86_400 }),
    ),
    triggerKinds: list(
      'triggerKinds',
      o.triggerKinds,
      ['capacity-loss', 'load-spike'],
      member('triggerKinds', ['capacity-loss', 'load-spike'] as const),
    ),
    policies: list('policies', o.policies, MAP_POLICIES, member('policies', MAP_POLICIES)),
    stormproofServer: list(
      'stormproofServer',
      o.stormproofServer,
      [false, true],
      member('stormproofServer', [false, true]),
    ),
    seeds:
      o.seeds === undefined
        ? 5
        : checkNumber(OWNER, 'seeds', o.seeds, { min: 1, max: 1000, integer: true }),
    model,
  };
}

/** The cells of a grid, in the map's order: policy, server, kind, load, trigger length. */
export function mapCells(grid: MapGrid): MapCellKey[] {
  const cells: MapCellKey[] = [];
  for (const policy of grid.policies)
    for (const stormproofServer of grid.stormproofServer)
      for (const triggerKind of grid.triggerKinds)
        for (const load of grid.loads)
          for (const triggerSeconds of grid.triggerSeconds)
            cells.push({ policy, stormproofServer, triggerKind, load, triggerSeconds });
  return cells;
}

/** The model options of one run of a cell (seed from 1). */
export function runOptions(grid: MapGrid, cell: MapCellKey, seed: number): MapModelOptions {
  return { ...grid.model, ...cell, seed };
}

/** Runs one run of a cell and keeps what the sweep needs. */
export async function runCellSeed(options: MapModelOptions): Promise<MapRunSummary> {
  const run = await runMapModel(options);
  return {
    class: run.class.class,
    recoverySeconds: run.class.recoverySeconds,
    amplification: run.totals.amplification,
  };
}

const ORDER: readonly MapClass[] = ['stable', 'vulnerable', 'metastable'];

/** One cell from the summaries of its seeds. */
export function summarizeCell(key: MapCellKey, runs: readonly MapRunSummary[]): MapCell {
  const count: Record<MapClass, number> = { stable: 0, vulnerable: 0, metastable: 0 };
  for (const r of runs) count[r.class]++;
  let best: MapClass = 'stable';
  for (const c of ORDER) if (count[c] >= count[best]) best = c;
  const recoveries = runs
    .map((r) => r.recoverySeconds)
    .filter((s): s is number => s !== null)
    .sort((a, b) => a - b);
  const n = runs.length;
  return {
    ...key,
    probability: {
      stable: count.stable / n,
      vulnerable: count.vulnerable / n,
      metastable: count.metastable / n,
    },
    class: best,
    recoverySeconds:
      recoveries.length === 0
        ? null
        : recoveries.length % 2 === 1
          ? recoveries[(recoveries.length - 1) / 2]!
          : (recoveries[recoveries.length / 2 - 1]! + recoveries[recoveries.length / 2]!) / 2,
    amplification: runs.reduce((a, r) => a + r.amplification, 0) / n,
    seeds: n,
  };
}

/** The boundary trigger length of each row of loads. */
export function mapBoundaries(grid: MapGrid, cells: readonly MapCell[]): MapBoundary[] {
  const lengths = [...grid.triggerSeconds].sort((a, b) => a - b);
  const out: MapBoundary[] = [];
  const rowKey = (c: Omit<MapCellKey, 'triggerSeconds'>) =>
    `${c.policy}|${c.stormproofServer}|${c.triggerKind}|${c.load}`;
  const rows = new Map<string, Map<number, MapCell>>();
  for (const c of cells) {
    const k = rowKey(c);
    if (!rows.has(k)) rows.set(k, new Map());
    rows.get(k)!.set(c.triggerSeconds, c);
  }
  for (const row of rows.values()) {
    const first = row.values().next().value as MapCell;
    let stableUpTo: number | null = null;
    for (const s of lengths) {
      if (row.get(s)?.class !== 'stable') break;
      stableUpTo = s;
    }
    const metastable = lengths.find((s) => row.get(s)?.class === 'metastable');
    out.push({
      policy: first.policy,
      stormproofServer: first.stormproofServer,
      triggerKind: first.triggerKind,
      load: first.load,
      stableUpToSeconds: stableUpTo,
      metastableFromSeconds: metastable ?? null,
    });
  }
  return out;
}

/** Puts a map together from its grid and the summaries of every run, in `mapCells` order, seeds inner. */
export function assembleMap(grid: MapGrid, runs: readonly MapRunSummary[]): MapResult {
  const keys = mapCells(grid);
  if (runs.length !== keys.length * grid.seeds) {
    throw new RangeError(
      `stormproof: ${OWNER} expected ${keys.length * grid.seeds} runs, got ${runs.length}`,
    );
  }
  const cells = keys.map((key, i) =>
    summarizeCell(key, runs.slice(i * grid.seeds, (i + 1) * grid.seeds)),
  );
  const {
    policy: _policy,
    load: _load,
    ratePerSecond: _rate,
    triggerKind: _kind,
    triggerSeconds: _seconds,
    triggerMagnitude: _magnitude,
    seed: _seed,
    stormproofServer: _server,
    ...model
  } = resolveMapModel(grid.model);
  return { rule: ruleText(), grid, model, cells, boundaries: mapBoundaries(grid, cells) };
}

/**
 * Sweeps the map in this thread: every cell, every seed. The CLI spreads the same runs over
 * worker threads (`stormproof map`).
 *
 * @example
 * ```ts
 * const map = await runMap({ loads: [0.5, 0.9], triggerSeconds: [2, 10], policies: ['naive', 'budget'] });
 * map.cells.filter((c) => c.class === 'metastable');
 * ```
 */
export async function runMap(options?: MapSweepOptions): Promise<MapResult> {
  const grid = resolveMapGrid(options);
  const onProgress = options?.onProgress;
  const keys = mapCells(grid);
  const total = keys.length * grid.seeds;
  const runs: MapRunSummary[] = [];
  for (const key of keys) {
    for (let seed = 1; seed <= grid.seeds; seed++) {
      runs.push(await runCellSeed(runOptions(grid, key, seed)));
      onProgress?.(runs.length, total);
    }
  }
  return assembleMap(grid, runs);
}
