// `stormproof lab --serve`: the storm lab's page, as built into dist/page (npm run build), served
// on 127.0.0.1 until Ctrl-C. Static files only: the page computes everything in the browser.
import { readFile, stat } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type OptionSpec, optionsHelp, parse, UsageError } from './args.js';

/** What the server needs from the program: output streams and Ctrl-C. */
export interface ServeIo {
  out(text: string): void;
  err(text: string): void;
  readonly interrupt: AbortSignal;
}

export const SERVE_OPTIONS: readonly OptionSpec[] = [
  {
    flag: 'port',
    key: 'port',
    kind: { type: 'int', min: 0, max: 65_535 },
    default: 0,
    help: 'the port on 127.0.0.1 (0: a free one)',
  },
];

/** Where the build puts the page: dist/page, beside dist/cli. */
export const PAGE_DIR = fileURLToPath(new URL('../page/', import.meta.url));

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json; charset=utf-8',
};

/** The page's own policy, sent as a header too (frame-ancestors only works as one). */
const CSP =
  "default-src 'self'; script-src 'self'; worker-src blob:; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

function reply(res: ServerResponse, status: number, text: string, headers = {}): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...headers });
  res.end(text);
}

/** The file under `root` that a path names, or undefined: nothing outside it, no directories. */
async function fileFor(root: string, pathname: string): Promise<string | undefined> {
  let decoded: string;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {
    return undefined;
  }
  if (decoded.includes('\0')) return undefined;
  const file = resolve(root, `.${decoded === '/' ? '/index.html' : decoded}`);
  if (!file.startsWith(root.endsWith(sep) ? root : root + sep)) return undefined;
  try {
    return (await stat(file)).isFile() ? file : undefined;
  } catch {
    return undefined;
  }
}

function handler(root: string, hosts: () => readonly string[]) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // Another name for this address (DNS rebinding) gets nothing.
    if (!hosts().includes(req.headers.host ?? '')) return reply(res, 421, 'Misdirected request\n');
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return reply(res, 405, 'Method not allowed\n', { allow: 'GET, HEAD' });
    }
    const pathname = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
    const file = await fileFor(root, pathname);
    if (file === undefined) return reply(res, 404, 'Not found\n');
    let body: Buffer;
    try {
      body = await readFile(file);
    } catch {
      return reply(res, 500, 'Cannot read the file\n');
    }
    res.writeHead(200, {
      'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
      'content-length': body.length,
      'cache-control': 'no-cache',
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'content-security-policy': CSP,
    });
    res.end(req.method === 'HEAD' ? undefined : body);
  };
}

/** Serves the page until `io.interrupt` aborts; returns the exit code. */
export async function serveLab(args: readonly string[], io: ServeIo): Promise<number> {
  const command = 'stormproof lab --serve';
  const parsed = parse(command, args, SERVE_OPTIONS);
  if (parsed.help) {
    io.out(
      `Usage: ${command} [options]\n\nThe storm lab in a page: the herd, the storm, the metastability map and the stack check,\ncomputed in the browser by the same simulator, served on 127.0.0.1 until Ctrl-C.\n\nOptions:\n${optionsHelp(SERVE_OPTIONS)}\n`,
    );
    return 0;
  }
  const root = resolve(PAGE_DIR);
  try {
    await stat(resolve(root, 'index.html'));
  } catch {
    throw new Error(`the page is not built (no ${resolve(root, 'index.html')}): run npm run build`);
  }
  let port = parsed.values.port as number;
  const server = createServer(handler(root, () => [`127.0.0.1:${port}`, `localhost:${port}`]));
  await new Promise<void>((done, fail) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      fail(
        error.code === 'EADDRINUSE'
          ? new UsageError(`${command}: port ${port} is in use; give another --port, or 0`)
          : error,
      ),
    );
    server.listen(port, '127.0.0.1', () => done());
  });
  port = (server.address() as AddressInfo).port;
  io.out(`The storm lab's page: http://127.0.0.1:${port}/ (Ctrl-C stops it)\n`);
  await new Promise<void>((done) => {
    if (io.interrupt.aborted) done();
    else io.interrupt.addEventListener('abort', () => done(), { once: true });
  });
  server.closeAllConnections();
  await new Promise<void>((done) => server.close(() => done()));
  return 0;
}
