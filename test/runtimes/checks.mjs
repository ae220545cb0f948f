// The checks every runtime runs, with nothing but the web platform: the built core and
// stormproof/fetch against the loopback server of run.mjs, and stormproof/server's web
// middleware on the runtime's own Request and Response. No `node:` import, so the same module
// runs in Node, Deno, Bun and workerd. Each check returns what it saw; run.mjs judges it.

import { createFetch, getRetryReport } from '../../dist/fetch/index.js';
import { channels, createRetryPolicy, usesDiagnosticsChannel } from '../../dist/index.js';
import { webMiddleware } from '../../dist/server/index.js';

/** What a failed call says about itself. */
function describeFailure(error) {
  const report = getRetryReport(error);
  return {
    name: error instanceof Error ? error.name : typeof error,
    message: error instanceof Error ? error.message : String(error),
    reason: report?.reason,
    attempts: report?.attempts,
  };
}

/**
 * @param {{ base: string, refused: string, runtime: string }} where the server, a URL whose port
 *   refuses connections, and the runtime's name (keeps its requests apart on the server).
 */
export async function runChecks({ base, refused, runtime }) {
  const id = encodeURIComponent(runtime);
  const results = {};

  // The core on real timers: two 503s, then a value.
  let calls = 0;
  results.core = await createRetryPolicy({ baseDelayMs: 5, random: () => 0.5 }).retry(async () => {
    calls++;
    if (calls < 3) throw Object.assign(new Error('busy'), { status: 503 });
    return { calls };
  });

  // fetch: 503, 503, then 200 from the server.
  let attempts = 0;
  const res = await createFetch({
    baseDelayMs: 5,
    onSuccess: (event) => {
      attempts = event.attempts;
    },
  })(`${base}/flaky?id=${id}`);
  results.flaky = { status: res.status, body: await res.text(), attempts };

  // fetch: a 429 whose pause is in the IETF RateLimit field (t=0), then 200.
  const kinds = [];
  const limited = await createFetch({
    baseDelayMs: 5,
    onRetry: (event) => {
      kinds.push(`${event.status}:${event.verdict.retryAfterMs}`);
    },
  })(`${base}/limited?id=${id}`);
  results.limited = { status: limited.status, retries: kinds };

  // fetch: a refused connection, as this runtime's fetch reports it, retried as a network error.
  const refusedKinds = [];
  try {
    const r = await createFetch({
      baseDelayMs: 1,
      maxAttempts: 3,
      budget: false,
      onRetry: (event) => {
        refusedKinds.push(event.verdict.kind);
      },
    })(refused);
    results.refused = { resolved: r.status };
  } catch (error) {
    results.refused = { ...describeFailure(error), kinds: refusedKinds };
  }

  // fetch: an endpoint that never answers, cut by the attempt timeout and then the deadline.
  const started = performance.now();
  try {
    const r = await createFetch({
      baseDelayMs: 1,
      maxAttempts: 10,
      attemptTimeoutMs: 100,
      deadlineMs: 350,
    })(`${base}/stall?id=${id}`);
    results.stall = { resolved: r.status };
  } catch (error) {
    results.stall = { ...describeFailure(error), elapsedMs: performance.now() - started };
  }

  results.server = await checkServer();
  results.events = await checkEvents();
  return results;
}

/**
 * The event source: a call that fails once and then succeeds, watched through stormproof's own
 * channel and, on a runtime that has `node:diagnostics_channel` (found as the library finds it,
 * through `process.getBuiltinModule`: no import), through a diagnostics channel subscriber too.
 * Both must see the same messages.
 */
async function checkEvents() {
  const dc = globalThis.process?.getBuiltinModule?.('node:diagnostics_channel');
  const own = [];
  const viaDc = [];
  const ownSubscriber = (message) => own.push(message.type);
  const dcSubscriber = (message) => viaDc.push(message.type);
  channels.call.subscribe(ownSubscriber);
  dc?.subscribe('stormproof:call', dcSubscriber);
  try {
    let calls = 0;
    await createRetryPolicy({ baseDelayMs: 1, random: () => 0.5 }).retry(async () => {
      if (++calls < 2) throw Object.assign(new Error('busy'), { status: 503 });
      return calls;
    });
  } finally {
    channels.call.unsubscribe(ownSubscriber);
    dc?.unsubscribe('stormproof:call', dcSubscriber);
  }
  return {
    usesDiagnosticsChannel,
    hasDiagnosticsChannel: typeof dc?.channel === 'function',
    own,
    viaDc: dc === undefined ? null : viaDc,
    quietAfter: !channels.call.hasSubscribers,
  };
}

/**
 * stormproof/server's web middleware with room for one request and no queue: a held request
 * takes the place, a POST arriving meanwhile is told to come back later (its body cancelled,
 * unread), and once the first is answered the next one gets in.
 */
async function checkServer() {
  const shed = webMiddleware({ limit: 1, queue: false, ramp: false });
  let release;
  const held = new Promise((resolve) => {
    release = resolve;
  });
  const first = shed(new Request('http://app.test/first'), async () => {
    await held;
    return new Response('first');
  });
  let bodyCancelled = false;
  const body = new ReadableStream({
    pull(controller) {
      controller.enqueue(new TextEncoder().encode('payload'));
    },
    cancel() {
      bodyCancelled = true;
    },
  });
  const busy = await shed(
    new Request('http://app.test/busy', { method: 'POST', body, duplex: 'half' }),
    async () => new Response('should not run'),
  );
  const waitMs = Number(busy.headers.get('retry-after-ms'));
  release();
  const firstAnswer = await first;
  const after = await shed(new Request('http://app.test/after'), async () => new Response('after'));
  return {
    busy: {
      status: busy.status,
      // Spread over the default 1 to 5 s; Retry-After is the same wait in whole seconds, up.
      waitInWindow: waitMs >= 1000 && waitMs <= 5000,
      retryAfterMatches: busy.headers.get('retry-after') === String(Math.ceil(waitMs / 1000)),
      spreadHeader: busy.headers.get('stormproof-pushback-ms') === String(waitMs),
      body: await busy.text(),
      bodyCancelled,
    },
    first: `${firstAnswer.status} ${await firstAnswer.text()}`,
    after: `${after.status} ${await after.text()}`,
    shed: shed.shedder.stats().shed.limit,
  };
}
