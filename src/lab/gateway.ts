// The API gateway: a node:http server on 127.0.0.1 that passes each request to the API server
// over keep-alive connections, with a time limit per call. The old stack's gateway retries a
// 5xx or a timeout at once, up to `tries` calls, and stops trying for a caller that hung up (as
// nginx and Envoy do; the API server is not told, its call runs on and the answer is thrown
// away). In front of it, optionally, stormproof/server's Node middleware: the edge.
import {
  Agent,
  createServer,
  type IncomingMessage,
  request,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { NodeMiddleware } from '../server/index.js';
import { PerSecond } from './series.js';
import { closeServer, listenOnLoopback, Sockets } from './sockets.js';
import { epochMs } from './timers.js';

/** What the gateway counted, per second of the run. */
export interface GatewayCounts {
  /** Of them, answered by the shedder without calling the API server. */
  readonly shed: number[];
  /** API answers that came back for a caller that had hung up (wasted work). */
  readonly wasted: number[];
}

/** A running gateway. */
export interface Gateway {
  readonly url: string;
  readonly counts: GatewayCounts;
  close(): Promise<void>;
}

/** How the gateway behaves. */
export interface GatewaySetup {
  /** Calls per request to the API server: 4 for the old stack (3 retries, no wait), else 1. */
  readonly tries: number;
  readonly timeoutMs: number;
  /** stormproof/server in front, or none. */
  readonly shed?: NodeMiddleware | undefined;
}

/** Paths the gateway passes on; anything else is a 404. */
const FORECAST = /^\/forecast\/\d{1,6}$/;
/** Request headers passed on to the API server (the attempt headers, so it can see retries). */
const PASSED = ['stormproof-attempt'];

interface Answer {
  readonly status: number;
  readonly body: Buffer;
}
const BAD_GATEWAY: Answer = { status: 502, body: Buffer.alloc(0) };
const GATEWAY_TIMEOUT: Answer = { status: 504, body: Buffer.alloc(0) };

/** Starts the gateway on 127.0.0.1, port 0, in front of `apiUrl`. */
export async function startGateway(
  apiUrl: string,
  setup: GatewaySetup,
  startMs: number,
  seconds: number,
): Promise<Gateway> {
  const api = new URL(apiUrl);
  const agent = new Agent({ keepAlive: true });
  const sockets = new Sockets();
  const shed = new PerSecond(startMs, seconds);
  const wasted = new PerSecond(startMs, seconds);

  /** One call to the API server: its answer, or a 504 when it took longer than the limit. */
  const call = (path: string, headers: Record<string, string>, gone: () => boolean) =>
    new Promise<Answer>((resolve) => {
      const upstream = request(
        { host: api.hostname, port: api.port, path, agent, headers, timeout: setup.timeoutMs },
        (answer) => {
          const chunks: Buffer[] = [];
          answer.on('data', (chunk: Buffer) => chunks.push(chunk));
          answer.on('end', () => {
            if (gone()) wasted.add(epochMs());
            resolve({ status: answer.statusCode ?? 502, body: Buffer.concat(chunks) });
          });
          answer.on('error', () => resolve(BAD_GATEWAY));
        },
      );
      upstream.on('socket', sockets.add);
      upstream.on('timeout', () => {
        upstream.destroy();
        resolve(GATEWAY_TIMEOUT);
      });
      upstream.on('error', () => resolve(BAD_GATEWAY));
      upstream.end();
    });

  const forward = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = req.url ?? '/';
    if (req.method !== 'GET' || !FORECAST.test(path)) {
      res.writeHead(404, { 'content-length': 0 }).end();
      return;
    }
    const headers: Record<string, string> = {};
    for (const name of PASSED) {
      const value = req.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    const gone = () => res.destroyed;
    let answer = BAD_GATEWAY;
    for (let attempt = 0; attempt < setup.tries && !gone(); attempt++) {
      answer = await call(path, headers, gone);
      if (answer.status < 500) break;
    }
    if (gone()) return;
    const type = answer.status === 200 ? { 'content-type': 'application/json' } : {};
    res.writeHead(answer.status, { ...type, 'content-length': answer.body.length });
    res.end(answer.body);
  };

  const server: Server = createServer({ keepAlive: true }, (req, res) => {
    req.resume();
    if (setup.shed === undefined) {
      void forward(req, res);
      return;
    }
    let admitted = false;
    res.once('finish', () => {
      if (!admitted) shed.add(epochMs());
    });
    setup.shed(req, res, () => {
      admitted = true;
      void forward(req, res);
    });
  });
  const url = await listenOnLoopback(server, sockets);
  return {
    url,
    counts: { shed: shed.counts, wasted: wasted.counts },
    close: async () => {
      agent.destroy();
      await closeServer(server, sockets);
    },
  };
}
