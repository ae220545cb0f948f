// What the page shows, as plain data: the view and its inputs, read from and written to the URL's
// hash, and checked the way the CLI checks the same options. The inputs are kept as the text the
// user typed, so a link brings back exactly what was on the screen, mistakes included.
import type { HerdJitter, HerdPushback } from '../sim/herd.js';

/** The page's views. The storm and the map come later; a link to them falls back to the herd. */
export const VIEWS = ['herd', 'check'] as const;
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

/** A numeric input of the herd: its CLI flag is its key in the URL. */
export interface NumberField {
  readonly key: 'clients' | 'perSlot' | 'slotMs' | 'baseMs' | 'capMs' | 'seed';
  readonly flag: string;
  readonly label: string;
  readonly integer: boolean;
  readonly min: number;
  readonly max: number;
  readonly default: number;
  /** The values its slider moves through (none: no slider, as for the seed). */
  readonly stops: readonly number[];
}

/** The herd's numeric inputs, with `stormproof sim herd`'s ranges and defaults. */
export const HERD_NUMBERS: readonly NumberField[] = [
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

/** A choice of the herd, with its CLI flag. */
export interface ChoiceField {
  readonly key: 'jitter' | 'pushback';
  readonly flag: string;
  readonly label: string;
  readonly values: readonly string[];
  readonly default: string;
}

export const HERD_CHOICES: readonly ChoiceField[] = [
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
export type HerdInputs = Readonly<Record<NumberField['key'] | ChoiceField['key'], string>>;

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

/** Everything a link holds. */
export interface PageState {
  readonly view: View;
  readonly herd: HerdInputs;
  /** The check view's stack, as typed (JSON). */
  readonly stack: string;
}

export function defaultState(): PageState {
  const herd: Record<string, string> = {};
  for (const f of HERD_NUMBERS) herd[f.key] = String(f.default);
  for (const f of HERD_CHOICES) herd[f.key] = f.default;
  return { view: 'herd', herd: herd as HerdInputs, stack: DEFAULT_STACK };
}

/**
 * Reads a state from a URL hash (`#view=herd&clients=2000&per-slot=25...`); what it does not
 * give keeps its default, and unknown keys are ignored, so an old link still opens.
 */
export function readHash(hash: string): PageState {
  const params = new URLSearchParams(hash.replace(/^#/, ''));
  const fallback = defaultState();
  const view = VIEWS.find((v) => v === params.get('view')) ?? fallback.view;
  const herd: Record<string, string> = { ...fallback.herd };
  for (const f of [...HERD_NUMBERS, ...HERD_CHOICES]) {
    const given = params.get(f.flag);
    if (given !== null) herd[f.key] = given;
  }
  return { view, herd: herd as HerdInputs, stack: params.get('stack') ?? fallback.stack };
}

/** The hash of a state: the view and that view's inputs, by their CLI flags. */
export function writeHash(state: PageState): string {
  const params = new URLSearchParams({ view: state.view });
  if (state.view === 'herd') {
    for (const f of [...HERD_NUMBERS, ...HERD_CHOICES]) params.set(f.flag, state.herd[f.key]);
  } else {
    params.set('stack', state.stack);
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
    return { error: `must be ${kind} from ${field.min} to ${field.max}, got ${n}` };
  }
  return { value: n };
}

/** Checks the herd's inputs: the parameters, or an error per input that is wrong. */
export function checkHerd(
  inputs: HerdInputs,
): { params: HerdParams } | { errors: Readonly<Record<string, string>> } {
  const values: Record<string, number | string> = {};
  const errors: Record<string, string> = {};
  for (const f of HERD_NUMBERS) {
    const checked = checkNumberField(f, inputs[f.key]);
    if ('error' in checked) errors[f.key] = checked.error;
    else values[f.key] = checked.value;
  }
  for (const f of HERD_CHOICES) {
    if (f.values.includes(inputs[f.key])) values[f.key] = inputs[f.key];
    else
      errors[f.key] = `must be one of ${f.values.join(', ')}, got ${JSON.stringify(inputs[f.key])}`;
  }
  if (Object.keys(errors).length > 0) return { errors };
  return { params: values as unknown as HerdParams };
}

/** The CLI command that prints the same figures as the page, for the chosen jitter. */
export function herdCommand(params: HerdParams, jitter: HerdJitter = params.jitter): string {
  const flags = HERD_NUMBERS.map((f) => `--${f.flag} ${params[f.key]}`);
  return `stormproof sim herd ${flags.join(' ')} --jitter ${jitter} --pushback ${params.pushback} --json`;
}

/** The slider position of a value: the nearest stop. */
export function nearestStop(stops: readonly number[], value: number): number {
  let best = 0;
  for (let i = 1; i < stops.length; i++) {
    if (Math.abs(stops[i]! - value) < Math.abs(stops[best]! - value)) best = i;
  }
  return best;
}
