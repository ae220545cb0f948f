// What the page shows, as plain data: the view and its inputs, read from and written to the URL's
// hash, and checked the way the CLI checks the same options. The inputs are kept as the text the
// user typed, so a link brings back exactly what was on the screen, mistakes included.
import type { HerdJitter, HerdPushback } from '../sim/herd.js';
import { MAP_POLICIES } from '../sim/map/policies.js';
import type { StormPolicy, StormServer } from '../sim/storm.js';

/** The page's views, in the order of its buttons. */
export const VIEWS = ['herd', 'storm', 'map', 'check'] as const;
export type View = (typeof VIEWS)[number];

export const HERD_JITTERS: readonly HerdJitter[] = [
  'none',
  'full',
  'equal',
  'decorrelated',
  'band',
];
export const HERD_PUSHBACKS: readonly HerdPushback[] = ['none', 'load-aware', 'spread', 'fixed'];

/**
 * The page runs herds up to this size, so that a figure comes back within about a second (the
 * herd without jitter beside the chosen one: a million clients take 8 s); the CLI takes 2^31 - 1.
 */
export const PAGE_MAX_CLIENTS = 100_000;

type HerdNumberKey = 'clients' | 'perSlot' | 'slotMs' | 'baseMs' | 'capMs' | 'seed';

/** A numeric input: its CLI flag is its key in the URL. */
export interface NumberField<K extends string = string> {
  readonly key: K;
  readonly flag: string;
  readonly label: string;
  readonly integer: boolean;
  readonly min: number;
  readonly max: number;
  readonly default: number;
  /** The values its slider moves through (none: no slider, as for the seed). */
  readonly stops: readonly number[];
  /** Why the page's `max` is below the CLI's, said when a value is above it. */
  readonly pageLimit?: string;
}

/** The herd's numeric inputs, with `stormproof sim herd`'s ranges and defaults. */
export const HERD_NUMBERS: readonly NumberField<HerdNumberKey>[] = [
  {
    key: 'clients',
    flag: 'clients',
    label: 'Clients that failed together',
    integer: true,
    min: 0,
    max: PAGE_MAX_CLIENTS,
    default: 2000,
    stops: [10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 50_000, 100_000],
  },
  {
    key: 'perSlot',
    flag: 'per-slot',
    label: 'Calls the service answers per slot',
    integer: true,
    min: 1,
    max: 2 ** 31 - 1,
    default: 25,
    stops: [1, 2, 5, 10, 25, 50, 100, 200, 500, 1000, 2000, 5000],
  },
  {
    key: 'slotMs',
    flag: 'slot-ms',
    label: 'Width of one slot (ms)',
    integer: true,
    min: 1,
    max: 3_600_000,
    default: 10,
    stops: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000],
  },
  {
    key: 'baseMs',
    flag: 'base-ms',
    label: 'Backoff base (ms)',
    integer: false,
    min: 0,
    max: 86_400_000,
    default: 200,
    stops: [0, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000],
  },
  {
    key: 'capMs',
    flag: 'cap-ms',
    label: 'Backoff cap (ms)',
    integer: false,
    min: 0,
    max: 86_400_000,
    default: 5000,
    stops: [0, 100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 60_000],
  },
  {
    key: 'seed',
    flag: 'seed',
    label: 'Seed',
    integer: true,
    min: 0,
    max: Number.MAX_SAFE_INTEGER,
    default: 7,
    stops: [],
  },
];

/** A choice among named values, with its CLI flag. */
export interface ChoiceField<K extends string = string> {
  readonly key: K;
  readonly flag: string;
  readonly label: string;
  readonly values: readonly string[];
  readonly default: string;
}

export const HERD_CHOICES: readonly ChoiceField<'jitter' | 'pushback'>[] = [
  {
    key: 'jitter',
    flag: 'jitter',
    label: 'Jitter (compared with none)',
    values: HERD_JITTERS,
    default: 'full',
  },
  {
    key: 'pushback',
    flag: 'pushback',
    label: "The server's pushback",
    values: HERD_PUSHBACKS,
    default: 'none',
  },
];

/** The herd's inputs as typed, by key. */
export type HerdInputs = Readonly<Record<HerdNumberKey | 'jitter' | 'pushback', string>>;

/** The herd's inputs, checked: `runHerd`'s options. */
export interface HerdParams {
  readonly clients: number;
  readonly perSlot: number;
  readonly slotMs: number;
  readonly baseMs: number;
  readonly capMs: number;
  readonly seed: number;
  readonly jitter: HerdJitter;
  readonly pushback: HerdPushback;
}

/** The stack the check view starts with: examples/stack.json, the storm story's three layers. */
export const DEFAULT_STACK = `{
  "name": "The weather API before the fix",
  "layers": [
    { "name": "partner backend", "attempts": 4 },
    { "name": "client library", "attempts": 4, "timeoutMs": 2000 },
    { "name": "API gateway", "attempts": 4, "timeoutMs": 1000 }
  ]
}`;

/** An on/off flag of the CLI (`--breaker`), a checkbox in the page: `on` or `off` in the URL. */
export interface FlagField<K extends string = string> {
  readonly key: K;
  readonly flag: string;
  readonly label: string;
}

/** Comma-separated numbers (`--loads 0.5,0.9`), typed as text. */
export interface ListField<K extends string = string> {
  readonly key: K;
  readonly flag: string;
  readonly label: string;
  readonly min: number;
  readonly max: number;
  readonly default: string;
  /** Why the page's `max` is below the CLI's. */
  readonly pageLimit?: string;
}

/** Every input of a view, by kind, in the order the page shows them. */
export interface ViewFields {
  readonly choices: readonly ChoiceField[];
  readonly flags: readonly FlagField[];
  readonly numbers: readonly NumberField[];
  readonly lists: readonly ListField[];
}

// --- the storm ----------------------------------------------------------------------------------

export const STORM_POLICIES: readonly StormPolicy[] = ['naive', 'stormproof'];
export const STORM_SERVERS: readonly StormServer[] = ['none', 'stormproof', 'all-or-nothing'];

/** The storm's run grows with the load times its length; the page keeps to about a minute's work. */
const STORM_PAGE_LIMIT =
  'the page runs storms up to 20,000 requests/s for 600 s; `stormproof sim storm` takes more';

type StormNumberKey = 'rps' | 'faultSeconds' | 'faultAtSeconds' | 'durationSeconds' | 'seed';
type StormChoiceKey = 'policy' | 'server';
type StormFlagKey = 'breaker' | 'manualRecovery';

/** The storm's choices: `stormproof sim storm`'s `--policy` and `--server`. */
export const STORM_CHOICES: readonly ChoiceField<StormChoiceKey>[] = [
  {
    key: 'policy',
    flag: 'policy',
    label: "The clients' retry policy",
    values: STORM_POLICIES,
    default: 'naive',
  },
  {
    key: 'server',
    flag: 'server',
    label: 'What protects the API servers',
    values: STORM_SERVERS,
    default: 'none',
  },
];

/** The storm's flags: `--breaker` and `--manual-recovery`. */
export const STORM_FLAGS: readonly FlagField<StormFlagKey>[] = [
  {
    key: 'breaker',
    flag: 'breaker',
    label: 'A circuit breaker in each partner instance (stormproof policy only)',
  },
  {
    key: 'manualRecovery',
    flag: 'manual-recovery',
    label: 'The on-call engineer sheds load at the edge, then reopens in steps',
  },
];

/** The storm's numbers, with `stormproof sim storm`'s flags, ranges (or the page's) and defaults. */
export const STORM_NUMBERS: readonly NumberField<StormNumberKey>[] = [
  {
    key: 'rps',
    flag: 'rps',
    label: "User requests per second (the partner apps' clients)",
    integer: false,
    min: 1,
    max: 20_000,
    default: 4000,
    stops: [100, 200, 500, 1000, 2000, 4000, 8000, 12_000, 16_000, 20_000],
    pageLimit: STORM_PAGE_LIMIT,
  },
  {
    key: 'faultSeconds',
    flag: 'fault-seconds',
    label: 'How long the database fails over (s)',
    integer: true,
    min: 0,
    max: 600,
    default: 30,
    stops: [0, 5, 10, 20, 30, 60, 120, 300],
    pageLimit: STORM_PAGE_LIMIT,
  },
  {
    key: 'faultAtSeconds',
    flag: 'fault-at',
    label: 'Second at which it fails over',
    integer: true,
    min: 2,
    max: 600,
    default: 10,
    stops: [2, 5, 10, 20, 30, 60],
    pageLimit: STORM_PAGE_LIMIT,
  },
  {
    key: 'durationSeconds',
    flag: 'duration',
    label: 'Seconds simulated',
    integer: true,
    min: 1,
    max: 600,
    default: 180,
    stops: [30, 60, 90, 120, 180, 240, 300, 600],
    pageLimit: STORM_PAGE_LIMIT,
  },
  {
    key: 'seed',
    flag: 'seed',
    label: 'Seed',
    integer: true,
    min: 0,
    max: Number.MAX_SAFE_INTEGER,
    default: 1,
    stops: [],
  },
];

export type StormInputs = Readonly<Record<StormNumberKey | StormChoiceKey | StormFlagKey, string>>;

/** The storm's inputs, checked: `runStorm`'s options, as `stormproof sim storm` gives them. */
export interface StormParams {
  readonly policy: StormPolicy;
  readonly server: StormServer;
  readonly breaker: boolean;
  readonly manualRecovery: boolean;
  readonly rps: number;
  readonly faultSeconds: number;
  readonly faultAtSeconds: number;
  readonly durationSeconds: number;
  readonly seed: number;
}

// --- the map ------------------------------------------------------------------------------------

export const MAP_SERVERS = ['both', 'off', 'on'];
export const MAP_TRIGGERS = ['both', 'capacity-loss', 'load-spike'];

/**
 * The page computes maps of up to this many runs (cells times seeds), about 15 s in a browser:
 * one policy's whole default grid, both trigger kinds and both server settings, is 2,000.
 */
export const PAGE_MAX_MAP_RUNS = 2000;

const MAP_PAGE_LIMIT = 'the page runs up to 600 s; `stormproof map` takes more';

type MapChoiceKey = 'policy' | 'server' | 'trigger';
type MapNumberKey = 'seeds' | 'horizon';
type MapListKey = 'loads' | 'triggers';

/** The map's choices: `stormproof map`'s `--policy`, `--server` and `--trigger` (one policy). */
export const MAP_CHOICES: readonly ChoiceField<MapChoiceKey>[] = [
  {
    key: 'policy',
    flag: 'policy',
    label: 'Client policy',
    values: MAP_POLICIES,
    default: 'naive',
  },
  {
    key: 'server',
    flag: 'server',
    label: 'stormproof/server in front of the server (off, on, or both side by side)',
    values: MAP_SERVERS,
    default: 'both',
  },
  {
    key: 'trigger',
    flag: 'trigger',
    label: 'Trigger: an 80% capacity loss, a 2x load spike, or both',
    values: MAP_TRIGGERS,
    default: 'capacity-loss',
  },
];

/** The map's grid, smaller than the CLI's (10 loads by 10 trigger lengths, 5 seeds). */
export const MAP_LISTS: readonly ListField<MapListKey>[] = [
  {
    key: 'loads',
    flag: 'loads',
    label: 'Offered loads (shares of capacity, comma-separated)',
    min: 0.01,
    max: 10,
    default: '0.1,0.2,0.3,0.5,0.7,0.9',
  },
  {
    key: 'triggers',
    flag: 'triggers',
    label: 'Trigger lengths (s, comma-separated)',
    min: 0,
    max: 600,
    default: '1,2,5,10,20,30',
    pageLimit: MAP_PAGE_LIMIT,
  },
];

export const MAP_NUMBERS: readonly NumberField<MapNumberKey>[] = [
  {
    key: 'seeds',
    flag: 'seeds',
    label: 'Seeds per cell',
    integer: true,
    min: 1,
    max: 1000,
    default: 3,
    stops: [1, 2, 3, 5, 10, 20],
  },
  {
    key: 'horizon',
    flag: 'horizon',
    label: 'Seconds judged after the trigger ends',
    integer: false,
    min: 5,
    max: 600,
    default: 60,
    stops: [10, 20, 30, 60, 120, 300, 600],
    pageLimit: MAP_PAGE_LIMIT,
  },
];

export type MapInputs = Readonly<Record<MapChoiceKey | MapNumberKey | MapListKey, string>>;

/** The map's inputs, checked: what `stormproof map` is given. */
export interface MapParams {
  readonly policy: string;
  readonly server: string;
  readonly trigger: string;
  readonly loads: readonly number[];
  readonly triggers: readonly number[];
  readonly seeds: number;
  readonly horizon: number;
}

/** The inputs of each view that has controls. */
export const FIELDS: Readonly<Record<'herd' | 'storm' | 'map', ViewFields>> = {
  herd: { choices: HERD_CHOICES, flags: [], numbers: HERD_NUMBERS, lists: [] },
  storm: { choices: STORM_CHOICES, flags: STORM_FLAGS, numbers: STORM_NUMBERS, lists: [] },
  map: { choices: MAP_CHOICES, flags: [], numbers: MAP_NUMBERS, lists: MAP_LISTS },
};

/** A view's inputs in the order the page shows them, and the URL and the CLI list them. */
export function fieldsOf(
  view: 'herd' | 'storm' | 'map',
): (ChoiceField | FlagField | NumberField | ListField)[] {
  const f = FIELDS[view];
  return view === 'herd'
    ? [...f.numbers, ...f.choices]
    : [...f.choices, ...f.flags, ...f.lists, ...f.numbers];
}

// --- the state and the URL ------------------------------------------------------------------------

/** Everything a link holds. */
export interface PageState {
  readonly view: View;
  readonly herd: HerdInputs;
  readonly storm: StormInputs;
  readonly map: MapInputs;
  /** The check view's stack, as typed (JSON). */
  readonly stack: string;
}

function defaultText(field: ChoiceField | FlagField | NumberField | ListField): string {
  if (!('default' in field)) return 'off';
  return String(field.default);
}

function defaultInputs(view: 'herd' | 'storm' | 'map'): Record<string, string> {
  return Object.fromEntries(fieldsOf(view).map((f) => [f.key, defaultText(f)]));
}

export function defaultState(): PageState {
  return {
    view: 'herd',
    herd: defaultInputs('herd') as HerdInputs,
    storm: defaultInputs('storm') as StormInputs,
    map: defaultInputs('map') as MapInputs,
    stack: DEFAULT_STACK,
  };
}

/**
 * Reads a state from a URL hash (`#view=herd&clients=2000&per-slot=25...`): the view and its
 * inputs. What it does not give keeps its default, and unknown keys are ignored, so an old link
 * still opens. Views share flags (`--seed`, `--policy`), so only the view's own are read.
 */
export function readHash(hash: string): PageState {
  const params = new URLSearchParams(hash.replace(/^#/, ''));
  const fallback = defaultState();
  const view = VIEWS.find((v) => v === params.get('view')) ?? fallback.view;
  if (view === 'check') return { ...fallback, view, stack: params.get('stack') ?? fallback.stack };
  const inputs: Record<string, string> = { ...fallback[view] };
  for (const f of fieldsOf(view)) {
    const given = params.get(f.flag);
    if (given !== null) inputs[f.key] = given;
  }
  return { ...fallback, view, [view]: inputs };
}

/** The hash of a state: the view and that view's inputs, by their CLI flags. */
export function writeHash(state: PageState): string {
  const params = new URLSearchParams({ view: state.view });
  if (state.view === 'check') params.set('stack', state.stack);
  else {
    const inputs = state[state.view] as Readonly<Record<string, string>>;
    for (const f of fieldsOf(state.view)) params.set(f.flag, inputs[f.key]!);
  }
  return `#${params.toString()}`;
}

/** `100_000` and `1e5` are numbers, as on the command line; `abc` is not. */
const NUMBER = /^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[-+]?\d+)?$/i;

/** Checks one numeric input: its value, or the sentence that says what is wrong. */
export function checkNumberField(
  field: NumberField,
  text: string,
): { value: number } | { error: string } {
  const plain = text.trim().replace(/_/g, '');
  const n = Number(plain);
  const kind = field.integer ? 'an integer' : 'a number';
  if (!NUMBER.test(plain) || !Number.isFinite(n) || (field.integer && !Number.isInteger(n))) {
    return { error: `must be ${kind}, got ${JSON.stringify(text)}` };
  }
  if (n < field.min || n > field.max) {
    const why = n > field.max && field.pageLimit !== undefined ? ` (${field.pageLimit})` : '';
    return { error: `must be ${kind} from ${field.min} to ${field.max}, got ${n}${why}` };
  }
  return { value: n };
}

/** Checks a list of numbers as the CLI's `--loads` does: in range, none repeated. */
export function checkListField(
  field: ListField,
  text: string,
): { value: number[] } | { error: string } {
  const parts = text.split(',').map((p) => p.trim());
  const ns = parts.map(Number);
  const shape = `must be comma-separated numbers from ${field.min} to ${field.max}, none repeated`;
  if (parts.some((p) => !NUMBER.test(p)) || ns.some((n) => !Number.isFinite(n))) {
    return { error: `${shape}, got ${JSON.stringify(text)}` };
  }
  const out = ns.find((n) => n < field.min || n > field.max);
  if (out !== undefined) {
    const why = out > field.max && field.pageLimit !== undefined ? ` (${field.pageLimit})` : '';
    return { error: `${shape}, got ${out}${why}` };
  }
  if (new Set(ns).size !== ns.length) return { error: `${shape}, got ${JSON.stringify(text)}` };
  return { value: ns };
}

type Checked<P> = { params: P } | { errors: Readonly<Record<string, string>> };

/** Checks each input of a view on its own: the values by key, and an error per wrong input. */
function checkFields(
  view: 'herd' | 'storm' | 'map',
  inputs: Readonly<Record<string, string>>,
): { values: Record<string, unknown>; errors: Record<string, string> } {
  const values: Record<string, unknown> = {};
  const errors: Record<string, string> = {};
  const f = FIELDS[view];
  for (const field of f.numbers) {
    const checked = checkNumberField(field, inputs[field.key]!);
    if ('error' in checked) errors[field.key] = checked.error;
    else values[field.key] = checked.value;
  }
  for (const field of f.lists) {
    const checked = checkListField(field, inputs[field.key]!);
    if ('error' in checked) errors[field.key] = checked.error;
    else values[field.key] = checked.value;
  }
  for (const field of f.choices) {
    const text = inputs[field.key]!;
    if (field.values.includes(text)) values[field.key] = text;
    else
      errors[field.key] = `must be one of ${field.values.join(', ')}, got ${JSON.stringify(text)}`;
  }
  for (const field of f.flags) {
    const text = inputs[field.key]!;
    if (text === 'on' || text === 'off') values[field.key] = text === 'on';
    else errors[field.key] = `must be on or off, got ${JSON.stringify(text)}`;
  }
  return { values, errors };
}

function result<P>(values: Record<string, unknown>, errors: Record<string, string>): Checked<P> {
  return Object.keys(errors).length > 0 ? { errors } : { params: values as unknown as P };
}

/** Checks the herd's inputs: the parameters, or an error per input that is wrong. */
export function checkHerd(inputs: HerdInputs): Checked<HerdParams> {
  const { values, errors } = checkFields('herd', inputs);
  return result(values, errors);
}

/**
 * Checks the storm's inputs as `stormproof sim storm` does: each on its own, then the breaker
 * only with the stormproof policy, and the failover within the run.
 */
export function checkStorm(inputs: StormInputs): Checked<StormParams> {
  const { values, errors } = checkFields('storm', inputs);
  if (values.breaker === true && values.policy === 'naive') {
    errors.breaker = 'needs the stormproof policy (the naive stack has no breaker)';
  }
  const {
    durationSeconds: d,
    faultAtSeconds: at,
    faultSeconds: s,
  } = values as Record<string, number>;
  if (d !== undefined && at !== undefined && s !== undefined && at + s > d) {
    errors.durationSeconds = `must be at least ${at + s}: the run ends before the failover does (it starts at ${at} s and lasts ${s} s)`;
  }
  return result(values, errors);
}

/** Checks the map's inputs as `stormproof map` does, and its size against the page's limit. */
export function checkMap(inputs: MapInputs): Checked<MapParams> {
  const { values, errors } = checkFields('map', inputs);
  const { loads, triggers, seeds } = values as Partial<MapParams>;
  if (loads !== undefined && triggers !== undefined && seeds !== undefined) {
    const runs = mapRuns({
      loads,
      triggers,
      seeds,
      server: inputs.server,
      trigger: inputs.trigger,
    });
    if (runs > PAGE_MAX_MAP_RUNS) {
      errors.seeds = `make ${runs.toLocaleString('en-US')} runs (cells times seeds), and the page runs up to ${PAGE_MAX_MAP_RUNS.toLocaleString('en-US')}: fewer seeds, loads or trigger lengths, or \`stormproof map\` for more`;
    }
  }
  return result(values, errors);
}

/** How many runs a map makes: its cells (loads x trigger lengths x kinds x server settings) times seeds. */
export function mapRuns(
  p: Pick<MapParams, 'loads' | 'triggers' | 'seeds' | 'server' | 'trigger'>,
): number {
  const both = (choice: string) => (choice === 'both' ? 2 : 1);
  return p.loads.length * p.triggers.length * both(p.trigger) * both(p.server) * p.seeds;
}

/** The CLI command that prints the same figures as the page, for the chosen jitter. */
export function herdCommand(params: HerdParams, jitter: HerdJitter = params.jitter): string {
  const flags = HERD_NUMBERS.map((f) => `--${f.flag} ${params[f.key]}`);
  return `stormproof sim herd ${flags.join(' ')} --jitter ${jitter} --pushback ${params.pushback} --json`;
}

/** The CLI arguments of one storm run (after `stormproof`): its figures with `--json`. */
export function stormArgs(params: StormParams): string[] {
  const args = ['sim', 'storm', '--policy', params.policy, '--server', params.server];
  if (params.breaker) args.push('--breaker');
  if (params.manualRecovery) args.push('--manual-recovery');
  for (const f of STORM_NUMBERS) args.push(`--${f.flag}`, String(params[f.key]));
  return args;
}

/** The CLI arguments of the map (after `stormproof`). */
export function mapArgs(params: MapParams): string[] {
  return [
    'map',
    '--policy',
    params.policy,
    '--server',
    params.server,
    '--trigger',
    params.trigger,
    '--loads',
    params.loads.join(','),
    '--triggers',
    params.triggers.join(','),
    '--seeds',
    String(params.seeds),
    '--horizon',
    String(params.horizon),
  ];
}

/** The slider position of a value: the nearest stop. */
export function nearestStop(stops: readonly number[], value: number): number {
  let best = 0;
  for (let i = 1; i < stops.length; i++) {
    if (Math.abs(stops[i]! - value) < Math.abs(stops[best]! - value)) best = i;
  }
  return best;
}
