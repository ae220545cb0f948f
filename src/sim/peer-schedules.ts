// The default retry schedules of the popular JavaScript retry libraries, as the herd of the
// storm story sees them, and stormproof's own default policy driven through its real
// engine. Each schedule was read from the library's source (cited beside it) and rewritten here:
// no code is copied and none of these libraries is a dependency. The herd's failures are 503s
// without Retry-After on idempotent GETs: every library below retries them by default.
//
// One simplification applies to all of them: a library draws jitter from Math.random; here every
// draw comes from the herd's seeded generator, in the order the herd asks for waits, so that a
// row repeats for a seed. The distributions are the libraries' own.
import type { RetryPolicyOptions } from '../core/options.js';
import { resolvePolicy } from '../core/options.js';
import { startState, step } from '../core/step.js';
import { checkKnownKeys, checkOptionsObject, show } from '../core/validate.js';
import {
  type HerdClientFactory,
  type HerdScheduleResult,
  idealHerd,
  type RetrySchedule,
  runHerdSchedule,
} from './herd-schedules.js';

/**
 * p-retry 9.0.0 (`index.js`: `pRetry` fills `retries ??= 10`, `factor ??= 2`,
 * `minTimeout ??= 1000`, `maxTimeout ??= Infinity`, `randomize ??= false`; `calculateDelay` is
 * `Math.round(random * minTimeout * factor ** (attempt - 1))` with `random = 1`): 10 retries,
 * 1 s x 2^n, no cap, no jitter. Its `maxRetryTime` defaults to Infinity.
 *
 * @example
 * ```ts
 * runHerdSchedule({ schedule: pRetrySchedule });
 * ```
 */
export const pRetrySchedule: RetrySchedule = Object.freeze({
  maxRetries: 10,
  waitSeconds: (n: number) => Math.round(1000 * 2 ** n) / 1000,
});

/**
 * async-retry 1.3.3 (`lib/index.js` sets `randomize = true` and hands the options to the `retry`
 * package) over retry 0.13.1 (`lib/retry.js`: `timeouts()` defaults `retries: 10, factor: 2,
 * minTimeout: 1000, maxTimeout: Infinity`; `createTimeout` is
 * `Math.round((Math.random() + 1) * minTimeout * factor ** attempt)`, capped at `maxTimeout`):
 * 10 retries, 1 s x 2^n x U[1, 2), rounded to whole ms, no cap.
 *
 * `retry` draws all ten waits when the operation starts and sorts them; wait n lies in
 * [1000 x 2^n, 2000 x 2^n], so the sort never reorders them. Drawing each wait when it is
 * needed, as here, gives the same distribution.
 *
 * @example
 * ```ts
 * runHerdSchedule({ schedule: asyncRetrySchedule });
 * ```
 */
export const asyncRetrySchedule: RetrySchedule = Object.freeze({
  maxRetries: 10,
  waitSeconds: (n: number, random: () => number) =>
    Math.round((random() + 1) * 1000 * 2 ** n) / 1000,
});

/**
 * exponential-backoff 3.1.3 (`dist/options.js`: `numOfAttempts: 10, startingDelay: 100,
 * timeMultiple: 2, maxDelay: Infinity, jitter: "none", delayFirstAttempt: false`;
 * `dist/delay/skip-first/skip-first.delay.js` skips the first attempt's delay and counts the
 * power from the second attempt; `dist/jitter/no/no.jitter.js` returns the delay unchanged):
 * 10 attempts, so 9 retries, 100 ms x 2^n, no cap, no jitter.
 *
 * @example
 * ```ts
 * runHerdSchedule({ schedule: exponentialBackoffSchedule });
 * ```
 */
export const exponentialBackoffSchedule: RetrySchedule = Object.freeze({
  maxRetries: 9,
  waitSeconds: (n: number) => (100 * 2 ** n) / 1000,
});

/**
 * cockatiel 4.0.0 (`dist/Policy.js`: `retry(policy, {})` uses `new ConstantBackoff(0)` and
 * `maxAttempts: Infinity`; `dist/RetryPolicy.js` retries while `retries < maxAttempts`):
 * unlimited retries at 0 ms. In the herd a 0 ms wait means the next slot, and "unlimited" is
 * bounded by the herd itself: every slot serves `perSlot` callers, so each client keeps calling
 * until it is served and none gives up (at the defaults the last one is served in slot 79,
 * after 79 retries).
 *
 * @example
 * ```ts
 * runHerdSchedule({ schedule: cockatielSchedule }); // calls until every client is served
 * ```
 */
export const cockatielSchedule: RetrySchedule = Object.freeze({
  maxRetries: Number.POSITIVE_INFINITY,
  waitSeconds: () => 0,
});

/**
 * ky 2 (ky 2.0.2 `distribution/utils/normalize.js`, source `source/utils/normalize.ts`:
 * `defaultRetryOptions` has `limit: 2`, `delay: attemptCount => 0.3 * 2 ** (attemptCount - 1) *
 * 1000`, `backoffLimit: Infinity`, `jitter: undefined`; `source/core/Ky.ts` `#calculateDelay`
 * calls `delay(retryCount + 1)` and applies no jitter when `jitter` is unset): 2 retries,
 * 300 ms x 2^n, no cap, no jitter. 503 is in its `statusCodes`; without Retry-After the computed
 * delay is used.
 *
 * @example
 * ```ts
 * runHerdSchedule({ schedule: kySchedule });
 * ```
 */
export const kySchedule: RetrySchedule = Object.freeze({
  maxRetries: 2,
  waitSeconds: (n: number) => Math.min(Number.POSITIVE_INFINITY, 0.3 * 2 ** n * 1000) / 1000,
});

/**
 * got 16 (`source/core/options.ts` `defaultInternals.retry`: `limit: 2`, `backoffLimit:
 * Infinity`, `noise: 100`; `source/core/calculate-retry-delay.ts`: no retry once `attemptCount >
 * limit`, else `Math.max(1, Math.min(2 ** (attemptCount - 1) * 1000, backoffLimit) +
 * Math.random() * noise)`, `attemptCount` from 1): 2 retries, 1 s x 2^n + U[0, 100) ms.
 *
 * @example
 * ```ts
 * runHerdSchedule({ schedule: gotSchedule });
 * ```
 */
export const gotSchedule: RetrySchedule = Object.freeze({
  maxRetries: 2,
  waitSeconds: (n: number, random: () => number) =>
    Math.max(1, Math.min(2 ** n * 1000, Number.POSITIVE_INFINITY) + random() * 100) / 1000,
});

/**
 * axios-retry 4 (`src/index.ts` `DEFAULT_OPTIONS`: `retries: 3`, `retryDelay: noDelay` (returns
 * 0), `retryCondition: isNetworkOrIdempotentRequestError`, which accepts a 5xx on a GET): 3
 * retries at 0 ms, so each lands in the next slot.
 *
 * @example
 * ```ts
 * runHerdSchedule({ schedule: axiosRetrySchedule });
 * ```
 */
export const axiosRetrySchedule: RetrySchedule = Object.freeze({
  maxRetries: 3,
  waitSeconds: () => 0,
});

/**
 * undici's RetryAgent, whose RetryHandler (`lib/handler/retry-handler.js`) defaults to
 * `maxRetries: 5`, `minTimeout: 500`, `maxTimeout: 30 * 1000`, `timeoutFactor: 2`, status codes
 * 500, 502, 503, 504 and 429; its default retry function gives up once `counter > maxRetries`
 * and otherwise waits `Math.min(minTimeout * timeoutFactor ** (counter - 1), maxTimeout)`, with
 * `counter` 1 on the first retry: 5 retries, 500 ms x 2^n, capped at 30 s (never reached).
 *
 * @example
 * ```ts
 * runHerdSchedule({ schedule: undiciRetryAgentSchedule });
 * ```
 */
export const undiciRetryAgentSchedule: RetrySchedule = Object.freeze({
  maxRetries: 5,
  waitSeconds: (n: number) => Math.min(500 * 2 ** n, 30 * 1000) / 1000,
});

/**
 * The AWS SDK's standard retry mode with a given transient-error delay base, in ms:
 * `StandardRetryStrategy` (`@smithy/util-retry` 4.6.2, re-exporting `@smithy/core` 3.41.1
 * `dist-es/submodules/retry/util-retry/`): `DEFAULT_MAX_ATTEMPTS = 3` (`config.js`), so 2
 * retries; `DefaultRetryBackoffStrategy.computeNextBackoffDelay(i)` is
 * `Math.floor(Math.random() * Math.min(base * 2 ** i, MAXIMUM_RETRY_DELAY))` with
 * `MAXIMUM_RETRY_DELAY = 20 * 1000` and `i` the retries so far. Full jitter.
 *
 * The retry quota (500 tokens, 14 per transient retry in the 2026 values) is left out: each herd
 * client is its own process making one request, so it spends at most 2 x 14 = 28 of its 500
 * tokens and the quota can never refuse a retry.
 *
 * @param baseMs The delay base in ms. That release's `retries-2026-config.js` sets
 *   `Retry.delay()` to 50 ms, which `StandardRetryStrategy` uses for transient errors such as a
 *   503 (1000 ms for throttling); the older constant `DEFAULT_RETRY_DELAY_BASE` is 100 ms.
 * @example
 * ```ts
 * runHerdSchedule({ schedule: awsStandardSchedule(50) });
 * ```
 */
export function awsStandardSchedule(baseMs: number): RetrySchedule {
  return Object.freeze({
    maxRetries: 2,
    waitSeconds: (n: number, random: () => number) =>
      Math.floor(random() * Math.min(baseMs * 2 ** n, 20 * 1000)) / 1000,
  });
}

/**
 * @grpc/grpc-js without a retry policy in its service config: `retrying-call.ts` sets
 * `state = 'TRANSPARENT_ONLY'`, `maxAttempts = 1` when the method config has neither
 * `retryPolicy` nor `hedgingPolicy` (gRFC A6: "If neither is set, RPCs will not be retried").
 * Transparent retries only cover calls that never reached the server; the herd's calls reach it
 * and are refused. No retries.
 *
 * @example
 * ```ts
 * runHerdSchedule({ schedule: grpcJsSchedule }); // gaveUp: clients - perSlot
 * ```
 */
export const grpcJsSchedule: RetrySchedule = Object.freeze({
  maxRetries: 0,
  waitSeconds: () => 0,
});

/** What the herd's service answers a call over capacity: 503, no Retry-After. */
const OVER_CAPACITY = Object.freeze({ status: 503 });
const SERVED = Object.freeze({ ok: true as const });
const FAILED = Object.freeze({ ok: false as const, error: OVER_CAPACITY });
const OWNER = 'stormproofHerdClients';

/**
 * stormproof's policy options as the herd takes them: all but `clock` and `random`, which the
 * herd supplies, and the hooks, which only `policy.retry()` calls (the herd drives `step`).
 */
export type HerdPolicyOptions = Omit<
  RetryPolicyOptions,
  'clock' | 'random' | 'onRetry' | 'onGiveUp' | 'onSuccess'
>;

/**
 * stormproof clients for the herd, each deciding through the real engine: the options are
 * resolved by `resolvePolicy` exactly as `createRetryPolicy` resolves them (defaults: 4 attempts,
 * full jitter, 200 ms base, 5 s cap, 3 s deadline, a `RetryBudget` of its own), and every failed
 * call is judged by `step`, the function `policy.retry()` drives. A refusal of any kind (attempts,
 * deadline, budget) makes the client give up.
 *
 * Each client is its own process, so each resolves its own policy and gets its own default
 * `RetryBudget`; a `budget` passed in `options` is instead shared by every client. Time is a
 * virtual clock that reads the herd's slot time in ms; jitter is drawn from the herd's seeded
 * generator. A call over capacity fails as `{ status: 503 }` with no Retry-After.
 *
 * In this herd each client makes one request, so its budget (100 credits, 10 per retry) allows
 * more retries than `maxAttempts` does, and the waits of 3 retries (at most 0.2 + 0.4 + 0.8 s)
 * end well before the 3 s deadline: at the defaults the attempt limit is what makes clients give
 * up.
 *
 * @throws TypeError or RangeError as `createRetryPolicy` throws them for a bad option, or a
 *   TypeError when `clock`, `random` or a hook is given.
 * @example
 * ```ts
 * runHerdSchedule({ schedule: stormproofHerdClients() });
 * runHerdSchedule({ schedule: stormproofHerdClients({ maxAttempts: 1 }) }); // gaveUp: 1975
 * ```
 */
export function stormproofHerdClients(options?: HerdPolicyOptions): HerdClientFactory {
  const o = checkOptionsObject(OWNER, options);
  for (const key of ['clock', 'random', 'onRetry', 'onGiveUp', 'onSuccess']) {
    if (key in o) {
      throw new TypeError(
        `stormproof: ${OWNER} has no option ${show(key)}: the herd supplies its own clock and random source, and drives step(), which calls no hooks`,
      );
    }
  }
  // Check every option once, before the herd runs, with the messages createRetryPolicy gives.
  resolvePolicy(OWNER, o, { defaultBudget: false, allowCallKeys: false });
  return (_client, random) => {
    let nowMs = 0;
    const clock = {
      now: () => nowMs,
      sleep: async (ms: number) => {
        nowMs += ms;
      },
    };
    const policy = resolvePolicy(
      OWNER,
      { ...o, clock, random },
      { defaultBudget: true, allowCallKeys: false },
    );
    // As policy.retry() starts a call: note the request with the budget, then the first state.
    const startedAt = clock.now();
    policy.budget?.recordRequest(startedAt);
    let state = startState(policy, startedAt);
    return {
      failed(ms: number): number | undefined {
        nowMs = ms;
        const decision = step(policy, state, FAILED, clock.now());
        if (decision.action !== 'retry') return undefined;
        state = decision.state;
        return decision.delayMs / 1000;
      },
      served(ms: number): void {
        nowMs = ms;
        step(policy, state, SERVED, clock.now());
      },
    };
  };
}

/** One row of {@link herdOutcomes}: a library's default schedule and what the herd made of it. */
export interface HerdOutcome extends HerdScheduleResult {
  /** The library and version, as the table shows it. */
  readonly library: string;
  /** How the default was modelled: retries and waits, and anything bounded or left out. */
  readonly schedule: string;
}

/** A library's default schedule, as {@link herdOutcomes} runs it. */
export interface PeerSchedule {
  /** The library and version, as the table shows it. */
  readonly library: string;
  /** How the default was modelled, in a few words. */
  readonly schedule: string;
  /** The schedule or client factory to run. */
  readonly run: () => RetrySchedule | HerdClientFactory;
}

/**
 * Every row of the herd table, in order: each peer's default, then stormproof's default policy.
 * `run` makes a fresh schedule (stormproof's clients keep state, so they are made per run).
 *
 * @example
 * ```ts
 * for (const peer of PEER_SCHEDULES) console.log(peer.library, runHerdSchedule({ schedule: peer.run() }));
 * ```
 */
export const PEER_SCHEDULES: readonly PeerSchedule[] = Object.freeze([
  {
    library: 'p-retry 9',
    schedule: '10 retries, 1 s x 2^n',
    run: () => pRetrySchedule,
  },
  {
    library: 'async-retry 1.3',
    schedule: '10 retries, 1 s x 2^n x U[1,2)',
    run: () => asyncRetrySchedule,
  },
  {
    library: 'exponential-backoff 3',
    schedule: '9 retries, 100 ms x 2^n',
    run: () => exponentialBackoffSchedule,
  },
  {
    library: 'cockatiel 4',
    schedule: 'unlimited retries at 0 ms (until served)',
    run: () => cockatielSchedule,
  },
  { library: 'ky 2', schedule: '2 retries, 300 ms x 2^n', run: () => kySchedule },
  {
    library: 'got 16',
    schedule: '2 retries, 1 s x 2^n + U[0,100) ms',
    run: () => gotSchedule,
  },
  { library: 'axios-retry 4', schedule: '3 retries at 0 ms', run: () => axiosRetrySchedule },
  {
    library: 'undici RetryAgent',
    schedule: '5 retries, 500 ms x 2^n, cap 30 s',
    run: () => undiciRetryAgentSchedule,
  },
  {
    library: 'AWS SDK 2026 defaults (smithy util-retry 4.6.2)',
    schedule:
      '2 retries, full jitter, transient base 50 ms (throttling 1 s), cap 20 s; 14-token quota never binds',
    run: () => awsStandardSchedule(50),
  },
  {
    library: 'AWS smithy standard, base 100 ms (before 2026)',
    schedule: '2 retries, full jitter, base 100 ms, cap 20 s; quota never binds',
    run: () => awsStandardSchedule(100),
  },
  { library: 'grpc-js (no service config)', schedule: 'no retries', run: () => grpcJsSchedule },
  {
    library: 'stormproof (default policy)',
    schedule: 'engine: 4 attempts, full jitter, 200 ms base, 5 s cap, 3 s deadline, RetryBudget',
    run: () => stormproofHerdClients(),
  },
] satisfies PeerSchedule[]);

/** The options of {@link herdOutcomes}: the herd, as {@link runHerdSchedule} takes it. */
export interface HerdOutcomesOptions {
  /**
   * How many clients failed together at time 0.
   * @default 2000
   * @example
   * ```ts
   * herdOutcomes({ clients: 500 })
   * ```
   */
  clients?: number | undefined;
  /**
   * How many calls the service answers in each slot.
   * @default 25
   * @example
   * ```ts
   * herdOutcomes({ perSlot: 10 })
   * ```
   */
  perSlot?: number | undefined;
  /**
   * The width of one slot in whole milliseconds.
   * @default 10
   * @example
   * ```ts
   * herdOutcomes({ slotMs: 1 })
   * ```
   */
  slotMs?: number | undefined;
  /**
   * The seed of the herd's generator.
   * @default 7
   * @example
   * ```ts
   * herdOutcomes({ seed: 1 })
   * ```
   */
  seed?: number | bigint | undefined;
}

/**
 * Runs the herd once per row of {@link PEER_SCHEDULES} and once for the ideal
 * ({@link idealHerd}, last), each with the same herd and seed. Deterministic for a seed.
 *
 * @throws TypeError or RangeError naming the option and value when an option is invalid.
 * @example
 * ```ts
 * console.table(herdOutcomes()); // library, schedule, calls, busiestSlot, doneAfterSeconds, gaveUp
 * ```
 */
export function herdOutcomes(options?: HerdOutcomesOptions): HerdOutcome[] {
  const o = checkOptionsObject('herdOutcomes', options);
  checkKnownKeys('herdOutcomes', o, ['clients', 'perSlot', 'slotMs', 'seed']);
  const herd = {
    clients: o.clients as number | undefined,
    perSlot: o.perSlot as number | undefined,
    slotMs: o.slotMs as number | undefined,
    seed: o.seed as number | bigint | undefined,
  };
  const rows: HerdOutcome[] = PEER_SCHEDULES.map((peer) => ({
    library: peer.library,
    schedule: peer.schedule,
    ...runHerdSchedule({ ...herd, schedule: peer.run() }),
  }));
  const { seed: _seed, ...size } = herd;
  rows.push({
    library: 'ideal',
    schedule: 'every client calls once, in its turn',
    ...idealHerd(size),
  });
  return rows;
}
