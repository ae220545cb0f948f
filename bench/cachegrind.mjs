// Instructions counted under valgrind's cachegrind, for the benches whose targets are finer than
// timing on this machine can resolve. V8 runs with --predictable (one thread, no concurrent
// compiling or collecting), so a count repeats; a count's fixed cost (start-up, compiling)
// cancels out of the difference between a run of `few` calls and one of `many`.
import { spawnSync } from 'node:child_process';

/** Instructions `bin --predictable ...args` ran, or undefined when valgrind is not installed. */
export function countInstructions(bin, args) {
  const r = spawnSync(
    'valgrind',
    [
      '--tool=cachegrind',
      '--cache-sim=no',
      '--cachegrind-out-file=/dev/null',
      bin,
      '--predictable',
      ...args,
    ],
    { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  );
  if (r.error?.code === 'ENOENT') return undefined;
  const m = /I\s+refs:\s+([\d,]+)/.exec(r.stderr ?? '');
  if (r.status !== 0 || m === null) throw new Error(`valgrind failed: ${r.stderr?.slice(-2000)}`);
  return Number(m[1].replaceAll(',', ''));
}

/**
 * Instructions per call: `argsFor(n)` gives the arguments of a run of `n` calls; the count of
 * `many` less that of `few`, over `many - few`. Undefined without valgrind.
 */
export function instructionsPerCall(bin, argsFor, [few, many]) {
  const a = countInstructions(bin, argsFor(few));
  if (a === undefined) return undefined;
  return (countInstructions(bin, argsFor(many)) - a) / (many - few);
}
