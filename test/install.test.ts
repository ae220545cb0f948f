// Installing as users do without the registry: `npm install git+<url>` and `npm pack` on a fresh
// clone. Both must build dist/ themselves (the `prepare` script), so the package imports and the
// `stormproof` bin exists. The clone is of the committed HEAD: commit before trusting this test.
// The git install runs beside the pack and its install (two cores: each is mostly one process).
import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
/** Bounded: an install that hangs fails the test instead of holding the suite. */
const INSTALL_TIMEOUT = 240_000;

let dir = '';
/** The tarball packed from a fresh clone, for the test after: '' once the pack has failed. */
let packed: (tarball: string) => void;
const tarball = new Promise<string>((resolve) => {
  packed = resolve;
});

const execFileAsync = promisify(execFile);

/**
 * Runs a command. Resolves with its output; rejects, with its stderr, if it fails. At normal
 * priority: under `nice -n 15`, two CPU-bound processes beside the suite starved these installs
 * past their timeout (about 90 s of CPU, 38 s alone), and the suite's timed tests must hold
 * beside that much load anyway.
 */
async function run(
  command: string,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv = { npm_config_loglevel: 'error', npm_config_fund: 'false' },
): Promise<{ stdout: string; stderr: string }> {
  return execFileAsync(command, args, {
    cwd,
    encoding: 'utf8',
    timeout: INSTALL_TIMEOUT,
    env: { ...process.env, ...env },
  });
}

/** Imports the installed package in a fresh Node process and runs one retry through fetch. */
const SMOKE = `
import { createServer } from 'node:http';
import { createFetch } from 'stormproof/fetch';
import { createRetryPolicy } from 'stormproof';
let n = 0;
const server = createServer((req, res) => { n++; res.writeHead(n === 1 ? 503 : 200); res.end(String(n)); });
server.listen(0, '127.0.0.1', async () => {
  const res = await createFetch({ baseDelayMs: 1 })('http://127.0.0.1:' + server.address().port + '/');
  const value = await createRetryPolicy().retry(async () => 7);
  console.log(res.status, await res.text(), value);
  server.close();
});
`;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'stormproof-install-'));
});

afterAll(() => {
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
});

describe.concurrent('installing without the registry', () => {
  it(
    'npm install git+file://<repo> builds dist, imports, and installs the stormproof bin',
    async () => {
      const app = join(dir, 'app');
      await run('mkdir', ['-p', app], dir);
      writeFileSync(join(app, 'package.json'), '{"name":"app","private":true,"type":"module"}');
      await run(
        npm,
        ['install', '--no-audit', '--prefer-offline', `git+${pathToFileURL(root).href}`],
        app,
      );
      const installed = join(app, 'node_modules', 'stormproof');
      expect(existsSync(join(installed, 'dist', 'index.js'))).toBe(true);
      expect(existsSync(join(installed, 'dist', 'fetch', 'index.d.ts'))).toBe(true);
      writeFileSync(join(app, 'smoke.mjs'), SMOKE);
      expect((await run(process.execPath, ['smoke.mjs'], app)).stdout.trim()).toBe('200 2 7');
      const help = await run(join(app, 'node_modules', '.bin', 'stormproof'), ['--help'], app);
      expect(help.stdout).toContain('stormproof');
    },
    INSTALL_TIMEOUT + 30_000,
  );

  it(
    'npm pack on a fresh clone builds dist first and packs it with the bin',
    async () => {
      let file = '';
      try {
        const clone = join(dir, 'clone');
        await run(
          'git',
          ['clone', '--quiet', '--depth', '1', pathToFileURL(root).href, clone],
          dir,
        );
        expect(existsSync(join(clone, 'dist'))).toBe(false);
        // The clone borrows this checkout's dev dependencies (the compiler) instead of a registry.
        symlinkSync(join(root, 'node_modules'), join(clone, 'node_modules'), 'dir');
        const [pack] = JSON.parse(
          (await run(npm, ['pack', '--json', '--pack-destination', dir], clone)).stdout,
        ) as [{ filename: string; files: { path: string }[] }];
        const files = pack.files.map((f) => f.path);
        expect(files).toEqual(
          expect.arrayContaining([
            'dist/index.js',
            'dist/index.d.ts',
            'dist/fetch/index.js',
            'dist/sim/index.js',
            'dist/cli/main.js',
            // The storm lab's page, which `stormproof lab --serve` serves.
            'dist/page/index.html',
            'package.json',
          ]),
        );
        expect(files.some((f) => f.startsWith('src/') || f.startsWith('test/'))).toBe(false);
        expect(files).toContain('LICENSE');
        const manifest = JSON.parse(readFileSync(join(clone, 'package.json'), 'utf8'));
        expect(manifest.bin.stormproof).toBe('./dist/cli/main.js');
        // The clone's package.json is left as it was (postpack puts back the `prepare` script).
        expect(manifest.scripts.prepare).toBeDefined();
        expect(existsSync(join(clone, '.package.json.unpacked'))).toBe(false);
        file = join(dir, pack.filename);
      } finally {
        packed(file);
      }
    },
    INSTALL_TIMEOUT + 30_000,
  );

  it(
    'the tarball installs with no warning, with its LICENSE and source maps that reach the TypeScript',
    async () => {
      const file = await tarball; // packed by the test before
      expect(file).not.toBe('');
      const app = join(dir, 'from-tarball');
      mkdirSync(app);
      writeFileSync(join(app, 'package.json'), '{"name":"app","private":true,"type":"module"}');
      // npm's own level: warnings shown, as a user sees them.
      const install = await run(npm, ['install', '--no-audit', '--no-fund', file], app, {
        npm_config_loglevel: 'warn',
      }).then(
        (done) => ({ status: 0, stderr: done.stderr }),
        (error: { code?: number; stderr?: string }) => ({
          status: error.code,
          stderr: error.stderr,
        }),
      );
      expect(install.status).toBe(0);
      expect(install.stderr).not.toMatch(/warn/i);
      const installed = join(app, 'node_modules', 'stormproof');
      expect(readFileSync(join(installed, 'LICENSE'), 'utf8')).toMatch(/^MIT License/);
      const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8'));
      expect(manifest.scripts?.prepare).toBeUndefined();
      // Every map carries the source it points to, so a debugger needs nothing unshipped.
      const maps = readdirSync(join(installed, 'dist'), {
        recursive: true,
        encoding: 'utf8',
      }).filter((f) => f.endsWith('.map'));
      expect(maps.length).toBeGreaterThan(20);
      for (const file of maps) {
        const map = JSON.parse(readFileSync(join(installed, 'dist', file), 'utf8'));
        expect(map.sourcesContent?.length, file).toBe(map.sources.length);
        expect(map.sourcesContent.every((s: unknown) => typeof s === 'string' && s !== '')).toBe(
          true,
        );
      }
      // A stack trace through the package names its TypeScript file and line.
      writeFileSync(
        join(app, 'trace.mjs'),
        "import { createRetryPolicy } from 'stormproof';\n" +
          'try { createRetryPolicy({ maxAttempts: -1 }); } catch (e) { console.log(e.stack); }\n',
      );
      const trace = await run(process.execPath, ['--enable-source-maps', 'trace.mjs'], app);
      expect(trace.stdout).toMatch(/src\/core\/[a-z-]+\.ts:\d+/);
    },
    INSTALL_TIMEOUT + 30_000,
  );
});
