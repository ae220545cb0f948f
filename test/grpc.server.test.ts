// stormproof/grpc on the server: createAdmissionInterceptor puts stormproof/server's engine in
// front of a real grpc-js server on 127.0.0.1. Calls are held by the handlers until a test ends
// them, so the concurrency is exact; clients are plain grpc-js, stormproof's retry interceptor,
// or grpc-js's built-in retries.
import {
  Client,
  credentials,
  Metadata,
  Server,
  ServerCredentials,
  type ServerDuplexStream,
  type ServerReadableStream,
  type ServerUnaryCall,
  type ServerWritableStream,
  type ServiceError,
  type sendUnaryData,
} from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { createAdmissionInterceptor, createRetryInterceptor } from '../src/grpc/index.js';
import {
  type Admission,
  createShedder,
  type Shedder,
  type ShedderOptions,
} from '../src/server/index.js';
import { flush, ManualClock } from './helpers/clocks.js';
import { call, connect, definition, SERVICE } from './helpers/grpc.js';

const OK = 0;
const CANCELLED = 1;
const UNKNOWN = 2;
const INVALID_ARGUMENT = 3;
const DEADLINE_EXCEEDED = 4;
const UNAVAILABLE = 14;

type Json = Record<string, unknown>;
type Kind = keyof typeof definition;

/** A call the server holds until the test ends it. */
interface Held {
  readonly kind: Kind;
  readonly previous: string | undefined;
  end(code?: number, trailers?: Metadata): void;
}

/** A grpc-js server whose handlers hold every call (or answer at once when `hold` is off). */
class HoldingServer {
  readonly held: Held[] = [];
  hold = true;
  address = '';
  private readonly server: Server;

  constructor(interceptor: ReturnType<typeof createAdmissionInterceptor>) {
    this.server = new Server({ interceptors: [interceptor] });
  }

  /** Calls whose handler ran. */
  ran = 0;

  private admit(kind: Kind, metadata: Metadata, end: Held['end']): void {
    this.ran++;
    const previous = metadata.get('grpc-previous-rpc-attempts')[0];
    const held = { kind, previous: previous === undefined ? undefined : String(previous), end };
    if (this.hold) this.held.push(held);
    else end();
  }

  async start(): Promise<this> {
    const failure = (code: number, trailers = new Metadata()): Partial<ServiceError> => ({
      code,
      details: `ended ${code}`,
      metadata: trailers,
    });
    this.server.addService(definition, {
      Unary: (call: ServerUnaryCall<Json, Json>, callback: sendUnaryData<Json>) => {
        if (call.request.throw) throw new Error('handler bug');
        this.admit('Unary', call.metadata, (code, trailers) =>
          code ? callback(failure(code, trailers)) : callback(null, { ok: 1 }),
        );
      },
      ServerStream: (call: ServerWritableStream<Json, Json>) => {
        call.write({ n: 0 });
        this.admit('ServerStream', call.metadata, (code, trailers) =>
          code ? call.emit('error', failure(code, trailers)) : call.end(),
        );
      },
      ClientStream: (call: ServerReadableStream<Json, Json>, callback: sendUnaryData<Json>) => {
        call.on('data', () => {});
        this.admit('ClientStream', call.metadata, (code, trailers) =>
          code ? callback(failure(code, trailers)) : callback(null, { ok: 1 }),
        );
      },
      Bidi: (call: ServerDuplexStream<Json, Json>) => {
        call.on('data', (m: Json) => call.write(m));
        this.admit('Bidi', call.metadata, (code, trailers) =>
          code ? call.emit('error', failure(code, trailers)) : call.end(),
        );
      },
    });
    const port = await new Promise<number>((resolve, reject) =>
      this.server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) =>
        error ? reject(error) : resolve(bound),
      ),
    );
    this.address = `127.0.0.1:${port}`;
    return this;
  }

  /** Ends the oldest held call. */
  release(code?: number, trailers?: Metadata): void {
    this.held.shift()?.end(code, trailers);
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.tryShutdown(() => resolve()));
  }
}

/** An engine that records, per ticket, every status its `finish` was given. */
function counted(shedder: Shedder): {
  shedder: Shedder;
  finishes: Array<Array<number | undefined>>;
} {
  const finishes: Array<Array<number | undefined>> = [];
  const wrap = (admission: Admission): Admission => {
    if (!admission.admitted) return admission;
    const seen: Array<number | undefined> = [];
    finishes.push(seen);
    return {
      admitted: true,
      retry: admission.retry,
      finish: (status, header) => {
        seen.push(status);
        return admission.finish(status, header);
      },
    };
  };
  const wrapped: Shedder = {
    gateway: shedder.gateway,
    admit: (header, caller) => {
      const pending = shedder.admit(header, caller);
      return pending instanceof Promise ? pending.then(wrap) : wrap(pending);
    },
    admitOrQueue: (header, settle, caller) => {
      const now = shedder.admitOrQueue(header, (admission) => settle(wrap(admission)), caller);
      return now === undefined ? undefined : wrap(now);
    },
    reopen: () => shedder.reopen(),
    stats: () => shedder.stats(),
    close: () => shedder.close(),
  };
  return { shedder: wrapped, finishes };
}

const servers: HoldingServer[] = [];
const clients: Client[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  for (const s of servers) while (s.held.length > 0) s.release();
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

async function serve(options: Shedder | ShedderOptions) {
  const admission = createAdmissionInterceptor(options);
  const server = await new HoldingServer(admission).start();
  servers.push(server);
  return { server, shedder: admission.shedder };
}

function plainClient(address: string, options: ConstructorParameters<typeof Client>[2] = {}) {
  const client = new Client(address, credentials.createInsecure(), options);
  clients.push(client);
  return client;
}

/** One unary call; resolves with its status code and pushback trailer values. */
function unary(
  client: Client,
  { previous, deadlineMs, send = {} }: { previous?: number; deadlineMs?: number; send?: Json } = {},
): Promise<{ code: number; pushback: string[] }> {
  const metadata = new Metadata();
  if (previous !== undefined) metadata.set('grpc-previous-rpc-attempts', String(previous));
  const m = definition.Unary;
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      m.path,
      m.requestSerialize,
      m.responseDeserialize,
      send,
      metadata,
      deadlineMs === undefined ? {} : { deadline: Date.now() + deadlineMs },
      (error: ServiceError | null) =>
        resolve({
          code: error?.code ?? OK,
          pushback: (error?.metadata.get('grpc-retry-pushback-ms') ?? []).map(String),
        }),
    );
  });
}

/** Waits (real time, bounded) until `ready` holds. */
async function until(ready: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400 && !ready(); i++) await new Promise((r) => setTimeout(r, 5));
  if (!ready()) throw new Error(`timed out waiting for ${what}`);
}

/** Random values in turn, for spread waits. */
function sequence(...values: number[]): () => number {
  let i = 0;
  return () => values[i++ % values.length]!;
}

describe('createAdmissionInterceptor options', () => {
  it('checks options as createShedder does, and reuses an engine it is given', () => {
    expect(() => createAdmissionInterceptor(null as never)).toThrow(/options must be an object/);
    expect(() => createAdmissionInterceptor({ limit: 0 })).toThrow(/limit/);
    expect(() => createAdmissionInterceptor({ retryShare: null as never })).toThrow(
      /retryShare must not be null/,
    );
    const shedder = createShedder({ limit: 4 });
    expect(createAdmissionInterceptor(shedder).shedder).toBe(shedder);
    // The default is gradient2, which holds its initial limit (20) from the first call.
    expect(createAdmissionInterceptor().shedder.stats().limit).toBe(20);
  });
});

describe('createAdmissionInterceptor sheds with gRPC answers', () => {
  it('answers past a fixed limit with UNAVAILABLE and a spread pushback, one per caller', async () => {
    const { server, shedder } = await serve({
      limit: 2,
      queue: false,
      ramp: false,
      random: sequence(0, 0.5, 0.999),
    });
    const client = plainClient(server.address);
    const first = [unary(client), unary(client)];
    await until(() => server.held.length === 2, 'two held calls');
    const shed = await Promise.all([unary(client), unary(client), unary(client)]);
    expect(shed).toEqual([
      { code: UNAVAILABLE, pushback: ['1000'] },
      { code: UNAVAILABLE, pushback: ['3000'] },
      { code: UNAVAILABLE, pushback: ['4996'] },
    ]);
    expect(server.ran).toBe(2); // the shed calls never reached a handler
    expect(shedder.stats()).toMatchObject({ inflight: 2, shed: { limit: 3 } });
    server.release();
    server.release();
    expect(await Promise.all(first)).toEqual([
      { code: OK, pushback: [] },
      { code: OK, pushback: [] },
    ]);
    expect(shedder.stats().inflight).toBe(0);
  });

  it('sends no pushback for a fixed wait: the client keeps its own jittered backoff', async () => {
    const { server } = await serve({
      limit: 1,
      queue: false,
      ramp: false,
      retryAfter: { mode: 'fixed', ms: 2000 },
    });
    const client = plainClient(server.address);
    void unary(client);
    await until(() => server.held.length === 1, 'a held call');
    expect(await unary(client)).toEqual({ code: UNAVAILABLE, pushback: [] });
  });

  it.each([0, 40])(
    "is waited exactly by stormproof's retry interceptor (clock late by %i ms), and the retry gets in",
    async (lateMs) => {
      const { server, shedder } = await serve({
        limit: 1,
        queue: false,
        ramp: false,
        random: () => 0.125, // 1000 + 0.125 x 4000 = 1500 ms
      });
      const clock = new ManualClock({ lateMs });
      const retrying = connect(server.address, {
        interceptor: createRetryInterceptor({ clock, random: () => 0.99, budget: false }),
      });
      clients.push(retrying);
      const holder = plainClient(server.address);
      const held = unary(holder);
      await until(() => server.held.length === 1, 'a held call');
      const outcome = call(retrying, 'Unary');
      await until(() => clock.sleeps.length === 1, 'the client to wait');
      expect(clock.sleeps).toEqual([1500]); // exact: no jitter on a pushback
      server.hold = false;
      server.release();
      await held;
      await clock.advance(1500 + lateMs);
      expect((await outcome).code).toBe(OK);
      expect(server.ran).toBe(2);
      expect(shedder.stats()).toMatchObject({ admitted: 2, inflight: 0, shed: { limit: 1 } });
      expect(clock.pending).toEqual({ timers: 0, listeners: 0 });
    },
  );
});

describe('createAdmissionInterceptor: overloaded, do not retry', () => {
  it("answers a negative pushback that stops stormproof's retry interceptor", async () => {
    const { server, shedder } = await serve({
      limit: 1,
      queue: false,
      ramp: false,
      serviceOverloaded: () => true,
    });
    const holder = plainClient(server.address);
    void unary(holder);
    await until(() => server.held.length === 1, 'a held call');
    expect(await unary(holder)).toEqual({ code: UNAVAILABLE, pushback: ['-1'] });
    const retrying = connect(server.address, {
      interceptor: createRetryInterceptor({ maxAttempts: 5, baseDelayMs: 1, budget: false }),
    });
    clients.push(retrying);
    expect((await call(retrying, 'Unary')).code).toBe(UNAVAILABLE);
    // One attempt each: the retry interceptor did not try again.
    expect(shedder.stats().shed.limit).toBe(2);
  });

  it("stops grpc-js's built-in retries, which do wait out a spread pushback", async () => {
    let overloaded = true;
    let server: HoldingServer | undefined;
    const started = await serve({
      limit: 1,
      queue: false,
      ramp: false,
      retryAfter: { mode: 'spread', minMs: 150, maxMs: 150 },
      serviceOverloaded: () => overloaded,
      // The held call ends as soon as a shed answer is on its way, so the retry finds room.
      onShed: () => {
        if (!overloaded) setImmediate(() => server?.release());
      },
    });
    server = started.server;
    const client = plainClient(server.address, {
      'grpc.service_config': JSON.stringify({
        methodConfig: [
          {
            name: [{ service: SERVICE }],
            retryPolicy: {
              maxAttempts: 4,
              initialBackoff: '0.01s',
              maxBackoff: '0.01s',
              backoffMultiplier: 1,
              retryableStatusCodes: ['UNAVAILABLE'],
            },
          },
        ],
      }),
    });
    void unary(client);
    await until(() => server.held.length === 1, 'a held call');
    expect(await unary(client)).toEqual({ code: UNAVAILABLE, pushback: ['-1'] });
    expect(started.shedder.stats().shed.limit).toBe(1); // grpc-js did not retry

    overloaded = false;
    server.hold = false;
    const start = performance.now();
    expect(await unary(client)).toEqual({ code: OK, pushback: [] });
    expect(performance.now() - start).toBeGreaterThanOrEqual(150 - 5);
    expect(started.shedder.stats().shed.limit).toBe(2); // shed once, then let in
  });
});

describe('createAdmissionInterceptor: retries shed first', () => {
  it('never runs past the limit: a first attempt waits for retries that fill it, then goes before the queued retry', async () => {
    // Waits long enough never to time out on a busy machine, and in arrival order (no LIFO).
    const queue = { capacity: 10, targetMs: 60_000, intervalMs: 60_000 };
    const { server, shedder } = await serve({ limit: 10, queue, ramp: false });
    const client = plainClient(server.address);
    const calls = Array.from({ length: 10 }, () => unary(client, { previous: 1 }));
    await until(() => server.held.length === 10, 'ten held retries');
    calls.push(unary(client, { previous: 2 }));
    await until(() => shedder.stats().queued === 1, 'the retry queued');
    calls.push(unary(client));
    await until(() => shedder.stats().queued === 2, 'the first attempt queued');
    expect(shedder.stats().inflight).toBe(10);
    server.release();
    // The retries hold more than their 10 % share: the first attempt goes first.
    await until(() => server.held.length === 10 && shedder.stats().queued === 1, 'one served');
    expect(server.held.at(-1)?.previous).toBeUndefined();
    expect(shedder.stats().inflight).toBe(10);
    while (server.held.length > 0 || shedder.stats().queued > 0) {
      server.release();
      await until(() => shedder.stats().inflight === server.held.length, 'the next one held');
    }
    await Promise.all(calls);
    expect(shedder.stats()).toMatchObject({ inflight: 0, admitted: 12 });
  });

  it('pushes a queued retry out of a full queue for a first attempt', async () => {
    const { server, shedder } = await serve({ limit: 10, queue: { capacity: 1 }, ramp: false });
    const client = plainClient(server.address);
    // Both shares in use: 9 first attempts (90 %) and 1 retry (10 %).
    const running = Array.from({ length: 9 }, () => unary(client));
    running.push(unary(client, { previous: 1 }));
    await until(() => server.held.length === 10, 'ten held calls');
    const retry = unary(client, { previous: 1 });
    await until(() => shedder.stats().queued === 1, 'the retry queued');
    const first = unary(client);
    expect(await retry).toEqual({ code: UNAVAILABLE, pushback: [expect.stringMatching(/^\d+$/)] });
    expect(shedder.stats()).toMatchObject({ queued: 1, shed: { 'queue-full': 1 } });
    server.hold = false;
    server.release();
    expect((await first).code).toBe(OK);
    while (server.held.length > 0) server.release();
    await Promise.all(running);
    expect(shedder.stats()).toMatchObject({ inflight: 0, queued: 0, admitted: 11 });
  });
});

describe('createAdmissionInterceptor gives every place back, once', () => {
  it('when a call ends: OK, an error, a handler that throws, all four kinds', async () => {
    const { shedder, finishes } = counted(createShedder({ limit: 100, ramp: false, queue: false }));
    const { server } = await serve(shedder);
    server.hold = false;
    const client = plainClient(server.address);
    for (const kind of Object.keys(definition) as Kind[]) {
      expect((await call(client, kind)).code).toBe(OK);
    }
    expect((await unary(client, { send: { throw: true } })).code).toBe(UNKNOWN);
    server.hold = true;
    for (const [kind, code] of [
      ['Unary', INVALID_ARGUMENT],
      ['Bidi', UNAVAILABLE],
    ] as const) {
      const outcome = call(client, kind);
      await until(() => server.held.length === 1, 'a held call');
      server.release(code);
      expect((await outcome).code).toBe(code);
    }
    await until(() => finishes.every((f) => f.length > 0), 'every ticket back');
    expect(finishes).toEqual([[200], [200], [200], [200], [500], [400], [503]]);
    expect(shedder.stats().inflight).toBe(0);
  });

  it('when the caller cancels or the deadline passes, and never twice', async () => {
    const { shedder, finishes } = counted(createShedder({ limit: 100, ramp: false, queue: false }));
    const { server } = await serve(shedder);
    const client = plainClient(server.address);
    for (const kind of Object.keys(definition) as Kind[]) {
      let cancel = () => {};
      const outcome = call(client, kind, { onCall: (c) => (cancel = () => c.cancel()) });
      await until(() => server.held.length === 1, `a held ${kind} call`);
      cancel();
      expect((await outcome).code).toBe(CANCELLED);
      await until(() => finishes.length === 1 && finishes[0]!.length === 1, 'the ticket back');
      server.release(); // the handler answers late: nothing more is given back
      await new Promise((r) => setTimeout(r, 20));
      expect(finishes.splice(0)).toEqual([[499]]);
    }
    const late = unary(client, { deadlineMs: 100 });
    await until(() => server.held.length === 1, 'a held call');
    expect((await late).code).toBe(DEADLINE_EXCEEDED);
    await until(() => finishes.length === 1 && finishes[0]!.length === 1, 'the ticket back');
    server.release();
    await new Promise((r) => setTimeout(r, 20));
    expect(finishes).toEqual([[504]]);
    expect(shedder.stats().inflight).toBe(0);
  });

  it.each([0, 30])(
    'never runs a queued call whose caller left, and holds no timer after (clock late by %i ms)',
    async (lateMs) => {
      const clock = new ManualClock({ lateMs });
      const { server, shedder } = await serve({
        clock,
        limit: 1,
        queue: { capacity: 10, intervalMs: 100 },
        ramp: false,
      });
      const client = plainClient(server.address);
      const first = unary(client);
      await until(() => server.held.length === 1, 'a held call');
      // Leaves while queued: its deadline passes on the server too.
      const gone = unary(client, { deadlineMs: 100 });
      await until(() => shedder.stats().queued === 1, 'a queued call');
      expect((await gone).code).toBe(DEADLINE_EXCEEDED);
      await new Promise((r) => setTimeout(r, 50));
      // Room again: the engine would admit it now, but its caller is gone.
      server.release();
      expect((await first).code).toBe(OK);
      expect(shedder.stats()).toMatchObject({ queued: 0, inflight: 0, shed: { abandoned: 1 } });
      expect(server.ran).toBe(1);
      expect(clock.pending).toEqual({ timers: 0, listeners: 0 });
      // Another waits behind a held call, and is answered when its time in the queue is up,
      // as late as the clock fires.
      const second = unary(client);
      await until(() => server.held.length === 1, 'a held call');
      const waits = unary(client);
      await until(() => shedder.stats().queued === 1, 'a queued call');
      await clock.advance(100 + lateMs + 1);
      expect(await waits).toEqual({
        code: UNAVAILABLE,
        pushback: [expect.stringMatching(/^\d+$/)],
      });
      server.release();
      expect((await second).code).toBe(OK);
      await flush();
      expect(server.ran).toBe(2);
      expect(shedder.stats()).toMatchObject({
        inflight: 0,
        queued: 0,
        admitted: 2,
        shed: { abandoned: 1, 'queue-timeout': 1 },
      });
      expect(clock.pending).toEqual({ timers: 0, listeners: 0 });
    },
  );
});

describe('createAdmissionInterceptor in gateway mode', () => {
  it('passes a downstream "do not retry" upward as a negative pushback', async () => {
    const { server } = await serve({ gateway: true, ramp: false });
    const client = plainClient(server.address);
    const outcome = unary(client);
    await until(() => server.held.length === 1, 'a held call');
    const trailers = new Metadata();
    trailers.set('stormproof-overloaded', '1');
    server.release(UNAVAILABLE, trailers);
    expect(await outcome).toEqual({ code: UNAVAILABLE, pushback: ['-1'] });
  });
});
