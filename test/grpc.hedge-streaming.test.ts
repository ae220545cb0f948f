// gRFC A6 hedging of streamed requests (client-streaming, bidi) and what the hedging interceptor
// reports, on a real grpc-js server on 127.0.0.1 port 0 that watches every attempt: the
// messages it got and when, and whether the client cancelled it. Messages are written over
// time, so a hedge is sent some of them from the buffer and the rest as they come. The A6
// rules run against stormproof's interceptor and against grpc-js's own hedgingPolicy (marked
// `it.fails` where grpc-js does something else); the hooks, reports, events, injected clocks
// and leaks are stormproof's.
import {
  type Client,
  Metadata,
  Server,
  ServerCredentials,
  type ServerDuplexStream,
  type ServerReadableStream,
  type ServiceError,
  type StatusObject,
  type sendUnaryData,
} from '@grpc/grpc-js';
import { AggregationTemporality, MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { type CallMessage, channels, type HedgeMessage } from '../src/core/instrument.js';
import type { GiveUpEvent, SuccessEvent } from '../src/core/options.js';
import { getRetryReport } from '../src/core/report.js';
import { createRetryInterceptor, type RetryInterceptorOptions } from '../src/grpc/index.js';
import { instrument } from '../src/otel/index.js';
import { ManualClock } from './helpers/clocks.js';
import {
  call,
  connect,
  definition,
  type ScriptedServer,
  SERVICE,
  startServer,
} from './helpers/grpc.js';

const OK = 0;
const CANCELLED = 1;
const INVALID_ARGUMENT = 3;
const DEADLINE_EXCEEDED = 4;
const UNAVAILABLE = 14;

type Json = Record<string, unknown>;
const encode = (value: Json): Buffer => Buffer.from(JSON.stringify(value));
const decode = (bytes: Buffer): Json => JSON.parse(bytes.toString()) as Json;

/** What the server does with one attempt. The default: answer OK when the client half-closes. */
interface Plan {
  /** Answer this long after the client half-closes (or after the first message, with `early`). */
  delayMs?: number;
  /** The status to fail with. */
  code?: number;
  pushback?: string;
  /** Answer after the first message, not waiting for the half-close. */
  early?: boolean;
  /** Bidi: send each message back as it arrives. */
  echo?: boolean;
}

/** What the server saw of one attempt. */
interface Watched {
  readonly previous: string | undefined;
  readonly messages: Json[];
  halfClosed: boolean;
  answered: boolean;
  /** The client cancelled it before the server answered. */
  cancelled: boolean;
}

/** A server of the test service whose ClientStream and Bidi methods watch every attempt. */
class WatchingServer {
  readonly attempts: Watched[] = [];
  private plans: Plan[] = [];
  private readonly server = new Server();
  address = '';

  plan(...plans: Plan[]): this {
    this.plans = plans;
    return this;
  }

  async start(): Promise<this> {
    this.server.addService(definition, {
      Unary: (_call: unknown, callback: sendUnaryData<Json>) => callback(null, {}),
      ServerStream: (c: { end(): void }) => c.end(),
      ClientStream: (c: ServerReadableStream<Json, Json>, callback: sendUnaryData<Json>) => {
        const index = this.attempts.length;
        const watched = this.watch(c, (error) =>
          error
            ? callback(error)
            : callback(null, { attempt: index, count: watched.messages.length }),
        );
      },
      Bidi: (c: ServerDuplexStream<Json, Json>) => {
        this.watch(c, (error) => (error ? c.emit('error', error) : c.end()));
      },
    });
    const port = await new Promise<number>((resolve, reject) => {
      this.server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) =>
        error ? reject(error) : resolve(bound),
      );
    });
    this.address = `127.0.0.1:${port}`;
    return this;
  }

  private watch(
    c: ServerReadableStream<Json, Json> | ServerDuplexStream<Json, Json>,
    answer: (error?: Partial<ServiceError>) => void,
  ): Watched {
    const plan = this.plans.shift() ?? {};
    const previous = c.metadata.get('grpc-previous-rpc-attempts')[0];
    const watched: Watched = {
      previous: previous === undefined ? undefined : String(previous),
      messages: [],
      halfClosed: false,
      answered: false,
      cancelled: false,
    };
    this.attempts.push(watched);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const later = () => {
      timer = setTimeout(() => {
        if (watched.cancelled) return;
        watched.answered = true;
        if (!plan.code) {
          answer();
          return;
        }
        const trailers = new Metadata();
        if (plan.pushback !== undefined) trailers.set('grpc-retry-pushback-ms', plan.pushback);
        answer({ code: plan.code, details: `planned ${plan.code}`, metadata: trailers });
      }, plan.delayMs ?? 0);
    };
    c.on('data', (message: Json) => {
      watched.messages.push(message);
      if (plan.echo) (c as ServerDuplexStream<Json, Json>).write({ echo: message });
      if (plan.early && watched.messages.length === 1) later();
    });
    c.on('end', () => {
      watched.halfClosed = true;
      if (!plan.early) later();
    });
    // grpc-js tells a handler its stream closed after every call: a cancel only before its answer.
    c.on('cancelled', () => {
      if (!watched.answered) watched.cancelled = true;
      clearTimeout(timer);
    });
    return watched;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.tryShutdown(() => resolve()));
  }
}

const servers: Array<{ stop(): Promise<void> }> = [];
const clients: Client[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

async function watchingServer(): Promise<WatchingServer> {
  const s = await new WatchingServer().start();
  servers.push(s);
  return s;
}

async function scriptedServer(): Promise<ScriptedServer> {
  const s = await startServer();
  servers.push(s);
  return s;
}

type Implementation = 'stormproof' | 'grpc-js';

/** An A6 hedging policy, as a test states it. */
interface Hedging {
  maxAttempts: number;
  delayMs: number;
  nonFatal?: string[];
  /** The per-call buffer, in bytes (grpc-js: `grpc.per_rpc_retry_buffer_size`). */
  bufferBytes?: number;
}

/** A client that hedges by `policy`: through the interceptor, or by grpc-js's own hedging. */
function hedgingClient(
  implementation: Implementation,
  address: string,
  policy: Hedging,
  extra: Omit<RetryInterceptorOptions, 'hedging'> = {},
): Client {
  let client: Client;
  if (implementation === 'grpc-js') {
    const serviceConfig = {
      methodConfig: [
        {
          name: [{ service: SERVICE }],
          hedgingPolicy: {
            maxAttempts: policy.maxAttempts,
            hedgingDelay: `${policy.delayMs / 1000}s`,
            nonFatalStatusCodes: policy.nonFatal ?? [],
          },
        },
      ],
    };
    const buffer =
      policy.bufferBytes === undefined
        ? {}
        : { 'grpc.per_rpc_retry_buffer_size': policy.bufferBytes };
    client = connect(address, { serviceConfig }, buffer);
  } else {
    const interceptor = createRetryInterceptor({
      hedging: {
        maxAttempts: policy.maxAttempts,
        hedgingDelayMs: policy.delayMs,
        nonFatalStatusCodes: policy.nonFatal ?? [],
      },
      ...(policy.bufferBytes === undefined ? {} : { maxBufferBytes: policy.bufferBytes }),
      budget: false,
      ...extra,
    });
    client = connect(address, { interceptor });
  }
  clients.push(client);
  return client;
}

/** What the caller of one streamed call gets: its status, the error, the answers. */
interface Received {
  readonly status: StatusObject;
  readonly error: ServiceError | null;
  readonly answers: Json[];
}

/** A streamed call the test writes to over time. */
interface Stream {
  write(message: Json): void;
  end(): void;
  cancel(): void;
  readonly answers: Json[];
  readonly done: Promise<Received>;
}

function clientStream(client: Client, deadlineMs?: number): Stream {
  const m = definition.ClientStream;
  const answers: Json[] = [];
  let error: ServiceError | null = null;
  const options = deadlineMs === undefined ? {} : { deadline: Date.now() + deadlineMs };
  const c = client.makeClientStreamRequest(
    m.path,
    encode,
    decode,
    new Metadata(),
    options,
    (e: ServiceError | null, value?: Json) => {
      error = e;
      if (value !== undefined) answers.push(value);
    },
  );
  const done = new Promise<Received>((resolve) => {
    c.on('status', (status: StatusObject) => resolve({ status, error, answers }));
  });
  return {
    write: (message) => c.write(message),
    end: () => c.end(),
    cancel: () => c.cancel(),
    answers,
    done,
  };
}

function bidiStream(client: Client): Stream {
  const m = definition.Bidi;
  const answers: Json[] = [];
  let error: ServiceError | null = null;
  const c = client.makeBidiStreamRequest(m.path, encode, decode, new Metadata());
  c.on('data', (message: Json) => answers.push(message));
  c.on('error', (e: ServiceError) => {
    error = e;
  });
  const done = new Promise<Received>((resolve) => {
    c.on('status', (status: StatusObject) => resolve({ status, error, answers }));
  });
  return {
    write: (message) => c.write(message),
    end: () => c.end(),
    cancel: () => c.cancel(),
    answers,
    done,
  };
}

/** Waits until `condition` holds, checking every 5 ms; fails after `ms`. */
async function until(condition: () => boolean, ms = 3000): Promise<void> {
  const end = performance.now() + ms;
  while (!condition()) {
    if (performance.now() > end) throw new Error(`timed out: ${condition}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const m = (i: number): Json => ({ i });

/** A rule of A6 for streamed requests, run against both implementations. */
interface Rule {
  readonly name: string;
  /** Set when grpc-js 1.14.7 breaks the rule: how. */
  readonly grpcJs?: string;
  run(implementation: Implementation): Promise<void>;
}

const RULES: Rule[] = [
  {
    name: 'a slow first attempt is won by its hedge, sent every message in order, and the loser is cancelled at the server',
    async run(implementation) {
      const s = await watchingServer();
      const client = hedgingClient(implementation, s.address, { maxAttempts: 2, delayMs: 50 });
      s.plan({ delayMs: 5000 }, {});
      const started = performance.now();
      const stream = clientStream(client);
      stream.write(m(1));
      stream.write(m(2));
      // The hedge goes 50 ms later, sent the first two from the buffer; the rest go to both.
      await until(() => s.attempts[1]?.messages.length === 2);
      stream.write(m(3));
      stream.write(m(4));
      stream.end();
      const { status, answers } = await stream.done;
      expect(status.code).toBe(OK);
      expect(answers).toEqual([{ attempt: 1, count: 4 }]);
      expect(performance.now() - started).toBeLessThan(2000);
      expect(s.attempts.map((a) => a.previous)).toEqual([undefined, '1']);
      const all = [m(1), m(2), m(3), m(4)];
      expect(s.attempts[1]!.messages).toEqual(all);
      expect(s.attempts[0]!.messages).toEqual(all);
      await until(() => s.attempts[0]!.cancelled);
      expect(s.attempts[1]!.cancelled).toBe(false);
    },
  },
  {
    name: 'a bidi hedge is sent the messages before it, its first answer commits the call, and the loser gets no more',
    async run(implementation) {
      const s = await watchingServer();
      const client = hedgingClient(implementation, s.address, { maxAttempts: 2, delayMs: 50 });
      s.plan({ delayMs: 5000 }, { echo: true });
      const stream = bidiStream(client);
      stream.write(m(1));
      // The hedge is sent m(1) from the buffer and echoes it: the call is committed to it.
      await until(() => stream.answers.length === 1);
      await until(() => s.attempts[0]!.cancelled);
      stream.write(m(2));
      stream.end();
      const { status, answers } = await stream.done;
      expect(status.code).toBe(OK);
      expect(answers).toEqual([{ echo: m(1) }, { echo: m(2) }]);
      expect(s.attempts[1]!.messages).toEqual([m(1), m(2)]);
      expect(s.attempts[0]!.messages).toEqual([m(1)]);
      expect(s.attempts).toHaveLength(2);
    },
  },
  {
    name: 'a message past the buffer commits the call to an attempt in flight: the other cancelled, no more hedges',
    async run(implementation) {
      const s = await watchingServer();
      const client = hedgingClient(implementation, s.address, {
        maxAttempts: 3,
        delayMs: 200,
        bufferBytes: 1000,
      });
      s.plan({ delayMs: 300 }, { delayMs: 300 }, {});
      const pad = 'x'.repeat(400);
      const stream = clientStream(client);
      stream.write({ pad, i: 1 });
      await until(() => s.attempts[1]?.messages.length === 1);
      stream.write({ pad, i: 2 }); // about 830 bytes kept: still hedged
      await until(() => s.attempts[1]?.messages.length === 2);
      stream.write({ pad, i: 3 }); // past 1,000: committed
      stream.end();
      const { status, answers } = await stream.done;
      expect(status.code).toBe(OK);
      // Both had sent as many: the first of them is kept.
      expect(answers).toEqual([{ attempt: 0, count: 3 }]);
      await until(() => s.attempts[1]!.cancelled);
      // The third attempt was due 400 ms in, before the answer: never sent.
      expect(s.attempts).toHaveLength(2);
    },
  },
  {
    name: 'a non-fatal failure before the half-close sends the next attempt at once, the messages so far from the buffer',
    async run(implementation) {
      const s = await watchingServer();
      const client = hedgingClient(implementation, s.address, {
        maxAttempts: 2,
        delayMs: 5000,
        nonFatal: ['UNAVAILABLE'],
      });
      s.plan({ code: UNAVAILABLE, early: true }, {});
      const stream = clientStream(client);
      stream.write(m(1));
      stream.write(m(2));
      await until(() => s.attempts[1]?.messages.length === 2);
      stream.write(m(3));
      stream.end();
      const { status, answers } = await stream.done;
      expect(status.code).toBe(OK);
      expect(answers).toEqual([{ attempt: 1, count: 3 }]);
      expect(s.attempts[1]!.previous).toBe('1');
    },
  },
];

describe('gRFC A6 hedging of streamed requests, on a real server', () => {
  for (const rule of RULES) {
    describe(rule.name, () => {
      it('stormproof', () => rule.run('stormproof'));
      if (rule.grpcJs === undefined) it('grpc-js', () => rule.run('grpc-js'));
      else it.fails(`grpc-js differs (${rule.grpcJs})`, () => rule.run('grpc-js'));
    });
  }
});

/** Collects the `stormproof:hedge` and `stormproof:call` messages published while `run` runs. */
async function watchEvents<T>(run: () => Promise<T>) {
  const hedges: HedgeMessage[] = [];
  const calls: CallMessage[] = [];
  const onHedge = (message: HedgeMessage) => hedges.push(message);
  const onCall = (message: CallMessage) => calls.push(message);
  channels.hedge.subscribe(onHedge);
  channels.call.subscribe(onCall);
  try {
    const result = await run();
    return { result, hedges, calls };
  } finally {
    channels.hedge.unsubscribe(onHedge);
    channels.call.unsubscribe(onCall);
  }
}

/** The hooks of a hedging interceptor, and what they were told. */
function hooks() {
  const successes: SuccessEvent[] = [];
  const giveUps: GiveUpEvent[] = [];
  return {
    successes,
    giveUps,
    options: {
      onSuccess: (e: SuccessEvent) => successes.push(e),
      onGiveUp: (e: GiveUpEvent) => giveUps.push(e),
    },
  };
}

describe('the hedging interceptor reports what hedging did', () => {
  it('a won streamed call: hedges sent, won and cancelled to onSuccess and the channels', async () => {
    const s = await watchingServer();
    const seen = hooks();
    const client = hedgingClient(
      'stormproof',
      s.address,
      { maxAttempts: 3, delayMs: 150 },
      seen.options,
    );
    s.plan({ delayMs: 5000 }, {});
    const { result, hedges, calls } = await watchEvents(async () => {
      const stream = clientStream(client);
      stream.write(m(1));
      await until(() => s.attempts[1]?.messages.length === 1);
      stream.end();
      return stream.done;
    });
    expect(result.status.code).toBe(OK);
    expect(getRetryReport(result.status)).toBeUndefined();
    expect(seen.giveUps).toEqual([]);
    expect(seen.successes).toHaveLength(1);
    expect(seen.successes[0]).toMatchObject({
      attempts: 1,
      totalDelayMs: 0,
      hedges: { sent: 1, won: 1, cancelled: 1, refused: {} },
    });
    expect(hedges.map((h) => [h.type, h.attempt, h.reason])).toEqual([
      ['sent', 1, undefined],
      ['won', 1, undefined],
      ['cancelled', 1, undefined],
    ]);
    const ref = calls[0]!.call;
    expect(hedges.every((h) => h.call === ref)).toBe(true);
    expect(calls.map((c) => c.type)).toEqual(['start', 'end']);
    expect(calls[1]).toMatchObject({ outcome: 'success', attempts: 1, hedges: 1 });
    await until(() => s.attempts[0]!.cancelled);
  });

  it('a call committed by its buffer: refused for buffer, and given up with body-not-replayable', async () => {
    const s = await watchingServer();
    const seen = hooks();
    const client = hedgingClient(
      'stormproof',
      s.address,
      { maxAttempts: 3, delayMs: 150, bufferBytes: 500, nonFatal: ['UNAVAILABLE'] },
      seen.options,
    );
    s.plan({ code: UNAVAILABLE, delayMs: 100 }, { delayMs: 5000 });
    const pad = 'x'.repeat(400);
    const { result, hedges } = await watchEvents(async () => {
      const stream = clientStream(client);
      stream.write({ pad, i: 1 });
      await until(() => s.attempts[1]?.messages.length === 1);
      stream.write({ pad, i: 2 }); // past 500 bytes
      stream.end();
      return stream.done;
    });
    // Committed to the first attempt (it had sent as many, and came first): its non-fatal
    // failure is the call's, with no attempt after it.
    expect(result.status.code).toBe(UNAVAILABLE);
    expect(s.attempts).toHaveLength(2);
    await until(() => s.attempts[1]!.cancelled);
    const expected = {
      reason: 'body-not-replayable',
      attempts: 1,
      verdict: { retryable: false, kind: 'unavailable' },
      hedges: { sent: 1, won: 0, cancelled: 1, refused: { buffer: 1 } },
    };
    expect(getRetryReport(result.error)).toMatchObject(expected);
    expect(seen.giveUps).toHaveLength(1);
    expect(seen.giveUps[0]).toMatchObject({ ...expected, error: { code: UNAVAILABLE } });
    expect(hedges.map((h) => [h.type, h.reason])).toEqual([
      ['sent', undefined],
      ['refused', 'buffer'],
      ['cancelled', undefined],
    ]);
  });

  it("gives the reason each failed call gave up for: fatal, all failed, throttled, don't-retry pushback", async () => {
    const s = await scriptedServer();
    const seen = hooks();
    const interceptor = createRetryInterceptor({
      hedging: { maxAttempts: 2, hedgingDelayMs: 0, nonFatalStatusCodes: ['UNAVAILABLE'] },
      throttling: { maxTokens: 4, tokenRatio: 0.1 },
      ...seen.options,
    });
    const client = connect(s.address, { interceptor });
    clients.push(client);
    const reasons = async () => {
      const out = await call(client, 'ClientStream', { send: [m(1)] });
      const event = seen.giveUps.at(-1)!;
      return { code: out.code, reason: event.reason, hedges: event.hedges };
    };
    s.script({ code: INVALID_ARGUMENT, delayMs: 30 }, { delayMs: 1000 });
    expect(await reasons()).toEqual({
      code: INVALID_ARGUMENT,
      reason: 'not-retryable',
      hedges: { sent: 1, won: 0, cancelled: 1, refused: {} },
    });
    // Both attempts out (30 ms late), both fail: 4 tokens -> 2.
    s.script({ code: UNAVAILABLE, delayMs: 30 }, { code: UNAVAILABLE, delayMs: 30 });
    expect(await reasons()).toEqual({
      code: UNAVAILABLE,
      reason: 'max-attempts',
      hedges: { sent: 1, won: 0, cancelled: 0, refused: {} },
    });
    // 2 of 4 tokens: at half, no hedge is sent, and the first attempt's failure ends the call.
    s.script({ code: UNAVAILABLE }, {});
    expect(await reasons()).toEqual({
      code: UNAVAILABLE,
      reason: 'budget',
      hedges: { sent: 0, won: 0, cancelled: 0, refused: { budget: 1 } },
    });
    expect(seen.successes).toEqual([]);
  });

  it("reports a don't-retry pushback, a cancelled call and a deadline", async () => {
    const s = await scriptedServer();
    const seen = hooks();
    const client = hedgingClient(
      'stormproof',
      s.address,
      { maxAttempts: 3, delayMs: 150, nonFatal: ['UNAVAILABLE'] },
      seen.options,
    );
    // The hedge is told not to retry: no third attempt; the first fails later, and the call
    // with it, having given up because of the pushback.
    s.script({ code: UNAVAILABLE, delayMs: 500 }, { code: UNAVAILABLE, pushback: '-1' });
    const stopped = await call(client, 'Bidi', { send: [m(1)] });
    expect(stopped.code).toBe(UNAVAILABLE);
    expect(seen.giveUps.at(-1)).toMatchObject({
      reason: 'not-retryable',
      verdict: { retryable: false, kind: 'do-not-retry' },
      hedges: { sent: 1, refused: { pushback: 1 } },
    });
    expect(s.seen).toHaveLength(2);

    s.script({ delayMs: 5000 }, { delayMs: 5000 }, { delayMs: 5000 });
    let cancel = () => {};
    const pending = call(client, 'ClientStream', {
      send: [m(1)],
      onCall: (c) => {
        cancel = () => c.cancel();
      },
    });
    await until(() => s.seen.length === 5); // all three attempts out
    cancel();
    const cancelled = await pending;
    expect(cancelled.code).toBe(CANCELLED);
    expect(seen.giveUps.at(-1)).toMatchObject({
      reason: 'aborted',
      hedges: { sent: 2, cancelled: 0 },
    });
    expect(seen.giveUps.at(-1)!.verdict).toBeUndefined();

    s.script({ delayMs: 5000 }, { delayMs: 5000 }, { delayMs: 5000 });
    const late = await call(client, 'ClientStream', { send: [m(1)], deadlineMs: 100 });
    expect(late.code).toBe(DEADLINE_EXCEEDED);
    expect(seen.giveUps.at(-1)).toMatchObject({ reason: 'deadline' });
    expect(seen.successes).toEqual([]);
  });

  it("stops hedging at a don't-retry pushback and says so", async () => {
    const s = await scriptedServer();
    const seen = hooks();
    const client = hedgingClient(
      'stormproof',
      s.address,
      { maxAttempts: 4, delayMs: 150, nonFatal: ['UNAVAILABLE'] },
      seen.options,
    );
    s.script({ delayMs: 600 }, { code: UNAVAILABLE, pushback: '-1' });
    const out = await call(client, 'ClientStream', { send: [m(1)] });
    expect(out.code).toBe(OK);
    expect(s.seen).toHaveLength(2);
    expect(seen.successes[0]!.hedges).toEqual({
      sent: 1,
      won: 0,
      cancelled: 0,
      refused: { pushback: 1 },
    });
  });

  it('hedges a unary call only while its request fits the buffer, sizing it only for a hedge', async () => {
    const s = await scriptedServer();
    const seen = hooks();
    const client = hedgingClient(
      'stormproof',
      s.address,
      { maxAttempts: 2, delayMs: 20, bufferBytes: 1000 },
      seen.options,
    );
    s.script({ delayMs: 200 }, {});
    const big = 'x'.repeat(2000);
    expect((await call(client, 'Unary', { send: [{ big }] })).code).toBe(OK);
    expect(s.seen).toHaveLength(1);
    expect(seen.successes[0]!.hedges).toEqual({
      sent: 0,
      won: 0,
      cancelled: 0,
      refused: { buffer: 1 },
    });
    s.script({ delayMs: 200 }, {});
    expect((await call(client, 'Unary', { send: [{ small: 1 }] })).code).toBe(OK);
    expect(s.seen).toHaveLength(3);
    expect(seen.successes[1]!.hedges).toMatchObject({ sent: 1, won: 1 });
  });

  it('takes onSuccess and onGiveUp, checked; onRetry stays refused (hedging never retries)', () => {
    const hedging = { maxAttempts: 2 };
    expect(() => createRetryInterceptor({ hedging, onGiveUp: 3 as never })).toThrow(/onGiveUp/);
    expect(() => createRetryInterceptor({ hedging, onSuccess: 'x' as never })).toThrow(/onSuccess/);
    expect(() => createRetryInterceptor({ hedging, onRetry: () => {} })).toThrow(
      /hedging or onRetry/,
    );
  });
});

describe.each([0, 30])('on an injected clock that fires %i ms late', (lateMs) => {
  it('sends the hedge after hedgingDelay, never sooner, replayed in order; leaves no wait behind', async () => {
    const clock = new ManualClock({ lateMs });
    const s = await watchingServer();
    const client = hedgingClient(
      'stormproof',
      s.address,
      { maxAttempts: 3, delayMs: 50 },
      { clock },
    );
    s.plan({ delayMs: 5000 }, {});
    const stream = clientStream(client);
    stream.write(m(1));
    stream.write(m(2));
    await until(() => s.attempts[0]?.messages.length === 2);
    await clock.advance(49);
    await sleep(30); // room for a hedge sent too soon to arrive
    expect(s.attempts).toHaveLength(1);
    await clock.advance(1 + lateMs);
    await until(() => s.attempts[1]?.messages.length === 2);
    // The second wait (for the third attempt) has started too.
    expect(clock.sleeps).toEqual([50, 50]);
    stream.write(m(3));
    stream.end();
    const { status, answers } = await stream.done;
    expect(status.code).toBe(OK);
    expect(answers).toEqual([{ attempt: 1, count: 3 }]);
    expect(s.attempts[1]!.messages).toEqual([m(1), m(2), m(3)]);
    expect(clock.pending).toEqual({ timers: 0, listeners: 0 });
    await clock.advance(1000);
    expect(s.attempts).toHaveLength(2);
  });

  it('waits a pushback exactly before the next attempt, which is sent every message', async () => {
    const clock = new ManualClock({ lateMs });
    const s = await watchingServer();
    const client = hedgingClient(
      'stormproof',
      s.address,
      { maxAttempts: 3, delayMs: 50, nonFatal: ['UNAVAILABLE'] },
      { clock },
    );
    s.plan({ code: UNAVAILABLE, pushback: '300', early: true }, {});
    const stream = clientStream(client);
    stream.write(m(1));
    await until(() => clock.sleeps.length === 2); // hedgingDelay, then the pushback instead
    expect(clock.sleeps).toEqual([50, 300]);
    stream.write(m(2));
    await clock.advance(299);
    await sleep(30);
    expect(s.attempts).toHaveLength(1);
    await clock.advance(1 + lateMs);
    await until(() => s.attempts[1]?.messages.length === 2);
    stream.end();
    const { status } = await stream.done;
    expect(status.code).toBe(OK);
    expect(s.attempts[1]!.messages).toEqual([m(1), m(2)]);
    expect(clock.pending).toEqual({ timers: 0, listeners: 0 });
  });
});

describe("the hedging interceptor keeps to the call's deadline", () => {
  it('sends no attempt that could not start before the deadline: the call fails at once', async () => {
    const s = await watchingServer();
    const seen = hooks();
    const client = hedgingClient(
      'stormproof',
      s.address,
      { maxAttempts: 3, delayMs: 50, nonFatal: ['UNAVAILABLE'] },
      seen.options,
    );
    s.plan({ code: UNAVAILABLE, pushback: '5000', early: true });
    const started = performance.now();
    const stream = clientStream(client, 1000);
    stream.write(m(1));
    const { status } = await stream.done;
    expect(status.code).toBe(UNAVAILABLE);
    expect(performance.now() - started).toBeLessThan(800);
    expect(seen.giveUps[0]).toMatchObject({ reason: 'pushback-beyond-deadline' });
    expect(s.attempts).toHaveLength(1);
  });

  it('ends a call at its deadline while it waits on a clock that never fires, and leaves nothing', async () => {
    const clock = new ManualClock();
    const s = await watchingServer();
    const client = hedgingClient(
      'stormproof',
      s.address,
      { maxAttempts: 3, delayMs: 50, nonFatal: ['UNAVAILABLE'] },
      { clock },
    );
    s.plan({ code: UNAVAILABLE, pushback: '100', early: true });
    const stream = clientStream(client, 300);
    stream.write(m(1));
    const { status } = await stream.done;
    expect(status.code).toBe(DEADLINE_EXCEEDED);
    expect(getRetryReport(status)).toMatchObject({ reason: 'deadline' });
    expect(clock.pending).toEqual({ timers: 0, listeners: 0 });
    expect(s.attempts).toHaveLength(1);
  });
});

describe('the hedging interceptor leaves nothing behind', () => {
  it('clears its hedge waits and deadline timers when calls end, streamed or not', async () => {
    const s = await watchingServer();
    const client = hedgingClient('stormproof', s.address, { maxAttempts: 2, delayMs: 60_000 });
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const once = async () => {
      const stream = clientStream(client, 60_000);
      stream.write(m(1));
      stream.end();
      expect((await stream.done).status.code).toBe(OK);
    };
    await once(); // connect first
    const before = timers();
    for (let i = 0; i < 10; i++) await once();
    // A 60 s hedge wait and a 60 s deadline timer per call would still be pending: 20 more.
    expect(timers()).toBeLessThanOrEqual(before);
    expect(s.attempts).toHaveLength(11);
  });
});

describe("the buffer a channel target's calls share (maxTargetBufferBytes, A6's retry_buffer_size_in_bytes)", () => {
  const pad = 'x'.repeat(700);

  it('hedges a call only while its messages fit beside the other calls to the same target', async () => {
    const s = await watchingServer();
    const other = await watchingServer();
    const seen = hooks();
    const interceptor = createRetryInterceptor({
      hedging: { maxAttempts: 2, hedgingDelayMs: 50 },
      maxBufferBytes: 1000,
      maxTargetBufferBytes: 1000,
      budget: false,
      ...seen.options,
    });
    const client = connect(s.address, { interceptor });
    const otherClient = connect(other.address, { interceptor });
    clients.push(client, otherClient);
    // A keeps about 720 bytes while it stays open: its hedge is sent them.
    const a = clientStream(client);
    a.write({ pad });
    await until(() => s.attempts[1]?.messages.length === 1);
    // B's message does not fit beside A's: B is committed to its first attempt, no hedge.
    const b = clientStream(client);
    b.write({ pad });
    await until(() => s.attempts[2]?.messages.length === 1);
    // Another target keeps its own bytes: its call is hedged.
    const c = clientStream(otherClient);
    c.write({ pad });
    await until(() => other.attempts[1]?.messages.length === 1);
    await sleep(100);
    expect(s.attempts).toHaveLength(3);
    for (const stream of [a, b, c]) stream.end();
    for (const stream of [a, b, c]) expect((await stream.done).status.code).toBe(OK);
    expect(seen.successes.map((e) => e.hedges?.refused)).toContainEqual({ buffer: 1 });
    // Every byte was given back: a new call to the first target is hedged again.
    const d = clientStream(client);
    d.write({ pad });
    await until(() => s.attempts[4]?.messages.length === 1);
    d.end();
    expect((await d.done).status.code).toBe(OK);
  });

  it('retries a call only while its messages fit beside the other calls to the same target', async () => {
    const s = await watchingServer();
    const interceptor = createRetryInterceptor({
      retryableStatusCodes: ['UNAVAILABLE'],
      baseDelayMs: 1,
      maxBufferBytes: 1000,
      maxTargetBufferBytes: 1000,
      budget: false,
    });
    const client = connect(s.address, { interceptor });
    clients.push(client);
    s.plan({}, { code: UNAVAILABLE }, { code: UNAVAILABLE }, {});
    const a = clientStream(client);
    a.write({ pad });
    await until(() => s.attempts[0]?.messages.length === 1);
    // B's message does not fit beside A's: B is committed, its UNAVAILABLE is final.
    const b = clientStream(client);
    b.write({ pad });
    b.end();
    expect((await b.done).status.code).toBe(UNAVAILABLE);
    a.end();
    expect((await a.done).status.code).toBe(OK);
    // A gave its bytes back: C's UNAVAILABLE is retried.
    const c = clientStream(client);
    c.write({ pad });
    c.end();
    expect((await c.done).status.code).toBe(OK);
    expect(s.attempts).toHaveLength(4);
  });

  it('checks the option', () => {
    expect(() => createRetryInterceptor({ maxTargetBufferBytes: -1 })).toThrow(
      /maxTargetBufferBytes/,
    );
    expect(() => createRetryInterceptor({ hedging: {}, maxTargetBufferBytes: 1.5 })).toThrow(
      /maxTargetBufferBytes/,
    );
  });
});

describe("stormproof/otel sees gRPC hedges as it sees the engine's", () => {
  class TestReader extends MetricReader {
    constructor() {
      super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
    }
    protected async onForceFlush(): Promise<void> {}
    protected async onShutdown(): Promise<void> {}
  }

  it('counts hedge events and hedges per call, and marks the call span', async () => {
    const reader = new TestReader();
    const meterProvider = new MeterProvider({ readers: [reader] });
    const exporter = new InMemorySpanExporter();
    const tracerProvider = new BasicTracerProvider({
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    });
    const handle = instrument({ meterProvider, tracerProvider });
    try {
      const s = await watchingServer();
      const client = hedgingClient('stormproof', s.address, { maxAttempts: 2, delayMs: 50 });
      s.plan({ delayMs: 5000 }, {});
      const stream = clientStream(client);
      stream.write(m(1));
      await until(() => s.attempts[1]?.messages.length === 1);
      stream.end();
      expect((await stream.done).status.code).toBe(OK);
      const { resourceMetrics } = await reader.collect();
      const metrics = new Map(
        resourceMetrics.scopeMetrics.flatMap((scope) =>
          scope.metrics.map((metric) => [metric.descriptor.name, metric.dataPoints] as const),
        ),
      );
      const events = (metrics.get('stormproof.hedge.events') ?? []).map((p) => [
        p.attributes['stormproof.hedge.event'],
        p.value,
      ]);
      expect(events.sort()).toEqual([
        ['cancelled', 1],
        ['sent', 1],
        ['won', 1],
      ]);
      const hedges = metrics.get('stormproof.call.hedges')?.[0]?.value as { sum: number };
      expect(hedges.sum).toBe(1);
      const [span] = exporter.getFinishedSpans();
      expect(span?.attributes['stormproof.hedges']).toBe(1);
      expect(span?.events.map((e) => e.attributes?.['stormproof.hedge.event'])).toEqual([
        'sent',
        'won',
        'cancelled',
      ]);
    } finally {
      handle.stop();
      await meterProvider.shutdown();
      await tracerProvider.shutdown();
    }
  });
});
