// Every example a reader can paste, checked as they would use it: each `ts`/`js` block of
// README.md and docs/*.md is compiled with `tsc --strict` (module nodenext) against the packed
// package in a fresh project, with only test/docs/prelude.d.ts beside it (the reader's own `app`,
// `handler`, `log`, ...; never an import). A block marked `ts run=<name>` is a complete program:
// it is run as pasted, and the driver of that name below checks what the prose says it does.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import {
  type ClientRequest,
  createServer,
  type IncomingHttpHeaders,
  request,
  type Server,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startRedis, stopRedis } from './helpers/redis.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
/** What the examples import besides stormproof: the reader installs these themselves. */
const THEIR_PACKAGES = [
  '@types',
  '@grpc',
  '@redis',
  '@hono',
  'hono',
  'express',
  'fastify',
  'undici',
  '@opentelemetry',
  'axios',
];

interface Block {
  /** docs/server.md:404, where the block's fence is. */
  where: string;
  lang: 'ts' | 'js';
  /** The driver that runs it, for a complete program. */
  run: string | undefined;
  code: string;
  /** Its file in the project. */
  file: string;
}

/** The `ts`/`js` fenced blocks of one markdown file. */
function blocksOf(doc: string): Block[] {
  const lines = readFileSync(join(root, doc), 'utf8').split('\n');
  const found: Block[] = [];
  let open: { line: number; lang: 'ts' | 'js'; run: string | undefined; code: string[] } | null =
    null;
  let fenced = false;
  lines.forEach((text, i) => {
    if (open !== null) {
      if (text.startsWith('```')) {
        const where = `${doc}:${open.line}`;
        const slug = `${doc.replace(/\W+/g, '_')}_${open.line}`;
        found.push({
          where,
          lang: open.lang,
          run: open.run,
          code: open.code.join('\n'),
          file: `${slug}.${open.lang}`,
        });
        open = null;
      } else open.code.push(text);
      return;
    }
    if (!text.startsWith('```')) return;
    const info = text.slice(3).trim().split(/\s+/);
    const lang = { ts: 'ts', typescript: 'ts', js: 'js', javascript: 'js' }[info[0] ?? ''];
    if (lang === undefined || fenced) {
      fenced = !fenced; // another language's block, opening or closing
      return;
    }
    const run = info.find((w) => w.startsWith('run='))?.slice(4);
    open = { line: i + 1, lang: lang as 'ts' | 'js', run, code: [] };
  });
  return found;
}

const docs = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];
const blocks = docs.flatMap(blocksOf);

let project = '';
let diagnostics = new Map<string, string[]>();

/** A fresh project with the packed package installed and every block written into it. */
function makeProject(): void {
  project = mkdtempSync(join(tmpdir(), 'stormproof-docs-'));
  // dist/ is built by the suite's global setup; the scripts would build it again.
  const [packed] = JSON.parse(
    execFileSync(npm, ['pack', '--ignore-scripts', '--json', '--pack-destination', project], {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, npm_config_loglevel: 'error' },
    }),
  ) as [{ filename: string }];
  const installed = join(project, 'node_modules', 'stormproof');
  mkdirSync(installed, { recursive: true });
  execFileSync('tar', [
    '-xzf',
    join(project, packed.filename),
    '-C',
    installed,
    '--strip-components=1',
  ]);
  for (const name of THEIR_PACKAGES) {
    symlinkSync(join(root, 'node_modules', name), join(project, 'node_modules', name), 'dir');
  }
  writeFileSync(join(project, 'package.json'), '{"private":true,"type":"module"}\n');
  copyFileSync(join(root, 'test/docs/prelude.d.ts'), join(project, 'prelude.d.ts'));
  mkdirSync(join(project, 'blocks'));
  for (const b of blocks) writeFileSync(join(project, 'blocks', b.file), `${b.code}\n`);
}

/** Compiles every block in one program; emits the complete programs to out/. */
function compile(): void {
  const options: ts.CompilerOptions = {
    strict: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    types: ['node'],
    allowJs: true,
    checkJs: true,
    skipLibCheck: true,
    rootDir: join(project, 'blocks'),
    outDir: join(project, 'out'),
  };
  const files = blocks.map((b) => join(project, 'blocks', b.file));
  const program = ts.createProgram([join(project, 'prelude.d.ts'), ...files], options);
  diagnostics = new Map(blocks.map((b) => [b.file, []]));
  for (const d of ts.getPreEmitDiagnostics(program)) {
    const file = d.file === undefined ? '' : basename(d.file.fileName);
    const at =
      d.file !== undefined && d.start !== undefined
        ? d.file.getLineAndCharacterOfPosition(d.start).line + 1
        : 0;
    const text = `line ${at}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
    const list = diagnostics.get(file);
    if (list !== undefined) list.push(text);
    else diagnostics.set(file, [text]); // the prelude or a library: reported by its own test
  }
  for (const b of blocks.filter((x) => x.run !== undefined)) {
    program.emit(program.getSourceFile(join(project, 'blocks', b.file)));
  }
}

beforeAll(() => {
  makeProject();
  compile();
}, 120_000);

afterAll(() => {
  if (project !== '') rmSync(project, { recursive: true, force: true });
});

describe('the examples in README.md and docs/', () => {
  it('are found', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(18);
    expect(blocks.filter((b) => b.run !== undefined).length).toBeGreaterThanOrEqual(2);
  });

  it('never import a path inside the repository', () => {
    const inside = blocks.filter((b) => /from\s+['"](\.|\/)/.test(b.code)).map((b) => b.where);
    expect(inside).toEqual([]);
  });

  it('leave nothing outside a block to fail: the prelude and libraries compile', () => {
    const elsewhere = [...diagnostics].filter(([file]) => !blocks.some((b) => b.file === file));
    expect(elsewhere).toEqual([]);
  });

  it.each(blocks.map((b) => [b.where, b.file] as const))('%s compiles as written', (_, file) => {
    expect(diagnostics.get(file)).toEqual([]);
  });

  it('every complete program has a driver, and every driver a program', () => {
    const marked = blocks.flatMap((b) => (b.run === undefined ? [] : [b.run])).sort();
    expect(marked).toEqual(Object.keys(drivers).sort());
  });
});

// ---- Running the complete programs --------------------------------------------------------

/** A program from the docs, running in its own process, its output collected by line. */
class Program {
  readonly lines: Array<{ at: number; text: string }> = [];
  readonly child: ChildProcess;
  private waiters: Array<() => void> = [];

  constructor(block: Block, env: Record<string, string>) {
    const file = join(project, 'out', block.file.replace(/\.ts$/, '.js'));
    this.child = spawn(process.execPath, [file], {
      cwd: dirname(file),
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    for (const stream of [this.child.stdout!, this.child.stderr!]) {
      let rest = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        const parts = (rest + chunk).split('\n');
        rest = parts.pop()!;
        for (const text of parts) this.lines.push({ at: performance.now(), text });
        for (const wake of this.waiters.splice(0)) wake();
      });
    }
    this.child.on('exit', () => {
      for (const wake of this.waiters.splice(0)) wake();
    });
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The first line after `since` matching `pattern`; fails after `timeoutMs` or if the program ends. */
  async line(
    pattern: RegExp,
    since: number,
    timeoutMs: number,
  ): Promise<{ at: number; text: string }> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const found = this.lines.find((l) => l.at >= since && pattern.test(l.text));
      if (found !== undefined) return found;
      if (!this.alive) throw new Error(`the program ended (${this.output()})`);
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`no line ${pattern} within ${timeoutMs} ms: ${this.output()}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  output(): string {
    return this.lines.map((l) => l.text).join(' | ');
  }

  async stop(): Promise<void> {
    if (!this.alive) return;
    this.child.kill('SIGTERM');
    await once(this.child, 'exit');
  }
}

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  bytes: number;
  sha256: string;
  /** The request ended before its body did: the client went away. */
  aborted: boolean;
}

/** A backend on loopback that records each request whole and echoes a digest of it. */
async function recordingBackend(onFirstChunk: (url: string) => void) {
  const seen: Seen[] = [];
  const server: Server = createServer((req, res) => {
    const hash = createHash('sha256');
    let bytes = 0;
    let complete = false;
    req.on('data', (chunk: Buffer) => {
      if (bytes === 0) onFirstChunk(req.url ?? '');
      bytes += chunk.length;
      hash.update(chunk);
    });
    req.on('end', () => {
      complete = true;
      const s: Seen = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        bytes,
        sha256: hash.digest('hex'),
        aborted: false,
      };
      seen.push(s);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ method: s.method, url: s.url, bytes, sha256: s.sha256 }));
    });
    req.on('close', () => {
      if (!complete) {
        seen.push({
          method: req.method ?? '',
          url: req.url ?? '',
          headers: req.headers,
          bytes,
          sha256: '',
          aborted: true,
        });
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, seen, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/**
 * One request through node:http; `write` sends the body (all of it at once by default) and must
 * end the request.
 */
function send(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  chunks: Buffer[] = [],
  write = (req: ClientRequest) => {
    for (const c of chunks) req.write(c);
    req.end();
  },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, base), { method, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        text += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    write(req);
  });
}

const waitFor = async (check: () => boolean, timeoutMs: number, what: string) => {
  const deadline = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

const drivers: Record<string, (block: Block) => Promise<void>> = {
  /** docs/server.md, "Gateway mode": the gateway forwards each request whole, once. */
  async gateway(block) {
    const firstChunks: string[] = [];
    const backend = await recordingBackend((u) => firstChunks.push(u));
    const gateway = new Program(block, { BACKEND_URL: backend.url, PORT: '0' });
    try {
      const ready = await gateway.line(/^gateway on http:\/\/\S+$/, 0, 15_000);
      const base = ready.text.slice('gateway on '.length);

      const order = Buffer.from(JSON.stringify({ item: 'umbrella', count: 2 }));
      const posted = await send(
        base,
        'POST',
        '/orders',
        {
          'content-type': 'application/json',
          'x-request-id': 'r-1',
          'proxy-authorization': 'Basic c2VjcmV0',
        },
        [order],
      );
      expect(posted.status).toBe(200);
      const post = backend.seen.at(-1)!;
      expect(post).toMatchObject({ method: 'POST', url: '/orders', bytes: order.length });
      expect(post.sha256).toBe(createHash('sha256').update(order).digest('hex'));
      expect(post.headers['content-type']).toBe('application/json');
      expect(post.headers['x-request-id']).toBe('r-1');
      expect(post.headers['proxy-authorization']).toBeUndefined(); // hop-by-hop
      expect(JSON.parse(posted.body)).toMatchObject({ method: 'POST', bytes: order.length });

      expect((await send(base, 'DELETE', '/orders/7', {})).status).toBe(200);
      expect(backend.seen.at(-1)).toMatchObject({ method: 'DELETE', url: '/orders/7' });
      expect((await send(base, 'GET', '/items?page=2&sort=asc', {})).status).toBe(200);
      expect(backend.seen.at(-1)).toMatchObject({ method: 'GET', url: '/items?page=2&sort=asc' });

      // 8 MiB, streamed: the backend has the first chunk before the client sends the rest.
      const large = randomBytes(8 * 1024 * 1024);
      const streamed = send(base, 'PUT', '/upload', {}, [], (req) => {
        req.write(large.subarray(0, 64 * 1024));
        waitFor(() => firstChunks.includes('/upload'), 10_000, 'the first chunk at the backend')
          .then(() => req.end(large.subarray(64 * 1024)))
          .catch((e: unknown) => req.destroy(e as Error));
      });
      const uploaded = await streamed;
      expect(uploaded.status).toBe(200);
      expect(backend.seen.at(-1)).toMatchObject({
        method: 'PUT',
        bytes: large.length,
        sha256: createHash('sha256').update(large).digest('hex'),
      });

      // A client that goes away mid-body: the backend's request ends too, and the gateway goes on.
      const leaving = request(new URL('/slow', base), { method: 'POST' });
      leaving.on('error', () => {});
      leaving.write(Buffer.alloc(1024, 1));
      await waitFor(() => firstChunks.includes('/slow'), 10_000, 'the first chunk at the backend');
      leaving.destroy();
      await waitFor(
        () => backend.seen.some((s) => s.url === '/slow' && s.aborted),
        10_000,
        'the backend seeing the request end',
      );
      expect((await send(base, 'GET', '/after', {})).status).toBe(200);
      // Each request reached the backend exactly once: the gateway does not retry.
      expect(backend.seen.map((s) => s.url)).toEqual([
        '/orders',
        '/orders/7',
        '/items?page=2&sort=asc',
        '/upload',
        '/slow',
        '/after',
      ]);
      expect(gateway.alive).toBe(true);
    } finally {
      await gateway.stop();
      backend.server.close();
      backend.server.closeAllConnections();
    }
  },

  /** docs/breaker.md, "Shared across a fleet": the process survives Redis stopping and starting. */
  async redis(block) {
    const port = await freePort();
    const env = { REDIS_URL: `redis://127.0.0.1:${port}` };
    let redis = await startRedis(port);
    const program = new Program(block, env);
    // Down at start: a second copy, started while Redis is away.
    let late: Program | undefined;
    try {
      await new Promise((r) => setTimeout(r, 500)); // a few calls, synced with Redis
      expect(program.alive).toBe(true);
      const stopped = performance.now();
      await stopRedis(redis);
      await program.line(/^breaker store unavailable/, stopped, 5_000);
      late = new Program(block, env);
      const lateStart = performance.now();
      await late.line(/^breaker store unavailable/, lateStart, 5_000);
      await new Promise((r) => setTimeout(r, 1_000)); // reconnect attempts fail meanwhile
      expect(program.alive).toBe(true);
      expect(late.alive).toBe(true);
      const restarted = performance.now();
      redis = await startRedis(port);
      await program.line(/^breaker store available/, restarted, 10_000);
      await late.line(/^breaker store available/, restarted, 10_000);
      expect(program.alive).toBe(true);
      expect(late.alive).toBe(true);
    } finally {
      await program.stop();
      await late?.stop();
      await stopRedis(redis);
    }
  },
};

describe('the complete programs run as pasted', () => {
  for (const block of blocks.filter((b) => b.run !== undefined)) {
    it(`${block.where} (${block.run})`, async () => {
      expect(diagnostics.get(block.file)).toEqual([]);
      const driver = drivers[block.run!];
      expect(driver, `no driver named ${block.run}`).toBeDefined();
      await driver!(block);
    }, 60_000);
  }
});
