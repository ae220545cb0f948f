// Small text helpers for the CLI's human output. No `node:` here: the page (src/page) draws the
// storm's report with them too.
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

/** Beyond this a double's digits are no longer all exact: such numbers print as `6.34 × 10^29`. */
const EXACT_DIGITS = 1e16;

/**
 * A number for people: thousands separated, at most two decimals; null as "-"; beyond 10^16 in
 * scientific form with three significant digits (`6.34 × 10^29`, not `6.338253001141147e+29`).
 */
export function num(n: number | null | undefined): string {
  if (n === undefined || n === null || !Number.isFinite(n) || Math.abs(n) < EXACT_DIGITS) {
    return n === undefined ? '-' : formatValue(n);
  }
  const [mantissa, exponent] = n.toExponential(2).split('e');
  return `${mantissa} × 10^${Number(exponent)}`;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const YEAR = 365.25 * DAY;

/**
 * A duration in ms for people: in ms below 10 minutes (`32,000 ms`), then in the largest unit
 * that keeps at least 2 of it: min, h, days, years (`15 min`, `24.86 days`, `2.01 × 10^19 years`).
 */
export function duration(ms: number): string {
  const abs = Math.abs(ms);
  if (!Number.isFinite(ms) || abs < 10 * MINUTE) return `${num(ms)} ms`;
  if (abs < 2 * HOUR) return `${num(ms / MINUTE)} min`;
  if (abs < 2 * DAY) return `${num(ms / HOUR)} h`;
  if (abs < 2 * YEAR) return `${num(ms / DAY)} days`;
  return `${num(ms / YEAR)} years`;
}

/** `n` rounded to `digits` decimals, for JSON output. */
export function round(n: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}
