// Server protection: what stands between an accepted connection and the API servers' CPU.
// `'stormproof'` is the real stormproof/server engine, one per API server as each process runs
// its own middleware, deciding from the request's headers alone on the simulator's clock and
// random source. `'all-or-nothing'` is Fastify under-pressure's mechanism: a sample once a second,
// and while it says "under pressure", every request rejected with the same `Retry-After: 10`.
// Neither copies a rule of the other: the first is the engine itself, the second is small
// enough to state whole here.
import type { Outcome } from '../../core/step.js';
import type { Rejection } from '../../server/answers.js';
import { ATTEMPT_HEADER, type HeaderReader } from '../../server/request-info.js';
import { createShedder, type Shedder, type Ticket } from '../../server/shedder.js';
import type { StormServerRampStep, StormServerReport } from './measurements.js';
import { EV_SERVER_DECIDED, type Job, type World } from './world.js';

/** The verdict on a request that got a connection: run it now, or it waits for a decision. */
export const RUN = 0;
export const WAIT = 1;
/** ... or the answer that rejects it at once. */
export type Verdict = typeof RUN | typeof WAIT | Outcome;

/** What protects the API servers. */
export interface ServerGuard {
  /**
   * A request got a connection. On WAIT, the decision comes later: the job's `admission` is set
   * and an EV_SERVER_DECIDED event is due.
   */
  admit(j: Job): Verdict;
  /** The servers wrote their answer to an admitted job. */
  finished(j: Job, ok: boolean): void;
  /** The end of second `sec`. */
  endSecond(sec: number): void;
  /** What it did, for the result. */
  report(): StormServerReport;
}

/** A rejection as the client sees it: the status and the headers the engine chose. */
function rejectionOutcome(r: Rejection): Outcome {
  const headers: Record<string, string> = {};
  for (const [name, value] of r.headers) headers[name] = value;
  return { ok: false, error: { status: r.status, headers } };
}

/** A rejection as a client that reads its status only sees it: one object per status. */
const STATUS_ONLY = new Map<number, Outcome>();
function statusOutcome(r: Rejection): Outcome {
  let outcome = STATUS_ONLY.get(r.status);
  if (outcome === undefined) {
    outcome = Object.freeze({ ok: false, error: Object.freeze({ status: r.status }) });
    STATUS_ONLY.set(r.status, outcome);
  }
  return outcome;
}

const NO_HEADERS: HeaderReader = () => undefined;

/** One stormproof/server engine per API server, with its defaults. */
export class StormproofGuard implements ServerGuard {
  readonly #shedders: Shedder[];
  readonly #ramp: StormServerRampStep[] = [];
  readonly #shares: number[] = [];
  /** Header readers of retries, by the client library's attempt number. */
  readonly #retryReaders: HeaderReader[] = [];
  #next = 0;
  /** How the clients see a rejection (see the constructor). */
  readonly #seen: (r: Rejection) => Outcome;

  /**
   * @param statusOnly Whether every retrying layer reads a failure's status only (the old
   *   stack): then its rejections need not carry their headers, which saves building millions.
   */
  constructor(
    private readonly world: World,
    statusOnly: boolean,
  ) {
    const p = world.p;
    this.#seen = statusOnly ? statusOutcome : rejectionOutcome;
    this.#shedders = Array.from({ length: p.apiServers }, (_, server) =>
      createShedder({
        clock: world.clock,
        random: world.random,
        onRamp: (e) => {
          this.#ramp.push({
            atSeconds: world.now / 1000,
            server,
            share: e.share,
            reason: e.reason,
            ...(e.errorRate === undefined ? {} : { errorRate: e.errorRate }),
            ...(e.meanLatencyMs === undefined ? {} : { meanLatencyMs: e.meanLatencyMs }),
          });
        },
      }),
    );
  }

  admit(j: Job): Verdict {
    const server = this.#next;
    this.#next = server + 1 === this.#shedders.length ? 0 : server + 1;
    j.server = server;
    const world = this.world;
    const admission = this.#shedders[server]!.admitOrQueue(this.#headers(j), (decided) => {
      j.admission = decided;
      world.calendar.schedule(world.now, j, EV_SERVER_DECIDED);
    });
    if (admission === undefined) return WAIT;
    if (!admission.admitted) return this.#seen(admission);
    j.admission = admission;
    return RUN;
  }

  /** The outcome a queued request's decision answers with, when it was a rejection. */
  rejection(j: Job): Outcome | undefined {
    const a = j.admission;
    return a === undefined || a.admitted ? undefined : this.#seen(a);
  }

  finished(j: Job, ok: boolean): void {
    (j.admission as Ticket).finish(ok ? 200 : 503);
  }

  endSecond(sec: number): void {
    let sum = 0;
    for (const s of this.#shedders) sum += s.stats().rampShare;
    this.#shares[sec] = Math.round((sum / this.#shedders.length) * 1000) / 1000;
  }

  report(): StormServerReport {
    const shed: Record<string, number> = {};
    for (const s of this.#shedders) {
      for (const [reason, n] of Object.entries(s.stats().shed))
        shed[reason] = (shed[reason] ?? 0) + n;
    }
    // Fully open again when every server's last move opened it (a server never tripped counts
    // as open; if none moved at all, there was nothing to reopen).
    const last = new Map<number, StormServerRampStep>();
    for (const step of this.#ramp) last.set(step.server, step);
    let reopenedAtSeconds: number | null = last.size === 0 ? null : 0;
    for (const step of last.values()) {
      if (step.share < 1 || reopenedAtSeconds === null) reopenedAtSeconds = null;
      else reopenedAtSeconds = Math.max(reopenedAtSeconds, step.atSeconds);
    }
    return {
      kind: 'stormproof',
      shed,
      admittedShare: this.#shares,
      ramp: this.#ramp,
      reopenedAtSeconds,
    };
  }

  /** What the servers read from a request: a stormproof client marks its retries. */
  #headers(j: Job): HeaderReader {
    const u = j.attempt.user;
    if (this.world.p.policy !== 'stormproof' || u.libAttempt <= 1) return NO_HEADERS;
    let reader = this.#retryReaders[u.libAttempt];
    if (reader === undefined) {
      const value = String(u.libAttempt);
      reader = (name) => (name === ATTEMPT_HEADER ? value : undefined);
      this.#retryReaders[u.libAttempt] = reader;
    }
    return reader;
  }
}

/** Under-pressure's defaults as its README uses them: a 1 s sample, a 1,000 ms delay limit. */
const PRESSURE_DELAY_MS = 1000;
/** Under-pressure's constant `Retry-After`, in seconds. */
const PRESSURE_RETRY_AFTER = Object.freeze({
  ok: false,
  error: Object.freeze({ status: 503, headers: Object.freeze({ 'retry-after': '10' }) }),
}) as Outcome;

/**
 * Fastify under-pressure's mechanism. Its sample is the event loop's delay; the servers' analog is
 * how long the request at the front of their CPU queue has waited. The model's servers share
 * one CPU queue, so every server's sample is the same and one flag stands for all of them.
 */
export class AllOrNothingGuard implements ServerGuard {
  #pressure = false;
  #shed = 0;
  readonly #shares: number[] = [];

  /** @param queueDelayMs How long the request at the front of the CPU queue has waited. */
  constructor(private readonly queueDelayMs: () => number) {}

  admit(): Verdict {
    if (!this.#pressure) return RUN;
    this.#shed++;
    return PRESSURE_RETRY_AFTER;
  }

  finished(): void {}

  endSecond(sec: number): void {
    this.#pressure = this.queueDelayMs() > PRESSURE_DELAY_MS;
    this.#shares[sec] = this.#pressure ? 0 : 1;
  }

  report(): StormServerReport {
    return {
      kind: 'all-or-nothing',
      shed: { pressure: this.#shed },
      admittedShare: this.#shares,
      ramp: [],
      reopenedAtSeconds: null,
    };
  }
}
