// stormproof/fetch against bare fetch on a loopback server: requests a second at the same
// concurrency, interleaved rounds, in one process. Only 127.0.0.1; bounded in count and time.
import { spawn } from 'node:child_process';
import { createFetch } from '../dist/fetch/index.js';

const CONCURRENCY = 32;

/** Starts the server process and resolves with its port and a stop function. */
export function startServer() {
  const child = spawn(process.execPath, [new URL('./fetch-server.mjs', import.meta.url).pathname], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.stdout.once('data', (chunk) => {
      resolve({
        port: Number(String(chunk).trim()),
        stop: () =>
          new Promise((done) => {
            child.once('exit', done);
            child.stdin.end();
          }),
      });
    });
  });
}

/**
 * The three ways to fetch that the benchmarks compare (around `transport`, the runtime's fetch
 * unless given). The second is bare fetch given a signal and a timer (`deadlineMs`), as every
 * deadline needs: it shows what the platform itself charges for an abortable request, and
 * stormproof/fetch's own cost is what it adds to that.
 */
export function fetchContenders(transport, { deadlineMs = 3000 } = {}) {
  const send = transport ?? globalThis.fetch;
  const withDeadline = (target) => {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), deadlineMs);
    return send(target, { signal: controller.signal }).finally(() => clearTimeout(timer));
  };
  return {
    'bare fetch': send,
    'bare fetch with a deadline signal': withDeadline,
    'stormproof/fetch': createFetch(transport === undefined ? undefined : { fetch: transport }),
  };
}

/** Requests per second that `fetchFn` completes for `ms` milliseconds with CONCURRENCY workers. */
async function throughput(fetchFn, url, ms) {
  let done = 0;
  const end = performance.now() + ms;
  const worker = async () => {
    while (performance.now() < end) {
      const res = await fetchFn(url);
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`unexpected status ${res.status}`);
      done++;
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return (done * 1000) / (performance.now() - start);
}

/** Measures both, interleaved, `rounds` times; returns the per-round rates. */
export async function measureFetch({ rounds = 7, ms = 1500 } = {}) {
  const { port, stop } = await startServer();
  const url = `http://127.0.0.1:${port}/forecast`;
  const contenders = fetchContenders();
  const rates = Object.fromEntries(Object.keys(contenders).map((name) => [name, []]));
  try {
    for (const f of Object.values(contenders)) await throughput(f, url, Math.min(ms, 500)); // warm-up
    for (let r = 0; r < rounds; r++) {
      const names = Object.keys(contenders);
      const order = names.map((_, i) => names[(i + r) % names.length]);
      for (const name of order) rates[name].push(await throughput(contenders[name], url, ms));
    }
  } finally {
    await stop();
  }
  return rates;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const smoke = process.argv.includes('--smoke');
  const rates = await measureFetch(smoke ? { rounds: 1, ms: 200 } : {});
  process.stdout.write(`${JSON.stringify(rates)}\n`);
}
