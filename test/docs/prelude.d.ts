// The placeholders the docs' examples use without defining them: the things of the reader's own
// program (their app, their handler, their logger). test/docs-examples.test.ts compiles every
// `ts` block of README.md and docs/*.md with this file beside it and nothing else: any import a
// block needs, it writes itself. A block marked `ts run` is a complete program and may use none
// of these (it runs as pasted).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Express } from 'express';

declare global {
  /** The reader's Express (or Connect) application. */
  const app: Express;
  /** The reader's request handler on node:http. */
  const handler: (req: IncomingMessage, res: ServerResponse) => void;
  /** A URL the reader calls. */
  const url: string;
  /** A request body the reader sends. */
  const body: string;
  /** A gRPC server's address, host:port. */
  const address: string;
  /** The reader's logger. */
  const log: {
    debug(...args: unknown[]): void;
    info(...args: unknown[]): void;
    warn(...args: unknown[]): void;
  };
  /** The reader's metrics client. */
  const metrics: { increment(name: string, attributes?: Record<string, string>): void };
  /** The reader's own work, for the timer examples. */
  function refreshCache(signal: AbortSignal): Promise<void>;
  function refreshForecast(): Promise<void>;
  /** A stable name of this host or device (the timers spread by it). */
  const hostId: string;
  const deviceId: string;
}
