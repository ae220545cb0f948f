#!/usr/bin/env node
// The `stormproof` program as a process (the package's bin): program.ts runs the commands; here,
// the exit code, Ctrl-C and a closed stdout.
import { INTERRUPTED, type Io, OK, runProgram } from './program.js';

/** Runs the program in this process: exit code, SIGINT and a closed stdout handled. */
function run(): void {
  const interrupt = new AbortController();
  process.on('SIGINT', () => {
    // A second Ctrl-C does not wait for anything.
    if (interrupt.signal.aborted) process.exit(INTERRUPTED);
    interrupt.abort();
  });
  // `stormproof sim herd | head -1`: a closed pipe is not an error worth a stack trace.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? OK);
    throw error;
  });
  const io: Io = {
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
    interrupt: interrupt.signal,
  };
  void runProgram(process.argv.slice(2), io).then((code) => {
    process.exitCode = code;
  });
}

run();
