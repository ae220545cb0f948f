/**
 * stormproof/redis: circuit breakers shared across a fleet through Redis or Valkey.
 *
 * One hash per breaker key plus its probe lease, in the same Cluster slot; every transition is a
 * Lua script run on the server's clock; the client is node-redis (`@redis/client`, an optional
 * peer dependency) or anything with the same `evalSha`/`eval` methods.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { checkKnownKeys, checkNumber, checkOptionsObject, show } from '../core/validate.js';
import type {
  BreakerOutcome,
  BreakerReport,
  BreakerRules,
  BreakerState,
  BreakerStore,
  SharedBreakerState,
} from '../index.js';
import { CLAIM, CONTROL, REPORT, SETTLE } from './scripts.js';

/** The two methods the store needs: node-redis's client and cluster both have them. */
export interface RedisScriptClient {
  evalSha(sha1: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
}

/** The options of {@link createRedisBreakerStore}. */
export interface RedisBreakerStoreOptions {
  /**
   * A connected node-redis client (`createClient()` or `createCluster()` from `redis` or
   * `@redis/client`). Create it with `disableOfflineQueue: true`, so that while Redis is down a
   * command fails at once instead of waiting in a queue (the breaker then decides alone).
   * @default (required)
   * @example
   * ```ts
   * const client = await createClient({ url, disableOfflineQueue: true }).connect();
   * createRedisBreakerStore({ client })
   * ```
   */
  client: RedisScriptClient;
  /**
   * Prefix of every key. A breaker `k` lives in the hash `<prefix>{k}` and its probe lease in
   * `<prefix>{k}:probe`: the braces put both in one Cluster slot.
   * @default 'stormproof:breaker:'
   * @example
   * ```ts
   * createRedisBreakerStore({ client, prefix: 'myapp:breaker:' })
   * ```
   */
  prefix?: string | undefined;
  /**
   * How long one store call may take before the breaker treats the store as unavailable and goes
   * on alone. Calls never wait for it: it only bounds how long a stale copy is kept.
   * @default 500
   * @example
   * ```ts
   * createRedisBreakerStore({ client, timeoutMs: 200 })
   * ```
   */
  timeoutMs?: number | undefined;
}

const OWNER = 'createRedisBreakerStore';
const KNOWN_KEYS = ['client', 'prefix', 'timeoutMs'] as const;
const STATES: readonly BreakerState[] = ['closed', 'open', 'half-open', 'isolated'];

interface Script {
  readonly source: string;
  readonly sha: string;
}

const script = (source: string): Script => ({
  source,
  sha: createHash('sha1').update(source).digest('hex'),
});
const SCRIPTS = {
  report: script(REPORT),
  claim: script(CLAIM),
  settle: script(SETTLE),
  control: script(CONTROL),
};

function rulesArgs(r: BreakerRules | undefined): string[] {
  if (r === undefined) return ['0', '', '0', '0', '0', '0', '0'];
  return [
    String(r.consecutiveFailures),
    r.failureRatio === undefined ? '' : String(r.failureRatio),
    String(r.windowMs),
    String(r.minimumCalls),
    String(r.openMs),
    String(r.maxOpenMs),
    String(r.successesToClose),
  ];
}

function parse(reply: unknown): SharedBreakerState & { granted: boolean } {
  if (
    !Array.isArray(reply) ||
    reply.length !== 5 ||
    !STATES.includes(String(reply[0]) as BreakerState)
  ) {
    throw new TypeError(`stormproof: unexpected reply from a breaker script: ${show(reply)}`);
  }
  return {
    state: String(reply[0]) as BreakerState,
    level: Number(reply[1]),
    failures: Number(reply[2]),
    retryInMs: Number(reply[3]),
    granted: Number(reply[4]) === 1,
  };
}

/**
 * A {@link BreakerStore} over Redis or Valkey, for `new BreakerRegistry({ store })`.
 *
 * @throws TypeError or RangeError naming the option at fault.
 * @example
 * ```ts
 * import { createClient } from 'redis';
 * import { BreakerRegistry } from 'stormproof';
 * import { createRedisBreakerStore } from 'stormproof/redis';
 *
 * const client = await createClient({ url: process.env.REDIS_URL, disableOfflineQueue: true }).connect();
 * const breakers = new BreakerRegistry({ store: createRedisBreakerStore({ client }) });
 * ```
 */
export function createRedisBreakerStore(options: RedisBreakerStoreOptions): BreakerStore {
  const o = checkOptionsObject(OWNER, options);
  checkKnownKeys(OWNER, o, KNOWN_KEYS);
  const client = o.client as RedisScriptClient;
  if (
    client === null ||
    typeof client !== 'object' ||
    typeof client.evalSha !== 'function' ||
    typeof client.eval !== 'function'
  ) {
    throw new TypeError(
      `stormproof: ${OWNER} client must be a node-redis client (with evalSha and eval), got ${show(client)}`,
    );
  }
  const prefix = o.prefix === undefined ? 'stormproof:breaker:' : o.prefix;
  if (typeof prefix !== 'string') {
    throw new TypeError(`stormproof: ${OWNER} prefix must be a string, got ${show(prefix)}`);
  }
  const timeoutMs = checkNumber(OWNER, 'timeoutMs', o.timeoutMs === undefined ? 500 : o.timeoutMs, {
    min: 1,
    max: 60_000,
  });

  const run = async (s: Script, key: string, args: string[]) => {
    const keys = [`${prefix}{${key}}`, `${prefix}{${key}}:probe`];
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      // Timers run before the event loop reads its sockets: after a blocked loop the timeout
      // would fire ahead of an answer already waiting there. It rejects one turn later, so an
      // answer that arrived in time wins.
      timer = setTimeout(() => {
        timer = setTimeout(
          () => reject(new Error(`stormproof: Redis did not answer within ${timeoutMs} ms`)),
          0,
        );
      }, timeoutMs);
    });
    const call = async () => {
      try {
        return await client.evalSha(s.sha, { keys, arguments: args });
      } catch (error) {
        // After a restart or SCRIPT FLUSH the server has forgotten the script: send it once.
        if (!String((error as Error)?.message).startsWith('NOSCRIPT')) throw error;
        return client.eval(s.source, { keys, arguments: args });
      }
    };
    const answer = call();
    answer.catch(() => {}); // a late failure after the timeout must not go unhandled
    try {
      return parse(await Promise.race([answer, late]));
    } finally {
      clearTimeout(timer);
    }
  };

  return {
    report: (key: string, rules: BreakerRules, r: BreakerReport) =>
      run(SCRIPTS.report, key, [
        ...rulesArgs(rules),
        r.reset ? '1' : '0',
        String(r.failures),
        String(r.successes),
        String(r.draw),
      ]),
    claimProbe: (key: string, rules: BreakerRules, token: string) =>
      run(SCRIPTS.claim, key, [...rulesArgs(rules), token]),
    settleProbe: (
      key: string,
      rules: BreakerRules,
      token: string,
      outcome: BreakerOutcome,
      draw: number,
    ) => run(SCRIPTS.settle, key, [...rulesArgs(rules), token, outcome, String(draw)]),
    control: (key: string, action: 'isolate' | 'reset') =>
      run(SCRIPTS.control, key, [...rulesArgs(undefined), action]),
  };
}
