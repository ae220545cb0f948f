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
  /** The most recently used origin: a call to it again needs no move (most calls). */
  private newest: string | undefined;

  constructor(
    private readonly maxOrigins: number,
    private readonly make: (origin: string) => T,
  ) {}

  /** The entry of `origin`, made on first use; the origin becomes the most recently used. */
  get(origin: string): T {
    const found = this.entries.get(origin);
    if (found !== undefined) {
      // Moved to the end of the Map's order: the most recently used. A delete and a set cost
      // more than the rest of a call (the Map rehashes away its deleted slots now and then), so
      // not when it is already there.
      if (origin !== this.newest) {
        this.entries.delete(origin);
        this.entries.set(origin, found);
        this.newest = origin;
      }
      return found;
    }
    const made = this.make(origin);
    this.entries.set(origin, made);
    this.newest = origin;
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
 * An absolute http(s) URL whose origin reads straight off the text, as the URL parser would
 * write it: a lowercase host of letter-led labels (never a number the parser would rewrite as
 * IPv4) or a dotted quad in canonical form, an optional port, then the path, query or fragment.
 * Anything else goes to the parser. Parsing a URL costs about a microsecond, a tenth of what a
 * call adds to a fetch.
 */
const PLAIN_ORIGIN =
  /^(https?):\/\/([a-z][a-z0-9-]*(?:\.[a-z][a-z0-9-]*)*|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))(?::(\d{1,5}))?(?=[/?#]|$)/;

const DEFAULT_PORTS: Readonly<Record<string, number>> = { http: 80, https: 443 };

/**
 * The origin of a request's URL: `scheme://host:port`. A relative URL is resolved against the
 * page (`location.href`) where there is one. A URL that cannot be parsed gives `''`: fetch will
 * refuse it before any connection, so which budget it names does not matter.
 */
export function originOf(url: string | URL): string {
  if (typeof url !== 'string') return url.origin;
  const plain = PLAIN_ORIGIN.exec(url);
  // Punycode labels are checked by the parser (it refuses some), so they go to it.
  if (plain !== null && !plain[2]!.includes('xn--')) {
    const [, scheme, host, port] = plain as unknown as [string, string, string, string?];
    const number = port === undefined ? DEFAULT_PORTS[scheme] : Number(port);
    if (number === DEFAULT_PORTS[scheme]) return `${scheme}://${host}`;
    if (number! <= 65_535) return `${scheme}://${host}:${number}`;
  }
  try {
    const base = (globalThis as { location?: { href?: unknown } }).location?.href;
    return new URL(url, typeof base === 'string' ? base : undefined).origin;
  } catch {
    return '';
  }
}
