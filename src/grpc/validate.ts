// A check the engine's own validation leaves to its callers: `null` is never "use the default".
import { show } from '../core/validate.js';

/** Throws a TypeError naming the first option set to null (undefined means the default). */
export function refuseNulls(owner: string, options: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(options)) {
    if (value === null) {
      throw new TypeError(`stormproof: ${owner} ${key} must not be null, got ${show(value)}`);
    }
  }
}
