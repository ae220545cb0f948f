// Just enough protobuf writing to build a `google.rpc.Status` with a `RetryInfo` detail, the way
// a server would put it in `grpc-status-details-bin`.

function varint(value: number): number[] {
  const out: number[] = [];
  let v = value;
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
  return out;
}

function field(number: number, payload: number[] | Uint8Array): number[] {
  return [...varint(number * 8 + 2), ...varint(payload.length), ...payload];
}

function varintField(number: number, value: number): number[] {
  return [...varint(number * 8), ...varint(value)];
}

export function duration(seconds: number, nanos = 0): number[] {
  return [...(seconds ? varintField(1, seconds) : []), ...(nanos ? varintField(2, nanos) : [])];
}

export function any(typeUrl: string, value: number[]): number[] {
  return [...field(1, [...Buffer.from(typeUrl)]), ...field(2, value)];
}

export function retryInfo(seconds: number, nanos = 0): number[] {
  return any('type.googleapis.com/google.rpc.RetryInfo', field(1, duration(seconds, nanos)));
}

/** A serialized `google.rpc.Status` with the given details (each an encoded Any). */
export function status(code: number, message: string, ...details: number[][]): Uint8Array {
  const bytes = [...varintField(1, code), ...field(2, [...Buffer.from(message)])];
  for (const detail of details) bytes.push(...field(3, detail));
  return Uint8Array.from(bytes);
}
