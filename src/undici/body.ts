// Request bodies and retries. A body held whole (a string, bytes, a Blob, FormData) is sent again
// as it is. A body that is a stream (a Node Readable, an async iterable, a web ReadableStream;
// undici's fetch hands every body to its dispatcher as an async generator) is consumed by its
// first send: it is sent through a recorder that keeps a copy of the bytes as they go out, up to
// `maxReplayBodyBytes`. A retry sends the copy, but only when the first send read the stream to
// its end and the copy is whole. Otherwise (the stream was larger, or the attempt failed while
// it was still being sent) the body cannot be replayed and the failure ends the call.
// Nothing is read ahead: the stream is read only as undici sends it, so the first attempt is
// neither delayed nor changed.

/** What undici accepts as a body and stormproof/undici sends again whole. */
function isWhole(body: unknown): boolean {
  if (body == null || typeof body === 'string') return true;
  if (typeof body !== 'object') return true;
  if (ArrayBuffer.isView(body) || body instanceof ArrayBuffer) return true;
  const b = body as Record<string | symbol, unknown>;
  // A Blob (arrayBuffer + stream + size) or FormData (getAll + append): undici reads them anew.
  if (typeof b.arrayBuffer === 'function' && typeof b.stream === 'function') return true;
  if (typeof b.getAll === 'function' && typeof b.append === 'function') return true;
  if (Array.isArray(body)) return true;
  return false;
}

/** Whether `body` is a stream-like source the recorder can read chunk by chunk. */
function isAsyncSource(body: unknown): body is AsyncIterable<unknown> | Iterable<unknown> {
  if (typeof body !== 'object' || body === null) return false;
  const b = body as Record<symbol, unknown>;
  return typeof b[Symbol.asyncIterator] === 'function' || typeof b[Symbol.iterator] === 'function';
}

const encoder = new TextEncoder();

function toBytes(chunk: unknown): Uint8Array {
  if (chunk instanceof Uint8Array) return chunk;
  if (typeof chunk === 'string') return encoder.encode(chunk);
  if (ArrayBuffer.isView(chunk)) {
    return new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  }
  if (chunk instanceof ArrayBuffer) return new Uint8Array(chunk);
  throw new TypeError(`stormproof: a request body chunk must be bytes or a string`);
}

/** A request's body across its attempts. */
export interface AttemptBody {
  /** The body for attempt `attempt`'s dispatch options. */
  forAttempt(attempt: number): unknown;
  /** Whether another attempt can send the body again, judged after an attempt failed. */
  readonly replayable: boolean;
  /** Whether it can always be sent again (held whole), whatever the attempts do. */
  readonly alwaysReplayable: boolean;
}

class WholeBody implements AttemptBody {
  readonly replayable = true;
  readonly alwaysReplayable = true;
  constructor(private readonly body: unknown) {}
  forAttempt(): unknown {
    return this.body;
  }
}

class RecordedBody implements AttemptBody {
  readonly alwaysReplayable = false;
  private readonly chunks: Uint8Array[] = [];
  private size = 0;
  private overflow = false;
  private complete = false;

  constructor(
    private readonly source: AsyncIterable<unknown> | Iterable<unknown>,
    private readonly limit: number,
  ) {}

  get replayable(): boolean {
    return this.complete && !this.overflow;
  }

  forAttempt(attempt: number): unknown {
    if (attempt === 1) return this.record();
    // Only called when `replayable` said yes: one buffer with the whole body.
    const whole = new Uint8Array(this.size);
    let at = 0;
    for (const chunk of this.chunks) {
      whole.set(chunk, at);
      at += chunk.byteLength;
    }
    return whole;
  }

  private async *record(): AsyncGenerator<Uint8Array> {
    for await (const chunk of this.source as AsyncIterable<unknown>) {
      const bytes = toBytes(chunk);
      if (!this.overflow) {
        this.size += bytes.byteLength;
        if (this.size > this.limit) {
          this.overflow = true;
          this.chunks.length = 0;
        } else {
          // A copy: the source may reuse its buffer for the next chunk.
          this.chunks.push(bytes.slice());
        }
      }
      yield bytes;
    }
    this.complete = true;
  }
}

class OnceBody implements AttemptBody {
  readonly replayable = false;
  readonly alwaysReplayable = false;
  constructor(private readonly body: unknown) {}
  forAttempt(): unknown {
    return this.body;
  }
}

/**
 * The body of a request that may be retried: whole bodies as they are, streams recorded up to
 * `limit` bytes (0: never recorded, so never replayed), anything else sent once.
 */
export function attemptBody(body: unknown, limit: number): AttemptBody {
  if (isWhole(body)) return new WholeBody(body);
  if (limit > 0 && isAsyncSource(body)) return new RecordedBody(body, limit);
  return new OnceBody(body);
}
