// The edge load balancer and the on-call engineer's manual recovery. The edge passes every
// attempt to the gateway, except those of partner instances it sheds, which get a quick 503 at no
// cost to the API servers. With `manualRecovery`, at `shedAfterFaultSeconds` the engineer lets
// only `stepFraction` of the instances through, waits `drainSeconds`, then lets one more step
// through after each check in which the gateway's error ratio stayed at or below
// `maxStepErrorRatio`. Whole instances are shed, in a seeded random order, not random requests:
// a naive client that is rejected retries at once.
import type { Gateway } from './gateway.js';
import type { Measurements, StormRecovery } from './measurements.js';
import { ANSWERED, type Attempt, EV_ANSWER, type World } from './world.js';

/** The manual recovery as it happens (the result's `StormRecovery`). */
interface ManualRecovery extends StormRecovery {
  readonly steps: [number, number][];
  reopenedAtSeconds: number | null;
}

export class Edge {
  /** Each instance's place in the order in which the edge lets instances back in. */
  readonly #admitRank: Int32Array;
  /** The share of instances let through, and their count. */
  admittedShare = 1;
  #admittedCount: number;
  /** The manual recovery as it happens, once the shedding started. */
  recovery: ManualRecovery | null = null;
  readonly #shedAtSeconds: number;
  readonly #checkWindow: number;
  #nextCheck = Number.POSITIVE_INFINITY;
  #steps = 0;

  constructor(
    private readonly world: World,
    private readonly m: Measurements,
    private readonly gateway: Gateway,
  ) {
    const p = world.p;
    const admitOrder = new Int32Array(p.partnerInstances);
    for (let i = 0; i < p.partnerInstances; i++) admitOrder[i] = i;
    world.rng.shuffle(admitOrder);
    this.#admitRank = new Int32Array(p.partnerInstances);
    for (let r = 0; r < p.partnerInstances; r++) this.#admitRank[admitOrder[r]!] = r;
    this.#admittedCount = p.partnerInstances;
    this.#shedAtSeconds = p.faultAtSeconds + p.shedAfterFaultSeconds;
    this.#checkWindow = Math.max(1, Math.floor(p.stepSeconds / 2));
  }

  /** An attempt reaches the edge (EV_EDGE): shed, or handed to the gateway. */
  arrive(a: Attempt): void {
    const { world, m } = this;
    m.offered[world.sec]!++;
    if (a.done) return;
    if (this.#admitRank[a.user.instance]! >= this.#admittedCount) {
      m.shed[world.sec]!++;
      a.stage = ANSWERED;
      a.answer = world.serviceUnavailable;
      world.calendar.schedule(world.now + world.latency(), a, EV_ANSWER);
      return;
    }
    this.gateway.take(a);
  }

  /** The on-call engineer, at the start of each second: sheds, checks, opens the next step. */
  engineer(): void {
    const { world, m } = this;
    const p = world.p;
    const sec = world.sec;
    if (p.manualRecovery && sec === this.#shedAtSeconds) {
      this.recovery = { shedAtSeconds: this.#shedAtSeconds, steps: [], reopenedAtSeconds: null };
      this.#openStep();
      this.#nextCheck = sec + p.drainSeconds;
    }
    if (sec === this.#nextCheck) {
      let ok = 0;
      let errors = 0;
      for (let s = Math.max(0, sec - this.#checkWindow); s < sec; s++) {
        ok += m.gatewayOk[s]!;
        errors += m.gatewayErrors[s]!;
      }
      if (ok + errors === 0 || errors / (ok + errors) <= p.maxStepErrorRatio) this.#openStep();
      if (this.admittedShare < 1) this.#nextCheck = sec + p.stepSeconds;
    }
  }

  #openStep(): void {
    const p = this.world.p;
    this.#steps++;
    // Whole steps of the fraction, without the float error of adding 0.2 again and again.
    const share = Math.min(1, Math.round(this.#steps * p.stepFraction * 1e9) / 1e9);
    this.admittedShare = share;
    this.#admittedCount = Math.round(share * p.partnerInstances);
    this.recovery?.steps.push([this.world.sec, share]);
    if (share >= 1 && this.recovery !== null) {
      this.recovery.reopenedAtSeconds = this.world.sec;
      this.#nextCheck = Number.POSITIVE_INFINITY;
    }
  }
}
