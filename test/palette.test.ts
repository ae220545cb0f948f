// The colours stay apart for readers with colour-vision deficiency. Each colour is simulated as a
// protanope, a deuteranope and a tritanope sees it (Machado, Oliveira and Fernandes, "A
// Physiologically-based Model for Simulation of Color Vision Deficiency", IEEE TVCG 2009,
// severity 1.0, applied to linear RGB), and two colours that a chart tells apart must stay at
// least a given CIE76 distance (ΔE*ab) apart in each. Before this palette, the map's stable green
// and metastable red were 20.6 apart for a deuteranope and its vulnerable amber and metastable
// red 16.9; the lines' blue and violet 1.7: one colour.
import { describe, expect, it } from 'vitest';
import { CLASS_FILLS, CLASS_LABELS, PALETTE, SERIES_COLORS } from '../src/sim/palette.js';

type Matrix = readonly (readonly [number, number, number])[];
const VISION: Record<string, Matrix> = {
  typical: [
    [1, 0, 0],
    [0, 1, 0],
    [0, 0, 1],
  ],
  protanopia: [
    [0.152286, 1.052583, -0.204868],
    [0.114503, 0.786281, 0.099216],
    [-0.003882, -0.048116, 1.051998],
  ],
  deuteranopia: [
    [0.367322, 0.860646, -0.227968],
    [0.280085, 0.672501, 0.047413],
    [-0.01182, 0.04294, 0.968881],
  ],
  tritanopia: [
    [1.255528, -0.076749, -0.178779],
    [-0.078411, 0.930809, 0.147602],
    [0.004733, 0.691367, 0.3039],
  ],
};

const linear = (c: number) => (c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
function rgb(hex: string): [number, number, number] {
  expect(hex).toMatch(/^#[0-9a-fA-F]{6}$/);
  return [1, 3, 5].map((i) => linear(Number.parseInt(hex.slice(i, i + 2), 16) / 255)) as [
    number,
    number,
    number,
  ];
}
function lab([r, g, b]: readonly number[]): [number, number, number] {
  const [R, G, B] = [r!, g!, b!].map((v) => Math.min(1, Math.max(0, v))) as [
    number,
    number,
    number,
  ];
  const X = 0.4124 * R + 0.3576 * G + 0.1805 * B;
  const Y = 0.2126 * R + 0.7152 * G + 0.0722 * B;
  const Z = 0.0193 * R + 0.1192 * G + 0.9505 * B;
  const f = (t: number) => (t > 0.008856 ? Math.cbrt(t) : 7.787 * t + 16 / 116);
  const fx = f(X / 0.95047);
  const fy = f(Y);
  const fz = f(Z / 1.08883);
  return [116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)];
}
function seen(hex: string, vision: Matrix): [number, number, number] {
  const c = rgb(hex);
  return lab(vision.map((row) => row[0] * c[0] + row[1] * c[1] + row[2] * c[2]));
}
/** The closest two colours of a set, for each kind of vision. */
function closest(colors: readonly string[]): Record<string, { distance: number; pair: string }> {
  const out: Record<string, { distance: number; pair: string }> = {};
  for (const [name, vision] of Object.entries(VISION)) {
    let best = { distance: Number.POSITIVE_INFINITY, pair: '' };
    for (let i = 0; i < colors.length; i++) {
      for (let j = i + 1; j < colors.length; j++) {
        const [a, b] = [seen(colors[i]!, vision), seen(colors[j]!, vision)];
        const distance = Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
        if (distance < best.distance) best = { distance, pair: `${colors[i]}/${colors[j]}` };
      }
    }
    out[name] = best;
  }
  return out;
}
function expectApart(colors: readonly string[], min: number) {
  for (const [vision, { distance, pair }] of Object.entries(closest(colors))) {
    expect(distance, `${pair} for ${vision}`).toBeGreaterThanOrEqual(min);
  }
}
/** WCAG 2.1's contrast ratio. */
function contrast(a: string, b: string): number {
  const luminance = (hex: string) => {
    const [r, g, bl] = rgb(hex);
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
  };
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (hi + 0.05) / (lo + 0.05);
}

describe('the palette, as colour-blind readers see it', () => {
  it("the storm charts' offered, succeeded and failed lines stay at least 25 apart", () => {
    expectApart(Object.values(SERIES_COLORS), 25);
  });

  it("the live lab's four lines (the three and the API server's calls) stay at least 20 apart", () => {
    expectApart([...Object.values(SERIES_COLORS), PALETTE[4]], 20);
  });

  it('the first five colours of the palette stay at least 20 apart, all six at least 15', () => {
    expectApart(PALETTE.slice(0, 5), 20);
    expectApart(PALETTE, 15);
  });

  it("the map's stable, vulnerable and metastable stay at least 30 apart", () => {
    expectApart(Object.values(CLASS_FILLS), 30);
  });

  it('the old colours would have failed: green beside red, amber beside red', () => {
    // The check can fail: the reports' former map colours and lines do.
    expect(closest(['#16a34a', '#d97706', '#dc2626']).deuteranopia!.distance).toBeLessThan(30);
    expect(closest(['#2563eb', '#7c3aed']).deuteranopia!.distance).toBeLessThan(5);
  });

  it('every colour shows on white (3:1 for graphics), and a cell label on its class (4.5:1)', () => {
    for (const color of [
      ...PALETTE,
      ...Object.values(SERIES_COLORS),
      ...Object.values(CLASS_FILLS),
    ]) {
      expect(contrast(color, '#FFFFFF'), color).toBeGreaterThanOrEqual(3);
    }
    for (const [name, fill] of Object.entries(CLASS_FILLS)) {
      expect(
        contrast(fill, CLASS_LABELS[name as keyof typeof CLASS_LABELS]),
        name,
      ).toBeGreaterThanOrEqual(4.5);
    }
  });
});
