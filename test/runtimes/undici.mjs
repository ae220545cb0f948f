// stormproof/undici in Node 22 and 24: installGlobal with a user-installed undici (7 or 8, pinned
// in this folder's package.json) must make the runtime's own built-in fetch (its bundled undici:
// 6.x in Node 22, 7.x in Node 24, reading the Symbol.for('undici.globalDispatcher.1') slot)
// retry through the engine (and resume a body cut after its head), and uninstalling must put the
// plain fetch back.
// Usage: node undici.mjs <base> <refused> <runtime> <undici package folder>
import { createRequire } from 'node:module';
import { getRetryReport, installGlobal } from '../../dist/undici/index.js';

const [base, refused, runtime, pkg] = process.argv.slice(2);
const require = createRequire(import.meta.url);
const undici = require(`./node_modules/${pkg}`);
const id = encodeURIComponent(`${runtime}-${pkg}`);
const results = { bundled: process.versions.undici };

const builtin = globalThis.fetch;
const uninstall = installGlobal({ undici, baseDelayMs: 5, maxDelayMs: 10 });
try {
  // The server answers 503, 503, then 200 for each id.
  const res = await fetch(`${base}/flaky?id=${id}`);
  results.flaky = { status: res.status, body: await res.text(), builtin: fetch === builtin };
  const failed = await fetch(refused).then(
    () => undefined,
    (error) => error,
  );
  const report = getRetryReport(failed);
  results.refused = {
    message: failed?.message,
    reason: report?.reason,
    attempts: report?.attempts,
  };
  // A body cut after 40,000 bytes is resumed with a range request: the bytes must be the same.
  const cut = await fetch(`${base}/cut?id=${id}`);
  const bytes = new Uint8Array(await cut.arrayBuffer());
  results.cut = {
    status: cut.status,
    length: bytes.length,
    same: bytes.length === 100_000 && bytes.every((b, i) => b === ((i * 31 + 7) & 255)),
  };
} finally {
  uninstall();
}
const after = await fetch(`${base}/flaky?id=${id}-after`);
results.after = after.status;
await after.text();
console.log(JSON.stringify(results));
