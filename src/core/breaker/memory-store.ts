// The shared-state protocol kept in this process's memory: what stormproof/redis runs as Lua
// scripts, in plain code. It shares breakers between registries in one process (workers of a
// test, several clients) and is the reference the Redis scripts follow.
import type { Clock } from '../clock.js';
import { systemClock } from '../clock.js';
import type { BreakerOutcome } from './breaker.js';
import type { BreakerState } from './options.js';
import type { BreakerReport, BreakerRules, BreakerStore, SharedBreakerState } from './store.js';

interface Entry {
  state: BreakerState;
  level: number;
  failures: number;
  until: number;
  successes: number;
  /** Ratio mode: calls and failures per bucket number. */
  buckets: Map<number, { calls: number; failures: number }>;
  lease: { token: string; until: number } | undefined;
}

const fresh = (): Entry => ({
  state: 'closed',
  level: 0,
  failures: 0,
  until: 0,
  successes: 0,
  buckets: new Map(),
  lease: undefined,
});

/**
 * A {@link BreakerStore} in memory, on `clock` (the store's own clock, as Redis's TIME is).
 * Every answer is a resolved promise, like a store one microtask away.
 *
 * @example
 * ```ts
 * const store = createMemoryBreakerStore();
 * const a = new BreakerRegistry({ store });
 * const b = new BreakerRegistry({ store }); // a trip in a reaches b
 * ```
 */
export function createMemoryBreakerStore(clock: Clock = systemClock): BreakerStore {
  const entries = new Map<string, Entry>();
  const get = (key: string) => {
    let e = entries.get(key);
    if (e === undefined) {
      e = fresh();
      entries.set(key, e);
    }
    return e;
  };
  const leaseHeld = (e: Entry, now: number) => e.lease !== undefined && now < e.lease.until;
  const ceiling = (r: BreakerRules, level: number) => Math.min(r.maxOpenMs, r.openMs * 2 ** level);
  const open = (key: string, r: BreakerRules, level: number, draw: number, now: number) => {
    const c = ceiling(r, level);
    const e = fresh();
    e.state = 'open';
    e.level = level;
    e.until = now + Math.floor(c / 2 + (draw * c) / 2);
    entries.set(key, e);
  };
  const reply = (key: string, granted = false): SharedBreakerState & { granted: boolean } => {
    const now = clock.now();
    const e = get(key);
    let state = e.state;
    let retryInMs = 0;
    if (state === 'open') retryInMs = Math.max(0, e.until - now);
    else if (state === 'half-open') {
      if (leaseHeld(e, now)) retryInMs = e.lease!.until - now;
      else state = 'open';
    }
    return { state, level: e.level, failures: e.failures, retryInMs, granted };
  };

  return {
    async report(key: string, r: BreakerRules, report: BreakerReport) {
      const now = clock.now();
      const e = get(key);
      if (e.state === 'closed') {
        if (r.failureRatio === undefined) {
          e.failures = (report.reset ? 0 : e.failures) + report.failures;
          if (e.failures >= r.consecutiveFailures) open(key, r, 0, report.draw, now);
        } else {
          const bucket = Math.floor(now / (r.windowMs / 10));
          const b = e.buckets.get(bucket) ?? { calls: 0, failures: 0 };
          b.calls += report.failures + report.successes;
          b.failures += report.failures;
          e.buckets.set(bucket, b);
          let calls = 0;
          let failures = 0;
          for (const [n, v] of e.buckets) {
            if (n <= bucket - 10) e.buckets.delete(n);
            else {
              calls += v.calls;
              failures += v.failures;
            }
          }
          if (
            report.failures > 0 &&
            calls >= r.minimumCalls &&
            failures >= r.failureRatio * calls
          ) {
            open(key, r, 0, report.draw, now);
          }
        }
      }
      return reply(key);
    },
    async claimProbe(key: string, r: BreakerRules, token: string) {
      const now = clock.now();
      const e = get(key);
      const free =
        (e.state === 'open' && now >= e.until) || (e.state === 'half-open' && !leaseHeld(e, now));
      if (!free) return reply(key);
      if (e.state === 'open') {
        e.state = 'half-open';
        e.successes = 0;
      }
      e.lease = { token, until: now + Math.floor(ceiling(r, e.level)) };
      return reply(key, true);
    },
    async settleProbe(
      key: string,
      r: BreakerRules,
      token: string,
      outcome: BreakerOutcome,
      draw: number,
    ) {
      const now = clock.now();
      const e = get(key);
      if (leaseHeld(e, now) && e.lease!.token === token) {
        e.lease = undefined;
        if (e.state === 'half-open') {
          if (outcome === 'failure') open(key, r, e.level + 1, draw, now);
          else if (outcome === 'success' && ++e.successes >= r.successesToClose)
            entries.delete(key);
        }
      }
      return reply(key);
    },
    async control(key: string, action: 'isolate' | 'reset') {
      entries.delete(key);
      if (action === 'isolate') get(key).state = 'isolated';
      return reply(key);
    },
  };
}
