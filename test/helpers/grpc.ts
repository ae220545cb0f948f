// A real grpc-js server on 127.0.0.1, port 0, with a hand-built service of all four call kinds,
// scripted attempt by attempt, and a client for it: with stormproof's interceptor or with
// grpc-js's built-in retries.
import {
  Client,
  type ClientOptions,
  credentials,
  type Interceptor,
  Metadata,
  type MethodDefinition,
  Server,
  ServerCredentials,
  type ServerDuplexStream,
  type ServerReadableStream,
  type ServerUnaryCall,
  type ServerWritableStream,
  type ServiceError,
  type sendUnaryData,
} from '@grpc/grpc-js';
import { afterEach } from 'vitest';

export const SERVICE = 'stormproof.test.Echo';

type Json = Record<string, unknown>;
const serialize = (value: Json): Buffer => Buffer.from(JSON.stringify(value));
const deserialize = (bytes: Buffer): Json => JSON.parse(bytes.toString()) as Json;

function method(
  name: string,
  requestStream: boolean,
  responseStream: boolean,
): MethodDefinition<Json, Json> {
  return {
    path: `/${SERVICE}/${name}`,
    requestStream,
    responseStream,
    requestSerialize: serialize,
    requestDeserialize: deserialize,
    responseSerialize: serialize,
    responseDeserialize: deserialize,
  };
}

export const definition = {
  Unary: method('Unary', false, false),
  ServerStream: method('ServerStream', false, true),
  ClientStream: method('ClientStream', true, false),
  Bidi: method('Bidi', true, true),
};

/** What the server does with one attempt. The default: succeed at once. */
export interface Step {
  /** The status to end with (0 or absent: OK). */
  code?: number;
  /** Values of `grpc-retry-pushback-ms` in the trailers. */
  pushback?: string | string[];
  /** Raw bytes for `grpc-status-details-bin`. */
  details?: Uint8Array;
  /** Send response headers before ending. */
  headersFirst?: boolean;
  /** Response messages sent before the status (streaming responses). */
  messages?: number;
  /** Wait this long before answering. */
  delayMs?: number;
}

/** What the server saw of one attempt. */
export interface Seen {
  readonly method: string;
  readonly at: number;
  /** `grpc-previous-rpc-attempts` as received, or undefined. */
  readonly previous: string | undefined;
  readonly request: Json | undefined;
  readonly messages: Json[];
}

export class ScriptedServer {
  readonly seen: Seen[] = [];
  private plan: Step[] = [];
  private server = new Server();
  address = '';

  /** The steps for the next attempts, in order; attempts past the plan succeed. */
  script(...steps: Step[]): this {
    this.plan = steps;
    return this;
  }

  /** Every attempt from now on fails with `step`. */
  always(step: Step): this {
    this.plan = new Proxy([], { get: (_t, key) => (key === 'shift' ? () => step : undefined) });
    return this;
  }

  /** Binds 127.0.0.1 at `port` (0: one the system picks). */
  async start(port = 0): Promise<this> {
    this.server.addService(definition, {
      Unary: (call: ServerUnaryCall<Json, Json>, callback: sendUnaryData<Json>) => {
        const step = this.record('Unary', call.metadata, call.request, []);
        this.later(step, () => {
          if (step.headersFirst) call.sendMetadata(new Metadata());
          this.answer(step, (error) =>
            error ? callback(error) : callback(null, { ok: this.seen.length }),
          );
        });
      },
      ServerStream: (call: ServerWritableStream<Json, Json>) => {
        const step = this.record('ServerStream', call.metadata, call.request, []);
        this.later(step, () => {
          if (step.headersFirst) call.sendMetadata(new Metadata());
          for (let i = 0; i < (step.messages ?? 0); i++) call.write({ n: i });
          this.answer(step, (error) => (error ? call.emit('error', error) : call.end()));
        });
      },
      ClientStream: (call: ServerReadableStream<Json, Json>, callback: sendUnaryData<Json>) => {
        const messages: Json[] = [];
        call.on('data', (m: Json) => messages.push(m));
        call.on('end', () => {
          const step = this.record('ClientStream', call.metadata, undefined, messages);
          this.later(step, () =>
            this.answer(step, (error) =>
              error ? callback(error) : callback(null, { count: messages.length }),
            ),
          );
        });
      },
      Bidi: (call: ServerDuplexStream<Json, Json>) => {
        const messages: Json[] = [];
        call.on('data', (m: Json) => messages.push(m));
        call.on('end', () => {
          const step = this.record('Bidi', call.metadata, undefined, messages);
          this.later(step, () => {
            if (step.headersFirst) call.sendMetadata(new Metadata());
            for (let i = 0; i < (step.messages ?? 0); i++) call.write({ n: i });
            this.answer(step, (error) => (error ? call.emit('error', error) : call.end()));
          });
        });
      },
    });
    const bound = await new Promise<number>((resolve, reject) => {
      this.server.bindAsync(`127.0.0.1:${port}`, ServerCredentials.createInsecure(), (error, at) =>
        error ? reject(error) : resolve(at),
      );
    });
    this.address = `127.0.0.1:${bound}`;
    return this;
  }

  /** Attempts seen for `name` (all methods when unset). */
  attempts(name?: string): Seen[] {
    return name === undefined ? this.seen : this.seen.filter((s) => s.method === name);
  }

  /** Milliseconds between consecutive attempts. */
  gaps(): number[] {
    return this.seen.slice(1).map((s, i) => s.at - this.seen[i]!.at);
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.tryShutdown(() => resolve()));
  }

  private record(
    name: string,
    metadata: Metadata,
    request: Json | undefined,
    messages: Json[],
  ): Step {
    const previous = metadata.get('grpc-previous-rpc-attempts')[0];
    this.seen.push({
      method: name,
      at: performance.now(),
      previous: previous === undefined ? undefined : String(previous),
      request,
      messages,
    });
    return this.plan.shift() ?? {};
  }

  private later(step: Step, act: () => void): void {
    if (step.delayMs === undefined) act();
    else setTimeout(act, step.delayMs);
  }

  private answer(step: Step, done: (error?: Partial<ServiceError>) => void): void {
    if (!step.code) {
      done();
      return;
    }
    const trailers = new Metadata();
    const pushback = step.pushback;
    if (pushback !== undefined) {
      for (const value of Array.isArray(pushback) ? pushback : [pushback]) {
        trailers.add('grpc-retry-pushback-ms', value);
      }
    }
    if (step.details !== undefined)
      trailers.set('grpc-status-details-bin', Buffer.from(step.details));
    done({ code: step.code, details: `scripted ${step.code}`, metadata: trailers });
  }
}

/** Every address a server of this process was given: see `startServer`. */
const usedAddresses = new Set<string>();

/**
 * Starts a server on an address no earlier server of this process had. grpc-js keeps its A6 retry
 * throttle per target for the life of the process, and a new channel to a target carries the old
 * throttle's tokens over (internal-channel.js, RETRY_THROTTLER_MAP): a port the system hands out
 * again would start a test with an earlier test's tokens. `firstPort` is tried first (for the
 * test of this rule), then ports the system picks.
 */
export async function startServer(firstPort = 0): Promise<ScriptedServer> {
  const taken: ScriptedServer[] = [];
  try {
    for (let tries = 0; tries < 20; tries++) {
      const server = await new ScriptedServer().start(tries === 0 ? firstPort : 0);
      if (!usedAddresses.has(server.address)) {
        usedAddresses.add(server.address);
        return server;
      }
      taken.push(server); // held until a fresh one is found, so the system cannot give it again
    }
    throw new Error('no fresh loopback address in 20 tries');
  } finally {
    await Promise.all(taken.map((server) => server.stop()));
  }
}

export const EchoClient = class extends Client {};

/** A client of the scripted service: with an interceptor, or with a raw service config. */
export function connect(
  address: string,
  how: { interceptor: Interceptor } | { serviceConfig: unknown } | Record<string, never>,
  options: ClientOptions = {},
): Client {
  const extra: ClientOptions =
    'interceptor' in how
      ? { interceptors: [how.interceptor] }
      : 'serviceConfig' in how
        ? { 'grpc.service_config': JSON.stringify(how.serviceConfig) }
        : {};
  return new Client(address, credentials.createInsecure(), { ...extra, ...options });
}

/** The outcome of one call. */
export interface Outcome {
  readonly code: number;
  readonly ms: number;
  readonly messages: Json[];
  readonly details: string;
}

type CallKind = keyof typeof definition;

/**
 * Makes one call of `kind` and waits for its status. `send` messages go up on streaming requests;
 * `onCall` sees the call object (to cancel it).
 */
export function call(
  client: Client,
  kind: CallKind,
  {
    deadlineMs,
    send = [{ hello: 1 }],
    onCall,
  }: { deadlineMs?: number; send?: Json[]; onCall?: (call: { cancel(): void }) => void } = {},
): Promise<Outcome> {
  const start = performance.now();
  const options = deadlineMs === undefined ? {} : { deadline: Date.now() + deadlineMs };
  const m = definition[kind];
  const messages: Json[] = [];
  return new Promise((resolve) => {
    const done = (code: number, details: string) =>
      resolve({ code, ms: performance.now() - start, messages, details });
    const onStatus = (status: { code: number; details: string }) =>
      done(status.code, status.details);
    const unaryCallback = (error: ServiceError | null, value?: Json) => {
      if (value !== undefined) messages.push(value);
      done(error?.code ?? 0, error?.details ?? '');
    };
    if (kind === 'Unary') {
      const c = client.makeUnaryRequest(
        m.path,
        serialize,
        deserialize,
        send[0]!,
        new Metadata(),
        options,
        unaryCallback,
      );
      onCall?.(c);
    } else if (kind === 'ClientStream') {
      const c = client.makeClientStreamRequest(
        m.path,
        serialize,
        deserialize,
        new Metadata(),
        options,
        unaryCallback,
      );
      onCall?.(c);
      for (const message of send) c.write(message);
      c.end();
    } else {
      const c =
        kind === 'ServerStream'
          ? client.makeServerStreamRequest(
              m.path,
              serialize,
              deserialize,
              send[0]!,
              new Metadata(),
              options,
            )
          : client.makeBidiStreamRequest(m.path, serialize, deserialize, new Metadata(), options);
      onCall?.(c);
      c.on('data', (message: Json) => messages.push(message));
      c.on('error', () => {});
      c.on('status', onStatus);
      if (kind === 'Bidi') {
        const duplex = c as ReturnType<Client['makeBidiStreamRequest']>;
        for (const message of send) duplex.write(message);
        duplex.end();
      }
    }
  });
}

/**
 * The servers and clients a test file starts: each client closed and each server stopped after
 * every test. `server()` starts one and keeps it for that.
 */
export function closedAfterEach(): {
  servers: ScriptedServer[];
  clients: Client[];
  server(): Promise<ScriptedServer>;
} {
  const servers: ScriptedServer[] = [];
  const clients: Client[] = [];
  afterEach(async () => {
    for (const c of clients.splice(0)) c.close();
    await Promise.all(servers.splice(0).map((s) => s.stop()));
  });
  const server = async () => {
    const s = await startServer();
    servers.push(s);
    return s;
  };
  return { servers, clients, server };
}
