// The colours every chart, map and page of stormproof draws with, in one place. They are picked
// to stay apart for readers with colour-vision deficiency: from Okabe and Ito's palette ("Color
// Universal Design", 2008) and Paul Tol's, each checked by test/palette.test.ts under simulated
// protanopia, deuteranopia and tritanopia (Machado, Oliveira and Fernandes, 2009) and against a
// white background (WCAG 2.1's 3:1 for graphics). The reports used to draw stable green beside
// metastable red, the two that collapse into one olive for about one man in twelve.

/** The storm charts' lines, by meaning: what was offered, what succeeded, what failed. */
export const SERIES_COLORS = {
  offered: '#004C99',
  succeeded: '#009E73',
  failed: '#D55E00',
} as const;

/**
 * Lines and bars with no colour of their own, in order. Any two of them stay apart under each
 * simulated deficiency; a chart with more lines than colours draws the rest dashed.
 */
export const PALETTE = ['#004C99', '#D55E00', '#009E73', '#000000', '#882255', '#CC79A7'] as const;

/** The map's classes: stable blue, vulnerable orange, metastable dark red (darker is worse). */
export const CLASS_FILLS = {
  stable: '#004C99',
  vulnerable: '#E85800',
  metastable: '#7F0000',
} as const;

/** The colour of a cell's label on each class's fill (each at least 4.5:1 against it). */
export const CLASS_LABELS = {
  stable: '#FFFFFF',
  vulnerable: '#111827',
  metastable: '#FFFFFF',
} as const;

/** A shaded stretch of a chart (an outage), and its label. */
export const BAND_COLORS = { fill: '#E69F00', text: '#8B5A00' } as const;
