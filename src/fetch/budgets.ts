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

/** Character codes the origin scanner reads. */
const DOT = 46;
const COLON = 58;
const SLASH = 47;
const QUESTION = 63;
const HASH = 35;
const HYPHEN = 45;

const isDigit = (c: number) => c >= 48 && c <= 57;
const isLower = (c: number) => c >= 97 && c <= 122;

/**
 * The origin of an absolute http(s) URL whose origin reads straight off the text, exactly as the
 * URL parser would write it; `undefined` for anything else, which goes to the parser. It takes a
 * lowercase host of letter-led labels (never a number the parser would rewrite as IPv4) or a
 * dotted quad in canonical form, an optional port, then the path, query or fragment or nothing.
 * Parsing costs a call more than the rest of what stormproof/fetch adds to it (about 4,000
 * instructions, where this scan costs a few hundred).
 */
function plainOrigin(url: string): string | undefined {
  const secure = url.startsWith('https://');
  if (!secure && !url.startsWith('http://')) return undefined;
  const start = secure ? 8 : 7;
  let i = start;
  let labels = 0;
  let named = 0; // letter-led labels
  let label = i;
  let value = 0; // a digits-only label's value
  for (; ; i++) {
    const c = i < url.length ? url.charCodeAt(i) : -1;
    if (isLower(c) || isDigit(c) || c === HYPHEN) {
      if (i > label && !isLower(url.charCodeAt(label))) {
        // A label that does not start with a letter must be a decimal 0-255 without a leading 0.
        if (!isDigit(c) || url.charCodeAt(label) === 48) return undefined;
        value = value * 10 + (c - 48);
        if (value > 255) return undefined;
      } else if (i === label) {
        if (c === HYPHEN) return undefined;
        value = isDigit(c) ? c - 48 : 0;
      }
      continue;
    }
    if (i === label) return undefined; // an empty label
    labels++;
    if (isLower(url.charCodeAt(label))) named++;
    if (c !== DOT) break;
    label = i + 1;
  }
  if (named !== labels && (named !== 0 || labels !== 4)) return undefined;
  const hostEnd = i;
  // Punycode labels are checked by the parser (it refuses some).
  if (url.slice(start, hostEnd).includes('xn--')) return undefined;
  const atEnd = (at: number) => {
    if (at === url.length) return true;
    const c = url.charCodeAt(at);
    return c === SLASH || c === QUESTION || c === HASH;
  };
  if (atEnd(hostEnd)) return url.slice(0, hostEnd);
  if (url.charCodeAt(hostEnd) !== COLON) return undefined;
  let port = 0;
  let end = hostEnd + 1;
  for (; end < url.length && end - hostEnd <= 5 && isDigit(url.charCodeAt(end)); end++) {
    port = port * 10 + (url.charCodeAt(end) - 48);
  }
  if (end === hostEnd + 1 || !atEnd(end) || port > 65_535) return undefined;
  if (port === (secure ? 443 : 80)) return url.slice(0, hostEnd);
  // Leading zeros are dropped: :0080 is :80.
  return url.charCodeAt(hostEnd + 1) === 48 && end > hostEnd + 2
    ? `${url.slice(0, hostEnd)}:${port}`
    : url.slice(0, end);
}

let lastUrl: string | undefined;
let lastOrigin = '';

/**
 * The origin of a request's URL: `scheme://host:port`. A relative URL is resolved against the
 * page (`location.href`) where there is one. A URL that cannot be parsed gives `''`: fetch will
 * refuse it before any connection, so which budget it names does not matter.
 */
export function originOf(url: string | URL): string {
  if (typeof url !== 'string') return url.origin;
  // Most calls name the URL the last one named: one entry remembered (it also hands the maps
  // the same origin string, whose hash is already known).
  if (url === lastUrl) return lastOrigin;
  const plain = plainOrigin(url);
  if (plain !== undefined) {
    lastUrl = url;
    lastOrigin = plain;
    return plain;
  }
  try {
    const base = (globalThis as { location?: { href?: unknown } }).location?.href;
    return new URL(url, typeof base === 'string' ? base : undefined).origin;
  } catch {
    return '';
  }
}
