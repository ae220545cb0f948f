// installGlobal: the interceptor under every fetch in the process. It composes the interceptor
// onto the user's undici's global dispatcher and sets the result as the global dispatcher with
// the user's own undici, so that undici writes the slots the way its version must:
//
// - undici 8 keeps its dispatcher under Symbol.for('undici.globalDispatcher.2') and mirrors a
//   wrapper speaking the legacy handler API into Symbol.for('undici.globalDispatcher.1') (PRs
//   #4827, #4962), because Node's built-in fetch reads `.1` and dispatches with the legacy API;
// - undici 7.x writes both slots (PR #5319) and reads `.1` (PR #5368); a legacy handler that
//   reaches a composed dispatcher is wrapped by `Dispatcher.compose` itself.
//
// Node's built-in fetch (its bundled undici: 6 in Node 20 and 22, 7 in Node 24) then reads `.1`
// and goes through the interceptor. What cannot work is said with a thrown error: no undici
// module given (Node's bundled undici is not importable, so there is nothing to compose with),
// or an undici older than 7 (its interceptors speak the legacy handler API).
import { show } from '../core/validate.js';
import { type InterceptorOptions, interceptor } from './interceptor.js';

/** The global slot Node's built-in fetch reads (and undici 7 reads), legacy handler API. */
const LEGACY_SLOT = Symbol.for('undici.globalDispatcher.1');
/** The global slot undici 8 reads, current handler API. */
const CURRENT_SLOT = Symbol.for('undici.globalDispatcher.2');

/** What installGlobal uses of the undici module: `import * as undici from 'undici'`. */
export interface UndiciModule {
  getGlobalDispatcher(): unknown;
  // A method, so that undici's generic `setGlobalDispatcher<D extends Dispatcher>` fits it.
  setGlobalDispatcher(dispatcher: never): void;
}

/** The options of `installGlobal`: the undici module, and the interceptor's options. */
export interface InstallGlobalOptions extends InterceptorOptions {
  /**
   * The undici module (7 or later) installed by your application, whose global dispatcher is
   * wrapped. Required: Node's built-in fetch does not expose its own undici, so there is no
   * dispatcher to wrap without one.
   * @default none: required
   * @example
   * ```ts
   * import * as undici from 'undici';
   * installGlobal({ undici });
   * ```
   */
  undici: UndiciModule;
}

interface Composable {
  compose(...interceptors: unknown[]): unknown;
}

/** The global dispatchers stormproof installed, so a second install is refused. */
const installed = new WeakSet<object>();

function runtimeUndici(): string {
  const versions = (globalThis as { process?: { versions?: Record<string, string | undefined> } })
    .process?.versions;
  return versions?.undici === undefined
    ? ''
    : ` (this runtime's fetch is undici ${versions.undici})`;
}

function checkUndici(value: unknown): UndiciModule & { cacheStores?: unknown } {
  if (value === undefined || value === null) {
    throw new TypeError(
      `stormproof: installGlobal undici must be the undici module (\`import * as undici from 'undici'\`, undici 7 or later), got ${show(value)}. Node's built-in fetch does not expose the undici it bundles${runtimeUndici()}, so there is no dispatcher to wrap without it: \`npm install undici\` (7.x on Node 20, 7.x or 8.x on Node 22 and later) and pass it.`,
    );
  }
  const m = value as Partial<Record<keyof UndiciModule | 'cacheStores', unknown>>;
  if (
    typeof m !== 'object' ||
    typeof m.getGlobalDispatcher !== 'function' ||
    typeof m.setGlobalDispatcher !== 'function'
  ) {
    throw new TypeError(
      `stormproof: installGlobal undici must be the undici module, with getGlobalDispatcher and setGlobalDispatcher, got ${show(value)}`,
    );
  }
  // undici 7 brought the current handler API (PR #3883) and, with it, the cache interceptor and
  // its stores; undici 6 has neither and would hand the interceptor legacy handlers.
  if (typeof m.cacheStores !== 'object' || m.cacheStores === null) {
    throw new TypeError(
      'stormproof: installGlobal undici must be undici 7 or later: this undici module has no cacheStores, so it is undici 6 or older, whose interceptors use the legacy handler API (onConnect, onHeaders). `npm install undici@7` (Node 20) or `undici@8`.',
    );
  }
  return value as UndiciModule;
}

/**
 * Wraps the global dispatcher of `options.undici` in the stormproof interceptor, so that Node's
 * built-in `fetch`, undici's own `fetch` and `request`, and every library built on them retry
 * through the stormproof engine: jitter, a deadline, a budget and a breaker per origin,
 * Retry-After, the idempotency rules, the attempt header, one retry layer. Returns the function
 * that uninstalls it.
 *
 * Throws a TypeError naming the cause where it cannot work: without the undici module (Node's
 * bundled undici, e.g. undici 6 in Node 20, cannot be reached), with undici 6 or older, or when
 * stormproof is already installed (two would retry at two layers). Every interceptor option is
 * checked as by `interceptor()`.
 *
 * @example
 * ```ts
 * import * as undici from 'undici';
 * import { installGlobal } from 'stormproof/undici';
 *
 * const uninstall = installGlobal({ undici });
 * await fetch('https://api.example.com/items'); // Node's own fetch, retried through stormproof
 * uninstall();
 * ```
 */
export function installGlobal(options: InstallGlobalOptions): () => void {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new TypeError(
      `stormproof: installGlobal options must be an object with the undici module ({ undici }), got ${show(options)}`,
    );
  }
  const { undici: given, ...rest } = options;
  const undici = checkUndici(given);
  const retrying = interceptor(rest);
  const previous = undici.getGlobalDispatcher() as Partial<Composable> | undefined;
  if (typeof previous !== 'object' || previous === null || typeof previous.compose !== 'function') {
    throw new TypeError(
      `stormproof: installGlobal found no global dispatcher with compose() in this undici module, got ${show(previous)}`,
    );
  }
  if (installed.has(previous)) {
    throw new Error(
      'stormproof: installGlobal was already called: the global dispatcher retries through stormproof already (a second install would retry at two layers). Call the uninstall function it returned first.',
    );
  }
  const composed = previous.compose(retrying) as object;
  installed.add(composed);
  undici.setGlobalDispatcher(composed as never);
  const slots = globalThis as unknown as Record<symbol, unknown>;
  if (slots[LEGACY_SLOT] === undefined) {
    // No undici version does this; if one did, Node's fetch would not see the interceptor.
    undici.setGlobalDispatcher(previous as never);
    throw new Error(
      `stormproof: installGlobal: this undici did not write Symbol.for('undici.globalDispatcher.1'), the slot Node's built-in fetch reads${runtimeUndici()}: nothing was installed.`,
    );
  }
  let done = false;
  return () => {
    if (done) return;
    done = true;
    installed.delete(composed);
    // Put back the dispatcher it wrapped only if ours is still the global one: a dispatcher set
    // after it (a test's MockAgent, a proxy agent) is left alone.
    if (undici.getGlobalDispatcher() === composed || slots[CURRENT_SLOT] === composed) {
      undici.setGlobalDispatcher(previous as never);
    }
  };
}
