// Pins the server engine's decisions bit for bit: seeded traffic (first attempts and retries of
// four criticalities, callers that leave, an overload, an outage, a recovery) through
// `createShedder` under several configurations, on an exact clock and on one whose timers fire
// late. Every admission, rejection (reason, status, headers, wait), hook event and a stats
// snapshot every 50 ms is written to a trace, and the trace is hashed. The engine may be
// reorganised freely; a change to any decision fails here, with the trace's counts printed, so
// a deliberate change is seen and explained (PRINT_PINS=1 prints the new pins).
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  type Admission,
  CRITICALITY_LEVELS,
  createShedder,
  type ShedderOptions,
  type Ticket,
} from '../src/server/index.js';
import { ManualClock } from './helpers/clocks.js';

function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

interface Running {
  readonly ticket: Ticket;
  readonly doneAt: number;
  readonly status: number;
  readonly downstreamStop: boolean;
}

/**
 * Runs 3 s of traffic through one engine, 1 ms at a time: load 0.5x of a backend of true
 * concurrency 8 with 10 ms requests for 500 ms, then 3x until 1500 ms, an outage (every request
 * answers 503 after 2 ms) until 2000 ms, then 1.5x. Returns the trace and its counts.
 */
async function trace(
  options: ShedderOptions,
  lateMs: number,
): Promise<{ lines: string[]; counts: Record<string, number> }> {
  const clock = new ManualClock({ lateMs });
  const lines: string[] = [];
  const counts: Record<string, number> = {};
  const count = (key: string) => {
    counts[key] = (counts[key] ?? 0) + 1;
  };
  const s = createShedder({
    clock,
    random: seeded(7),
    onShed: (e) => lines.push(`${clock.t} shed-event ${JSON.stringify(e)}`),
    onRamp: (e) => lines.push(`${clock.t} ramp ${JSON.stringify(e)}`),
    onLimit: (e) => lines.push(`${clock.t} limit ${e.previous}->${e.limit}`),
    ...options,
  });
  const traffic = seeded(11);
  const running: Running[] = [];
  const callers: Array<{ aborted: boolean; leaveAt: number }> = [];
  let id = 0;
  const start = (ticket: Ticket, at: number) => {
    const outage = at >= 1500 && at < 2000;
    const busy = Math.max(1, running.length / 8);
    running.push({
      ticket,
      doneAt: at + (outage ? 2 : Math.ceil((5 + traffic() * 10) * busy)),
      status: outage ? 503 : 200,
      downstreamStop: outage && traffic() < 0.5,
    });
  };
  const record = (mine: number, at: number, a: Admission, queued: boolean) => {
    if (a.admitted) {
      count(queued ? 'admitted-after-queue' : 'admitted');
      lines.push(`${clock.t} ${mine} admitted retry=${a.retry} waited=${clock.t - at}`);
      start(a, clock.t);
    } else {
      count(`shed-${a.reason}`);
      lines.push(
        `${clock.t} ${mine} ${a.reason} ${a.kind} ${a.status} ${JSON.stringify(a.headers)} ${a.waitMs}`,
      );
    }
  };
  for (let t = 0; t < 3000; t++) {
    const load = t < 500 ? 0.5 : t < 1500 ? 3 : t < 2000 ? 1 : 1.5;
    // The backend serves 8 requests of 10 ms at once: 0.8 requests per ms.
    let arrivals = 0;
    for (let k = 0; k < 4; k++) if (traffic() < (load * 0.8) / 4) arrivals++;
    for (let k = 0; k < arrivals; k++) {
      const mine = id++;
      const attempt = traffic() < 0.3 ? 2 + Math.floor(traffic() * 3) : 1;
      const level = CRITICALITY_LEVELS[Math.floor(traffic() * 4)]!;
      const headers: Record<string, string> = { 'x-criticality': level };
      if (attempt > 1) headers['stormproof-attempt'] = String(attempt);
      const caller = { aborted: false, leaveAt: traffic() < 0.1 ? t + 20 : Infinity };
      callers.push(caller);
      const at = clock.t;
      const now = s.admitOrQueue(
        (name) => headers[name],
        (a) => record(mine, at, a, true),
        caller,
      );
      if (now === undefined) {
        count('queued');
        lines.push(`${clock.t} ${mine} queued`);
      } else record(mine, at, now, false);
    }
    await clock.advance(1);
    for (const c of callers) if (c.leaveAt <= clock.t) c.aborted = true;
    for (let i = 0; i < running.length; ) {
      const r = running[i]!;
      if (r.doneAt <= clock.t) {
        running.splice(i, 1);
        const stop = r.ticket.finish(r.status, (name) =>
          name === 'stormproof-overloaded' && r.downstreamStop ? '1' : undefined,
        );
        if (stop) count('downstream-stop');
      } else i++;
    }
    if (t % 50 === 49) lines.push(`${clock.t} stats ${JSON.stringify(s.stats())}`);
  }
  s.close();
  for (const r of running) r.ticket.finish(200);
  lines.push(`end stats ${JSON.stringify(s.stats())}`);
  expect(clock.pending.timers).toBe(0);
  return { lines, counts };
}

const digest = (lines: string[]) => createHash('sha256').update(lines.join('\n')).digest('hex');

const CONFIGS: ReadonlyArray<{ name: string; options: ShedderOptions }> = [
  { name: 'fixed limit 8, criticality', options: { limit: 8, criticalityHeader: 'x-criticality' } },
  {
    name: 'gradient2, small queue, load-aware Retry-After',
    options: {
      limit: { kind: 'gradient2', windowMs: 100, minSamples: 5 },
      queue: { capacity: 10 },
      retryAfter: { mode: 'load-aware', capMs: 5000 },
    },
  },
  {
    name: 'aimd, no queue, no shares',
    options: {
      limit: { kind: 'aimd', min: 2, initial: 4 },
      queue: false,
      prioritizeFirstAttempts: false,
    },
  },
  {
    name: 'fixed limit 6, ramp, gateway',
    options: {
      limit: 6,
      ramp: { windowMs: 100, minRequests: 5 },
      gateway: { windowMs: 1000, minRequests: 5 },
      criticalityHeader: 'x-criticality',
      defaultCriticality: 'sheddable',
    },
  },
];

const PINNED: Record<string, { counts: Record<string, number>; hash: string }> = {
  'fixed limit 8, criticality / 0': {
    counts: {
      admitted: 666,
      queued: 2377,
      'admitted-after-queue': 1426,
      'shed-queue-wait': 2014,
      'shed-queue-timeout': 29,
      'shed-abandoned': 1,
    },
    hash: 'b53c05d3f02d753ed4b036321a09bb002163d4ee535b70d9f6b4a3e6717052b5',
  },
  'fixed limit 8, criticality / 3': {
    counts: {
      admitted: 791,
      queued: 1404,
      'admitted-after-queue': 734,
      'shed-queue-wait': 1625,
      'shed-queue-timeout': 6,
      'shed-ramp': 983,
    },
    hash: '155ff841bdb4cf50ecc10bb67f9f2df97facd07e3cc017bb092bb8cb54cbb50f',
  },
  'gradient2, small queue, load-aware Retry-After / 0': {
    counts: {
      admitted: 865,
      queued: 1754,
      'admitted-after-queue': 1406,
      'shed-queue-full': 391,
      'shed-queue-wait': 1444,
      'shed-abandoned': 3,
      'shed-queue-timeout': 63,
    },
    hash: 'adbd56e7faaca28a0509f97fb7ca7f0d3b06e2ce72347387924006deab98cef1',
  },
  'gradient2, small queue, load-aware Retry-After / 3': {
    counts: {
      admitted: 889,
      queued: 1698,
      'admitted-after-queue': 1361,
      'shed-queue-full': 388,
      'shed-queue-wait': 1465,
      'shed-abandoned': 3,
      'shed-queue-timeout': 56,
    },
    hash: '2444ac3daafc72c27c2d57631c541bc558f259be98ebe29a69da05b0f140b442',
  },
  'aimd, no queue, no shares / 0': {
    counts: {
      admitted: 2382,
      'shed-limit': 1791,
    },
    hash: 'a456ed1fdc1381e19f9e09f47b56b98cda40d368cc2f02650ba9a5cad09a8ec1',
  },
  'aimd, no queue, no shares / 3': {
    counts: {
      admitted: 2382,
      'shed-limit': 1791,
    },
    hash: 'a456ed1fdc1381e19f9e09f47b56b98cda40d368cc2f02650ba9a5cad09a8ec1',
  },
  'fixed limit 6, ramp, gateway / 0': {
    counts: {
      admitted: 582,
      queued: 1534,
      'admitted-after-queue': 850,
      'shed-abandoned': 2,
      'shed-queue-wait': 1994,
      'shed-queue-timeout': 25,
      'downstream-stop': 126,
      'shed-ramp': 385,
      'shed-throttle': 286,
      'shed-queue-full': 2,
    },
    hash: '3547cf9127c79eef3d58b7f1786e97810e7860e9c5096fe89a8c8ed0bcf0bc42',
  },
  'fixed limit 6, ramp, gateway / 3': {
    counts: {
      admitted: 588,
      queued: 1528,
      'admitted-after-queue': 828,
      'shed-abandoned': 3,
      'shed-queue-wait': 1982,
      'shed-queue-timeout': 23,
      'downstream-stop': 127,
      'shed-ramp': 400,
      'shed-throttle': 283,
      'shed-queue-full': 2,
    },
    hash: '78bfe82f9f81e2f405b5e6681aa8cf49ab3cf1c7c04a955048f43a37a8bcc487',
  },
};

describe('the server engine, pinned by a recorded admission trace', () => {
  for (const { name, options } of CONFIGS) {
    for (const lateMs of [0, 3]) {
      it(`${name}, clock ${lateMs} ms late`, async () => {
        const { lines, counts } = await trace(options, lateMs);
        const key = `${name} / ${lateMs}`;
        const hash = digest(lines);
        if (process.env.PRINT_PINS)
          console.log(`PIN ${JSON.stringify({ [key]: { counts, hash } })}`);
        expect({ key, counts, hash }).toEqual({ key, ...PINNED[key] });
      });
    }
  }
});
