// The `stormproof` program run in the test's own process: the bin's runProgram from
// dist/cli/program.js (built by the suite's global setup), its output gathered. It spares a Node
// process a run (about 0.15 s of CPU each) where a test checks what the program prints and
// returns; what only a process shows (its exit, signals, the environment it reads, the progress
// bar on its stderr, the modules it loads) is tested through runCli.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type Ran, root } from './cli.js';

type Program = typeof import('../../src/cli/program.js');

/** dist's, as the bin runs it: its long runs start worker threads from dist/cli/worker.js. */
const PROGRAM = pathToFileURL(join(root, 'dist/cli/program.js')).href;

/** Runs the program on `args` in this process, as `runCli` runs it in a process of its own. */
export async function runProgram(args: readonly string[]): Promise<Ran> {
  const program = (await import(PROGRAM)) as Program;
  let stdout = '';
  let stderr = '';
  const code = await program.runProgram(args, {
    out: (text) => {
      stdout += text;
    },
    err: (text) => {
      stderr += text;
    },
    interrupt: new AbortController().signal,
  });
  return { code, signal: null, stdout, stderr };
}
