// Debian's redis-server, started by a test on a loopback port and stopped by it. Without
// redis-server the tests that need it fail, naming the package: they never skip.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';

const REDIS = process.env.REDIS_SERVER ?? '/usr/bin/redis-server';

/** A loopback port nobody listens on now. */
export async function freePort(): Promise<number> {
  const s = createServer();
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  const { port } = s.address() as { port: number };
  s.close();
  await once(s, 'close');
  return port;
}

/** Starts redis-server on 127.0.0.1:`port` (no persistence) and resolves once it accepts connections. */
export async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn(
    REDIS,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.on('error', () => {}); // reported below through the exit
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`redis-server did not start: ${out}`)), 10_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d;
      if (out.includes('Ready to accept connections')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(
        new Error(
          `redis-server (${REDIS}) could not start (exit ${code}); install Debian's redis-server. ${out}`,
        ),
      );
    });
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(
        new Error(
          `redis-server (${REDIS}) could not start: ${e.message}; install Debian's redis-server`,
        ),
      );
    });
  });
  return child;
}

/** Stops it at once, as a crash would. */
export async function stopRedis(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGKILL');
  await once(child, 'exit');
}
