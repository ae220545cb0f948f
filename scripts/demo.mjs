// `npm run demo`: a short live demo. A real HTTP server on 127.0.0.1 fails for a moment with
// 503 + Retry-After, and a client calls it through stormproof/fetch, printing every attempt, its
// wait, and why.
import { createServer } from 'node:http';
import { createFetch, getRetryReport } from 'stormproof/fetch';

let served = 0;
const server = createServer((req, res) => {
  served++;
  if (req.url === '/forecast' && served <= 2) {
    res.writeHead(503, { 'retry-after': '1', 'content-type': 'text/plain' });
    res.end('database failing over');
  } else if (req.url === '/forecast') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ city: 'Bhopal', forecast: 'monsoon rain' }));
  } else if (req.url === '/slow-down') {
    res.writeHead(503, { 'retry-after': '3600' });
    res.end();
  } else {
    res.writeHead(404);
    res.end();
  }
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${server.address().port}`;

const started = performance.now();
const at = () => `${((performance.now() - started) / 1000).toFixed(2)} s`.padStart(7);
const fetch = createFetch({
  onRetry: ({ attempt, status, verdict, delayMs }) => {
    const pause = verdict.retryAfterMs ?? 0;
    console.log(
      `${at()}  attempt ${attempt}: HTTP ${status}: retryable (${verdict.kind}); waiting ${Math.round(delayMs)} ms` +
        ` = ${Math.round(delayMs - pause)} ms full jitter + ${pause} ms Retry-After`,
    );
  },
});

async function scene(title, path) {
  console.log(`\n${title}  (GET ${path})`);
  const res = await fetch(base + path);
  if (res.ok) {
    console.log(`${at()}  HTTP ${res.status} ${JSON.stringify(await res.json())}`);
    return;
  }
  await res.body?.cancel();
  const r = getRetryReport(res);
  console.log(
    `${at()}  gave up with HTTP ${res.status}: reason '${r.reason}' after ${r.attempts} attempt(s), ${Math.round(r.totalDelayMs)} ms of waiting`,
  );
}

console.log(`stormproof demo: a real server on ${base}, called through createFetch() defaults`);
console.log(
  '(4 attempts, full jitter below 200/400/800 ms, 3 s deadline, Retry-After added on top, a retry budget)',
);
await scene('1. The server fails over for a moment: 503 + Retry-After: 1, twice', '/forecast');
await scene('2. A 404 cannot pass: fail at once', '/missing');
await scene(
  '3. Retry-After: 3600 is beyond the 3 s deadline: give up at once, do not hang',
  '/slow-down',
);
server.close();
