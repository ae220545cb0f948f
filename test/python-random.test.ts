// Golden vectors for PythonRandom. Every expected value below was printed by CPython 3.11.7
// (`python3` on the development machine); the comment above each names the Python expression.
// Floats are Python's repr, which round-trips exactly through a JavaScript number literal.
import { describe, expect, it } from 'vitest';
import { PythonRandom } from '../src/sim/python-random.js';

const take = <T>(count: number, draw: () => T): T[] => Array.from({ length: count }, draw);

describe('PythonRandom.random matches CPython random.random()', () => {
  it('seed 7', () => {
    const rng = new PythonRandom(7);
    // r = random.Random(7); [r.random() for _ in range(10)]
    expect(take(10, () => rng.random())).toEqual([
      0.32383276483316237, 0.15084917392450192, 0.6509344730398537, 0.07243628666754276,
      0.5358820043066892, 0.36568891691258554, 0.057998924774706806, 0.5074357331894203,
      0.03749565844198488, 0.4336456836623859,
    ]);
  });

  it('seed 0 (a one-word key [0])', () => {
    const rng = new PythonRandom(0);
    // r = random.Random(0); [r.random() for _ in range(10)]
    expect(take(10, () => rng.random())).toEqual([
      0.8444218515250481, 0.7579544029403025, 0.420571580830845, 0.25891675029296335,
      0.5112747213686085, 0.4049341374504143, 0.7837985890347726, 0.30331272607892745,
      0.4765969541523558, 0.5833820394550312,
    ]);
  });

  it('seed 2**40 + 123 (a two-word key), as number and as bigint', () => {
    // r = random.Random(2**40 + 123); [r.random() for _ in range(10)]
    const expected = [
      0.9437888222210947, 0.00375904797666915, 0.1398770438717346, 0.24132672662485044,
      0.2737849115756257, 0.4524302429479804, 0.2659536233091241, 0.3243623365631547,
      0.8466640078888306, 0.11246567744872771,
    ];
    const fromNumber = new PythonRandom(2 ** 40 + 123);
    const fromBigint = new PythonRandom(2n ** 40n + 123n);
    expect(take(10, () => fromNumber.random())).toEqual(expected);
    expect(take(10, () => fromBigint.random())).toEqual(expected);
  });

  it('seed -5 is seeded by its absolute value, as CPython does', () => {
    // r = random.Random(-5); [r.random() for _ in range(10)]
    const expected = [
      0.6229016948897019, 0.7417869892607294, 0.7951935655656966, 0.9424502837770503,
      0.7398985747399307, 0.922324996665417, 0.029005228283614737, 0.46562265437810535,
      0.9433567169983137, 0.6489745531369242,
    ];
    const negative = new PythonRandom(-5);
    const positive = new PythonRandom(5);
    expect(take(10, () => negative.random())).toEqual(expected);
    expect(take(10, () => positive.random())).toEqual(expected);
  });

  it('seed 2**100 + 5 (a four-word key, bigint)', () => {
    const rng = new PythonRandom(2n ** 100n + 5n);
    // r = random.Random(2**100 + 5); [r.random() for _ in range(3)]
    expect(take(3, () => rng.random())).toEqual([
      0.7033503239395905, 0.9851952005245675, 0.03063164465720125,
    ]);
  });

  it('stays in step across several twists of the state', () => {
    const rng = new PythonRandom(7);
    for (let i = 0; i < 1000; i++) rng.random();
    // r = random.Random(7); [r.random() for _ in range(1000)]; r.random()
    expect(rng.random()).toBe(0.950867979111096);
  });
});

describe('PythonRandom.getrandbits matches CPython random.getrandbits(k)', () => {
  it.each([
    // r = random.Random(7); [r.getrandbits(1) for _ in range(10)]
    [1, [0, 1, 0, 0, 1, 0, 0, 1, 1, 0]],
    // r = random.Random(7); [r.getrandbits(7) for _ in range(10)]
    [7, [41, 121, 19, 50, 83, 6, 9, 105, 68, 12]],
    // r = random.Random(7); [r.getrandbits(32) for _ in range(10)]
    [
      32,
      [
        1390851128, 4071050724, 647892279, 1695753998, 2795742288, 207388624, 311111475, 3527346212,
        2301595691, 404285457,
      ],
    ],
    // r = random.Random(7); [r.getrandbits(33) for _ in range(10)]
    [
      33,
      [
        5685818424, 647892279, 2795742288, 4606078771, 2301595691, 5865589240, 4544070773,
        2179419893, 161042648, 1862494042,
      ],
    ],
    // r = random.Random(7); [r.getrandbits(53) for _ in range(10)]
    [
      53,
      [
        8537610396283960, 3556250748849463, 434924069037136, 7397381398802227, 847850320662571,
        5249289124956664, 8193883021837429, 1933828384313077, 774142246342872, 3766559332067162,
      ],
    ],
  ])('k = %i, seed 7', (k, expected) => {
    const rng = new PythonRandom(7);
    expect(take(10, () => rng.getrandbits(k))).toEqual(expected);
  });

  it('mixes widths in one stream; k = 0 draws nothing', () => {
    const rng = new PythonRandom(7);
    // r = random.Random(7); [r.getrandbits(k) for k in [0, 1, 53, 0, 33, 32, 7]]
    expect([0, 1, 53, 0, 33, 32, 7].map((k) => rng.getrandbits(k))).toEqual([
      0, 0, 1358729860042212, 0, 5990721294, 207388624, 9,
    ]);
  });

  it.each([-1, 54, 1.5, Number.NaN])('rejects k = %s', (k) => {
    expect(() => new PythonRandom(7).getrandbits(k)).toThrow(RangeError);
  });
});

describe('PythonRandom.randbelow matches CPython Random._randbelow(n)', () => {
  // Each row: n, then r = random.Random(7); [r._randbelow(n) for _ in range(8)]
  it.each([
    [1, [0, 0, 0, 0, 0, 0, 0, 0]],
    [2, [1, 0, 1, 0, 0, 0, 1, 0]],
    [3, [1, 0, 1, 2, 0, 0, 2, 0]],
    [10, [5, 2, 6, 0, 1, 8, 1, 5]],
    [100, [41, 19, 50, 83, 6, 9, 68, 12]],
    [
      2 ** 31,
      [1390851128, 647892279, 1695753998, 207388624, 311111475, 404285457, 1570621944, 249103477],
    ],
    [
      2 ** 31 + 1,
      [1390851128, 647892279, 1695753998, 207388624, 311111475, 404285457, 1570621944, 249103477],
    ],
    [
      2 ** 32 - 1,
      [1390851128, 4071050724, 647892279, 1695753998, 2795742288, 207388624, 311111475, 3527346212],
    ],
    [
      2 ** 32,
      [647892279, 2795742288, 2301595691, 2179419893, 161042648, 1862494042, 300026767, 1823296038],
    ],
    [
      2 ** 32 + 1,
      [647892279, 2795742288, 2301595691, 2179419893, 161042648, 1862494042, 300026767, 1823296038],
    ],
    [
      10 ** 12,
      [
        434439589175, 54335349840, 902254243635, 105380810795, 641520749048, 996681516149,
        234107653877, 94650323160,
      ],
    ],
    [
      2 ** 53,
      [
        7112505144773943, 869849637299280, 1695698339729451, 3867658884173557, 1548284331643096,
        7533121096607578, 4335396123184015, 1064840180091430,
      ],
    ],
  ])('n = %i, seed 7', (n, expected) => {
    const rng = new PythonRandom(7);
    expect(take(8, () => rng.randbelow(n))).toEqual(expected);
  });

  it.each([0, -3, 2.5, 2 ** 53 + 2, Number.POSITIVE_INFINITY])('rejects n = %s', (n) => {
    expect(() => new PythonRandom(7).randbelow(n)).toThrow(RangeError);
  });
});

describe('PythonRandom.shuffle and uniform', () => {
  it('shuffles as CPython random.shuffle does', () => {
    const rng = new PythonRandom(7);
    const x = Array.from({ length: 50 }, (_, i) => i);
    rng.shuffle(x);
    // r = random.Random(7); x = list(range(50)); r.shuffle(x); x
    expect(x).toEqual([
      24, 35, 14, 31, 10, 48, 11, 16, 28, 29, 42, 38, 30, 8, 0, 46, 19, 12, 21, 43, 47, 22, 49, 7,
      39, 18, 33, 1, 40, 17, 36, 15, 44, 26, 27, 5, 2, 13, 32, 45, 37, 23, 6, 34, 4, 3, 41, 25, 9,
      20,
    ]);
  });

  it('shuffles a typed array the same way, and leaves short arrays alone without drawing', () => {
    const typed = Int32Array.from({ length: 50 }, (_, i) => i);
    const rng = new PythonRandom(7);
    rng.shuffle([]);
    rng.shuffle(['only']);
    rng.shuffle(typed);
    const plain = Array.from({ length: 50 }, (_, i) => i);
    new PythonRandom(7).shuffle(plain);
    expect(Array.from(typed)).toEqual(plain);
  });

  it('draws uniform(0, 0.2) as CPython random.uniform does', () => {
    const rng = new PythonRandom(7);
    // r = random.Random(7); [r.uniform(0, 0.2) for _ in range(10)]
    expect(take(10, () => rng.uniform(0, 0.2))).toEqual([
      0.06476655296663247, 0.030169834784900387, 0.13018689460797075, 0.014487257333508552,
      0.10717640086133784, 0.07313778338251711, 0.011599784954941362, 0.10148714663788405,
      0.007499131688396977, 0.08672913673247717,
    ]);
  });

  it('draws uniform(0.8, 1.2) in the order a + (b - a) * random()', () => {
    const rng = new PythonRandom(7);
    // r = random.Random(7); [r.uniform(0.8, 1.2) for _ in range(5)]
    expect(take(5, () => rng.uniform(0.8, 1.2))).toEqual([
      0.929533105933265, 0.8603396695698008, 1.0603737892159415, 0.8289745146670171,
      1.0143528017226757,
    ]);
  });
});

describe('PythonRandom seed validation', () => {
  it.each([1.5, Number.NaN, Number.POSITIVE_INFINITY])(
    'rejects seed %s with a RangeError',
    (seed) => {
      expect(() => new PythonRandom(seed)).toThrow(RangeError);
    },
  );

  it('rejects a seed that is not a number or bigint with a TypeError', () => {
    expect(() => new PythonRandom('7' as unknown as number)).toThrow(TypeError);
  });
});
