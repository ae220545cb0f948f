// The weather API for real: a node:http server on 127.0.0.1 in front of a simulated forecast
// database. It holds at most `apiConnections` requests at once (a quick 503 past that), works
// through them first in first out on `apiThreads` (no cancellation: a request whose caller hung
// up is still worked on, and its answer is thrown away), keeps forecasts in a cache for a TTL,
// and asks the database on a miss, holding its thread meanwhile. The database has a bounded pool and fails over for a while:
// every query then fails after `dbFailMs`. Service times are timers, so the lab measures the
// retries, not the machine's CPU; the real work per request is small (one JSON answer).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { LiveParameters } from './params.js';
import { PerSecond } from './series.js';
import { closeServer, listenOnLoopback, Sockets } from './sockets.js';
import { epochMs, TimerSet } from './timers.js';

/** What the API server counted, per second of the run. */
export interface ApiCounts {
  /** Requests that reached the API server. */
  readonly calls: number[];
  /** Of them, rejected at once: every connection was busy. */
  readonly rejected: number[];
}

/** A running API server. */
export interface ApiServer {
  readonly url: string;
  readonly counts: ApiCounts;
  /** Closes the server and its connections, and clears every timer. */
  close(): Promise<void>;
}

/** A fixed number of slots, handed out first in first out. */
class Pool {
  #busy = 0;
  readonly #waiting: Array<() => void> = [];
  constructor(private readonly size: number) {}

  async take(): Promise<void> {
    if (this.#busy >= this.size) await new Promise<void>((r) => this.#waiting.push(r));
    else this.#busy++;
  }

  /** Hands the slot straight to the next in line, or gives it back. */
  give(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#busy--;
  }
}

/** The forecast database: a pool of `dbPool` connections, and its failover. */
class Database {
  readonly #pool: Pool;
  constructor(
    private readonly p: LiveParameters,
    private readonly timers: TimerSet,
    private readonly downFromMs: number,
    private readonly downUntilMs: number,
  ) {
    this.#pool = new Pool(p.dbPool);
  }

  /** One query: resolves true with an answer, false when the database failed it. */
  async query(): Promise<boolean> {
    await this.#pool.take();
    const now = epochMs();
    const down = now >= this.downFromMs && now < this.downUntilMs;
    await this.timers.sleep(down ? this.p.dbFailMs : this.p.dbQueryMs);
    this.#pool.give();
    return !down;
  }
}

/** Starts the API server on 127.0.0.1, port 0, with the database down in [downFromMs, downUntilMs). */
export async function startApiServer(
  p: LiveParameters,
  startMs: number,
  seconds: number,
  downFromMs: number,
  downUntilMs: number,
): Promise<ApiServer> {
  const timers = new TimerSet();
  const db = new Database(p, timers, downFromMs, downUntilMs);
  const calls = new PerSecond(startMs, seconds);
  const rejected = new PerSecond(startMs, seconds);
  /** Forecast number -> when its cached answer expires (epoch ms). */
  const cache = new Map<number, number>();
  let held = 0;
  const threads = new Pool(p.apiThreads);

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const now = epochMs();
    calls.add(now);
    if (held >= p.apiConnections) {
      rejected.add(now);
      res.writeHead(503, { 'content-length': 0 }).end();
      return;
    }
    held++;
    let status = 200;
    const forecast = Number(/^\/forecast\/(\d+)/.exec(req.url ?? '')?.[1] ?? 0);
    // A thread holds the request from the front of the line to its answer, database call included.
    await threads.take();
    try {
      await timers.sleep(p.serviceMs);
      if ((cache.get(forecast) ?? 0) <= epochMs()) {
        if (await db.query()) cache.set(forecast, epochMs() + p.cacheTtlMs);
        else status = 503;
      }
    } finally {
      threads.give();
      held--;
    }
    // Its caller (the gateway) hung up, after its own time limit: the work is thrown away.
    if (res.destroyed) return;
    if (status !== 200) {
      res.writeHead(status, { 'content-length': 0 }).end();
      return;
    }
    const body = JSON.stringify({
      forecast,
      hourly: Array.from({ length: 24 }, (_, h) => Math.round(20 + 8 * Math.sin(h + forecast))),
    });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
    res.end(body);
  };

  const server: Server = createServer({ keepAlive: true }, (req, res) => {
    // The request has no body; resume so the socket is free for the next one.
    req.resume();
    void handle(req, res);
  });
  const sockets = new Sockets();
  const url = await listenOnLoopback(server, sockets);
  return {
    url,
    counts: {
      calls: calls.counts,
      rejected: rejected.counts,
    },
    close: () => {
      timers.clear();
      return closeServer(server, sockets);
    },
  };
}
