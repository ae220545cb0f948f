// Retries at several layers of a stack over a service that always fails: each layer that retries
// repeats the whole call below it, the lower layers' retries included, so the attempts multiply.
// Every layer is the library's own `retry()` on a virtual clock, wrapped around the layer below.
import type { Jitter } from '../core/backoff.js';
import type { Clock } from '../core/clock.js';
import { retry } from '../core/retry.js';
import { checkKnownKeys, checkNumber, checkOptionsObject, show } from '../core/validate.js';
import { checkSeed, PythonRandom } from './python-random.js';

/**
 * Which layers retry:
 *
 * - `'all'`: every layer, as in the storm story's weather stack (the storm).
 * - `'top'`: only the layer nearest the user; the others pass failures straight up (the cure the
 *   storm story's team chose: the client library retries, the gateway does not).
 * - `'bottom'`: only the layer directly above the failing service (the SRE book's advice).
 */
export type RetryAt = 'all' | 'top' | 'bottom';

/** The options of {@link runLayers}. Every field is optional. */
export interface LayersOptions {
  /**
   * How many layers sit above the service (say a partner backend, the client library and the
   * API gateway). An integer from 1 to 20.
   * @default 3
   * @example
   * ```ts
   * await runLayers({ layers: 5, attempts: 3 }) // Brooker's five-deep stack: 243 calls
   * ```
   */
  layers?: number | undefined;
  /**
   * Attempts each retrying layer makes, the first included (its `maxAttempts`). An integer from 1
   * to 100. The calls at the bottom, `attempts ** retryingLayers`, may be at most 1,000,000.
   * @default 4
   * @example
   * ```ts
   * await runLayers({ attempts: 3 }) // 3 * 3 * 3 = 27
   * ```
   */
  attempts?: number | undefined;
  /**
   * Which layers retry; the others make one attempt and pass the failure up.
   * @default 'all'
   * @example
   * ```ts
   * await runLayers({ retryAt: 'top' }) // { bottomCalls: 4, ... }
   * ```
   */
  retryAt?: RetryAt | undefined;
  /**
   * Each retrying layer's backoff base in ms (its `baseDelayMs`). The storm story's stack
   * retried with no wait; the count does not depend on it (no layer has a deadline here), only
   * the virtual time does.
   * @default 0
   * @example
   * ```ts
   * await runLayers({ baseDelayMs: 200 })
   * ```
   */
  baseDelayMs?: number | undefined;
  /**
   * How each retrying layer jitters its waits (the engine's `jitter`).
   * @default 'full'
   * @example
   * ```ts
   * await runLayers({ baseDelayMs: 200, jitter: 'none' })
   * ```
   */
  jitter?: Jitter | undefined;
  /**
   * Seed of the CPython-compatible generator that draws the jitter.
   * @default 7
   * @example
   * ```ts
   * await runLayers({ baseDelayMs: 200, seed: 1 })
   * ```
   */
  seed?: number | bigint | undefined;
}

/** What {@link runLayers} reports, for one user request. */
export interface LayersResult {
  /** Calls that reached the always-failing service at the bottom. */
  readonly bottomCalls: number;
  /**
   * Calls each level received, from the top layer (1: the user's request) down to the service
   * (the last entry, equal to `bottomCalls`). `layers + 1` entries.
   */
  readonly callsPerLevel: readonly number[];
  /** How many layers retried. */
  readonly retryingLayers: number;
  /** Virtual milliseconds until the user saw the failure (all waits, nested). */
  readonly virtualTimeMs: number;
}

const OWNER = 'runLayers';
const KNOWN_KEYS = ['layers', 'attempts', 'retryAt', 'baseDelayMs', 'jitter', 'seed'] as const;
const RETRY_AT: readonly string[] = ['all', 'top', 'bottom'];
/** The most calls at the bottom that the model will make one by one. */
export const MAX_BOTTOM_CALLS = 1_000_000;

/** Whether layer `k` (0 = top) retries. */
function retries(retryAt: RetryAt, k: number, layers: number): boolean {
  return retryAt === 'all' || (retryAt === 'top' ? k === 0 : k === layers - 1);
}

/**
 * One user request through `layers` layers over a service that always answers 503. Each layer is
 * the library's `retry()`, with up to `attempts` attempts if it retries and 1 if it does not,
 * wrapped around the layer below; a layer that gives up rejects with the service's 503, which the
 * layer above judges retryable like any 503. Waits run on a virtual clock, so nothing sleeps.
 *
 * With every layer retrying, the service sees `attempts ** layers` calls: 64 for 3 layers of 4,
 * 243 for 5 layers of 3, 1024 for 5 layers of 4. Retrying at one layer only, it sees `attempts`.
 *
 * @throws TypeError or RangeError naming the option and value when an option is invalid or
 *   unknown, or when the calls at the bottom would exceed 1,000,000.
 * @example
 * ```ts
 * (await runLayers()).bottomCalls;                   // 64
 * (await runLayers({ retryAt: 'top' })).bottomCalls; // 4
 * ```
 */
export async function runLayers(options?: LayersOptions): Promise<LayersResult> {
  const o = checkOptionsObject(OWNER, options);
  checkKnownKeys(OWNER, o, KNOWN_KEYS);
  const layers = checkNumber(OWNER, 'layers', o.layers ?? 3, { min: 1, max: 20, integer: true });
  const attempts = checkNumber(OWNER, 'attempts', o.attempts ?? 4, {
    min: 1,
    max: 100,
    integer: true,
  });
  const retryAt = o.retryAt ?? 'all';
  if (typeof retryAt !== 'string' || !RETRY_AT.includes(retryAt)) {
    throw new TypeError(
      `stormproof: ${OWNER} retryAt must be one of 'all', 'top', 'bottom', got ${show(retryAt)}`,
    );
  }
  const baseDelayMs = checkNumber(OWNER, 'baseDelayMs', o.baseDelayMs ?? 0, { min: 0 });
  const seed = checkSeed(OWNER, o.seed ?? 7);
  const retryingLayers = retryAt === 'all' ? layers : 1;
  const expected = attempts ** retryingLayers;
  if (expected > MAX_BOTTOM_CALLS) {
    throw new RangeError(
      `stormproof: ${OWNER} ${layers} layers of ${attempts} attempts would make ${expected} calls at the bottom; the model makes them one by one and stops at ${MAX_BOTTOM_CALLS}`,
    );
  }

  let t = 0;
  const clock: Clock = {
    now: () => t,
    sleep: (ms, signal) => {
      if (signal?.aborted) return Promise.reject(signal.reason);
      t += ms;
      return Promise.resolve();
    },
  };
  const rng = new PythonRandom(seed);
  const random = () => rng.random();
  const callsPerLevel = new Array<number>(layers + 1).fill(0);
  const service = (): never => {
    callsPerLevel[layers]!++;
    throw Object.assign(new Error('HTTP 503'), { status: 503 });
  };
  // Layer k's options are resolved by retry() on each call; a bad `jitter` fails on the first.
  const layer = (k: number): (() => Promise<never>) => {
    const below = k === layers - 1 ? service : layer(k + 1);
    const maxAttempts = retries(retryAt as RetryAt, k, layers) ? attempts : 1;
    return () => {
      callsPerLevel[k]!++;
      return retry(below, {
        maxAttempts,
        baseDelayMs,
        jitter: o.jitter as Jitter | undefined,
        // No layer gives up for time here: the count is the worst case.
        deadlineMs: Number.MAX_SAFE_INTEGER,
        // The layers of the old stack are separate libraries in separate processes: none knows
        // that the failure it sees was already retried below (in one process, stormproof would
        // pass it up: reason 'already-retried').
        allowNestedRetries: true,
        clock,
        random,
      });
    };
  };
  try {
    await layer(0)();
  } catch (error) {
    // The user sees the service's 503; anything else is a bad option or a bug.
    if ((error as { status?: unknown }).status !== 503) throw error;
  }
  return {
    bottomCalls: callsPerLevel[layers]!,
    callsPerLevel,
    retryingLayers,
    virtualTimeMs: t,
  };
}
