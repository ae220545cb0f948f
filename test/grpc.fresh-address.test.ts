// Regression: the conformance case "grpc-js: failures with statuses outside the list take no
// token" failed once in CI (UNAVAILABLE where a retry should have passed). grpc-js keeps its A6
// retry throttle per target for the life of the process and hands a new channel to the same
// target the old throttle's tokens; when the system gave a later test's server a port an earlier
// throttling test had used, that test began with the earlier test's tokens. The test helper now
// never hands out an address twice in a process. Real grpc-js servers on 127.0.0.1.
import type { Client } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { call, connect, ScriptedServer, SERVICE, startServer } from './helpers/grpc.js';

const OK = 0;
const UNAVAILABLE = 14;

/** grpc-js's own retries with A6 throttling: 4 tokens, a retry only above 2. */
const throttled = {
  methodConfig: [
    {
      name: [{ service: SERVICE }],
      retryPolicy: {
        maxAttempts: 2,
        initialBackoff: '0.001s',
        maxBackoff: '0.001s',
        backoffMultiplier: 1,
        retryableStatusCodes: ['UNAVAILABLE'],
      },
    },
  ],
  retryThrottling: { maxTokens: 4, tokenRatio: 0.1 },
};

const servers: ScriptedServer[] = [];
const clients: Client[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

function clientOf(s: ScriptedServer): Client {
  const client = connect(s.address, { serviceConfig: throttled });
  clients.push(client);
  return client;
}

/** A server whose grpc-js throttle is drained to 1 token, stopped; returns its port. */
async function drainedPort(): Promise<number> {
  const s = await startServer();
  const client = clientOf(s);
  s.always({ code: UNAVAILABLE });
  await call(client, 'Unary'); // 4 -> 3, retried; 3 -> 2
  await call(client, 'Unary'); // 2 -> 1, not retried
  expect(s.seen).toHaveLength(3);
  client.close();
  await s.stop();
  return Number(s.address.split(':').at(-1));
}

describe('a test server never reuses an address in one process', () => {
  it('grpc-js carries a target throttle tokens to a new server on the same port (why)', async () => {
    const port = await drainedPort();
    const again = await new ScriptedServer().start(port);
    servers.push(again);
    expect(again.address).toBe(`127.0.0.1:${port}`);
    again.script({ code: UNAVAILABLE });
    // A fresh throttle would retry (4 tokens); the inherited one (1 token) does not.
    expect((await call(clientOf(again), 'Unary')).code).toBe(UNAVAILABLE);
    expect(again.seen).toHaveLength(1);
  });

  it('startServer gives a fresh address even when the system offers a used one', async () => {
    const port = await drainedPort();
    const fresh = await startServer(port);
    servers.push(fresh);
    expect(fresh.address).not.toBe(`127.0.0.1:${port}`);
    fresh.script({ code: UNAVAILABLE });
    expect((await call(clientOf(fresh), 'Unary')).code).toBe(OK); // retried: fresh tokens
    expect(fresh.seen).toHaveLength(2);
  });
});
