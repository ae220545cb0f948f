// The shapes of undici's dispatcher API that stormproof/undici uses, written out structurally so
// that the package has no runtime dependency on undici and no type dependency either: undici 7's
// and 8's own types are assignable to these (test/undici.test.ts compiles `agent.compose(
// interceptor())` against undici 7's types). Only the current handler API (undici 7 and later,
// PR #3883) is described: onRequestStart, onResponseStart, onResponseData, onResponseEnd,
// onResponseError. A legacy handler (onConnect, onHeaders, ...) reaches an interceptor already
// wrapped by `Dispatcher.compose`.

/** Header values as undici's dispatch options take them: an object, a flat array or pairs. */
export type UndiciHeaders =
  | Record<string, string | readonly string[] | undefined>
  | readonly (string | Uint8Array)[]
  | Iterable<readonly [string, string | readonly string[] | undefined]>
  | null
  | undefined;

/** What stormproof/undici reads of undici's dispatch options; everything else passes through. */
export interface UndiciDispatchArgs {
  /** `http://host:port` (a string or URL); the key of the origin's budget and breaker. */
  origin?: string | URL;
  /** The path with its query: `/items?page=2`. */
  path: string;
  /** The request method. */
  method: string;
  /** The request headers. */
  headers?: UndiciHeaders | unknown;
  /** The request body: a string, bytes, a stream, an (async) iterable, a Blob, FormData, null. */
  body?: unknown;
  /** Set for a CONNECT or an upgrade (WebSocket): such requests are never retried. */
  upgrade?: string | boolean | null;
  // undici's other options (query, signal, headersTimeout, ...) are passed on as they are.
}

/** The controller undici hands a handler: pause, resume and abort one request. */
export interface UndiciController {
  abort(reason: Error): void;
  pause(): void;
  resume(): void;
  readonly aborted: boolean;
  readonly paused: boolean;
  readonly reason: Error | null;
  // undici's own controllers carry more (rawHeaders, rawTrailers); the types stay open.
}

/** The current handler API of undici (7 and later). Every method is optional. */
export interface UndiciHandler {
  onRequestStart?(controller: UndiciController, context: unknown): void;
  onRequestUpgrade?(
    controller: UndiciController,
    statusCode: number,
    headers: Record<string, string | string[]>,
    socket: unknown,
  ): void;
  onResponseStart?(
    controller: UndiciController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
    statusMessage?: string,
  ): void;
  onResponseData?(controller: UndiciController, chunk: Uint8Array): void;
  onResponseEnd?(
    controller: UndiciController,
    trailers: Record<string, string | string[] | undefined>,
  ): void;
  onResponseError?(controller: UndiciController, error: Error): void;
}

/** undici's `dispatch(options, handler)`: false when the dispatcher is busy (drain before more). */
export type UndiciDispatch = (options: UndiciDispatchArgs, handler: UndiciHandler) => boolean;

/**
 * The next dispatch, as `Dispatcher.compose` hands it to an interceptor. Its arguments are typed
 * `never` so that undici 7's and 8's own `Dispatcher['dispatch']`, whose option and handler types
 * are narrower than {@link UndiciDispatchArgs} and differ between versions, fits it; the
 * interceptor calls it with the options and a handler of the current API.
 */
export type UndiciNextDispatch = (options: never, handler: never) => boolean;

/** An interceptor for `Dispatcher.compose`: wraps the next dispatch in its own. */
export type UndiciInterceptor = (dispatch: UndiciNextDispatch) => UndiciDispatch;
