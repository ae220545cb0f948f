// The storm lab's page as a person gets it: `stormproof lab --serve` (dist/cli/main.js, with the
// page built into dist/page by `npm run build:page` before the tests) on 127.0.0.1.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAIN, root } from './helpers/cli.js';

/** A running `stormproof lab --serve`, and what it printed. */
interface Served {
  readonly child: ChildProcess;
  origin: string;
  stdout: string;
  stderr: string;
}

/** Starts `stormproof lab --serve ...args`; resolves once it prints its address. */
function serve(args: readonly string[] = []): Promise<Served> {
  const child = spawn(process.execPath, [MAIN, 'lab', '--serve', ...args], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const served: Served = { child, origin: '', stdout: '', stderr: '' };
  return new Promise((resolve, reject) => {
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      served.stdout += d;
      const address = /http:\/\/127\.0\.0\.1:\d+/.exec(served.stdout);
      if (address !== null && served.origin === '') {
        served.origin = address[0];
        resolve(served);
      }
    });
    child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      served.stderr += d;
    });
    child.on('error', reject);
    child.on('exit', (code) =>
      reject(new Error(`lab --serve exited with ${code} before serving: ${served.stderr}`)),
    );
  });
}

/** Ends a server the way a person does, with Ctrl-C; resolves with its exit code. */
async function stop(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  const exited = once(child, 'exit');
  child.kill('SIGINT');
  const [code] = await exited;
  return code as number | null;
}

/** One raw request (no URL normalising, any Host header); resolves with the status and body. */
function raw(
  origin: string,
  path: string,
  options: { method?: string; host?: string } = {},
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  const url = new URL(origin);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path,
        method: options.method ?? 'GET',
        headers: { host: options.host ?? url.host },
        agent: false,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (d: string) => {
          body += d;
        });
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

let server: Served | undefined;

beforeAll(() => {
  // The page as `npm run build` makes it: the global setup builds only what tsc builds.
  execFileSync(
    process.execPath,
    ['node_modules/vite/bin/vite.js', 'build', '--config', 'src/page/vite.config.ts'],
    {
      cwd: root,
      stdio: 'inherit',
    },
  );
}, 60_000);

afterAll(async () => {
  if (server !== undefined) await stop(server.child);
});

describe('stormproof lab --serve', () => {
  it('serves the built page on 127.0.0.1 with its script and stylesheet', async () => {
    server = await serve();
    expect(server.stdout).toMatch(
      /^The storm lab's page: http:\/\/127\.0\.0\.1:\d+\/ \(Ctrl-C stops it\)\n$/,
    );
    const page = await fetch(`${server.origin}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('content-security-policy')).toContain("default-src 'self'");
    const html = await page.text();
    expect(html).toContain('<title>The storm lab: stormproof</title>');
    const assets = [...html.matchAll(/(?:src|href)="\.\/(assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets.map((a) => a.replace(/-[\w-]+\./, '.'))).toEqual([
      'assets/index.js',
      'assets/index.css',
    ]);
    for (const asset of assets) {
      const res = await fetch(`${server.origin}/${asset}`);
      expect(res.status, asset).toBe(200);
      expect(res.headers.get('content-type'), asset).toMatch(/^text\/(javascript|css)/);
      // Nothing is loaded from elsewhere: no absolute URL of another origin in the page's files.
      expect(await res.text(), asset).not.toMatch(/\b(?:src|href)=["']?https?:/);
    }
  });

  it('serves nothing outside the page, to no other host name, and only GET and HEAD', async () => {
    const origin = server!.origin;
    for (const path of ['/../package.json', '/%2e%2e/package.json', '/..%2f..%2fpackage.json']) {
      expect((await raw(origin, path)).status, path).toBe(404);
    }
    expect((await raw(origin, '/assets')).status).toBe(404);
    expect((await raw(origin, '/nothing.html')).status).toBe(404);
    expect((await raw(origin, '/', { host: 'storm.example:80' })).status).toBe(421);
    expect((await raw(origin, '/', { host: `localhost:${new URL(origin).port}` })).status).toBe(
      200,
    );
    const post = await raw(origin, '/', { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
    const head = await raw(origin, '/', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
  });

  it('takes --port, refuses a port in use (exit 2), and stops on Ctrl-C', async () => {
    const first = await serve(['--port', '0']);
    const port = new URL(first.origin).port;
    const second = spawn(process.execPath, [MAIN, 'lab', '--serve', '--port', port], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    second.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    const [code] = await once(second, 'exit');
    expect(code).toBe(2);
    expect(stderr).toBe(
      `stormproof lab --serve: port ${port} is in use; give another --port, or 0\n`,
    );
    expect(await stop(first.child)).toBe(130);
    expect(first.stderr).toBe('stormproof: interrupted\n');
    await expect(fetch(first.origin)).rejects.toThrow();
  });

  it('says what is wrong with its options', async () => {
    const run = (args: string[]) =>
      new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
        const child = spawn(process.execPath, [MAIN, 'lab', ...args], { cwd: root });
        let out = '';
        let err = '';
        child.stdout.setEncoding('utf8').on('data', (d: string) => {
          out += d;
        });
        child.stderr.setEncoding('utf8').on('data', (d: string) => {
          err += d;
        });
        child.on('exit', (code) => resolve({ code, out, err }));
      });
    const bad = await run(['--serve', '--port', '70000']);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('--port must be an integer from 0 to 65535');
    const both = await run(['--serve', '--live']);
    expect(both.code).toBe(2);
    const help = await run(['--serve', '--help']);
    expect(help.code).toBe(0);
    expect(help.out).toMatch(/--port N\s+the port on 127\.0\.0\.1 \(0: a free one\) \(default 0\)/);
  });
});
