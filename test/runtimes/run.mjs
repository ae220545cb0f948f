// Runs stormproof in every runtime it claims besides the Node that runs the suite: Node 22 and
// 24, Deno, Bun (each a binary from the npm registry, pinned in this folder's package.json) and
// workerd (through miniflare). Each runs checks.mjs: the built core and stormproof/fetch against
// the loopback server below, and stormproof/server's web middleware on its own Request and
// Response; Node 22, Node 24, Deno and Bun also run the CLI. A runtime that is
// missing or fails is a failure: nothing is skipped. Run by .ci/run after `npm ci --prefix
// test/runtimes`; by hand: `npm run build && npm ci --prefix test/runtimes && node test/runtimes/run.mjs`.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual, promisify } from 'node:util';

const here = fileURLToPath(new URL('.', import.meta.url));
const root = fileURLToPath(new URL('../..', import.meta.url));
const bin = (path) => `${here}node_modules/${path}`;
const run = promisify(execFile);
/** Each runtime's whole run is bounded: a hang fails it instead of holding CI. */
const RUN_TIMEOUT_MS = 60_000;

const RUNTIMES = [
  { name: 'node22', command: bin('node22/bin/node'), script: [] },
  { name: 'node24', command: bin('node24/bin/node'), script: [] },
  { name: 'deno', command: bin('deno/deno'), script: ['run', '--allow-net', '--allow-read'] },
  { name: 'bun', command: bin('bun/bin/bun.exe'), script: [] },
];

/** The body stormproof/undici resumes: 100,000 bytes, cut after CUT (undici.mjs makes the same). */
const CUT_BODY = Buffer.from(Array.from({ length: 100_000 }, (_, i) => (i * 31 + 7) & 255));
const CUT = 40_000;

// The loopback server: per runtime (the `id` query value) its own counts.
const counts = new Map();
const stalled = [];
const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  const key = `${url.pathname}?${url.searchParams.get('id')}`;
  const n = (counts.get(key) ?? 0) + 1;
  counts.set(key, n);
  if (url.pathname === '/flaky') {
    res.writeHead(n <= 2 ? 503 : 200).end(n <= 2 ? 'busy' : `ok ${n}`);
  } else if (url.pathname === '/limited') {
    if (n === 1) res.writeHead(429, { ratelimit: '"default";r=0;t=0' }).end('slow down');
    else res.writeHead(200).end('ok');
  } else if (url.pathname === '/stall') {
    stalled.push(res);
  } else if (url.pathname === '/cut') {
    // stormproof/undici's body resume: a 200 cut after CUT bytes, then a 206 for the rest.
    const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    counts.set(`${key} range`, `${req.headers.range} ${req.headers['if-match']}`);
    if (range === null) {
      res.writeHead(200, { 'content-length': String(CUT_BODY.length), etag: '"cut-1"' });
      res.write(CUT_BODY.subarray(0, CUT), () => setTimeout(() => res.destroy(), 20));
    } else {
      const from = Number(range[1]);
      res
        .writeHead(206, {
          'content-range': `bytes ${from}-${CUT_BODY.length - 1}/${CUT_BODY.length}`,
          etag: '"cut-1"',
        })
        .end(CUT_BODY.subarray(from));
    }
  } else {
    res.writeHead(404).end();
  }
});
await new Promise((done) => server.listen(0, '127.0.0.1', done));
const base = `http://127.0.0.1:${server.address().port}`;
// A port that was just free: nothing listens on it, so connections are refused.
const closed = createServer();
await new Promise((done) => closed.listen(0, '127.0.0.1', done));
const refused = `http://127.0.0.1:${closed.address().port}/`;
await new Promise((done) => closed.close(done));

/**
 * What every runtime must report; a list of what differs (empty: passed). `diagnostics`: the
 * runtime has `node:diagnostics_channel` (Node, Deno, Bun), so the event source must be it.
 */
function judge(results, { diagnostics }) {
  const problems = [];
  const expect = (what, actual, expected) => {
    if (!isDeepStrictEqual(actual, expected)) {
      problems.push(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
    }
  };
  expect('core retry', results.core, { calls: 3 });
  expect('fetch 503, 503, 200', results.flaky, { status: 200, body: 'ok 3', attempts: 3 });
  expect('fetch 429 with RateLimit t=0', results.limited, { status: 200, retries: ['429:0'] });
  const { name, message, ...refusedReport } = results.refused ?? {};
  expect(`fetch to a refused port (${name}: ${message})`, refusedReport, {
    reason: 'max-attempts',
    attempts: 3,
    kinds: ['network', 'network'],
  });
  expect('server: web middleware, limit 1, no queue', results.server, {
    busy: {
      status: 503,
      waitInWindow: true,
      retryAfterMatches: true,
      spreadHeader: true,
      body: '',
      bodyCancelled: true,
    },
    first: '200 first',
    after: '200 after',
    shed: 1,
  });
  const events = results.events ?? {};
  expect('event source: stormproof:call', events.own, ['start', 'retry', 'end']);
  expect('event source: unsubscribed after', events.quietAfter, true);
  expect('event source: node:diagnostics_channel found', events.hasDiagnosticsChannel, diagnostics);
  expect('event source: is the diagnostics channel', events.usesDiagnosticsChannel, diagnostics);
  if (diagnostics) {
    expect('event source: a diagnostics_channel subscriber', events.viaDc, events.own);
  }
  const stall = results.stall ?? {};
  // The deadline ends it. The engine (src/core/step.ts) names a timer that fired a little late
  // 'retry-after-beyond-deadline' although no Retry-After was sent: both mean the deadline.
  if (stall.reason !== 'deadline' && stall.reason !== 'retry-after-beyond-deadline') {
    problems.push(
      `stalled endpoint: expected the deadline to end it, got ${JSON.stringify(stall)}`,
    );
  }
  if (!(stall.elapsedMs < 2000))
    problems.push(`stalled endpoint held the call ${stall.elapsedMs} ms`);
  return problems;
}

/** Runs a command; its stdout, or a thrown error that says what failed. */
async function output(command, args) {
  if (!existsSync(command))
    throw new Error(`${command} is missing: run npm ci --prefix test/runtimes`);
  const { stdout } = await run(command, args, {
    cwd: root,
    timeout: RUN_TIMEOUT_MS,
    maxBuffer: 16 * 1024 * 1024,
  });
  return stdout;
}

async function checkScriptRuntime({ name, command, script }) {
  const stdout = await output(command, [...script, `${here}script.mjs`, base, refused, name]);
  return judge(JSON.parse(stdout.trim().split('\n').at(-1)), { diagnostics: true });
}

async function checkWorkerd() {
  const { Miniflare } = await import(`${here}node_modules/miniflare/dist/src/index.js`);
  const mf = new Miniflare({
    modules: true,
    scriptPath: `${here}worker.mjs`,
    modulesRoot: root,
    // The built package is ES modules in .js files (its package.json says "type": "module").
    modulesRules: [{ type: 'ESModule', include: ['**/*.js', '**/*.mjs'] }],
    compatibilityDate: '2026-07-30',
  });
  try {
    const query = new URLSearchParams({ base, refused });
    const res = await mf.dispatchFetch(`http://worker.test/?${query}`);
    const text = await res.text();
    if (res.status !== 200) return [`the worker answered ${res.status}: ${text.slice(0, 500)}`];
    // workerd without the nodejs_compat flag has no `process`: the portable list serves.
    return judge(JSON.parse(text), { diagnostics: false });
  } finally {
    await mf.dispose();
  }
}

/** installGlobal with a user-installed undici protects the runtime's built-in fetch. */
async function checkUndici({ name, command }, pkg) {
  const stdout = await output(command, [`${here}undici.mjs`, base, refused, name, pkg]);
  const results = JSON.parse(stdout.trim().split('\n').at(-1));
  const problems = [];
  const expect = (what, actual, expected) => {
    if (!isDeepStrictEqual(actual, expected)) {
      problems.push(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
    }
  };
  expect('built-in fetch 503, 503, 200', results.flaky, {
    status: 200,
    body: 'ok 3',
    builtin: true,
  });
  expect('built-in fetch to a refused port', results.refused, {
    message: 'fetch failed',
    reason: 'max-attempts',
    attempts: 4,
  });
  expect('after uninstall, no retry', results.after, 503);
  const id = encodeURIComponent(`${name}-${pkg}`);
  expect('built-in fetch of a body cut after 40,000 bytes, resumed', results.cut, {
    status: 200,
    length: 100_000,
    same: true,
  });
  expect(
    'the cut body: requests, and the range asked',
    [counts.get(`/cut?${id}`), counts.get(`/cut?${id} range`)],
    [2, 'bytes=40000-99999 "cut-1"'],
  );
  return problems;
}

/** The CLI: its help and one exact figure of the toy herd model. */
async function checkCli({ name, command }) {
  const prefix = name === 'deno' ? ['run', '--allow-all'] : [];
  const cli = `${root}dist/cli/main.js`;
  const problems = [];
  const help = await output(command, [...prefix, cli, '--help']);
  if (!help.includes('Usage:')) problems.push(`--help printed no usage: ${help.slice(0, 200)}`);
  const herd = JSON.parse(await output(command, [...prefix, cli, 'sim', 'herd', '--json']));
  if (herd.calls !== 6487) problems.push(`sim herd --json: expected 6487 calls, got ${herd.calls}`);
  return problems;
}

const jobs = [
  ...RUNTIMES.map((runtime) => [
    `${runtime.name}: core, stormproof/fetch and stormproof/server`,
    () => checkScriptRuntime(runtime),
  ]),
  ['workerd (miniflare): core, stormproof/fetch and stormproof/server', checkWorkerd],
  ...RUNTIMES.filter((runtime) => runtime.name.startsWith('node')).flatMap((runtime) =>
    ['undici7', 'undici8'].map((pkg) => [
      `${runtime.name}: stormproof/undici installGlobal with ${pkg}, built-in fetch`,
      () => checkUndici(runtime, pkg),
    ]),
  ),
  ...RUNTIMES.map((runtime) => [`${runtime.name}: CLI`, () => checkCli(runtime)]),
];
let failed = 0;
for (const [title, job] of jobs) {
  const started = performance.now();
  let problems;
  try {
    problems = await job();
  } catch (error) {
    problems = [`did not run: ${error instanceof Error ? error.message : String(error)}`];
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  if (problems.length === 0) {
    console.log(`ok    ${title} (${seconds} s)`);
  } else {
    failed++;
    console.log(`FAIL  ${title} (${seconds} s)`);
    for (const problem of problems) console.log(`      ${problem}`);
  }
}
for (const res of stalled) res.destroy();
server.closeAllConnections();
await new Promise((done) => server.close(done));
console.log(`runtimes: ${jobs.length - failed} passed, ${failed} failed`);
process.exitCode = failed === 0 ? 0 : 1;
