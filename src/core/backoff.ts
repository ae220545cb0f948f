// Backoff and jitter as pure functions: the same inputs always give the same wait, and the only
// randomness is the draw from the injected random source.
import type { RandomSource } from './clock.js';

/**
 * How a retry's wait is drawn below its backoff ceiling.
 *
 * - `'full'`: uniform in [0, ceiling). The storm story's default and Brooker's winner.
 * - `'equal'`: ceiling/2 plus uniform in [0, ceiling/2); never waits less than half.
 * - `'decorrelated'`: Brooker's `min(cap, uniform(base, previous * 3))`, remembering the last wait.
 * - `'none'`: exactly the ceiling. Clients that failed together retry together: avoid.
 * - `'band'` or `{ band: [low, high] }`: the ceiling times uniform in [low, high), gRPC style;
 *   `'band'` is gRFC A6's [0.8, 1.2]. A band may wait up to `high` times the ceiling.
 */
export type Jitter =
  | 'full'
  | 'equal'
  | 'decorrelated'
  | 'none'
  | 'band'
  | { band: readonly [number, number] };

/** A jitter setting after validation. */
export type ResolvedJitter =
  | { readonly kind: 'full' | 'equal' | 'decorrelated' | 'none' }
  | { readonly kind: 'band'; readonly low: number; readonly high: number };

/** The backoff ceiling of retry `n` (from 0): `min(maxDelayMs, baseDelayMs * 2^n)`. */
export function backoffCeiling(baseDelayMs: number, maxDelayMs: number, n: number): number {
  return Math.min(maxDelayMs, baseDelayMs * 2 ** n);
}

/**
 * One jittered wait. `previousMs` is the last backoff wait of this call (decorrelated jitter's
 * memory; the base on the first retry). Draws at most one number from `random`.
 */
export function jitteredDelay(
  jitter: ResolvedJitter,
  ceilingMs: number,
  previousMs: number,
  baseDelayMs: number,
  maxDelayMs: number,
  random: RandomSource,
): number {
  switch (jitter.kind) {
    case 'full':
      return ceilingMs * random();
    case 'equal':
      return ceilingMs / 2 + (ceilingMs / 2) * random();
    case 'decorrelated':
      return Math.min(maxDelayMs, baseDelayMs + (previousMs * 3 - baseDelayMs) * random());
    case 'none':
      return ceilingMs;
    case 'band':
      return ceilingMs * (jitter.low + (jitter.high - jitter.low) * random());
  }
}
