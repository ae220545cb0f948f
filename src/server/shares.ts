// Who goes first under contention: the SRE book's criticality levels, most critical first, and
// within a level first attempts before retries (Netflix concurrency-limits' partitions): retries
// are guaranteed `retryShare` of the limit and first attempts the rest.
import { CRITICALITY_LEVELS, type HeaderReader, readCriticality } from './request-info.js';

/** The shares' settings, filled. */
export interface ShareSettings {
  /** Whether first attempts go before retries. */
  readonly prioritize: boolean;
  /** The share of the limit guaranteed to retries. */
  readonly retryShare: number;
  /** The lower-case criticality header, or undefined when criticality is off. */
  readonly criticalityHeader: string | undefined;
  /** The level of a request without a valid criticality header. */
  readonly defaultLevel: number;
}

/** The number of ranks: a first-attempt and a retry rank per criticality level. */
export const RANKS = CRITICALITY_LEVELS.length * 2;

/** Counts what runs, by partition, and ranks what waits. */
export class Shares {
  /** Requests running now. */
  inflight = 0;
  /** Retries among them. */
  inflightRetries = 0;

  constructor(readonly settings: ShareSettings) {}

  /** A request starts running. */
  start(retry: boolean): void {
    this.inflight++;
    if (retry) this.inflightRetries++;
  }

  /** A request stops running. */
  end(retry: boolean): void {
    this.inflight--;
    if (retry) this.inflightRetries--;
  }

  /** Whether a partition is within its guaranteed share of `limit`. */
  withinShare(retry: boolean, limit: number): boolean {
    const { retryShare } = this.settings;
    return retry
      ? this.inflightRetries < retryShare * limit
      : this.inflight - this.inflightRetries < (1 - retryShare) * limit;
  }

  /** The criticality level a request's headers name (0 is the most critical). */
  levelOf(header: HeaderReader): number {
    const { criticalityHeader, defaultLevel } = this.settings;
    return criticalityHeader === undefined
      ? defaultLevel
      : readCriticality(header(criticalityHeader), defaultLevel);
  }

  /** A waiting request's rank in the queue: by level, then first attempts before retries. */
  rank(level: number, retry: boolean): number {
    return level * 2 + (retry && this.settings.prioritize ? 1 : 0);
  }

  /** Whether a level's waiting retries go before its waiting first attempts. */
  retriesFirst(limit: number): boolean {
    return !this.settings.prioritize || this.withinShare(true, limit);
  }
}
