// Closing for real: every socket a lab part accepted or opened is tracked, and closing waits
// until each one has closed, so nothing of a run is left when the next starts.
import type { Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** Sockets a lab part opened or accepted, so that closing it waits until each one is closed. */
export class Sockets {
  readonly #open = new Set<Socket>();

  /** Tracks `socket` until it closes. */
  readonly add = (socket: Socket): void => {
    if (socket.destroyed || this.#open.has(socket)) return;
    this.#open.add(socket);
    socket.once('close', () => this.#open.delete(socket));
  };

  /** Destroys every tracked socket; resolves when all are closed. */
  async destroyAll(): Promise<void> {
    const closing = [...this.#open].map(
      (socket) => new Promise<void>((resolve) => socket.once('close', () => resolve())),
    );
    for (const socket of this.#open) socket.destroy();
    await Promise.all(closing);
  }
}

/** Closes `server`: stops listening, destroys its connections and waits until all are closed. */
export async function closeServer(server: Server, sockets: Sockets): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  await sockets.destroyAll();
  await closed;
}

/**
 * Starts `server` on 127.0.0.1 at a free port, its accepted sockets tracked in `sockets`;
 * resolves with its base URL. A client that hangs up resets its socket: not an error of the server.
 */
export async function listenOnLoopback(server: Server, sockets: Sockets): Promise<string> {
  server.on('connection', sockets.add);
  server.on('clientError', (_error, socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
