// A one-line progress bar on stderr. Drawn only on a terminal (or when asked for), redrawn only
// when the whole percent changes, and wiped before anything else is printed.
import type { OptionSpec } from './args.js';

/** The `--progress` option every long-running command takes. */
export const PROGRESS_OPTION: OptionSpec = {
  flag: 'progress',
  key: 'progress',
  kind: { type: 'enum', values: ['auto', 'always', 'never'] },
  default: 'auto',
  help: 'progress bar on stderr; auto: only on a terminal',
};

/** Where the bar is drawn: process.stderr, or a stand-in in tests. */
export interface ProgressStream {
  readonly isTTY?: boolean | undefined;
  readonly columns?: number | undefined;
  write(text: string): unknown;
}

/** When to draw: on a terminal only (`auto`), always, or never. */
export type ProgressMode = 'auto' | 'always' | 'never';

/** A progress bar; a disabled one does nothing. */
export class ProgressBar {
  readonly enabled: boolean;
  readonly #stream: ProgressStream;
  readonly #label: string;
  #percent = -1;
  #drawn = false;

  constructor(stream: ProgressStream, label: string, mode: ProgressMode = 'auto') {
    this.#stream = stream;
    this.#label = label;
    this.enabled = mode === 'always' || (mode === 'auto' && stream.isTTY === true);
  }

  /** Shows `fraction` (0 to 1) done; draws only when the whole percent changed. */
  update(fraction: number): void {
    if (!this.enabled) return;
    const clamped = Number.isFinite(fraction) ? Math.min(1, Math.max(0, fraction)) : 0;
    const percent = Math.floor(clamped * 100);
    if (percent === this.#percent) return;
    this.#percent = percent;
    this.#stream.write(`\r${renderBar(this.#label, clamped, this.#stream.columns || 80)}\x1b[K`);
    this.#drawn = true;
  }

  /** Wipes the bar's line, so that what is printed next starts clean. */
  clear(): void {
    if (!this.#drawn) return;
    this.#stream.write('\r\x1b[K');
    this.#drawn = false;
    this.#percent = -1;
  }
}

/** The bar's text: `label [#######-------]  50%`, fitted to `columns`. */
export function renderBar(label: string, fraction: number, columns: number): string {
  const percent = `${String(Math.floor(fraction * 100)).padStart(3)}%`;
  const room = Math.max(10, Math.min(40, columns - label.length - percent.length - 5));
  const filled = Math.round(fraction * room);
  return `${label} [${'#'.repeat(filled)}${'-'.repeat(room - filled)}] ${percent}`;
}
