// runHerd against the storm story's `herd` toy model. The first two figures are the
// storm story's own. The others were printed by CPython 3.11.7 running the storm story's model extended
// as follows (the extension script is not part of the repo): `jitter` picks one of the five kinds
// (none: `wait = ceiling`; full: `rng.uniform(0, ceiling)`; equal:
// `ceiling / 2 + rng.uniform(0, ceiling / 2)`; decorrelated: `min(cap, rng.uniform(base,
// prev[c] * 3))` with `prev[c] = wait` and prev starting at base; band:
// `ceiling * rng.uniform(0.8, 1.2)`), the 10 ms slot becomes `slot_ms`, `base = base_ms / 1000`,
// `cap = cap_ms / 1000`, and `random.Random(seed)` takes the seed; the model's loop, draw order
// and print format (`f"{ms / 1000:.2f}"`) are unchanged. Each expected value names the call:
// herd(jitter, clients=..., per_slot=..., slot_ms=..., base_ms=..., cap_ms=..., seed=...).
import { describe, expect, it } from 'vitest';
import { type HerdJitter, type HerdOptions, runHerd } from '../src/sim/herd.js';

describe("runHerd reproduces the storm story's figures", () => {
  it('without jitter: 81000 calls, busiest slot 1975, done after 376.21 s', () => {
    expect(runHerd({ jitter: 'none' })).toEqual({
      calls: 81000,
      busiestSlot: 1975,
      doneAfterSeconds: 376.21,
    });
  });

  it('with full jitter (the default): 6487 calls, busiest slot 205, done after 3.45 s', () => {
    const expected = { calls: 6487, busiestSlot: 205, doneAfterSeconds: 3.45 };
    expect(runHerd({ jitter: 'full' })).toEqual(expected);
    expect(runHerd()).toEqual(expected);
    expect(runHerd({})).toEqual(expected);
  });
});

type Row = [HerdJitter, number, number, number];

/** Runs each row's jitter kind with `options` and checks [calls, busiestSlot, doneAfterSeconds]. */
function checkRows(options: HerdOptions, rows: Row[]): void {
  for (const [jitter, calls, busiestSlot, doneAfterSeconds] of rows) {
    expect({ jitter, ...runHerd({ ...options, jitter }) }).toEqual({
      jitter,
      calls,
      busiestSlot,
      doneAfterSeconds,
    });
  }
}

describe('runHerd matches the extended Python model', () => {
  it('at the defaults, every jitter kind', () => {
    // herd(j) for j in ('equal', 'decorrelated', 'band'): (6809, 217, '2.72'),
    // (5037, 66, '2.28'), (7274, 271, '3.40')
    checkRows({}, [
      ['equal', 6809, 217, 2.72],
      ['decorrelated', 5037, 66, 2.28],
      ['band', 7274, 271, 3.4],
    ]);
  });

  it('clients 500, perSlot 10, seed 1', () => {
    // herd(j, clients=500, per_slot=10, seed=1)
    checkRows({ clients: 500, perSlot: 10, seed: 1 }, [
      ['none', 12750, 490, 226.21],
      ['full', 1406, 47, 1.73],
      ['equal', 1537, 57, 1.31],
      ['decorrelated', 1103, 19, 2.14],
      ['band', 1608, 75, 2.86],
    ]);
  });

  it('clients 1000, perSlot 20, slotMs 25, baseMs 100, capMs 2000, seed 42', () => {
    // herd(j, clients=1000, per_slot=20, slot_ms=25, base_ms=100, cap_ms=2000, seed=42).
    // 'none' ends at ms = 91125: Python's :.2f rounds the exact tie 91.125 to even, 91.12.
    checkRows({ clients: 1000, perSlot: 20, slotMs: 25, baseMs: 100, capMs: 2000, seed: 42 }, [
      ['none', 25500, 980, 91.12],
      ['full', 4571, 510, 2.83],
      ['equal', 4596, 510, 2.8],
      ['decorrelated', 3433, 152, 2.92],
      ['band', 4704, 510, 5.22],
    ]);
  });

  it('1 ms slots, fractional base and cap, a negative seed', () => {
    // herd(j, clients=300, per_slot=4, slot_ms=1, base_ms=33.3, cap_ms=777.7, seed=-12)
    checkRows({ clients: 300, perSlot: 4, slotMs: 1, baseMs: 33.3, capMs: 777.7, seed: -12 }, [
      ['none', 11400, 296, 54.64],
      ['full', 813, 16, 0.2],
      ['equal', 899, 23, 0.38],
      ['decorrelated', 673, 10, 0.39],
      ['band', 948, 30, 0.5],
    ]);
  });

  it('a seed beyond 2^64, as a bigint', () => {
    // herd(j, clients=400, seed=2**70 + 3)
    checkRows({ clients: 400, seed: 2n ** 70n + 3n }, [
      ['none', 3400, 375, 56.21],
      ['full', 791, 36, 0.42],
      ['equal', 900, 46, 0.59],
      ['decorrelated', 775, 17, 0.6],
      ['band', 950, 52, 0.7],
    ]);
  });

  it('edge sizes: no clients, one client, exactly one slot of capacity and one more', () => {
    // herd('full', clients=n) and herd('none', clients=n) for n in (0, 1, 25, 26):
    // (0, 0, '0.00') both; (1, 0, '0.01') both; (25, 0, '0.01') both;
    // (27, 1, '0.12') full and (27, 1, '0.21') none
    expect(runHerd({ clients: 0 })).toEqual({ calls: 0, busiestSlot: 0, doneAfterSeconds: 0 });
    expect(runHerd({ clients: 1, jitter: 'none' })).toEqual({
      calls: 1,
      busiestSlot: 0,
      doneAfterSeconds: 0.01,
    });
    expect(runHerd({ clients: 25 })).toEqual({ calls: 25, busiestSlot: 0, doneAfterSeconds: 0.01 });
    expect(runHerd({ clients: 26 })).toEqual({ calls: 27, busiestSlot: 1, doneAfterSeconds: 0.12 });
    expect(runHerd({ clients: 26, jitter: 'none' })).toEqual({
      calls: 27,
      busiestSlot: 1,
      doneAfterSeconds: 0.21,
    });
  });

  it('rounds an exact tie half to even, as Python prints it (0.625 s -> 0.62)', () => {
    // herd('full', clients=5, per_slot=1, slot_ms=125, base_ms=1, cap_ms=1): (15, 4, '0.62')
    expect(runHerd({ clients: 5, perSlot: 1, slotMs: 125, baseMs: 1, capMs: 1 })).toEqual({
      calls: 15,
      busiestSlot: 4,
      doneAfterSeconds: 0.62,
    });
  });

  it('a zero base: every retry lands in the next slot', () => {
    // herd('full', clients=300, per_slot=5, base_ms=0) and the same with 'none': (9150, 295, '0.60')
    const expected = { calls: 9150, busiestSlot: 295, doneAfterSeconds: 0.6 };
    expect(runHerd({ clients: 300, perSlot: 5, baseMs: 0 })).toEqual(expected);
    expect(runHerd({ clients: 300, perSlot: 5, baseMs: 0, jitter: 'none' })).toEqual(expected);
  });
});

describe('runHerd at scale', () => {
  it('runs 100,000 clients with full jitter', () => {
    const result = runHerd({ clients: 100_000 });
    // Sane: every client calls at least once, at most perSlot succeed per 10 ms slot.
    expect(result.calls).toBeGreaterThan(100_000);
    expect(result.busiestSlot).toBeLessThanOrEqual(100_000);
    expect(result.doneAfterSeconds).toBeGreaterThanOrEqual(100_000 / 25 / 100);
    // And exact: herd(True, clients=100000), the storm story's model unchanged, printed
    // (1274779, 10050, '43.50') on CPython 3.11.7.
    expect(result).toEqual({ calls: 1_274_779, busiestSlot: 10_050, doneAfterSeconds: 43.5 });
  });

  it('reports progress, ending with every client done', () => {
    const seen: [number, number][] = [];
    runHerd({ onProgress: (done, total) => seen.push([done, total]) });
    expect(seen.at(-1)).toEqual([2000, 2000]);
    expect(seen.length).toBeGreaterThan(10);
    expect(seen.length).toBeLessThanOrEqual(101);
    for (let i = 1; i < seen.length; i++) expect(seen[i]![0]).toBeGreaterThan(seen[i - 1]![0]);
    const none: [number, number][] = [];
    runHerd({ clients: 0, onProgress: (done, total) => none.push([done, total]) });
    expect(none).toEqual([[0, 0]]);
  });
});

describe('runHerd without jitter moves the herd as one (issue 19)', () => {
  it.each<[HerdOptions, { calls: number; busiestSlot: number; doneAfterSeconds: number }, number]>([
    [
      { clients: 9000, perSlot: 30, slotMs: 7, baseMs: 130, capMs: 3300 },
      { calls: 1_354_500, busiestSlot: 8970, doneAfterSeconds: 973.34 },
      300,
    ],
    [
      { clients: 777, perSlot: 1, slotMs: 1, baseMs: 0.5, capMs: 40 },
      { calls: 302_253, busiestSlot: 776, doneAfterSeconds: 30.55 },
      777,
    ],
    [
      { clients: 4321, perSlot: 17, slotMs: 13, baseMs: 1, capMs: 1_000_000 },
      { calls: 551_310, busiestSlot: 4304, doneAfterSeconds: 235_048.28 },
      255,
    ],
  ])(
    '%o: the client-by-client figures, slots and progress, whatever the seed',
    (options, expected, slots) => {
      // Pinned from the client-by-client loop, which shuffled every slot for nothing: the clients
      // due in a slot are all in the same state. A wave at a time now.
      for (const seed of [7, 8]) {
        const reported: [number, number, number][] = [];
        const progress: number[] = [];
        const r = runHerd({
          ...options,
          jitter: 'none',
          mode: 'exact',
          seed,
          onSlot: (ms, served, failed) => reported.push([ms, served, failed]),
          onProgress: (done) => progress.push(done),
        });
        expect(r).toEqual(expected);
        expect(reported).toHaveLength(slots);
        expect(reported.reduce((sum, [, s, f]) => sum + s + f, 0)).toBe(expected.calls);
        expect(progress.at(-1)).toBe(options.clients);
      }
    },
  );
});

describe('runHerd validates its options', () => {
  it.each([
    [{ clients: -1 }, RangeError, /clients.*-1/],
    [{ clients: 1.5 }, RangeError, /clients.*1\.5/],
    [{ clients: '5' }, TypeError, /clients.*"5"/],
    [{ clients: 2 ** 31 }, RangeError, /clients.*2147483648/],
    [{ perSlot: 0 }, RangeError, /perSlot.*0/],
    [{ perSlot: Number.NaN }, TypeError, /perSlot.*NaN/],
    [{ slotMs: 0.5 }, RangeError, /slotMs.*0\.5/],
    [{ slotMs: 0 }, RangeError, /slotMs.*0/],
    [{ baseMs: -1 }, RangeError, /baseMs.*-1/],
    [{ capMs: Number.POSITIVE_INFINITY }, TypeError, /capMs.*Infinity/],
    [{ seed: 1.5 }, RangeError, /seed.*1\.5/],
    [{ seed: '7' }, TypeError, /seed.*"7"/],
    [{ jitter: 'jittery' }, TypeError, /jitter.*"jittery"/],
    [{ jitter: true }, TypeError, /jitter.*true/],
    [{ onProgress: 5 }, TypeError, /onProgress.*5/],
    [{ clientz: 5 }, TypeError, /clientz/],
  ])('rejects %o', (options, type, message) => {
    const run = () => runHerd(options as HerdOptions);
    expect(run).toThrow(type);
    expect(run).toThrow(message);
  });

  it.each([null, 5, 'fast', [1]])('rejects options %o that are not an object', (options) => {
    expect(() => runHerd(options as HerdOptions)).toThrow(TypeError);
  });

  it('treats undefined values as the defaults', () => {
    expect(runHerd({ clients: undefined, jitter: undefined, onProgress: undefined })).toEqual({
      calls: 6487,
      busiestSlot: 205,
      doneAfterSeconds: 3.45,
    });
  });
});
