// One run of the map's model: open-loop arrivals, a trigger, a FIFO server (optionally behind
// stormproof/server's shedder, its real engine on virtual time), client processes whose every
// retry decision is the engine's `step` (and, for a hedging policy, every hedge decision its
// `Hedging`'s), and the per-second measurements. Built for speed: one
// event heap, one seeded generator, no timers; a run of a minute of traffic takes milliseconds.
import type { BreakerAdmission } from '../../core/breaker/breaker.js';
import { classify } from '../../core/classify.js';
import type { Clock } from '../../core/clock.js';
import type { HedgeRefusal } from '../../core/hedge.js';
import { type Outcome, type RetryState, startState, step } from '../../core/step.js';
import {
  checkKnownKeys,
  checkNumber,
  checkOptionsObject,
  refuseNulls,
  show,
} from '../../core/validate.js';
import type { ShedderOptions } from '../../server/options.js';
import { ATTEMPT_HEADER } from '../../server/request-info.js';
import { type Admission, createShedder, type Shedder, type Ticket } from '../../server/shedder.js';
import { earliest, MinHeap, type Timed } from '../min-heap.js';
import { PythonRandom } from '../python-random.js';
import { nextArrivalMs } from './arrivals.js';
import { classifyRun, type RunClass } from './classify.js';
import { type MapSeries, Meter } from './measure.js';
import {
  headersSeen,
  MAP_POLICIES,
  type MapPolicy,
  makeClient,
  type PolicyClient,
} from './policies.js';
import { QueueServer, type ServiceTime } from './server.js';
import type { Trigger, TriggerKind } from './trigger.js';

/** stormproof/server's options in the model: the clock and random source are the model's. */
export type MapShedderOptions = Omit<
  ShedderOptions,
  'clock' | 'random' | 'onShed' | 'onRamp' | 'onLimit'
>;

/** The options of {@link runMapModel}: one run of one cell. Every field is optional. */
export interface MapModelOptions {
  /**
   * The client policy every client process runs (see `MapPolicy`).
   * @default 'naive'
   * @example
   * ```ts
   * runMapModel({ policy: 'budget' })
   * ```
   */
  policy?: MapPolicy | undefined;
  /**
   * Puts stormproof/server (its `createShedder` engine, on the model's clock) in front of the
   * server's queue: `true` for its defaults, or its options.
   * @default false
   * @example
   * ```ts
   * runMapModel({ stormproofServer: true })
   * runMapModel({ stormproofServer: { limit: 8, queue: false } })
   * ```
   */
  stormproofServer?: boolean | MapShedderOptions | undefined;
  /**
   * Offered load as a share of the server's capacity (`workers * 1000 / serviceMs` requests/s).
   * Ignored when `ratePerSecond` is given.
   * @default 0.7
   * @example
   * ```ts
   * runMapModel({ load: 0.9 })
   * ```
   */
  load?: number | undefined;
  /**
   * Offered load in user requests per second, instead of `load`.
   * @default undefined (load x capacity)
   * @example
   * ```ts
   * runMapModel({ ratePerSecond: 40 })
   * ```
   */
  ratePerSecond?: number | undefined;
  /**
   * The trigger's kind: the server loses capacity, or the load jumps.
   * @default 'capacity-loss'
   * @example
   * ```ts
   * runMapModel({ triggerKind: 'load-spike', triggerMagnitude: 2 })
   * ```
   */
  triggerKind?: TriggerKind | undefined;
  /**
   * The trigger's length in seconds (0: no trigger).
   * @default 10
   * @example
   * ```ts
   * runMapModel({ triggerSeconds: 9 })
   * ```
   */
  triggerSeconds?: number | undefined;
  /**
   * `'capacity-loss'`: the share of capacity lost, in [0, 1). `'load-spike'`: the factor on the
   * arrival rate, >= 1.
   * @default 0.8 for a capacity loss, 2 for a load spike
   * @example
   * ```ts
   * runMapModel({ triggerKind: 'capacity-loss', triggerMagnitude: 0.78 })
   * ```
   */
  triggerMagnitude?: number | undefined;
  /**
   * Seconds before the trigger starts.
   * @default 10
   * @example
   * ```ts
   * runMapModel({ warmupSeconds: 60 })
   * ```
   */
  warmupSeconds?: number | undefined;
  /**
   * Seconds simulated after the trigger ends: the horizon the classification judges.
   * @default 60
   * @example
   * ```ts
   * runMapModel({ horizonSeconds: 120 })
   * ```
   */
  horizonSeconds?: number | undefined;
  /**
   * Requests the server serves at once (`Infinity`: no limit and no queue, as Brooker's model).
   * @default 4
   * @example
   * ```ts
   * runMapModel({ workers: 16 })
   * ```
   */
  workers?: number | undefined;
  /**
   * Mean service time of one request at full speed, ms.
   * @default 100
   * @example
   * ```ts
   * runMapModel({ serviceMs: 1000 })
   * ```
   */
  serviceMs?: number | undefined;
  /**
   * The service time's distribution around `serviceMs`.
   * @default 'exponential'
   * @example
   * ```ts
   * runMapModel({ serviceTime: 'fixed' })
   * ```
   */
  serviceTime?: ServiceTime | undefined;
  /**
   * Extra ms of service per request in service when one starts, itself included (Brooker: 10).
   * @default 0
   * @example
   * ```ts
   * runMapModel({ workers: Infinity, serviceMs: 1000, concurrencySlopeMs: 10 })
   * ```
   */
  concurrencySlopeMs?: number | undefined;
  /**
   * Client processes; each has its own retry budget, token bucket or breaker. User requests are
   * spread over them at random.
   * @default 8
   * @example
   * ```ts
   * runMapModel({ clients: 100 })
   * ```
   */
  clients?: number | undefined;
  /**
   * Attempts per user request, the first included.
   * @default 4
   * @example
   * ```ts
   * runMapModel({ maxAttempts: 5 })
   * ```
   */
  maxAttempts?: number | undefined;
  /**
   * The client's time limit per attempt, ms: then it hangs up (the server does not know).
   * @default 1000
   * @example
   * ```ts
   * runMapModel({ attemptTimeoutMs: 3000 })
   * ```
   */
  attemptTimeoutMs?: number | undefined;
  /**
   * The deadline of a whole user request, ms, for every policy (the engine's `deadlineMs`).
   * @default undefined (none: attempts are limited by maxAttempts alone)
   * @example
   * ```ts
   * runMapModel({ deadlineMs: 3000 })
   * ```
   */
  deadlineMs?: number | undefined;
  /**
   * The first backoff ceiling of the policies that back off, ms.
   * @default 200
   * @example
   * ```ts
   * runMapModel({ policy: 'full-jitter', baseDelayMs: 20_000 })
   * ```
   */
  baseDelayMs?: number | undefined;
  /**
   * The cap of the backoff ceiling, ms (at least `baseDelayMs`).
   * @default 5000
   * @example
   * ```ts
   * runMapModel({ maxDelayMs: 60_000 })
   * ```
   */
  maxDelayMs?: number | undefined;
  /**
   * Mean one-way network delay, ms; each trip draws an exponential delay with this mean.
   * @default 5
   * @example
   * ```ts
   * runMapModel({ networkMs: 100 })
   * ```
   */
  networkMs?: number | undefined;
  /**
   * Seed of the one CPython-compatible generator behind every draw.
   * @default 1
   * @example
   * ```ts
   * runMapModel({ seed: 7 })
   * ```
   */
  seed?: number | undefined;
}

/** Every parameter of a run, defaults filled. */
export type MapModelParameters = {
  readonly [K in Exclude<
    keyof MapModelOptions,
    'ratePerSecond' | 'deadlineMs' | 'stormproofServer'
  >]-?: Exclude<MapModelOptions[K], undefined>;
} & {
  readonly ratePerSecond: number;
  readonly deadlineMs: number | null;
  readonly stormproofServer: boolean | MapShedderOptions;
};

/** Totals of one run. */
export interface MapRunTotals {
  /** User requests offered. */
  readonly users: number;
  /** Attempts that reached the server. */
  readonly calls: number;
  /** Calls per user request: the amplification. */
  readonly amplification: number;
  /** Retries the clients started. */
  readonly retries: number;
  /** User requests that gave up because the budget or token bucket refused a retry. */
  readonly budgetRefusals: number;
  /** Attempts a breaker refused. */
  readonly breakerRefusals: number;
  /** Requests served after their client had hung up (hedges that lost included). */
  readonly wasted: number;
  /** Hedging (`'budget-hedge'`): copies sent beyond the first, attempts a hedge answered first, hedges due but not sent by reason. */
  readonly hedges: {
    readonly sent: number;
    readonly won: number;
    readonly refused: Readonly<Partial<Record<HedgeRefusal, number>>>;
  };
}

/** The outcome of one run. */
export interface MapRunResult {
  readonly class: RunClass;
  /** The second the trigger ended (the horizon starts). */
  readonly triggerEndSecond: number;
  readonly totals: MapRunTotals;
  readonly series: MapSeries;
  readonly parameters: MapModelParameters;
}

const OWNER = 'runMapModel';
const KEYS = [
  'policy',
  'stormproofServer',
  'load',
  'ratePerSecond',
  'triggerKind',
  'triggerSeconds',
  'triggerMagnitude',
  'warmupSeconds',
  'horizonSeconds',
  'workers',
  'serviceMs',
  'serviceTime',
  'concurrencySlopeMs',
  'clients',
  'maxAttempts',
  'attemptTimeoutMs',
  'deadlineMs',
  'baseDelayMs',
  'maxDelayMs',
  'networkMs',
  'seed',
];

function oneOf<T extends string>(
  name: string,
  value: unknown,
  values: readonly T[],
  fallback: T,
): T {
  if (value === undefined) return fallback;
  if (!values.includes(value as T)) {
    throw new TypeError(
      `stormproof: ${OWNER} ${name} must be one of ${values.map((v) => `'${v}'`).join(', ')}, got ${show(value)}`,
    );
  }
  return value as T;
}

/** Checks every option and fills the defaults; throws naming the option and the value. */
export function resolveMapModel(options?: MapModelOptions): MapModelParameters {
  const o = checkOptionsObject(OWNER, options);
  checkKnownKeys(OWNER, o, KEYS);
  refuseNulls(OWNER, o);
  const num = (name: string, fallback: number, range: Parameters<typeof checkNumber>[3]) =>
    o[name] === undefined ? fallback : checkNumber(OWNER, name, o[name], range);
  const positive = { min: 0, minExclusive: true };
  const workers =
    o.workers === Number.POSITIVE_INFINITY
      ? Number.POSITIVE_INFINITY
      : num('workers', 4, { min: 1, max: 1e6, integer: true });
  const serviceMs = num('serviceMs', 100, { ...positive, max: 3_600_000 });
  const triggerKind = oneOf(
    'triggerKind',
    o.triggerKind,
    ['capacity-loss', 'load-spike'],
    'capacity-loss',
  );
  const load = num('load', 0.7, { ...positive, max: 10 });
  if (o.ratePerSecond === undefined && !Number.isFinite(workers)) {
    throw new TypeError(
      `stormproof: ${OWNER} ratePerSecond is needed with workers: Infinity (no capacity to take a share of)`,
    );
  }
  const ratePerSecond =
    o.ratePerSecond === undefined
      ? (load * workers * 1000) / serviceMs
      : checkNumber(OWNER, 'ratePerSecond', o.ratePerSecond, { ...positive, max: 1e7 });
  const baseDelayMs = num('baseDelayMs', 200, { min: 0, max: 3_600_000 });
  const server = o.stormproofServer ?? false;
  if (typeof server !== 'boolean' && (typeof server !== 'object' || Array.isArray(server))) {
    throw new TypeError(
      `stormproof: ${OWNER} stormproofServer must be true, false or the server's options, got ${show(server)}`,
    );
  }
  return {
    policy: oneOf('policy', o.policy, MAP_POLICIES, 'naive'),
    stormproofServer: server as boolean | MapShedderOptions,
    load: o.ratePerSecond === undefined ? load : (ratePerSecond * serviceMs) / (workers * 1000),
    ratePerSecond,
    triggerKind,
    triggerSeconds: num('triggerSeconds', 10, { min: 0, max: 86_400 }),
    triggerMagnitude:
      triggerKind === 'capacity-loss'
        ? num('triggerMagnitude', 0.8, { min: 0, max: 0.999 })
        : num('triggerMagnitude', 2, { min: 1, max: 1000 }),
    warmupSeconds: num('warmupSeconds', 10, { min: 0, max: 86_400 }),
    horizonSeconds: num('horizonSeconds', 60, { min: 5, max: 86_400 }),
    workers,
    serviceMs,
    serviceTime: oneOf('serviceTime', o.serviceTime, ['exponential', 'fixed'], 'exponential'),
    concurrencySlopeMs: num('concurrencySlopeMs', 0, { min: 0, max: 3_600_000 }),
    clients: num('clients', 8, { min: 1, max: 100_000, integer: true }),
    maxAttempts: num('maxAttempts', 4, { min: 1, max: 100, integer: true }),
    attemptTimeoutMs: num('attemptTimeoutMs', 1000, { ...positive, max: 3_600_000 }),
    deadlineMs:
      o.deadlineMs === undefined ? null : num('deadlineMs', 0, { ...positive, max: 86_400_000 }),
    baseDelayMs,
    maxDelayMs: num('maxDelayMs', Math.max(5000, baseDelayMs), {
      min: baseDelayMs,
      max: 86_400_000,
    }),
    networkMs: num('networkMs', 5, { min: 0, max: 600_000 }),
    seed: num('seed', 1, { min: 0, max: Number.MAX_SAFE_INTEGER, integer: true }),
  };
}

// --- The moving parts of a run. ---

interface User {
  readonly client: PolicyClient;
  readonly offeredAt: number;
  state: RetryState;
  /** The attempt in flight (its first copy); an answer or timeout for another attempt is stale. */
  current: Attempt | undefined;
  /** Hedges sent so far over the user request's attempts. */
  hedges: number;
}

/** One copy of an attempt sent to the server: the attempt itself, unless the policy hedges. */
interface Attempt {
  readonly user: User;
  /**
   * Its send's number in the user request, from 1 (sent as `stormproof-attempt`): the attempt's
   * number, hedges counted in as the fetch adapter counts them (gRPC A6's rule).
   */
  readonly number: number;
  /** 0 for an attempt's first copy, 1 and up for its hedges. */
  readonly hedge: number;
  /** When its attempt's timeout (or the user request's deadline) ends it and every copy. */
  readonly endsAt: number;
  /** The client hung up (the shedder reads this as its caller state). */
  aborted: boolean;
  readonly admission: BreakerAdmission | undefined;
  ticket: Ticket | undefined;
  answer: Outcome;
  /** The copies of its attempt, when the policy hedges. */
  copies: Copies | undefined;
}

/** The copies of one hedged attempt; the attempt ends with its first success, or when every copy sent has failed. */
interface Copies {
  readonly first: Attempt;
  readonly startedAt: number;
  readonly list: Attempt[];
  /** Copies sent that have not answered. */
  running: number;
}

/** A sleep of the model's clock, waiting on the heap. */
interface Sleep {
  readonly resolve: () => void;
  readonly reject: (reason: unknown) => void;
  readonly signal: AbortSignal | undefined;
}

interface Event extends Timed {
  readonly kind: number;
  readonly subject: unknown;
}

/** Seconds simulated after the horizon, so that its last requests end. */
const TAIL_SECONDS = 15;

const ARRIVAL = 0;
const AT_SERVER = 1;
const WORK_DONE = 2;
const ANSWER = 3;
const TIMEOUT = 4;
const RETRY = 5;
const WAKE = 6;
const HEDGE = 7;

const OK: Outcome = Object.freeze({ ok: true });
const TIMED_OUT: Outcome = Object.freeze({ ok: false, error: Object.freeze({ timedOut: true }) });
const BARE_503: Outcome = Object.freeze({ ok: false, error: Object.freeze({ status: 503 }) });

/**
 * Runs one cell of the map once: warm-up, trigger, horizon. Asynchronous only because
 * stormproof/server's queue hands out its admissions as promises; the model settles them on
 * virtual time before it moves on.
 *
 * @example
 * ```ts
 * const run = await runMapModel({ policy: 'naive', load: 0.7, triggerSeconds: 10 });
 * run.class.class; // 'metastable'
 * ```
 */
export async function runMapModel(options?: MapModelOptions): Promise<MapRunResult> {
  const p = resolveMapModel(options);
  const random = new PythonRandom(p.seed);
  const draw = () => random.random();
  const heap = new MinHeap<Event>(earliest);
  let seq = 0;
  let now = 0;
  const at = (t: number, kind: number, subject: unknown) =>
    heap.push({ at: t, seq: seq++, kind, subject });

  const warmupMs = p.warmupSeconds * 1000;
  const trigger: Trigger = {
    kind: p.triggerKind,
    startMs: warmupMs,
    endMs: warmupMs + p.triggerSeconds * 1000,
    magnitude:
      p.triggerSeconds === 0 ? (p.triggerKind === 'capacity-loss' ? 0 : 1) : p.triggerMagnitude,
  };
  const triggerEndSecond = Math.ceil(trigger.endMs / 1000);
  const horizonEnd = triggerEndSecond + Math.ceil(p.horizonSeconds);
  // The run goes on for a tail after the horizon, so that the requests offered at its end have
  // their outcome too (they are counted in the second they were offered).
  const seconds = horizonEnd + TAIL_SECONDS;
  const endMs = seconds * 1000;
  const meter = new Meter(seconds);

  // The model's clock, for the engine's policies and breakers and for stormproof/server. A sleep
  // is an event on the heap; an aborted one rejects when its time comes rather than at once (the
  // shedder, the only caller that aborts, ignores the rejection), which spares an abort listener
  // per sleep, the costliest thing in a run.
  const clock: Clock = {
    now: () => now,
    sleep: (ms, signal) =>
      new Promise<void>((resolve, reject) => {
        at(now + Math.max(0, ms), WAKE, { resolve, reject, signal });
      }),
  };
  const shape = {
    maxAttempts: p.maxAttempts,
    attemptTimeoutMs: p.attemptTimeoutMs,
    deadlineMs: p.deadlineMs ?? Number.POSITIVE_INFINITY,
    baseDelayMs: p.baseDelayMs,
    maxDelayMs: p.maxDelayMs,
  };
  const clients = Array.from({ length: p.clients }, (_, i) =>
    makeClient(p.policy, shape, clock, draw, `client-${i}`),
  );
  const shedder: Shedder | undefined =
    p.stormproofServer === false
      ? undefined
      : createShedder({
          ...(p.stormproofServer === true ? {} : p.stormproofServer),
          clock,
          random: draw,
        });
  const server = new QueueServer<Attempt>(
    {
      workers: p.workers,
      serviceMs: p.serviceMs,
      serviceTime: p.serviceTime,
      concurrencySlopeMs: p.concurrencySlopeMs,
    },
    trigger,
    draw,
    (t, job) => at(t, WORK_DONE, job),
  );
  const net = p.networkMs === 0 ? () => 0 : () => -Math.log(1 - draw()) * p.networkMs;

  let wasted = 0;
  let hedgesSent = 0;
  let hedgesWon = 0;
  const hedgesRefused: Partial<Record<HedgeRefusal, number>> = {};
  // Admissions the shedder's queue still owes; while any are out, its promises are settled
  // before time moves on.
  let owed = 0;
  let settle = 0;
  let running = true;

  function endUser(u: User, ok: boolean): void {
    u.current = undefined;
    meter.ended(u.offeredAt, ok);
  }

  function send(u: User): void {
    const c = u.client;
    const admission = c.breaker?.admit();
    if (admission !== undefined && !admission.admitted) {
      meter.breakerRefusals++;
      endUser(u, false);
      return;
    }
    const policy = c.policy;
    const left = policy.deadlineMs - (now - u.state.startedAt);
    const a: Attempt = {
      user: u,
      number: u.state.attempt + u.hedges,
      hedge: 0,
      endsAt: now + Math.max(0, Math.min(policy.attemptTimeoutMs ?? left, left)),
      aborted: false,
      admission,
      ticket: undefined,
      answer: OK,
      copies: undefined,
    };
    u.current = a;
    at(a.endsAt, TIMEOUT, a);
    at(now + net(), AT_SERVER, a);
    if (c.hedging !== undefined) {
      // As the engine runs a hedged attempt (runHedged): the attempt earns its share of a hedge,
      // its first copy goes, and a hedge is scheduled after the learned delay.
      a.copies = { first: a, startedAt: now, list: [a], running: 1 };
      c.hedging.started();
      scheduleHedge(a.copies);
    }
  }

  function refuseHedge(reason: HedgeRefusal): void {
    hedgesRefused[reason] = (hedgesRefused[reason] ?? 0) + 1;
  }

  function scheduleHedge(g: Copies): void {
    const delayMs = g.first.user.client.hedging!.delayMs();
    if (delayMs === undefined) refuseHedge('learning');
    else at(now + delayMs, HEDGE, g);
  }

  /** A hedge is due: the engine's `Hedging` decides, paid from the client's retry budget. */
  function hedge(g: Copies): void {
    const u = g.first.user;
    if (u.current !== g.first) return; // the attempt has ended
    const c = u.client;
    const hedging = c.hedging!;
    const refusal = hedging.decide(now, g.first.endsAt, c.breaker, c.policy.budget);
    if (refusal !== undefined) {
      refuseHedge(refusal);
      return;
    }
    hedgesSent++;
    u.hedges++;
    const copy: Attempt = {
      user: u,
      number: u.state.attempt + u.hedges,
      hedge: g.list.length,
      endsAt: g.first.endsAt,
      aborted: false,
      admission: undefined,
      ticket: undefined,
      answer: OK,
      copies: g,
    };
    g.list.push(copy);
    g.running++;
    at(now + net(), AT_SERVER, copy);
    if (copy.hedge < hedging.maxHedges) scheduleHedge(g);
  }

  /** A copy of a hedged attempt answered: the first success wins, the others are abandoned. */
  function answered(g: Copies, copy: Attempt): void {
    const first = g.first;
    const u = first.user;
    if (u.current !== first) return; // the attempt has ended: the answer is dropped
    g.running--;
    const hedging = u.client.hedging!;
    const outcome = copy.answer;
    if (outcome.ok) {
      // Timed from the first copy, as the engine learns.
      hedging.learn(now - g.startedAt);
      if (g.list.length > 1) {
        hedging.judge(copy.hedge > 0);
        if (copy.hedge > 0) hedgesWon++;
      }
      // The client hangs up on the other copies; the server still serves them (wasted work).
      for (const other of g.list) if (other !== copy) other.aborted = true;
      decide(first, OK);
      return;
    }
    // Every failure that reaches a copy here is stormproof/server's refusal, a 503 or 429: the
    // engine reads it as overload and pauses hedging for its wait.
    const verdict = classify(outcome.error, now);
    hedging.pushedBack(now, verdict.pushbackMs ?? verdict.retryAfterMs);
    if (g.running > 0) return; // another copy may still answer
    if (g.list.length > 1) hedging.judge(false); // as the engine judges an attempt no copy won
    decide(first, outcome);
  }

  function decide(a: Attempt, outcome: Outcome): void {
    const u = a.user;
    const c = u.client;
    const d = step(c.policy, u.state, outcome, now);
    // After the decision, as the engine's driver records it.
    if (a.admission !== undefined)
      c.breaker!.record(a.admission, outcome.ok ? 'success' : 'failure');
    if (d.action === 'retry') {
      u.state = d.state;
      u.current = undefined;
      meter.retries++;
      if (d.delayMs === 0) send(u);
      else at(now + d.delayMs, RETRY, u);
      return;
    }
    if (d.action === 'give-up' && d.reason === 'budget') meter.budgetRefusals++;
    endUser(u, d.action === 'succeed');
  }

  function admitted(a: Attempt, admission: Admission): void {
    if (!running) return;
    if (admission.admitted) {
      a.ticket = admission;
      server.arrive(now, a);
      return;
    }
    const client = a.user.client;
    a.answer = client.readsHints
      ? {
          ok: false,
          error: { status: admission.status, headers: headersSeen(client, admission.headers) },
        }
      : BARE_503;
    at(now + net(), ANSWER, a);
  }

  at(nextArrivalMs(0, p.ratePerSecond, trigger, draw), ARRIVAL, undefined);
  while (heap.size > 0) {
    const e = heap.pop();
    if (e.at >= endMs) break;
    now = e.at;
    switch (e.kind) {
      case ARRIVAL: {
        meter.user(now);
        const client = clients[Math.floor(draw() * clients.length)]!;
        const u: User = {
          client,
          offeredAt: now,
          state: startState(client.policy, now),
          current: undefined,
          hedges: 0,
        };
        client.policy.budget?.recordRequest(now);
        send(u);
        at(nextArrivalMs(now, p.ratePerSecond, trigger, draw), ARRIVAL, undefined);
        break;
      }
      case AT_SERVER: {
        const a = e.subject as Attempt;
        meter.call(now);
        if (shedder === undefined) {
          server.arrive(now, a);
          break;
        }
        const header = (name: string) => (name === ATTEMPT_HEADER ? String(a.number) : undefined);
        const admission = shedder.admit(header, a);
        if (admission instanceof Promise) {
          owed++;
          settle = Math.max(settle, 1);
          admission.then((x) => {
            owed--;
            admitted(a, x);
          });
        } else {
          admitted(a, admission);
          if (owed > 0) settle = Math.max(settle, 1);
        }
        break;
      }
      case WORK_DONE: {
        const a = e.subject as Attempt;
        server.done(now);
        if (a.ticket !== undefined) {
          a.ticket.finish(200);
          if (owed > 0) settle = Math.max(settle, 1);
        }
        if (a.aborted) {
          wasted++;
          meter.wasted(now);
        } else {
          a.answer = OK;
          at(now + net(), ANSWER, a);
        }
        break;
      }
      case ANSWER: {
        const a = e.subject as Attempt;
        if (a.copies !== undefined) answered(a.copies, a);
        else if (a.user.current === a) decide(a, a.answer);
        break;
      }
      case TIMEOUT: {
        const a = e.subject as Attempt;
        if (a.user.current !== a) break;
        // The attempt's time limit covers every copy of it; a hedge out with no answer did not win.
        if (a.copies !== undefined) {
          for (const copy of a.copies.list) copy.aborted = true;
          if (a.copies.list.length > 1) a.user.client.hedging!.judge(false);
        } else a.aborted = true;
        decide(a, TIMED_OUT);
        break;
      }
      case HEDGE:
        hedge(e.subject as Copies);
        break;
      case RETRY:
        send(e.subject as User);
        break;
      case WAKE: {
        const wake = e.subject as Sleep;
        if (wake.signal?.aborted) wake.reject(wake.signal.reason);
        else {
          wake.resolve();
          settle = 3;
        }
        break;
      }
    }
    // Admissions the shedder settled just now run their handlers in the next microtask turn; a
    // woken sweep needs one turn to run and one more for the admissions it settles.
    for (; settle > 0; settle--) await null;
  }
  running = false;
  shedder?.close();

  const users = meter.users;
  return {
    class: classifyRun(meter.series, triggerEndSecond, horizonEnd),
    triggerEndSecond,
    totals: {
      users,
      calls: meter.calls,
      amplification: users === 0 ? 0 : meter.calls / users,
      retries: meter.retries,
      budgetRefusals: meter.budgetRefusals,
      breakerRefusals: meter.breakerRefusals,
      wasted,
      hedges: { sent: hedgesSent, won: hedgesWon, refused: hedgesRefused },
    },
    series: meter.series,
    parameters: p,
  };
}
