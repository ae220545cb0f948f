// One retry budget per origin: a host that is down spends its own budget, never the budget of a
// healthy host called through the same createFetch (gRPC throttles retries per server name for
// the same reason). The map is bounded: past `maxOrigins` the origin used least recently is
// forgotten, and comes back with a fresh budget if it is called again.
import type { Budget } from '../core/budgets/budget.js';

/** Makes the budget of one origin (`https://api.example.com`). */
/** How many origins' retry budgets an HTTP adapter remembers by default. */
export const DEFAULT_MAX_ORIGINS = 1000;

export type BudgetFactory = (origin: string) => Budget;

/** The budgets of the origins a createFetch has called, the least recently used first. */
export class OriginBudgets<T> {
  private readonly entries = new Map<string, T>();

  constructor(
    private readonly maxOrigins: number,
    private readonly make: (origin: string) => T,
  ) {}

  /** The entry of `origin`, made on first use; the origin becomes the most recently used. */
  get(origin: string): T {
    const found = this.entries.get(origin);
    if (found !== undefined) {
      // Moved to the end of the Map's order: the most recently used.
      this.entries.delete(origin);
      this.entries.set(origin, found);
      return found;
    }
    const made = this.make(origin);
    this.entries.set(origin, made);
    if (this.entries.size > this.maxOrigins) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
    return made;
  }

  /** How many origins are remembered. */
  get size(): number {
    return this.entries.size;
  }
}

/**
 * The origin of a request's URL: `scheme://host:port`. A relative URL is resolved against the
 * page (`location.href`) where there is one. A URL that cannot be parsed gives `''`: fetch will
 * refuse it before any connection, so which budget it names does not matter.
 */
export function originOf(url: string | URL): string {
  if (typeof url !== 'string') return url.origin;
  try {
    const base = (globalThis as { location?: { href?: unknown } }).location?.href;
    return new URL(url, typeof base === 'string' ? base : undefined).origin;
  } catch {
    return '';
  }
}
