// The request bytes kept for resending by all the calls to one channel target: gRFC A6's
// `retry_buffer_size_in_bytes` beside each call's own `per_rpc_buffer_limit_in_bytes` (the
// interceptor's `maxBufferBytes`), so that many calls with large streams cannot hold unbounded
// memory between them. A call whose next bytes do not fit is committed, as when its own limit is
// reached: A6, "RPCs may only be retried when they are contained in the buffer".

/** The bytes kept by the calls to one channel target, against its limit. */
export class BufferPool {
  private used = 0;

  constructor(private readonly limit: number) {}

  /** Counts `bytes` more if they fit under the limit, and says whether they did. */
  take(bytes: number): boolean {
    if (this.used + bytes > this.limit) return false;
    this.used += bytes;
    return true;
  }

  /** Gives back bytes taken (a call committed, or ended). */
  give(bytes: number): void {
    this.used -= bytes;
  }
}
