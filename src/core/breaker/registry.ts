// Breakers per key (origin, route, method) so one bad route cannot open a healthy one's
// breaker, in a map of bounded size: the least recently used breaker goes first.
import { checkNumber, show } from '../validate.js';
import { type BreakerSnapshot, CircuitBreaker, resolve } from './breaker.js';
import type { BreakerOptions, BreakerSettings } from './options.js';

/** The options of a {@link BreakerRegistry}: every breaker's options, plus its size. */
export interface BreakerRegistryOptions extends BreakerOptions {
  /**
   * The most breakers kept; past it the least recently used one is dropped (and its state with
   * it: a dropped open breaker comes back closed). One per origin is the usual key, so a client
   * that talks to thousands of hosts should raise it.
   * @default 1000
   * @example
   * ```ts
   * new BreakerRegistry({ maxKeys: 10_000 })
   * ```
   */
  maxKeys?: number | undefined;
}

/**
 * Circuit breakers by key, made on first use with the registry's options.
 *
 * @example
 * ```ts
 * const breakers = new BreakerRegistry({ consecutiveFailures: 5 });
 * const breaker = breakers.get(new URL(url).origin);
 * ```
 */
export class BreakerRegistry {
  readonly #options: BreakerSettings;
  readonly #maxKeys: number;
  readonly #breakers = new Map<string, CircuitBreaker>();

  /** Throws a TypeError or RangeError naming the option and value when an option is bad. */
  constructor(options?: BreakerRegistryOptions) {
    this.#options = resolve('BreakerRegistry', options, ['maxKeys']);
    const given = (options as Record<string, unknown> | undefined)?.maxKeys;
    this.#maxKeys = checkNumber('BreakerRegistry', 'maxKeys', given === undefined ? 1000 : given, {
      min: 1,
      integer: true,
      max: 10_000_000,
    });
  }

  /** How many breakers the registry holds. */
  get size(): number {
    return this.#breakers.size;
  }

  /** The breaker of `key`, made if needed; marks it as the most recently used. */
  get(key: string): CircuitBreaker {
    const breakers = this.#breakers;
    let breaker = breakers.get(key);
    if (breaker !== undefined) {
      breakers.delete(key);
    } else {
      if (typeof key !== 'string') {
        throw new TypeError(`stormproof: BreakerRegistry key must be a string, got ${show(key)}`);
      }
      breaker = new CircuitBreaker(key, this.#options);
      if (breakers.size >= this.#maxKeys) breakers.delete(breakers.keys().next().value!);
    }
    breakers.set(key, breaker);
    return breaker;
  }

  /** Opens `key`'s breaker by hand until {@link reset} (fleet-wide with a store). */
  isolate(key: string): Promise<void> {
    return this.get(key).isolate();
  }

  /** Closes `key`'s breaker by hand (fleet-wide with a store). */
  reset(key: string): Promise<void> {
    return this.get(key).reset();
  }

  /** Every breaker's state, least recently used first. */
  toJSON(): BreakerSnapshot[] {
    return [...this.#breakers.values()].map((b) => b.toJSON());
  }

  /** Takes the states of {@link toJSON}'s output (from another process, say). */
  restore(snapshots: readonly BreakerSnapshot[]): void {
    if (!Array.isArray(snapshots)) {
      throw new TypeError(
        `stormproof: BreakerRegistry restore needs an array of snapshots, got ${show(snapshots)}`,
      );
    }
    for (const s of snapshots) this.get((s as { key: string }).key).restore(s);
  }
}
