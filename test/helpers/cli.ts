// The `stormproof` program as users run it: `node dist/cli/main.js` (dist is built by the suite's
// global setup), its output collected.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('../..', import.meta.url));
export const MAIN = join(root, 'dist/cli/main.js');

export interface Ran {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the program; `onStderr` may act on the running child (to interrupt it). `env` adds to the
 * environment, `nodeArgs` go to node before the program.
 */
export function runCli(
  args: readonly string[],
  onStderr?: (text: string, child: ReturnType<typeof spawn>) => void,
  { env, nodeArgs = [] }: { env?: NodeJS.ProcessEnv; nodeArgs?: readonly string[] } = {},
): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs, MAIN, ...args], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
      onStderr?.(stderr, child);
    });
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}
