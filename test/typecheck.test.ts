// The type check and the linter, as tests of the suite: they run beside the other tests instead
// of before all of them (23 s of waiting on 2 cores, where the unit tests leave a core idle much
// of the time). `npm run typecheck` and `npm run lint` run the same commands by themselves.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { root } from './helpers/cli.js';

const bin = (name: string) =>
  join(root, 'node_modules', '.bin', process.platform === 'win32' ? `${name}.cmd` : name);

/** Runs a command in the repository: its exit code and everything it printed. */
function run(command: string, args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, timeout: 180_000 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
        resolve({ code, output: `${stdout}${stderr}` });
      },
    );
  });
}

describe.concurrent('the sources', () => {
  it('type-check: the package, its tests and benches (tsconfig.json)', async () => {
    const r = await run(bin('tsc'), ['-p', 'tsconfig.json', '--pretty', 'false']);
    expect(r.output).toBe('');
    expect(r.code).toBe(0);
  }, 200_000);

  it('type-check without Node types: the runtime-agnostic parts (tsconfig.core.json)', async () => {
    const r = await run(bin('tsc'), ['-p', 'tsconfig.core.json', '--pretty', 'false']);
    expect(r.output).toBe('');
    expect(r.code).toBe(0);
  }, 200_000);

  it('lint and format: biome check finds nothing', async () => {
    const r = await run(bin('biome'), ['check', '--colors=off', '.']);
    expect(r.code, r.output).toBe(0);
    expect(r.output).toMatch(/Checked \d+ files/);
  }, 200_000);
});
