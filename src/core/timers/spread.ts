// Where in its window a key runs: a fraction in [0, 1) that depends only on the key, so a device
// keeps its slot after a restart (Jenkins' `H`, systemd's FixedRandomDelay) and an overload
// repeats in a pattern one can debug.

/** A key that fixes a timer's slot: a name (hashed) or a device number (spread evenly). */
export type TimerKey = string | number;

// Knuth's multiplicative constant, 2^32 divided by the golden ratio: the multiples of it modulo
// 2^32 of any run of consecutive integers lie almost evenly over the circle (the three-distance
// theorem), which is as even as a fleet can be without talking to itself.
const GOLDEN = 2654435769;
const TWO_32 = 4294967296;

/** FNV-1a over the UTF-16 code units, then MurmurHash3's finaliser so near names land far apart. */
function hashString(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * The key's place in a window, in [0, 1). A string is hashed: different names land like
 * independent uniform draws. A non-negative integer (a device number) is spread by Fibonacci
 * hashing: devices 0 to N-1 fill the window almost exactly evenly, far flatter than random.
 *
 * @example
 * ```ts
 * spreadOf('device-42') === spreadOf('device-42'); // true, in every process and runtime
 * ```
 */
export function spreadOf(key: TimerKey): number {
  if (typeof key === 'number') return (Math.imul((key % TWO_32) >>> 0, GOLDEN) >>> 0) / TWO_32;
  return hashString(key) / TWO_32;
}
