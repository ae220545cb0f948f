// Small text helpers for the CLI's human output, and a file writer that never leaves half a file.
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { formatValue } from '../sim/plot.js';
import type { OptionSpec } from './args.js';

/** The `--json` option of the commands that print figures. */
export const JSON_OPTION: OptionSpec = {
  flag: 'json',
  key: 'json',
  kind: { type: 'flag' },
  help: 'print the figures as JSON',
};

/** Rows as aligned columns: the first left-aligned, the others right-aligned. */
export function table(rows: readonly (readonly string[])[], indent = '  '): string {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length);
    });
  }
  return rows
    .map(
      (row) =>
        indent +
        row
          .map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
          .join('  ')
          .trimEnd(),
    )
    .join('\n');
}

/** A number for people: thousands separated, at most two decimals; null as "-". */
export function num(n: number | null | undefined): string {
  return n === undefined ? '-' : formatValue(n);
}

/** `n` rounded to `digits` decimals, for JSON output. */
export function round(n: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

/** Writes `text` to `file` whole: to a temporary file first, then renamed over it. */
export function writeWhole(file: string, text: string): void {
  mkdirSync(dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(temporary, text);
    renameSync(temporary, file);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}
