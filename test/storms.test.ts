// The tests that run full storms (seconds each), in one file so that `runStormOnce` computes
// each storm once for all of them: the naive storm alone was computed three times, in three
// files. Each part is a module of its own under test/storms/; run one with `-t`, e.g.
// `npx vitest run test/storms.test.ts -t 'stay exactly as pinned'`.
import './storms/storm.js';
import './storms/pinned.js';
import './storms/server.js';
import './storms/breaker.js';
