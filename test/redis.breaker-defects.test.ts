// Two defects of breakers shared through Redis (issue 19), on a real redis-server (Debian's
// package, started here on a free loopback port; without it this suite fails, never skips).
// The process under test decides on a virtual clock; the fleet's times are the server's. The
// other process of the fleet is played by direct store calls.
import type { ChildProcess } from 'node:child_process';
import { createClient } from '@redis/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BreakerRegistry,
  type BreakerRules,
  type BreakerStoreEvent,
  type Clock,
} from '../src/index.js';
import { createRedisBreakerStore, type RedisScriptClient } from '../src/redis/index.js';
import { freePort, startRedis, stopRedis } from './helpers/redis.js';

const OPEN_MS = 60_000; // a lease of a minute: it outlasts the test by far
const rules = (openMs: number): BreakerRules => ({
  consecutiveFailures: 5,
  failureRatio: undefined,
  windowMs: 30_000,
  minimumCalls: 100,
  openMs,
  maxOpenMs: 300_000,
  successesToClose: 1,
});
const fiveFailures = { reset: false, failures: 5, successes: 0, draw: 0 };

let server: ChildProcess | undefined;
let client: ReturnType<typeof createClient>;
let prefixes = 0;

beforeAll(async () => {
  const port = await freePort();
  server = await startRedis(port);
  client = createClient({ socket: { host: '127.0.0.1', port }, disableOfflineQueue: true });
  client.on('error', () => {});
  await client.connect();
}, 30_000);

afterAll(async () => {
  await client?.close();
  if (server) await stopRedis(server);
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits (on real time, as Redis answers) until `done()`, or fails naming `what`. */
async function until(done: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 2500 && !done(); i++) await sleep(2);
  if (!done()) throw new Error(`gave up waiting for ${what}`);
}

/**
 * The process under test: its own registry, on a virtual clock, talking to Redis through a link
 * that can fail its commands at once or leave them unanswered (the store then times out).
 */
function member(prefix: string) {
  const clock: Clock & { t: number } = { t: 0, now: () => clock.t, sleep: async () => {} };
  const link = { mode: 'ok' as 'ok' | 'fails' | 'hangs', started: 0, settled: 0 };
  const unanswered: Array<() => void> = [];
  const pass =
    (command: (...args: [string, { keys: string[]; arguments: string[] }]) => Promise<unknown>) =>
    (...args: [string, { keys: string[]; arguments: string[] }]): Promise<unknown> => {
      link.started++;
      const answer =
        link.mode === 'fails'
          ? Promise.reject(new Error('connection reset'))
          : link.mode === 'hangs'
            ? new Promise<unknown>((_, reject) =>
                unanswered.push(() => reject(new Error('closed'))),
              )
            : command(...args);
      const done = () => {
        link.settled++;
      };
      answer.then(done, done);
      return answer;
    };
  const flaky: RedisScriptClient = {
    evalSha: pass((sha, o) => client.evalSha(sha, o)),
    eval: pass((source, o) => client.eval(source, o)),
  };
  const events: BreakerStoreEvent[] = [];
  const breaker = new BreakerRegistry({
    store: createRedisBreakerStore({ client: flaky, prefix, timeoutMs: 50 }),
    clock,
    random: () => 0,
    openMs: OPEN_MS,
    onStoreEvent: (e) => events.push(e),
  }).get('api');
  const release = () => {
    for (const reject of unanswered.splice(0)) reject();
  };
  return { clock, link, events, breaker, release };
}

describe('a breaker shared through a real redis-server', () => {
  it.each(['fails', 'hangs'] as const)(
    'two probes in one open period across a fleet (a store command %s)',
    async (failure) => {
      const prefix = `defects-${++prefixes}:`;
      const fleet = createRedisBreakerStore({ client, prefix });
      const y = member(prefix);
      try {
        // Another process trips the key (an open period of about a millisecond) and, once it
        // has ended, holds the fleet's probe lease for a minute.
        expect((await fleet.report('api', rules(2), fiveFailures)).state).toBe('open');
        let claim = await fleet.claimProbe('api', rules(OPEN_MS), 'x-probe');
        while (!claim.granted) {
          await sleep(Math.max(1, claim.retryInMs));
          claim = await fleet.claimProbe('api', rules(OPEN_MS), 'x-probe');
        }
        // y's next call brings the fleet's state: someone else's probe is out.
        y.breaker.record(y.breaker.admit(), 'success');
        await until(() => y.breaker.state === 'open', 'y to learn of the probe');
        // syncMs later y asks again, and that command fails or times out.
        y.clock.t += 50;
        y.link.mode = failure;
        expect(y.breaker.admit()).toEqual({ admitted: false, retryAfterMs: 0 });
        await until(() => y.events.length > 0, 'the store command to fail');
        expect(y.events.map((e) => e.type)).toEqual(['unavailable']);
        // 80 ms into the other process's lease: y must not send a probe of its own.
        y.clock.t += 30;
        const answer = y.breaker.admit();
        expect(answer.admitted).toBe(false);
        // It waits for the rest of the lease (a minute, less the time this test took).
        expect((answer as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(OPEN_MS - 5000);
        y.clock.t += 5000; // a local open period would be over by now: still refused
        expect(y.breaker.admit().admitted).toBe(false);
      } finally {
        y.release();
        await fleet.settleProbe('api', rules(OPEN_MS), 'x-probe', 'ignored', 0);
      }
    },
  );

  it('a fleet trip is not seen by a process whose calls hang', async () => {
    const prefix = `defects-${++prefixes}:`;
    const fleet = createRedisBreakerStore({ client, prefix });
    const y = member(prefix);
    // y admits a call that hangs: it never records.
    expect(y.breaker.admit()).toEqual({ admitted: true, probe: false });
    await until(() => y.link.settled === y.link.started, 'y to sync');
    expect((await fleet.report('api', rules(OPEN_MS), fiveFailures)).state).toBe('open');
    // syncMs later, y's next call (admitted from its copy) brings the fleet's state...
    y.clock.t += 50;
    expect(y.breaker.admit()).toEqual({ admitted: true, probe: false });
    await until(() => y.link.settled === y.link.started, 'y to sync');
    // ...and the call after it is refused, for the fleet's open period (30 to 60 s, draw 0).
    const answer = y.breaker.admit();
    expect(answer.admitted).toBe(false);
    expect((answer as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(OPEN_MS / 2 - 5000);
    // Within the round-trip budget: one round trip per call at most.
    expect(y.link.started).toBeLessThanOrEqual(3);
  });

  it('an answer that arrived while the event loop was blocked beats the timeout', async () => {
    // On a busy machine the loop can be held past `timeoutMs` while Redis answers in time; the
    // timeout used to fire first (timers run before sockets are read) and the process decided
    // alone, with the answer waiting in its socket.
    const store = createRedisBreakerStore({
      client,
      prefix: `defects-${++prefixes}:`,
      timeoutMs: 20,
    });
    const answer = store.report('api', rules(OPEN_MS), fiveFailures);
    // The client writes the command in a setImmediate of its own, queued before this one.
    await new Promise((resolve) => setImmediate(resolve));
    const blockedUntil = Date.now() + 300;
    while (Date.now() < blockedUntil); // Redis answers meanwhile; the 20 ms timer is due
    await expect(answer).resolves.toMatchObject({ state: 'open' });
  });
});
