// Per-second counters: each part of the lab counts what it saw in the second it saw it, in
// seconds since the run's start, and the run adds them up.

/** Counts per whole second since `startMs`, up to `seconds` (later events land in the last). */
export class PerSecond {
  readonly counts: number[];
  constructor(
    private readonly startMs: number,
    seconds: number,
  ) {
    this.counts = new Array<number>(Math.max(1, Math.ceil(seconds))).fill(0);
  }

  /** The second `atMs` falls in, clamped to the counted range. */
  second(atMs: number): number {
    const s = Math.floor((atMs - this.startMs) / 1000);
    return Math.min(this.counts.length - 1, Math.max(0, s));
  }

  add(atMs: number, n = 1): void {
    this.counts[this.second(atMs)]! += n;
  }
}

/** Adds arrays element by element (their lengths may differ). */
export function sum(arrays: readonly (readonly number[])[]): number[] {
  const length = Math.max(0, ...arrays.map((a) => a.length));
  const out = new Array<number>(length).fill(0);
  for (const a of arrays) {
    for (let i = 0; i < a.length; i++) out[i]! += a[i]!;
  }
  return out;
}
