// The two ways a gRPC server can say how long to wait: gRFC A6's `grpc-retry-pushback-ms`
// trailer, read strictly, and `google.rpc.RetryInfo` inside `grpc-status-details-bin`, decoded
// from its protobuf bytes by hand (four small messages do not justify a protobuf dependency).

/** The trailer of gRFC A6 that carries the server's pushback. */
export const PUSHBACK_TRAILER = 'grpc-retry-pushback-ms';

/** The trailer that carries a serialized `google.rpc.Status` with its details. */
export const STATUS_DETAILS_TRAILER = 'grpc-status-details-bin';

/** The longest wait either signal may ask for: the largest signed 32-bit integer, in ms. */
export const MAX_PUSHBACK_MS = 2 ** 31 - 1;

/** What a pushback trailer says: wait exactly this many ms, or do not retry. */
export type Pushback = number | 'do-not-retry';

/** A6's format: an ASCII integer, optional minus sign, no unnecessary leading zero (so no `-0`). */
const INT32 = /^(?:0|-?[1-9][0-9]{0,9})$/;

/**
 * Reads the `grpc-retry-pushback-ms` values of one response as gRFC A6 says: a non-negative
 * signed 32-bit integer in ASCII means "retry after exactly that many ms"; a negative one, or
 * anything that is not such an integer, means "do not retry". Strict on purpose: `100ms`, `1e3`,
 * `0x10`, ` 12`, `+5`, `007`, `-0` and values past 2^31-1 all mean "do not retry", the safe
 * reading of a signal the client cannot understand. Several values are ambiguous and read the
 * same way (grpc-go does so too). No value: `undefined`.
 *
 * @example
 * ```ts
 * parsePushback(['250']); // 250
 * parsePushback(['-1']); // 'do-not-retry'
 * parsePushback(['1e3']); // 'do-not-retry'
 * parsePushback([]); // undefined
 * ```
 */
export function parsePushback(values: readonly unknown[]): Pushback | undefined {
  if (values.length === 0) return undefined;
  const value = values[0];
  if (values.length > 1 || typeof value !== 'string' || !INT32.test(value)) return 'do-not-retry';
  const ms = Number(value);
  return ms < 0 || ms > MAX_PUSHBACK_MS ? 'do-not-retry' : ms;
}

/** A cursor over protobuf bytes; every read returns undefined on malformed input. */
class ProtoReader {
  private offset = 0;
  constructor(
    private readonly bytes: Uint8Array,
    private readonly end = bytes.length,
    start = 0,
  ) {
    this.offset = start;
  }

  get done(): boolean {
    return this.offset >= this.end;
  }

  /** A varint as a Number (exact up to 2^53, which is more than any value read here needs). */
  varint(): number | undefined {
    let result = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (this.offset >= this.end) return undefined;
      const byte = this.bytes[this.offset++]!;
      result += (byte & 0x7f) * scale;
      if (byte < 0x80) return result;
      scale *= 128;
    }
    return undefined;
  }

  /** The next field: its number, wire type, and for length-delimited fields their bounds. */
  field(): { number: number; wire: number; start: number; end: number } | undefined {
    const key = this.varint();
    if (key === undefined) return undefined;
    const wire = key % 8;
    const number = Math.floor(key / 8);
    const start = this.offset;
    switch (wire) {
      case 0:
        return this.varint() === undefined ? undefined : { number, wire, start, end: this.offset };
      case 1:
      case 5: {
        const size = wire === 1 ? 8 : 4;
        if (this.offset + size > this.end) return undefined;
        this.offset += size;
        return { number, wire, start, end: this.offset };
      }
      case 2: {
        const length = this.varint();
        if (length === undefined || this.offset + length > this.end) return undefined;
        const from = this.offset;
        this.offset += length;
        return { number, wire, start: from, end: this.offset };
      }
      default:
        return undefined;
    }
  }

  /** Reads a varint at `start` (for a wire-0 field found by `field()`). */
  varintAt(start: number, end: number): number | undefined {
    return new ProtoReader(this.bytes, end, start).varint();
  }
}

const RETRY_INFO_TYPE = 'google.rpc.RetryInfo';
const decoder = new TextDecoder();

/** `google.protobuf.Duration` in ms, rounded up; undefined when negative, malformed or too long. */
function readDuration(bytes: Uint8Array, start: number, end: number): number | undefined {
  const reader = new ProtoReader(bytes, end, start);
  let seconds = 0;
  let nanos = 0;
  while (!reader.done) {
    const field = reader.field();
    if (field === undefined) return undefined;
    if (field.wire !== 0) continue;
    const value = reader.varintAt(field.start, field.end);
    if (value === undefined) return undefined;
    if (field.number === 1) seconds = value;
    else if (field.number === 2) nanos = value;
  }
  // A negative int64 or int32 arrives as a 10-byte two's complement: far beyond either bound.
  if (nanos >= 1e9) return undefined;
  const ms = Math.ceil(seconds * 1000 + nanos / 1e6);
  return ms <= MAX_PUSHBACK_MS ? ms : undefined;
}

/** The retry delay of a serialized `google.rpc.RetryInfo`. */
function readRetryInfo(bytes: Uint8Array, start: number, end: number): number | undefined {
  const reader = new ProtoReader(bytes, end, start);
  while (!reader.done) {
    const field = reader.field();
    if (field === undefined) return undefined;
    if (field.number === 1 && field.wire === 2) return readDuration(bytes, field.start, field.end);
  }
  return undefined;
}

/** The RetryInfo delay inside one `google.protobuf.Any`, if that is what it holds. */
function readAny(bytes: Uint8Array, start: number, end: number): number | undefined {
  const reader = new ProtoReader(bytes, end, start);
  let typeUrl: string | undefined;
  let value: { start: number; end: number } | undefined;
  while (!reader.done) {
    const field = reader.field();
    if (field === undefined) return undefined;
    if (field.wire !== 2) continue;
    if (field.number === 1) typeUrl = decoder.decode(bytes.subarray(field.start, field.end));
    else if (field.number === 2) value = field;
  }
  if (value === undefined || typeUrl === undefined) return undefined;
  const type = typeUrl.slice(typeUrl.lastIndexOf('/') + 1);
  return type === RETRY_INFO_TYPE ? readRetryInfo(bytes, value.start, value.end) : undefined;
}

/**
 * The retry delay, in ms (rounded up), of the first `google.rpc.RetryInfo` among the details of
 * a serialized `google.rpc.Status` (the `grpc-status-details-bin` trailer). Undefined when there
 * is none, or when the bytes are malformed, the delay negative or longer than 2^31-1 ms: a
 * malformed detail is ignored, never trusted.
 *
 * @example
 * ```ts
 * const delay = readRetryInfoMs(status.metadata.get('grpc-status-details-bin')[0]); // 1500
 * ```
 */
export function readRetryInfoMs(statusDetails: unknown): number | undefined {
  if (!(statusDetails instanceof Uint8Array)) return undefined;
  const reader = new ProtoReader(statusDetails);
  while (!reader.done) {
    const field = reader.field();
    if (field === undefined) return undefined;
    if (field.number !== 3 || field.wire !== 2) continue;
    const delay = readAny(statusDetails, field.start, field.end);
    if (delay !== undefined) return delay;
  }
  return undefined;
}
