// stormproof/undici's and stormproof/axios's hedge against a loopback server slow 2 % of the time
// (seeded: 18 of 1,000 requests take 300 ms, the rest 2 ms), as test/fetch-hedge.test.ts measures
// createFetch: the p99 with and without `hedge: {}`, the extra requests the server counted, and
// the slow losers it saw go. Figures are printed; the bounds are issue 20's (p99 at least 5x
// lower for at most 5 % more requests).
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import axios from 'axios';
import * as undici from 'undici';
import { expect, it } from 'vitest';
import { axiosRetry } from '../src/axios/index.js';
import { interceptor } from '../src/undici/index.js';

function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

it('undici and axios: the p99 at least 5x lower for at most 5 % more requests, losers aborted', async () => {
  // One server per run, each with its own seeded slow requests and counts, so runs can go side
  // by side (each sends its 1,000 requests one after another): 13 s instead of 28 s, most of it
  // waiting on the slow requests' timers.
  const servers: ReturnType<typeof createServer>[] = [];
  const run = async (get: (url: string) => Promise<unknown>) => {
    const random = seeded(20);
    const c = { requests: 0, hedges: 0, aborted: 0 };
    const server = createServer((req, res) => {
      c.requests++;
      if (req.headers['stormproof-hedge'] !== undefined) c.hedges++;
      const slow = random() < 0.02;
      const timer = setTimeout(() => res.end('ok'), slow ? 300 : 2);
      res.on('close', () => {
        if (!res.writableFinished) {
          clearTimeout(timer);
          c.aborted++;
        }
      });
    });
    servers.push(server);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const times: number[] = [];
    for (let i = 0; i < 1000; i++) {
      const start = performance.now();
      await get(`${base}/item/${i}`);
      times.push(performance.now() - start);
    }
    times.sort((x, y) => x - y);
    // The last losers' aborts reach the server.
    await new Promise((r) => setTimeout(r, 500));
    return { p99: times[990]!, ...c };
  };
  const plainAgent = new undici.Agent().compose(interceptor());
  const hedgedAgent = new undici.Agent().compose(interceptor({ hedge: {} }));
  const viaUndici = (agent: undici.Dispatcher) => async (url: string) => {
    const res = await undici.request(url, { dispatcher: agent });
    await res.body.text();
  };
  const check = (name: string, plain: Awaited<ReturnType<typeof run>>, hedged: typeof plain) => {
    console.log(name, JSON.stringify({ plain, hedged }));
    expect(plain.requests).toBe(1000);
    expect(plain.p99).toBeGreaterThanOrEqual(300);
    // Every extra request is a marked hedge, at most 5 % of the calls; slow losers were aborted.
    expect(hedged.requests - 1000).toBe(hedged.hedges);
    expect(hedged.hedges).toBeLessThanOrEqual(50);
    expect(hedged.aborted).toBeGreaterThan(0);
    expect(hedged.aborted).toBeLessThanOrEqual(hedged.hedges);
    expect(hedged.p99 * 5).toBeLessThanOrEqual(300);
  };
  const plainAxios = axios.create({ adapter: 'http' });
  axiosRetry(plainAxios, { getAdapter: axios.getAdapter });
  const hedgedAxios = axios.create({ adapter: 'http' });
  axiosRetry(hedgedAxios, { getAdapter: axios.getAdapter, hedge: {} });
  // The plain runs side by side, then the hedged ones: a hedged p99 is measured beside one other
  // run only (on a machine with two CPU-bound processes beside the suite, 30 ms against the bound
  // of 60 with all four side by side).
  const [undiciPlain, axiosPlain] = await Promise.all([
    run(viaUndici(plainAgent)),
    run((u) => plainAxios.get(u)),
  ]);
  const [undiciHedged, axiosHedged] = await Promise.all([
    run(viaUndici(hedgedAgent)),
    run((u) => hedgedAxios.get(u)),
  ]);
  check('undici', undiciPlain, undiciHedged);
  check('axios', axiosPlain, axiosHedged);
  await Promise.all([plainAgent.close(), hedgedAgent.close()]);
  await Promise.all(
    servers.map((server) => {
      server.closeAllConnections();
      server.close();
      return once(server, 'close');
    }),
  );
}, 120_000);
