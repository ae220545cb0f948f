// Headless Chromium for the report tests: Debian's /usr/bin/chromium through playwright-core.
// Where it is missing, the test fails and says so: a report never goes unchecked.
import { existsSync } from 'node:fs';
import { type Browser, chromium, type Page } from 'playwright-core';
import { expect } from 'vitest';

export const CHROMIUM = '/usr/bin/chromium';

/** Launches headless Chromium; fails the test when it is not installed. `what` names what goes unchecked. */
export async function launchChromium(what: string): Promise<Browser> {
  expect(
    existsSync(CHROMIUM),
    `${CHROMIUM} is not installed (Debian: apt-get install chromium): ${what} cannot be checked in a browser`,
  ).toBe(true);
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
}

/** A text of a picture that leaves its chart: by how many CSS pixels on each side (0: inside). */
export interface TextOverflow {
  /** The chart's title (its `<title>`), or the picture's. */
  readonly chart: string;
  readonly text: string;
  readonly left: number;
  readonly right: number;
  readonly top: number;
  readonly bottom: number;
}

/** What the page counted: its texts, and those that leave their chart by more than half a pixel. */
export interface TextFit {
  readonly texts: number;
  readonly overflows: readonly TextOverflow[];
}

/**
 * Every `<text>` of the page's pictures against its chart: the chart's background `<rect>` where
 * the text is in a `<g class="chart">` (several charts in one picture), else its enclosing `<svg>`.
 */
export function textFit(page: Page): Promise<TextFit> {
  return page.$$eval('svg text', (texts) => {
    const overflows: TextOverflow[] = [];
    let counted = 0;
    for (const text of texts) {
      const b = text.getBoundingClientRect();
      if (b.width === 0 && b.height === 0) continue;
      counted++;
      const chart = text.closest('g.chart');
      const svg = text.closest('svg')!;
      const frame = chart?.querySelector(':scope > rect') ?? svg;
      const f = frame.getBoundingClientRect();
      const side = {
        left: f.left - b.left,
        right: b.right - f.right,
        top: f.top - b.top,
        bottom: b.bottom - f.bottom,
      };
      if (Math.max(side.left, side.right, side.top, side.bottom) <= 0.5) continue;
      // A chart's title is its first text, in lines (tspans); a picture's is its <title>.
      const titled = chart?.querySelector(':scope > text') ?? svg.querySelector(':scope > title');
      const lines = titled?.querySelectorAll('tspan') ?? [];
      const name =
        lines.length > 0 ? Array.from(lines, (l) => l.textContent).join(' ') : titled?.textContent;
      const round = (n: number) => Math.max(0, Math.round(n));
      overflows.push({
        chart: name ?? '',
        text: text.textContent ?? '',
        left: round(side.left),
        right: round(side.right),
        top: round(side.top),
        bottom: round(side.bottom),
      });
    }
    return { texts: counted, overflows };
  });
}
