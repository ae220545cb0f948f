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

/**
 * The request bytes one call keeps for resending or hedging, under its own limit and, once the
 * call knows its target, that target's pool too.
 */
export class CallBuffer {
  private bytes = 0;
  /** The channel target's pool, which the bytes are taken from; set when the call starts. */
  pool: BufferPool | undefined;

  constructor(private readonly maxBytes: number) {}

  /** Counts `size` more bytes kept, if both the call's and its target's limits allow. */
  keep(size: number): boolean {
    if (this.bytes + size > this.maxBytes) return false;
    if (this.pool !== undefined && !this.pool.take(size)) return false;
    this.bytes += size;
    return true;
  }

  /** Gives the kept bytes back to the target: the call is committed, or over. */
  release(): void {
    this.pool?.give(this.bytes);
    this.bytes = 0;
  }
}

/**
 * A request message's size on the wire; infinite when it does not serialize (an attempt will
 * fail to serialize it and end the call: never keep it for another).
 */
export function serializedSize(serialize: (message: unknown) => Uint8Array, message: unknown) {
  try {
    return serialize(message).length;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}
