// stormproof/grpc's interceptor against a bare grpc-js client and grpc-js's built-in retries, on
// a loopback server in its own process: unary calls a second at the same concurrency, in
// interleaved rounds. Only 127.0.0.1; bounded in count and time. Run `npm run build` first, then
// `node bench/grpc.mjs` (`--smoke`: one short round of each).
import { spawn } from 'node:child_process';
import { Client, credentials, Metadata } from '@grpc/grpc-js';
import { createRetryInterceptor, toServiceConfig } from '../dist/grpc/index.js';

const CONCURRENCY = 32;
const smoke = process.argv.includes('--smoke');

function startServer() {
  const child = spawn(process.execPath, [new URL('./grpc-server.mjs', import.meta.url).pathname], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.stdout.once('data', (chunk) =>
      resolve({
        port: Number(String(chunk).trim()),
        stop: () =>
          new Promise((done) => {
            child.once('exit', done);
            child.stdin.end();
          }),
      }),
    );
  });
}

const serialize = (value) => Buffer.from(JSON.stringify(value));
const deserialize = (bytes) => JSON.parse(bytes.toString());

function unary(client, deadlineMs) {
  const options = deadlineMs === undefined ? {} : { deadline: Date.now() + deadlineMs };
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(
      '/bench.Forecasts/Get',
      serialize,
      deserialize,
      { city: 'Bhopal' },
      new Metadata(),
      options,
      (error, value) => (error ? reject(error) : resolve(value)),
    );
  });
}

async function throughput(client, deadlineMs, ms) {
  let done = 0;
  const end = performance.now() + ms;
  const worker = async () => {
    while (performance.now() < end) {
      await unary(client, deadlineMs);
      done++;
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return (done * 1000) / (performance.now() - start);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

const { port, stop } = await startServer();
const address = `127.0.0.1:${port}`;
const make = (options) => new Client(address, credentials.createInsecure(), options);
const config = JSON.stringify(
  toServiceConfig({ service: 'bench.Forecasts', throttling: { maxTokens: 10, tokenRatio: 0.1 } }),
);
const contenders = {
  'bare grpc-js client': [make({}), undefined],
  'grpc-js built-in retries (service config)': [make({ 'grpc.service_config': config }), undefined],
  'stormproof interceptor': [make({ interceptors: [createRetryInterceptor()] }), undefined],
  'bare grpc-js client, 5 s deadline': [make({}), 5000],
  'stormproof interceptor, 5 s deadline': [
    make({ interceptors: [createRetryInterceptor()] }),
    5000,
  ],
};
const rounds = smoke ? 1 : 7;
const ms = smoke ? 200 : 1500;
const rates = Object.fromEntries(Object.keys(contenders).map((name) => [name, []]));
for (const [client, deadline] of Object.values(contenders)) await throughput(client, deadline, 300);
for (let round = 0; round < rounds; round++) {
  for (const [name, [client, deadline]] of Object.entries(contenders)) {
    rates[name].push(await throughput(client, deadline, ms));
  }
}
for (const [client] of Object.values(contenders)) client.close();
await stop();

const base = median(rates['bare grpc-js client']);
const baseDeadline = median(rates['bare grpc-js client, 5 s deadline']);
console.log(
  `| contender (${CONCURRENCY} unary calls in flight, ${rounds} rounds) | calls a second | share of bare |`,
);
console.log('|---|---|---|');
for (const [name, xs] of Object.entries(rates)) {
  const of = name.endsWith('deadline') ? baseDeadline : base;
  console.log(`| ${name} | ${median(xs).toFixed(0)} | ${((100 * median(xs)) / of).toFixed(1)}% |`);
}
