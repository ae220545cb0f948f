// The web-standard adapter: Request in, Response out (Hono, Bun, Deno, workers, any fetch
// handler). Everything it decides comes from the engine.
import { OVERLOADED_HEADER } from '../../core/classify.js';
import { shedderOf } from '../engine.js';
import type { ShedderOptions } from '../options.js';
import type { Shedder } from '../shedder.js';

/** A fetch-style handler's middleware: answer itself, or pass the request on to `next`. */
export type WebMiddleware = ((
  request: Request,
  next: (request: Request) => Promise<Response>,
) => Promise<Response>) & { readonly shedder: Shedder };

/**
 * Sheds load in front of a fetch-style handler. A rejection is answered from the headers alone,
 * before the body is read; the body is cancelled so nothing is left buffered.
 *
 * @example
 * ```ts
 * const shed = webMiddleware({ status: 429 });
 * export default { fetch: (request: Request) => shed(request, (r) => app.fetch(r)) };
 * ```
 */
export function webMiddleware(options?: Shedder | ShedderOptions): WebMiddleware {
  const shedder = shedderOf(options);
  const middleware = async (
    request: Request,
    next: (request: Request) => Promise<Response>,
  ): Promise<Response> => {
    const header = (name: string) => request.headers.get(name);
    const pending = shedder.admit(header, request.signal);
    const admission = pending instanceof Promise ? await pending : pending;
    if (!admission.admitted) {
      if (request.body !== null && !request.bodyUsed) request.body.cancel().catch(() => {});
      return new Response(null, { status: admission.status, headers: [...admission.headers] });
    }
    let response: Response;
    try {
      response = await next(request);
    } catch (error) {
      admission.finish(undefined);
      throw error;
    }
    const stop = admission.finish(response.status, (name) => response.headers.get(name));
    if (!stop || response.headers.has(OVERLOADED_HEADER)) return response;
    // Gateway mode: the downstream said "do not retry"; say the same upward, in our words.
    const headers = new Headers(response.headers);
    headers.set(OVERLOADED_HEADER, '1');
    return new Response(response.body, {
      status: response.status,
      statusText: response.statusText,
      headers,
    });
  };
  return Object.assign(middleware, { shedder });
}
