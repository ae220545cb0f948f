// One listener per caller signal, however many calls watch it. Applications often pass one
// long-lived signal (a shutdown signal) to every call: a listener per call would pile up on it
// (Node warns past 10) and keep per-call state alive for as long as the signal lives.

/** Hears a signal's abort. */
export interface AbortWatcher {
  onAbort(reason: unknown): void;
}

interface Watched {
  readonly watchers: Set<AbortWatcher>;
  readonly listener: () => void;
}

const watched = new WeakMap<AbortSignal, Watched>();

/** Calls `watcher.onAbort` when `signal` aborts, until `unwatchAbort`. The signal must not be aborted yet. */
export function watchAbort(signal: AbortSignal, watcher: AbortWatcher): void {
  let entry = watched.get(signal);
  if (entry === undefined) {
    const watchers = new Set<AbortWatcher>();
    const listener = () => {
      watched.delete(signal);
      for (const each of [...watchers]) each.onAbort(signal.reason);
    };
    entry = { watchers, listener };
    watched.set(signal, entry);
    signal.addEventListener('abort', listener, { once: true });
  }
  entry.watchers.add(watcher);
}

/** Stops watching; the signal's one listener goes when its last watcher does. */
export function unwatchAbort(signal: AbortSignal, watcher: AbortWatcher): void {
  const entry = watched.get(signal);
  if (entry === undefined || !entry.watchers.delete(watcher) || entry.watchers.size > 0) return;
  watched.delete(signal);
  signal.removeEventListener('abort', entry.listener);
}

/** How many watchers a signal has. @internal For tests. */
export function watcherCount(signal: AbortSignal): number {
  return watched.get(signal)?.watchers.size ?? 0;
}
