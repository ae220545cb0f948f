// Command-line options: declared once per command, parsed with node:util's parseArgs, and turned
// into checked values. Every mistake becomes a UsageError that names the option and the value, so
// the program can print one clear line and exit with code 2.
import { parseArgs } from 'node:util';
import { closest } from '../core/validate.js';

/** A mistake in how the program was called: printed as one line, exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** What an option's value is. */
export type OptionKind =
  | { readonly type: 'int'; readonly min: number; readonly max: number }
  | { readonly type: 'number'; readonly min: number; readonly max: number }
  /** Comma-separated numbers in [min, max], none repeated: `0.5,0.7,0.9` (checked, kept as text). */
  | { readonly type: 'numbers'; readonly min: number; readonly max: number }
  | { readonly type: 'seed' }
  | { readonly type: 'enum'; readonly values: readonly string[] }
  | { readonly type: 'flag' }
  | { readonly type: 'file'; readonly extensions?: readonly string[] };

/** One command-line option. */
export interface OptionSpec {
  /** Its name without dashes: `per-slot`. */
  readonly flag: string;
  /** The key it fills in the parsed options: `perSlot`. */
  readonly key: string;
  /** What it takes. */
  readonly kind: OptionKind;
  /** Its default, shown in the help. */
  readonly default?: string | number | boolean;
  /** For an option with no default value: what leaving it out does, shown in the help. */
  readonly defaultHelp?: string;
  /** One line of help. */
  readonly help: string;
}

/** Parsed option values by key, plus the positional arguments. */
export interface Parsed {
  readonly values: Record<string, string | number | bigint | boolean | undefined>;
  readonly positionals: readonly string[];
}

/** `100_000` and `1e5` are fine; `abc` and `1.5` (for an integer) are not. */
const NUMBER = /^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[-+]?\d+)?$/i;
const INTEGER = /^[-+]?\d+$/;

function range(min: number, max: number): string {
  if (Number.isFinite(min) && Number.isFinite(max)) return ` from ${min} to ${max}`;
  if (Number.isFinite(min)) return ` >= ${min}`;
  if (Number.isFinite(max)) return ` <= ${max}`;
  return '';
}

/** Converts one raw value; throws a UsageError naming `--flag` and the value. */
export function convert(
  command: string,
  spec: OptionSpec,
  raw: string | boolean,
): string | number | bigint | boolean {
  const { kind } = spec;
  const fail = (what: string): never => {
    throw new UsageError(
      `${command}: --${spec.flag} must be ${what}, got ${JSON.stringify(String(raw))}`,
    );
  };
  if (kind.type === 'flag') return raw === true;
  const text = String(raw).replace(/_/g, '');
  switch (kind.type) {
    case 'int': {
      const n = Number(text);
      if (!NUMBER.test(text) || !Number.isInteger(n) || n < kind.min || n > kind.max) {
        fail(`an integer${range(kind.min, kind.max)}`);
      }
      return n;
    }
    case 'number': {
      const n = Number(text);
      if (!NUMBER.test(text) || !Number.isFinite(n) || n < kind.min || n > kind.max) {
        fail(`a number${range(kind.min, kind.max)}`);
      }
      return n;
    }
    case 'numbers': {
      const parts = text.split(',');
      const ns = parts.map(Number);
      if (
        parts.some((p) => !NUMBER.test(p)) ||
        ns.some((n) => !Number.isFinite(n) || n < kind.min || n > kind.max) ||
        new Set(ns).size !== ns.length
      ) {
        fail(`comma-separated numbers${range(kind.min, kind.max)}, none repeated`);
      }
      return ns.join(',');
    }
    case 'seed': {
      if (!INTEGER.test(text)) fail('an integer');
      const big = BigInt(text);
      return big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER)
        ? Number(big)
        : big;
    }
    case 'enum':
      if (!kind.values.includes(String(raw))) fail(`one of ${kind.values.join(', ')}`);
      return String(raw);
    case 'file': {
      const file = String(raw);
      if (file === '') fail('a file name');
      const ext = kind.extensions;
      if (ext !== undefined && !ext.some((e) => file.toLowerCase().endsWith(e))) {
        fail(`a file name ending in ${ext.join(' or ')}`);
      }
      return file;
    }
  }
}

/** The closest known flag to an unknown one, for "did you mean". */
function nearest(unknown: string, specs: readonly OptionSpec[]): string | undefined {
  const name = unknown.replace(/^-+/, '').split('=')[0]!;
  return closest(
    name,
    specs.map((spec) => spec.flag),
  );
}

/**
 * Parses `args` against `specs` (plus `--help`): unknown options, missing values, values given to
 * flags and stray positionals all throw a UsageError that names them. Values are converted and
 * checked; options left out get their `default`.
 */
export function parse(
  command: string,
  args: readonly string[],
  specs: readonly OptionSpec[],
  positionals: { min: number; max: number; name: string } = { min: 0, max: 0, name: '' },
): Parsed & { help: boolean } {
  const options: Record<string, { type: 'string' | 'boolean' }> = { help: { type: 'boolean' } };
  for (const spec of specs) {
    options[spec.flag] = { type: spec.kind.type === 'flag' ? 'boolean' : 'string' };
  }
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: [...args], options, strict: true, allowPositionals: true });
  } catch (error) {
    throw usageFromParseArgs(command, error, specs);
  }
  const help = parsed.values.help === true;
  if (!help && parsed.positionals.length > positionals.max) {
    const extra = parsed.positionals[positionals.max]!;
    throw new UsageError(
      positionals.max === 0
        ? `${command}: unexpected argument ${JSON.stringify(extra)} (options start with --)`
        : `${command}: unexpected argument ${JSON.stringify(extra)} (expected one ${positionals.name})`,
    );
  }
  if (!help && parsed.positionals.length < positionals.min) {
    throw new UsageError(`${command}: missing ${positionals.name}`);
  }
  const values: Parsed['values'] = {};
  if (help) return { values, positionals: parsed.positionals, help };
  for (const spec of specs) {
    const raw = parsed.values[spec.flag];
    if (raw === undefined) {
      values[spec.key] = spec.default;
      continue;
    }
    if (typeof raw !== 'string' && typeof raw !== 'boolean') {
      throw new UsageError(`${command}: --${spec.flag} was given more than once`);
    }
    values[spec.key] = convert(command, spec, raw);
  }
  return { values, positionals: parsed.positionals, help };
}

/** Rewrites parseArgs's errors as one line that names the option. */
function usageFromParseArgs(
  command: string,
  error: unknown,
  specs: readonly OptionSpec[],
): UsageError {
  const e = error as { code?: string; message?: string };
  const quoted = /'(-[^' ]*)/.exec(e.message ?? '')?.[1];
  const option = quoted ?? 'an option';
  switch (e.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION': {
      const near = nearest(option, specs);
      const hint = near === undefined ? '' : ` (did you mean --${near}?)`;
      return new UsageError(`${command}: unknown option ${option}${hint}; see ${command} --help`);
    }
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE': {
      const spec = specs.find((s) => `--${s.flag}` === option);
      if (spec?.kind.type === 'flag') {
        return new UsageError(`${command}: option ${option} takes no value`);
      }
      return new UsageError(
        `${command}: option ${option} needs a value${
          /ambiguous/.test(e.message ?? '')
            ? ` (write ${option}=VALUE for a value that starts with -)`
            : ''
        }`,
      );
    }
    default:
      return new UsageError(`${command}: ${e.message ?? String(error)}`);
  }
}

/** The help text of a command's options, aligned. */
export function optionsHelp(specs: readonly OptionSpec[]): string {
  const rows = specs.map((spec) => {
    const kind = spec.kind;
    let arg = '';
    if (kind.type === 'enum') arg = ` ${kind.values.join('|')}`;
    else if (kind.type === 'file') arg = ' FILE';
    else if (kind.type === 'numbers') arg = ' N,N,...';
    else if (kind.type !== 'flag') arg = ' N';
    let def = '';
    if (spec.default !== undefined && spec.default !== false) def = ` (default ${spec.default})`;
    else if (spec.defaultHelp !== undefined) def = ` (default: ${spec.defaultHelp})`;
    else if (kind.type === 'flag') def = ' (default off)';
    return [`  --${spec.flag}${arg}`, `${spec.help}${def}`] as const;
  });
  const width = Math.min(40, Math.max(...rows.map(([left]) => left.length)) + 2);
  return rows
    .map(([left, right]) =>
      left.length + 2 > width
        ? `${left}\n${' '.repeat(width)}${right}`
        : left.padEnd(width) + right,
    )
    .join('\n');
}
