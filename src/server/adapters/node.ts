// The Node adapter: (req, res, next) middleware for node:http, Express and Connect. The only
// file of stormproof/server that knows Node's types.
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { OVERLOADED_HEADER } from '../../core/classify.js';
import { shedderOf } from '../engine.js';
import type { ShedderOptions } from '../options.js';
import type { HeaderReader } from '../request-info.js';
import type { Shedder } from '../shedder.js';
import { saysDoNotRetry } from '../throttle.js';

/** Connect-style middleware; `next(error)` is never called by it. */
export type NodeMiddleware = ((
  req: IncomingMessage,
  res: ServerResponse,
  next: (error?: Error) => void,
) => void) & { readonly shedder: Shedder };

/**
 * Reads a Node request's header by lower-case name. Node joins the lines of a repeated header
 * with ", " (an array only for `set-cookie`); the engine reads the first value of such a list.
 */
export function nodeHeaderReader(req: IncomingMessage): HeaderReader {
  return (name) => {
    const value = req.headers[name];
    return Array.isArray(value) ? value[0] : value;
  };
}

function responseHeader(res: ServerResponse): HeaderReader {
  return (name) => {
    const value = res.getHeader(name);
    if (value === undefined) return undefined;
    return Array.isArray(value) ? value[0] : String(value);
  };
}

/** Gateway mode: marks the answer "do not retry" when the downstream's answer said so. */
function markDoNotRetry(res: ServerResponse): void {
  const writeHead = res.writeHead;
  res.writeHead = function (this: ServerResponse, ...args: unknown[]) {
    const given = args.find(
      (a): a is OutgoingHttpHeaders => typeof a === 'object' && a !== null && !Array.isArray(a),
    );
    const own = responseHeader(res);
    const header: HeaderReader = (name) => {
      const value = given?.[name];
      return value === undefined ? own(name) : Array.isArray(value) ? value[0] : String(value);
    };
    if (saysDoNotRetry(header) && !res.headersSent) res.setHeader(OVERLOADED_HEADER, '1');
    return (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args);
  } as ServerResponse['writeHead'];
}

/**
 * A queued request's caller: gone once its socket is. A class, because V8 builds an object
 * literal with a getter through a slow runtime path, about half a microsecond per request.
 */
class SocketCaller {
  constructor(private readonly req: IncomingMessage) {}
  get aborted(): boolean {
    return this.req.socket.destroyed;
  }
}

/**
 * Sheds load in front of a node:http, Express or Connect app. A rejection is answered from the
 * headers alone, before any body is read; a rejected request with a body gets
 * `connection: close`, so Node closes the socket instead of reading the body.
 *
 * @example
 * ```ts
 * const shed = nodeMiddleware({ limit: { kind: 'gradient2' } });
 * app.use(shed); // Express or Connect
 * http.createServer((req, res) => shed(req, res, () => handler(req, res)));
 * ```
 */
export function nodeMiddleware(options?: Shedder | ShedderOptions): NodeMiddleware {
  const shedder = shedderOf(options);
  const middleware = (req: IncomingMessage, res: ServerResponse, next: (error?: Error) => void) => {
    const pending = shedder.admit(nodeHeaderReader(req), new SocketCaller(req));
    if (pending instanceof Promise) pending.then((admission) => proceed(admission, req, res, next));
    else proceed(pending, req, res, next);
  };
  const proceed = (
    admission: Awaited<ReturnType<Shedder['admit']>>,
    req: IncomingMessage,
    res: ServerResponse,
    next: (error?: Error) => void,
  ) => {
    if (!admission.admitted) {
      if (res.headersSent || res.destroyed) return;
      const headers: OutgoingHttpHeaders = { 'content-length': 0 };
      for (const [name, value] of admission.headers) headers[name] = value;
      const hasBody =
        req.headers['transfer-encoding'] !== undefined ||
        (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');
      if (hasBody) headers.connection = 'close';
      res.writeHead(admission.status, headers);
      res.end();
      return;
    }
    if (shedder.gateway) markDoNotRetry(res);
    res.once('close', () => {
      admission.finish(res.writableFinished ? res.statusCode : undefined, responseHeader(res));
    });
    next();
  };
  return Object.assign(middleware, { shedder });
}
