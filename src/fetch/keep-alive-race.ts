// The keep-alive race: a server closes an idle keep-alive connection (Node's do at their
// keepAliveTimeout) just as the client writes its next request on it. The server never reads
// that request, yet the client sees a failure. Node's fetch (undici) reports it as
// TypeError('fetch failed') caused by `read ECONNRESET` (a bare Error with no socket info: every
// time on Node 22 and 24, most times on 20) or by SocketError 'other side closed'
// (UND_ERR_SOCKET, with the socket's byte counts since it opened, earlier requests included).
// Neither tells a reused connection from a fresh one that an overloaded server reset, nor
// whether any of the answer had come.
//
// undici's diagnostics channels do, and Node's fetch publishes them (Node 20.19, 22, 24; the npm
// undici too): `undici:client:sendHeaders` names the socket a request was written on,
// `undici:request:headers` says the socket carried a complete answer, `undici:request:error`
// hands over the very error that becomes the fetch's `cause`. The rule, from those alone: a
// request was lost to the race when
//   1. it was written on a socket that had already carried a complete response head (reused),
//   2. not one byte arrived on that socket after it was written (`bytesRead` unchanged), and
//   3. it failed with ECONNRESET, EPIPE or UND_ERR_SOCKET (the connection closed or reset).
// Anything else (a refused or reset fresh connection, a timeout, an abort, a runtime without
// these channels: browsers, Deno, Bun, workerd) is not recognised, and is charged as before.
//
// No `node:` import: the channels are looked up through `process.getBuiltinModule` when the
// runtime has it, so this file loads unchanged everywhere.

/** What this file needs of `node:diagnostics_channel`. */
interface Channels {
  subscribe(name: string, onMessage: (message: unknown) => void): void;
}

/** What this file reads of the socket undici names: its byte count, kept after it closes. */
interface SocketCounts {
  readonly bytesRead: number;
}

/** Where a request was written, and what its socket had read by then. */
interface Written {
  readonly socket: SocketCounts;
  readonly reused: boolean;
  readonly bytesRead: number;
}

/** The codes of a connection closed or reset under a request. */
const LOST_CODES: ReadonlySet<unknown> = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET']);

/** undici's requests, by the socket they were written on (weakly: they end, sockets close). */
const written = new WeakMap<object, Written>();
/** Sockets that have carried at least one complete response head. */
const answered = new WeakSet<object>();
/** The errors (a fetch failure's `cause`) of requests lost to the race. */
const lost = new WeakSet<object>();

let watching: boolean | undefined;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

function onSendHeaders(message: unknown): void {
  if (!isObject(message) || !isObject(message.request) || !isObject(message.socket)) return;
  const socket = message.socket as unknown as SocketCounts;
  if (typeof socket.bytesRead !== 'number') return;
  written.set(message.request, {
    socket,
    reused: answered.has(socket),
    bytesRead: socket.bytesRead,
  });
}

function onHeaders(message: unknown): void {
  if (!isObject(message) || !isObject(message.request)) return;
  const sent = written.get(message.request);
  if (sent !== undefined) answered.add(sent.socket);
}

function onError(message: unknown): void {
  if (!isObject(message) || !isObject(message.request) || !isObject(message.error)) return;
  const sent = written.get(message.request);
  if (
    sent?.reused &&
    sent.socket.bytesRead === sent.bytesRead &&
    LOST_CODES.has(message.error.code)
  ) {
    lost.add(message.error);
  }
}

/**
 * Starts watching undici's channels, once per process; whether they could be watched. Later
 * calls only answer. The watch holds nothing alive: weak maps, and no timer or handle.
 */
export function watchKeepAliveRace(): boolean {
  if (watching !== undefined) return watching;
  watching = false;
  try {
    const host = (
      globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } | undefined }
    ).process;
    const channels = host?.getBuiltinModule?.('node:diagnostics_channel') as Channels | undefined;
    if (typeof channels?.subscribe !== 'function') return false;
    channels.subscribe('undici:client:sendHeaders', onSendHeaders);
    channels.subscribe('undici:request:headers', onHeaders);
    channels.subscribe('undici:request:error', onError);
    watching = true;
  } catch {
    // A runtime whose `process` looks like Node's but is not: nothing is recognised.
  }
  return watching;
}

/**
 * Whether `error`, thrown by a fetch call, is the failure of a request lost to the keep-alive
 * race (see the rule above): the server never answered it on a connection that had worked.
 *
 * @example
 * ```ts
 * isLostToKeepAliveRace(new TypeError('fetch failed')); // false: no cause undici reported
 * ```
 */
export function isLostToKeepAliveRace(error: unknown): boolean {
  return isObject(error) && isObject(error.cause) && lost.has(error.cause);
}
