// The storm scenario, assembled: the storm story's weather API (partner apps sending ~4,000
// forecast requests a second through up to three retrying layers to API servers whose database
// fails over for 30 s), as a discrete-event model on virtual time, one millisecond at a time.
// The parts, each in its own file:
//   arrivals.ts       the taps: a Poisson stream, forecasts by popularity
//   client-policy.ts  the client policy: every retry layer is the engine, as the setup says
//   clients.ts        partner wrappers, client libraries, attempts, breakers
//   edge.ts           the edge load balancer and the on-call engineer's manual recovery
//   gateway.ts        the API gateway and its retries
//   servers.ts        the API servers and their queue: connections, CPU, cache
//   protection.ts     what protects the servers: stormproof/server, or all-or-nothing
//   database.ts       the forecast database and the trigger, its failover
//   measurements.ts   per-second counts and the figures of the result
// The model and every parameter are described in docs/storm-model.md.
import { Arrivals } from './arrivals.js';
import { clientPolicy } from './client-policy.js';
import { Clients } from './clients.js';
import { Edge } from './edge.js';
import { Gateway } from './gateway.js';
import { Measurements, type StormResult } from './measurements.js';
import { resolveOptions, type StormOptions } from './options.js';
import { ApiServers } from './servers.js';
import {
  type Attempt,
  EV_ANSWER,
  EV_CLIENT_TIMEOUT,
  EV_DB_DONE,
  EV_DB_FAILED,
  EV_EDGE,
  EV_GATEWAY_RETRY,
  EV_GATEWAY_TIMEOUT,
  EV_LIBRARY_RETRY,
  EV_SERVER_DECIDED,
  EV_TIMER,
  EV_WRAPPER_RETRY,
  type Job,
  type Timer,
  type UserRequest,
  World,
} from './world.js';

/**
 * Runs the `storm` scenario: the storm story's weather API, its 30-second database
 * failover and the retry storm that followed, in virtual time. Deterministic for a seed; no
 * wall-clock time is read or slept.
 *
 * With the defaults, `'naive'` shows the metastable state (several times the normal load at the
 * edge, the service still failing at the end of the run), `manualRecovery` ends it by shedding at
 * the edge and reopening in 20% steps, and `'stormproof'` recovers within seconds of the
 * database's return. The model and its parameters: docs/storm-model.md.
 *
 * @throws TypeError or RangeError naming the option and the value, for an unknown option or a
 *   bad value.
 * @example
 * ```ts
 * const { normalRps, peakRpsAfterFailover, recoveredAfterFaultSeconds } = runStorm({ policy: 'stormproof' });
 * ```
 */
export function runStorm(options?: StormOptions): StormResult {
  const { p, retryPolicy, onProgress, onSecond } = resolveOptions(options);
  const world = new World(p);
  const m = new Measurements(p.durationSeconds);
  // Built in this order: each draws from the one generator as it is made (the cache's starting
  // state, then the edge's order of instances), so the order is part of the seed's meaning.
  const policy = clientPolicy(world, m, retryPolicy);
  const arrivals = new Arrivals(world);
  // The old stack's layers read a failure's status only (see FixedLayer).
  const servers = new ApiServers(world, m, arrivals, policy.fixedLibrary !== undefined);
  const gateway = new Gateway(world, m, servers, policy.gateway);
  const edge = new Edge(world, m, gateway);
  const clients = new Clients(world, m, policy, arrivals, gateway);
  const database = servers.database;

  const dispatch = (item: unknown, code: number): void => {
    switch (code & 15) {
      case EV_EDGE:
        edge.arrive(item as Attempt);
        return;
      case EV_CLIENT_TIMEOUT:
        clients.timedOut(item as Attempt);
        return;
      case EV_ANSWER:
        clients.answered(item as Attempt);
        return;
      case EV_LIBRARY_RETRY:
        clients.startAttempt(item as UserRequest);
        return;
      case EV_WRAPPER_RETRY:
        clients.startLibraryCall(item as UserRequest);
        return;
      case EV_GATEWAY_RETRY:
        gateway.retryDue(item as Attempt);
        return;
      case EV_GATEWAY_TIMEOUT:
        gateway.timedOut(item as Attempt, code >>> 4);
        return;
      case EV_DB_DONE:
        database.done(item as Job);
        return;
      case EV_DB_FAILED:
        database.failed(item as Job);
        return;
      case EV_SERVER_DECIDED:
        servers.decided(item as Job);
        return;
      case EV_TIMER: {
        const timer = item as Timer;
        if (!timer.cancelled) timer.callback();
        return;
      }
    }
  };

  // The main loop: one millisecond at a time.
  const seconds = p.durationSeconds;
  const calendar = world.calendar;
  arrivals.start();
  for (let sec = 0; sec < seconds; sec++) {
    world.sec = sec;
    edge.engineer();
    const secondEnd = (sec + 1) * 1000;
    for (let now = sec * 1000; now < secondEnd; now++) {
      world.now = now;
      while (arrivals.nextAt < now + 1) {
        clients.startUser();
        arrivals.advance();
      }
      const bucket = calendar.take(now);
      const items = bucket.items;
      const codes = bucket.codes;
      let i = 0;
      for (; i < bucket.size; i++) dispatch(items[i], codes[i]!);
      servers.runCpu();
      // What the CPU finished may be due this same millisecond (no network delay, say).
      for (; i < bucket.size; i++) dispatch(items[i], codes[i]!);
      calendar.clear(bucket);
    }
    servers.endSecond(sec);
    m.busy[sec] = servers.busy;
    m.admitted[sec] = edge.admittedShare;
    // Each counter is indexed by the second in which its event happened: this one's are final.
    onSecond?.({
      t: sec,
      offered: m.offered[sec]!,
      succeeded: m.succeeded[sec]!,
      failed: m.failed[sec]!,
    });
    onProgress?.(sec + 1, seconds);
  }
  world.now = seconds * 1000;
  return m.figures(p, edge.recovery, servers.guard?.report() ?? null);
}
