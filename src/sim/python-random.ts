// A Mersenne Twister (MT19937) that draws exactly the numbers CPython's `random.Random` draws
// for the same integer seed, so that a Python model can be re-run here and give the same result
// bit for bit. Written from the published MT19937 algorithm and the documented behaviour of
// CPython's `random` module; the state is a Uint32Array and the hot path is 32-bit integer math.
import { show } from '../core/validate.js';

/** Number of 32-bit words in the MT19937 state. */
const N = 624;
/** The twist's middle offset. */
const M = 397;
const MATRIX_A = 0x9908b0df;
const UPPER_MASK = 0x80000000;
const LOWER_MASK = 0x7fffffff;
const TWO_POW_32 = 4294967296;

/** A mutable indexed collection: a plain array or a typed array. */
export interface MutableIndexed<T> {
  /** How many items there are. */
  readonly length: number;
  /** The item at an index from 0 to `length - 1`. */
  [index: number]: T;
}

/**
 * CPython's `random.Random`, reimplemented: the same seed gives the same `random()`,
 * `getrandbits()`, `_randbelow()`, `shuffle()` and `uniform()` results as CPython 3.
 *
 * Used by the simulators so that a model first written in Python (like the storm story's
 * `herd`) can be re-run in TypeScript and checked against the figures Python printed.
 *
 * @example
 * ```ts
 * const rng = new PythonRandom(7);
 * rng.random(); // the same float as Python's random.Random(7).random()
 * ```
 */
export class PythonRandom {
  readonly #mt = new Uint32Array(N);
  #index = N;

  /**
   * Seeds the generator as CPython's `random.seed(int)` (`random_seed` in `_randommodule.c`)
   * does: the absolute value of `seed` is split into 32-bit words, least significant first, and
   * fed to MT19937's `init_by_array` (0 gives the one-word key `[0]`).
   *
   * @param seed An integer: a whole `number` (any magnitude) or a `bigint`. Negative seeds give
   *   the same stream as their absolute value, as in CPython.
   * @throws TypeError when `seed` is not a number or bigint; RangeError when it is not a whole
   *   finite number.
   */
  constructor(seed: number | bigint) {
    let n: bigint;
    if (typeof seed === 'bigint') {
      n = seed;
    } else if (typeof seed === 'number') {
      if (!Number.isFinite(seed) || !Number.isInteger(seed)) {
        throw new RangeError(
          `stormproof: PythonRandom seed must be an integer, got ${String(seed)}`,
        );
      }
      n = BigInt(seed);
    } else {
      throw new TypeError(
        `stormproof: PythonRandom seed must be an integer number or a bigint, got ${typeof seed}`,
      );
    }
    if (n < 0n) n = -n;
    const key: number[] = [];
    do {
      key.push(Number(n & 0xffffffffn));
      n >>= 32n;
    } while (n > 0n);
    this.#initByArray(key);
  }

  /** MT19937's `init_genrand`: fills the state from one 32-bit word. */
  #initGenrand(s: number): void {
    const mt = this.#mt;
    mt[0] = s >>> 0;
    for (let i = 1; i < N; i++) {
      const prev = mt[i - 1]!;
      mt[i] = (Math.imul(1812433253, prev ^ (prev >>> 30)) + i) >>> 0;
    }
    this.#index = N;
  }

  /** MT19937's `init_by_array`: mixes a key of 32-bit words into the state. */
  #initByArray(key: readonly number[]): void {
    const mt = this.#mt;
    this.#initGenrand(19650218);
    let i = 1;
    let j = 0;
    for (let k = Math.max(N, key.length); k > 0; k--) {
      const prev = mt[i - 1]!;
      const mixed = (mt[i]! ^ Math.imul(prev ^ (prev >>> 30), 1664525)) >>> 0;
      mt[i] = (mixed + key[j]! + j) >>> 0;
      i++;
      j++;
      if (i >= N) {
        mt[0] = mt[N - 1]!;
        i = 1;
      }
      if (j >= key.length) j = 0;
    }
    for (let k = N - 1; k > 0; k--) {
      const prev = mt[i - 1]!;
      const mixed = (mt[i]! ^ Math.imul(prev ^ (prev >>> 30), 1566083941)) >>> 0;
      mt[i] = (mixed - i) >>> 0;
      i++;
      if (i >= N) {
        mt[0] = mt[N - 1]!;
        i = 1;
      }
    }
    mt[0] = UPPER_MASK;
    this.#index = N;
  }

  /** Regenerates all 624 words of state (the MT19937 "twist"). */
  #twist(): void {
    const mt = this.#mt;
    let kk = 0;
    for (; kk < N - M; kk++) {
      const y = (mt[kk]! & UPPER_MASK) | (mt[kk + 1]! & LOWER_MASK);
      mt[kk] = mt[kk + M]! ^ (y >>> 1) ^ (-(y & 1) & MATRIX_A);
    }
    for (; kk < N - 1; kk++) {
      const y = (mt[kk]! & UPPER_MASK) | (mt[kk + 1]! & LOWER_MASK);
      mt[kk] = mt[kk + (M - N)]! ^ (y >>> 1) ^ (-(y & 1) & MATRIX_A);
    }
    const y = (mt[N - 1]! & UPPER_MASK) | (mt[0]! & LOWER_MASK);
    mt[N - 1] = mt[M - 1]! ^ (y >>> 1) ^ (-(y & 1) & MATRIX_A);
    this.#index = 0;
  }

  /**
   * The next tempered 32-bit output, an integer in [0, 2^32). Matches CPython's internal
   * `genrand_uint32` (also what `getrandbits(32)` returns).
   */
  nextUint32(): number {
    if (this.#index >= N) this.#twist();
    let y = this.#mt[this.#index++]!;
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y >>> 0;
  }

  /**
   * A float in [0, 1) with 53 random bits. Matches CPython's `random.random()`
   * (`random_random` in `_randommodule.c`): two 32-bit outputs `a` and `b` give
   * `((a >>> 5) * 2^26 + (b >>> 6)) / 2^53`.
   */
  random(): number {
    const a = this.nextUint32() >>> 5;
    const b = this.nextUint32() >>> 6;
    return (a * 67108864 + b) / 9007199254740992;
  }

  /**
   * An integer with `k` random bits, in [0, 2^k). Matches CPython's `random.getrandbits(k)` for
   * `0 <= k <= 53`: `k = 0` returns 0 without drawing; `k <= 32` takes the top `k` bits of one
   * 32-bit output; larger `k` fills 32-bit words low word first, the last word keeping its top
   * bits.
   *
   * @throws RangeError when `k` is not an integer in [0, 53] (larger results would not be exact
   *   in a `number`).
   */
  getrandbits(k: number): number {
    if (!Number.isInteger(k) || k < 0 || k > 53) {
      throw new RangeError(
        `stormproof: PythonRandom getrandbits k must be an integer in [0, 53], got ${String(k)}`,
      );
    }
    if (k === 0) return 0;
    if (k <= 32) return this.nextUint32() >>> (32 - k);
    const low = this.nextUint32();
    const high = this.nextUint32() >>> (64 - k);
    return high * TWO_POW_32 + low;
  }

  /**
   * A uniformly chosen integer in [0, n). Matches CPython's `Random._randbelow` (that is,
   * `_randbelow_with_getrandbits`): with `k` the bit length of `n`, draw `getrandbits(k)` until
   * the result is below `n`.
   *
   * @throws RangeError when `n` is not an integer in [1, 2^53].
   */
  randbelow(n: number): number {
    if (!Number.isInteger(n) || n < 1 || n > 9007199254740992) {
      throw new RangeError(
        `stormproof: PythonRandom randbelow n must be an integer in [1, 2^53], got ${String(n)}`,
      );
    }
    if (n <= TWO_POW_32) {
      // Bit length of n: n = 2^32 has 33 bits, which clz32 cannot see.
      if (n === TWO_POW_32) return this.#randbelowWide(n, 33);
      const shift = Math.clz32(n);
      let r = this.nextUint32() >>> shift;
      while (r >= n) r = this.nextUint32() >>> shift;
      return r;
    }
    return this.#randbelowWide(n, 64 - Math.clz32(Math.floor(n / TWO_POW_32)));
  }

  /**
   * `randbelow` for bit lengths `k` of 33 to 54 (2^53 itself has 54 bits): `getrandbits(k)` from
   * two words, low word first. A 54-bit draw of 2^53 or more may round, but stays >= 2^53 >= n,
   * so it is rejected exactly as CPython rejects it.
   */
  #randbelowWide(n: number, k: number): number {
    const shift = 64 - k;
    for (;;) {
      const low = this.nextUint32();
      const r = (this.nextUint32() >>> shift) * TWO_POW_32 + low;
      if (r < n) return r;
    }
  }

  /**
   * Shuffles `array` in place. Matches CPython's `random.shuffle(x)`: Fisher-Yates from the end,
   * `for i in reversed(range(1, len(x))): j = _randbelow(i + 1); swap x[i], x[j]`.
   * Accepts plain arrays and typed arrays.
   */
  shuffle<T>(array: T[] | MutableIndexed<T>): void {
    for (let i = array.length - 1; i >= 1; i--) {
      const n = i + 1;
      // Inline `randbelow(n)` for n < 2^32, the only case an array can reach.
      const shift = Math.clz32(n);
      let j = this.nextUint32() >>> shift;
      while (j >= n) j = this.nextUint32() >>> shift;
      const item = array[i] as T;
      array[i] = array[j] as T;
      array[j] = item;
    }
  }

  /**
   * A float between `a` and `b`. Matches CPython's `random.uniform(a, b)`, computed in the same
   * order: `a + (b - a) * random()`.
   */
  uniform(a: number, b: number): number {
    return a + (b - a) * this.random();
  }
}

/**
 * Checks a seed option of a model: an integer number or a bigint, as `PythonRandom` takes.
 * Throws a TypeError (or RangeError for a fractional number) that names `owner`.
 */
export function checkSeed(owner: string, value: unknown): number | bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  const error = typeof value === 'number' ? RangeError : TypeError;
  throw new error(`stormproof: ${owner} seed must be an integer or a bigint, got ${show(value)}`);
}
