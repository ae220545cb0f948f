// Gateway mode: the Google SRE book's client-side adaptive throttling, for a gateway facing a
// failing downstream: reject locally with probability max(0, (requests - K * accepts) /
// (requests + 1)), counted over a sliding window, capped (Envoy's admission control caps it at
// 80 %); and the downstream's "do not retry", read so it can be said upward the same way.
import { OVERLOADED_HEADER } from '../core/classify.js';
import type { HeaderReader } from './request-info.js';

export interface ThrottleSettings {
  readonly k: number;
  readonly windowMs: number;
  readonly maxRejection: number;
  readonly minRequests: number;
}

const BUCKETS = 10;

export class AdaptiveThrottle {
  private readonly requests = new Float64Array(BUCKETS);
  private readonly accepts = new Float64Array(BUCKETS);
  private bucket = 0;
  private bucketStart = Number.NaN;
  private readonly bucketMs: number;

  constructor(private readonly settings: ThrottleSettings) {
    this.bucketMs = settings.windowMs / BUCKETS;
  }

  /** The probability of rejecting the next request locally. */
  rejectProbability(nowMs: number): number {
    this.roll(nowMs);
    let requests = 0;
    let accepts = 0;
    for (let i = 0; i < BUCKETS; i++) {
      requests += this.requests[i]!;
      accepts += this.accepts[i]!;
    }
    // Too few requests to tell a dead backend from a quiet one (Envoy #33739, PR #41214).
    if (requests < this.settings.minRequests) return 0;
    const p = (requests - this.settings.k * accepts) / (requests + 1);
    return Math.min(this.settings.maxRejection, Math.max(0, p));
  }

  /** A request was tried (sent downstream or rejected here). */
  request(nowMs: number): void {
    this.roll(nowMs);
    this.requests[this.bucket] = this.requests[this.bucket]! + 1;
  }

  /** The downstream accepted a request (answered below 500, no don't-retry). */
  accept(nowMs: number): void {
    this.roll(nowMs);
    this.accepts[this.bucket] = this.accepts[this.bucket]! + 1;
  }

  private roll(nowMs: number): void {
    if (Number.isNaN(this.bucketStart)) {
      this.bucketStart = nowMs;
      return;
    }
    let passed = Math.floor((nowMs - this.bucketStart) / this.bucketMs);
    if (passed <= 0) return;
    this.bucketStart += passed * this.bucketMs;
    if (passed > BUCKETS) passed = BUCKETS;
    for (let i = 0; i < passed; i++) {
      this.bucket = (this.bucket + 1) % BUCKETS;
      this.requests[this.bucket] = 0;
      this.accepts[this.bucket] = 0;
    }
  }
}

/**
 * Whether a downstream response says "do not retry": `stormproof-overloaded`,
 * `x-envoy-overloaded`, `Stripe-Should-Retry: false` or a negative gRPC pushback.
 */
export function saysDoNotRetry(header: HeaderReader): boolean {
  if (header(OVERLOADED_HEADER) != null || header('x-envoy-overloaded') != null) return true;
  if (header('stripe-should-retry')?.trim().toLowerCase() === 'false') return true;
  const pushback = header('grpc-retry-pushback-ms');
  return pushback?.trim().startsWith('-') === true;
}
