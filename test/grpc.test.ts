// stormproof/grpc beyond the conformance suite: the pushback and RetryInfo readers byte by byte,
// option checks, the service config's shape and grpc-js obeying it, and the interceptor on
// injected clocks (exact waits, a clock that fires late, nothing left behind).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Client, Metadata, type ServiceError, type StatusObject } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import type { Clock } from '../src/core/clock.js';
import { createRetryPolicy, getRetryReport } from '../src/core/retry.js';
import {
  createRetryInterceptor,
  parsePushback,
  type RetryInterceptorOptions,
  readRetryInfoMs,
  toDuration,
  toServiceConfig,
} from '../src/grpc/index.js';
import { checkStack } from '../src/sim/check.js';
import { instantClock, ManualClock } from './helpers/clocks.js';
import {
  call,
  closedAfterEach,
  connect,
  definition,
  SERVICE,
  startServer,
} from './helpers/grpc.js';
import * as proto from './helpers/proto.js';
import { hideExpectedWarnings } from './helpers/warnings.js';

hideExpectedWarnings(['STORMPROOF_GRPC_MAX_ATTEMPTS', 'TimeoutOverflowWarning']);

const OK = 0;
const INVALID_ARGUMENT = 3;
const RESOURCE_EXHAUSTED = 8;
const UNAVAILABLE = 14;

const { servers, clients } = closedAfterEach();

async function withInterceptor(options: RetryInterceptorOptions) {
  const s = await startServer();
  servers.push(s);
  const client = connect(s.address, { interceptor: createRetryInterceptor(options) });
  clients.push(client);
  return { s, client };
}

/** Collects process warnings emitted while `run` runs. */
async function warningsOf(run: () => unknown): Promise<string[]> {
  const seen: string[] = [];
  const listener = (w: Error) => seen.push(w.message);
  process.on('warning', listener);
  try {
    await run();
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('warning', listener);
  }
  return seen;
}

describe('parsePushback', () => {
  it.each([
    ['0', 0],
    ['250', 250],
    ['2147483647', 2147483647],
  ])('%j means wait exactly %d ms', (value, ms) => {
    expect(parsePushback([value])).toBe(ms);
  });

  it.each([
    '-1',
    '-2147483648',
    '-0',
    '2147483648',
    '9999999999',
    '',
    'abc',
    '100ms',
    '1e3',
    '0x10',
    ' 12',
    '12 ',
    '1 2',
    '+5',
    '007',
    '1.5',
    '١٢', // Arabic-Indic digits: not ASCII
  ])('%j means do not retry', (value) => {
    expect(parsePushback([value])).toBe('do-not-retry');
  });

  it('reads no trailer as no pushback, and two values or a binary one as do not retry', () => {
    expect(parsePushback([])).toBeUndefined();
    expect(parsePushback(['10', '20'])).toBe('do-not-retry');
    expect(parsePushback([Buffer.from('10')])).toBe('do-not-retry');
  });
});

describe('readRetryInfoMs', () => {
  // google.rpc.Status{code: 14, details: [Any{RetryInfo{retry_delay: 1.5s}}]}, written out by hand
  // from the protobuf encoding rules, so the test does not rest on the helper alone.
  const literal = Uint8Array.from([
    0x08,
    0x0e,
    0x1a,
    0x36,
    0x0a,
    0x28,
    ...Buffer.from('type.googleapis.com/google.rpc.RetryInfo'),
    0x12,
    0x0a,
    0x0a,
    0x08,
    0x08,
    0x01,
    0x10,
    0x80,
    0xca,
    0xb5,
    0xee,
    0x01,
  ]);

  it('decodes a hand-written Status with a RetryInfo of 1.5 s', () => {
    expect(readRetryInfoMs(literal)).toBe(1500);
    expect(literal.subarray(4)).toEqual(Uint8Array.from(proto.retryInfo(1, 500e6)));
  });

  it('finds RetryInfo after other details and rounds nanoseconds up to whole ms', () => {
    const other = proto.any('type.googleapis.com/google.rpc.ErrorInfo', [0x0a, 0x01, 0x78]);
    expect(readRetryInfoMs(proto.status(14, 'x', other, proto.retryInfo(0, 1_500_001)))).toBe(2);
    expect(readRetryInfoMs(proto.status(14, 'x', proto.retryInfo(0)))).toBe(0);
  });

  it('ignores what it cannot trust: no detail, negative, too long, malformed, not bytes', () => {
    expect(readRetryInfoMs(proto.status(14, 'x'))).toBeUndefined();
    expect(readRetryInfoMs(undefined)).toBeUndefined();
    expect(readRetryInfoMs('0a08')).toBeUndefined();
    // seconds = -1: int64 two's complement, ten bytes
    const negative = proto.any(
      'type.googleapis.com/google.rpc.RetryInfo',
      [0x0a, 0x0b, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
    );
    expect(readRetryInfoMs(proto.status(14, 'x', negative))).toBeUndefined();
    expect(readRetryInfoMs(proto.status(14, 'x', proto.retryInfo(3_000_000)))).toBeUndefined();
    expect(readRetryInfoMs(proto.status(14, 'x', proto.retryInfo(0, 1e9)))).toBeUndefined();
    expect(readRetryInfoMs(literal.subarray(0, literal.length - 3))).toBeUndefined();
  });
});

describe('toServiceConfig', () => {
  it('writes an A6 retry policy and throttling, durations as proto3 strings', () => {
    const config = toServiceConfig({
      service: 'weather.v1.Forecasts',
      method: 'Get',
      maxAttempts: 3,
      baseDelayMs: 100,
      maxDelayMs: 1500,
      backoffMultiplier: 1.5,
      retryableStatusCodes: ['unavailable', 10],
      throttling: { maxTokens: 10, tokenRatio: 0.5466 },
    });
    expect(config).toEqual({
      methodConfig: [
        {
          name: [{ service: 'weather.v1.Forecasts', method: 'Get' }],
          retryPolicy: {
            maxAttempts: 3,
            initialBackoff: '0.1s',
            maxBackoff: '1.5s',
            backoffMultiplier: 1.5,
            retryableStatusCodes: ['UNAVAILABLE', 'ABORTED'],
          },
        },
      ],
      retryThrottling: { maxTokens: 10, tokenRatio: 0.546 },
    });
  });

  it('fills the defaults', () => {
    expect(toServiceConfig({ service: 's.S' }).methodConfig[0]!.retryPolicy).toEqual({
      maxAttempts: 4,
      initialBackoff: '0.2s',
      maxBackoff: '5s',
      backoffMultiplier: 2,
      retryableStatusCodes: ['UNAVAILABLE'],
    });
  });

  it('writes durations to the nanosecond', () => {
    expect([200, 1, 1500, 0.0005, 60_000, 1.2345678].map(toDuration)).toEqual([
      '0.2s',
      '0.001s',
      '1.5s',
      '0.0000005s',
      '60s',
      '0.001234568s',
    ]);
  });

  it('treats maxAttempts above 5 as 5, with a warning', async () => {
    let config: ReturnType<typeof toServiceConfig> | undefined;
    const warnings = await warningsOf(() => {
      config = toServiceConfig({ service: 's.S', maxAttempts: 9 });
    });
    expect(config!.methodConfig[0]!.retryPolicy.maxAttempts).toBe(5);
    expect(warnings.join()).toMatch(/maxAttempts 9 is treated as 5/);
  });

  it.each([
    [{ service: 's.S', maxAttempts: 1 }, RangeError, /maxAttempts must be >= 2/],
    [{ service: 's.S', maxAttempts: 2.5 }, RangeError, /maxAttempts/],
    [{ service: 's.S', maxAttempts: null }, TypeError, /maxAttempts must not be null/],
    [{ service: 's.S', baseDelayMs: 0 }, RangeError, /baseDelayMs must be > 0/],
    [{ service: 's.S', baseDelayMs: 1e-7 }, RangeError, /baseDelayMs must be at least 1 ns/],
    [{ service: 's.S', maxDelayMs: -1 }, RangeError, /maxDelayMs/],
    [{ service: 's.S', backoffMultiplier: 0 }, RangeError, /backoffMultiplier/],
    [
      { service: 's.S', retryableStatusCodes: [] },
      RangeError,
      /retryableStatusCodes must not be empty/,
    ],
    [{ service: 's.S', retryableStatusCodes: ['NOPE'] }, RangeError, /retryableStatusCodes\[0\]/],
    [{ service: 's.S', retryableStatusCodes: [17] }, RangeError, /retryableStatusCodes\[0\]/],
    [{ service: 's.S', retryableStatusCodes: ['OK'] }, RangeError, /must not be OK/],
    [
      { service: 's.S', throttling: { maxTokens: 10.5, tokenRatio: 0.1 } },
      RangeError,
      /throttling.maxTokens/,
    ],
    [
      { service: 's.S', throttling: { maxTokens: 0, tokenRatio: 0.1 } },
      RangeError,
      /throttling.maxTokens/,
    ],
    [
      { service: 's.S', throttling: { maxTokens: 1001, tokenRatio: 0.1 } },
      RangeError,
      /throttling.maxTokens/,
    ],
    [
      { service: 's.S', throttling: { maxTokens: 10, tokenRatio: 0.0009 } },
      RangeError,
      /throttling.tokenRatio/,
    ],
    [{ service: 's.S', throttling: null }, TypeError, /throttling/],
    [{ service: '' }, TypeError, /service/],
    [{ service: 'a/b' }, TypeError, /service/],
    [{ service: 's.S', method: 3 }, TypeError, /method/],
    [{ service: 's.S', maxAttemps: 3 }, TypeError, /did you mean maxAttempts/],
  ])('refuses %j', (options, type, message) => {
    expect(() => toServiceConfig(options as never)).toThrow(type);
    expect(() => toServiceConfig(options as never)).toThrow(message);
  });

  it('is accepted and obeyed by grpc-js: listed statuses, attempts, backoff', async () => {
    const s = await startServer();
    servers.push(s);
    const config = toServiceConfig({
      service: SERVICE,
      maxAttempts: 3,
      baseDelayMs: 40,
      maxDelayMs: 40,
      retryableStatusCodes: ['unavailable'],
    });
    const client = connect(s.address, { serviceConfig: config });
    clients.push(client);
    s.always({ code: UNAVAILABLE });
    expect((await call(client, 'Unary')).code).toBe(UNAVAILABLE);
    expect(s.seen).toHaveLength(3);
    for (const gap of s.gaps()) expect(gap).toBeGreaterThanOrEqual(32 - 2);
    s.script({ code: INVALID_ARGUMENT });
    expect((await call(client, 'Unary')).code).toBe(INVALID_ARGUMENT);
    expect(s.seen).toHaveLength(4);
  });

  it("makes grpc-js's throttling exact: a tokenRatio of 0.5466 arrives as 0.546", async () => {
    // The conformance suite's throttle-ratio-truncated sequence, which grpc-js fails when given
    // 0.5466 raw (it rounds to 0.547).
    const s = await startServer();
    servers.push(s);
    const config = toServiceConfig({
      service: SERVICE,
      maxAttempts: 2,
      baseDelayMs: 1,
      throttling: { maxTokens: 37, tokenRatio: 0.5466 },
    });
    const client = connect(s.address, { serviceConfig: config });
    clients.push(client);
    s.always({ code: UNAVAILABLE });
    while (s.seen.length < 35) await call(client, 'Unary');
    s.script();
    for (let i = 0; i < 32; i++) await call(client, 'Unary');
    s.script({ code: UNAVAILABLE });
    expect((await call(client, 'Unary')).code).toBe(UNAVAILABLE);
    expect(s.seen).toHaveLength(35 + 32 + 1);
  });
});

describe('createRetryInterceptor options', () => {
  it.each([
    [null, TypeError, /options must be an object, got null/],
    [{ maxAttempts: null }, TypeError, /maxAttempts must not be null/],
    [{ maxAttempts: 0 }, RangeError, /maxAttempts must be >= 1/],
    [{ baseDelayMs: -1 }, RangeError, /baseDelayMs/],
    [{ retryableStatusCodes: [] }, RangeError, /retryableStatusCodes must not be empty/],
    [{ retryableStatusCodes: ['unavailabel'] }, RangeError, /retryableStatusCodes\[0\]/],
    [{ throttling: { maxTokens: 10.5 } }, RangeError, /throttling.maxTokens/],
    [{ throttling: { tokenRatio: 0 } }, RangeError, /throttling.tokenRatio/],
    [{ throttling: {}, budget: false }, TypeError, /throttling or budget/],
    [{ maxBufferBytes: -1 }, RangeError, /maxBufferBytes/],
    [{ deadlineMs: 0 }, RangeError, /deadlineMs/],
    [{ jitter: 'gaussian' }, TypeError, /jitter/],
    [{ retryableCodes: ['UNAVAILABLE'] }, TypeError, /has no option "retryableCodes"/],
    [{ hedging: null }, TypeError, /hedging must not be null/],
    [{ hedging: 3 }, TypeError, /hedging options must be an object/],
    [{ hedging: { maxAttempts: 1 } }, RangeError, /hedging\.maxAttempts must be >= 2/],
    [{ hedging: { maxAttempts: null } }, TypeError, /hedging maxAttempts must not be null/],
    [{ hedging: { hedgingDelayMs: -1 } }, RangeError, /hedging\.hedgingDelayMs/],
    [{ hedging: { nonFatalStatusCodes: ['OK'] } }, RangeError, /nonFatalStatusCodes\[0\]/],
    [{ hedging: { delay: 5 } }, TypeError, /hedging has no option "delay"/],
    [{ hedging: {}, maxAttempts: 3 }, TypeError, /hedging or maxAttempts, not both/],
    [{ hedging: {}, retryableStatusCodes: ['UNAVAILABLE'] }, TypeError, /not both/],
    [{ hedging: {}, onRetry: () => {} }, TypeError, /hedging or onRetry/],
    [{ hedging: {}, throttling: {}, budget: false }, TypeError, /throttling or budget/],
  ])('refuses %j at creation', (options, type, message) => {
    expect(() => createRetryInterceptor(options as never)).toThrow(type);
    expect(() => createRetryInterceptor(options as never)).toThrow(message);
  });

  it('writes A6 hedgingPolicy in toServiceConfig, checked as the interceptor checks it', () => {
    expect(
      toServiceConfig({
        service: 's.S',
        hedging: { maxAttempts: 3, hedgingDelayMs: 20, nonFatalStatusCodes: ['unavailable', 10] },
        throttling: { maxTokens: 10, tokenRatio: 0.1 },
      }),
    ).toEqual({
      methodConfig: [
        {
          name: [{ service: 's.S' }],
          hedgingPolicy: {
            maxAttempts: 3,
            hedgingDelay: '0.02s',
            nonFatalStatusCodes: ['UNAVAILABLE', 'ABORTED'],
          },
        },
      ],
      retryThrottling: { maxTokens: 10, tokenRatio: 0.1 },
    });
    expect(toServiceConfig({ service: 's.S', hedging: {} }).methodConfig[0]!.hedgingPolicy).toEqual(
      { maxAttempts: 2, hedgingDelay: '0s', nonFatalStatusCodes: [] },
    );
    expect(() => toServiceConfig({ service: 's.S', hedging: {}, maxAttempts: 3 } as never)).toThrow(
      /hedging or maxAttempts, not both/,
    );
    expect(() => toServiceConfig({ service: 's.S', hedging: null } as never)).toThrow(/hedging/);
  });

  it('caps maxAttempts at 5 with a warning', async () => {
    const warnings = await warningsOf(() => createRetryInterceptor({ maxAttempts: 6 }));
    expect(warnings.join()).toMatch(/maxAttempts 6 is treated as 5/);
  });
});

describe('createRetryInterceptor on an injected clock', () => {
  it('waits base x throttledDelayMultiplier after RESOURCE_EXHAUSTED, base after UNAVAILABLE', async () => {
    const clock = instantClock();
    const { s, client } = await withInterceptor({
      clock,
      jitter: 'none',
      baseDelayMs: 20,
      budget: false,
      retryableStatusCodes: ['UNAVAILABLE', 'RESOURCE_EXHAUSTED'],
    });
    s.script({ code: RESOURCE_EXHAUSTED }, { code: UNAVAILABLE }, { code: RESOURCE_EXHAUSTED });
    expect((await call(client, 'Unary')).code).toBe(OK);
    // 20 x 5, then 20 x 2, then 20 x 5 x 4: the backoff index grows across kinds.
    expect(clock.sleeps).toEqual([100, 40, 400]);
  });

  it('sleeps a pushback or RetryInfo exactly, without jitter', async () => {
    const clock = instantClock();
    const { s, client } = await withInterceptor({ clock, random: () => 0.99, budget: false });
    s.script(
      { code: UNAVAILABLE, pushback: '1234' },
      { code: UNAVAILABLE, details: proto.status(UNAVAILABLE, 'x', proto.retryInfo(2, 5e8)) },
    );
    expect((await call(client, 'Unary')).code).toBe(OK);
    expect(clock.sleeps).toEqual([1234, 2500]);
  });

  it('cancels a wait at once and leaves no timer or listener behind', async () => {
    const clock = new ManualClock();
    const { s, client } = await withInterceptor({ clock, baseDelayMs: 1000, budget: false });
    s.always({ code: UNAVAILABLE });
    let cancel = () => {};
    const outcome = call(client, 'Unary', { onCall: (c) => (cancel = () => c.cancel()) });
    while (clock.sleeps.length === 0) await new Promise((r) => setTimeout(r, 5));
    // The backoff wait (with its abort listener), and the engine's deadline timer.
    expect(clock.pending).toEqual({ timers: 2, listeners: 1 });
    cancel();
    expect((await outcome).code).toBe(1);
    expect(clock.pending).toEqual({ timers: 0, listeners: 0 });
    await clock.advance(5000);
    expect(s.seen).toHaveLength(1);
  });

  it("keeps to the call's deadline when the clock fires late", async () => {
    // The engine's time moves only by what it slept, but each sleep takes 3 times as long in
    // real time, as on an overloaded event loop: the engine believes every wait fits.
    let t = 0;
    const late: Clock = {
      now: () => t,
      sleep: (ms, signal) =>
        new Promise((resolve, reject) => {
          const onAbort = () => {
            clearTimeout(timer);
            reject(signal?.reason);
          };
          const timer = setTimeout(() => {
            signal?.removeEventListener('abort', onAbort);
            t += ms;
            resolve();
          }, ms * 3);
          signal?.addEventListener('abort', onAbort, { once: true });
        }),
    };
    const { s, client } = await withInterceptor({
      clock: late,
      baseDelayMs: 60,
      jitter: 'none',
      maxAttempts: 5,
      budget: false,
    });
    s.always({ code: UNAVAILABLE });
    const out = await call(client, 'Unary', { deadlineMs: 400 });
    // Waits of 60 and 120 ms "fit" 400 ms, but take 180 and 360: the second is cut at the
    // deadline, and the call ends there with DEADLINE_EXCEEDED, no third attempt sent.
    expect(out.code).toBe(4);
    expect(out.ms).toBeLessThan(400 + 90);
    expect(s.seen.length).toBeLessThanOrEqual(2);
  });

  it('gives its deadlineMs to calls that set none', async () => {
    const { s, client } = await withInterceptor({
      baseDelayMs: 1000,
      jitter: 'none',
      deadlineMs: 300,
      budget: false,
    });
    s.always({ code: UNAVAILABLE, delayMs: 400 });
    const out = await call(client, 'Unary');
    expect(out.code).toBe(4); // DEADLINE_EXCEEDED: the attempt itself outlived 300 ms
    expect(out.ms).toBeLessThan(300 + 90);
  });
});

describe('createRetryInterceptor and the engine', () => {
  it('reports each retry and why the call gave up', async () => {
    const retries: Array<{ attempt: number; code: unknown; delayMs: number }> = [];
    let reason: string | undefined;
    const { s, client } = await withInterceptor({
      clock: instantClock(),
      maxAttempts: 2,
      throttling: { maxTokens: 3, tokenRatio: 0.1 },
      onRetry: (e) =>
        retries.push({
          attempt: e.attempt,
          code: (e.error as { code: number }).code,
          delayMs: e.delayMs,
        }),
      onGiveUp: (e) => {
        reason = e.reason;
        expect(getRetryReport(e.error)?.reason).toBe(e.reason);
      },
    });
    s.always({ code: UNAVAILABLE, pushback: '7' });
    await call(client, 'Unary'); // 3 -> 2 (retry) -> 1
    expect(retries).toEqual([{ attempt: 1, code: UNAVAILABLE, delayMs: 7 }]);
    expect(reason).toBe('max-attempts');
    await call(client, 'Unary'); // 1 -> 0: throttled
    expect(reason).toBe('budget');
  });

  it('works as a per-call interceptor too', async () => {
    const s = await startServer();
    servers.push(s);
    const client = connect(s.address, {});
    clients.push(client);
    s.script({ code: UNAVAILABLE });
    const interceptor = createRetryInterceptor({ baseDelayMs: 1, budget: false });
    const outcome = await new Promise<number>((resolve) => {
      client.makeUnaryRequest(
        `/${SERVICE}/Unary`,
        (v: object) => Buffer.from(JSON.stringify(v)),
        (b: Buffer) => JSON.parse(b.toString()),
        { a: 1 },
        { interceptors: [interceptor] },
        (error) => resolve(error?.code ?? OK),
      );
    });
    expect(outcome).toBe(OK);
    expect(s.seen).toHaveLength(2);
  });
});

describe('stormproof check with a gRPC layer', () => {
  const grpcConfig = (options: Partial<Parameters<typeof toServiceConfig>[0]> = {}) => {
    const config = toServiceConfig({
      service: SERVICE,
      maxAttempts: 3,
      baseDelayMs: 100,
      maxDelayMs: 1000,
      throttling: { maxTokens: 10, tokenRatio: 0.1 },
      ...options,
    });
    return { ...config, methodConfig: [{ ...config.methodConfig[0]!, timeout: '2s' }] };
  };

  it('reads attempts, backoff, band jitter, throttling and timeout from the service config', () => {
    const report = checkStack({
      layers: [
        { name: 'web app', attempts: 1, timeoutMs: 5000 },
        { name: 'gRPC client', grpc: grpcConfig(), timeoutMs: 500 },
      ],
    });
    // 3 attempts of 500 ms, plus (100 + 200) x 1.2 of backoff: 1860 ms, within the 2 s timeout.
    expect(report).toMatchObject({
      worstCaseBottomCalls: 3,
      worstCaseLatencyMs: 1860,
      warnings: [],
    });
    expect(report.layers[1]!.maxTotalBackoffMs).toBeCloseTo(360, 9);
  });

  it("uses the config's multiplier and gRPC's cap of 5 attempts, and warns without throttling", () => {
    const config = grpcConfig({ maxAttempts: 5, backoffMultiplier: 3, maxDelayMs: 1000 });
    const raw = {
      ...config,
      methodConfig: [
        {
          ...config.methodConfig[0]!,
          retryPolicy: { ...config.methodConfig[0]!.retryPolicy, maxAttempts: 7 },
        },
      ],
    };
    delete (raw as { retryThrottling?: unknown }).retryThrottling;
    const report = checkStack({ layers: [{ name: 'gRPC client', grpc: raw }] });
    expect(report.worstCaseBottomCalls).toBe(5);
    // 100, 300, 900, then capped at 1000; each up to 1.2 times.
    expect(report.layers[0]!.maxTotalBackoffMs).toBeCloseTo((100 + 300 + 900 + 1000) * 1.2, 9);
    expect(report.warnings.join('\n')).toMatch(/no retry budget/);
  });

  it('names the field at fault', () => {
    expect(() => checkStack({ layers: [{ name: 'g', grpc: grpcConfig(), attempts: 3 }] })).toThrow(
      /layers\[0\]\.attempts cannot be given with layers\[0\]\.grpc/,
    );
    const bad = grpcConfig();
    bad.methodConfig[0]!.retryPolicy.initialBackoff = '100ms';
    expect(() => checkStack({ layers: [{ name: 'g', grpc: bad }] })).toThrow(
      /layers\[0\]\.grpc\.methodConfig\[0\]\.retryPolicy\.initialBackoff must be a proto3 Duration/,
    );
    expect(() => checkStack({ layers: [{ name: 'g', grpc: { methodConfig: [] } }] })).toThrow(
      /layers\[0\]\.grpc\.methodConfig must hold a method config with a retryPolicy/,
    );
  });

  it('works from the command line', () => {
    const dir = mkdtempSync(join(tmpdir(), 'stormproof-grpc-'));
    const file = join(dir, 'stack.json');
    writeFileSync(
      file,
      JSON.stringify({ layers: [{ name: 'gRPC client', grpc: grpcConfig(), timeoutMs: 500 }] }),
    );
    try {
      const out = execFileSync(process.execPath, ['dist/cli/main.js', 'check', file, '--json'], {
        encoding: 'utf8',
      });
      expect(JSON.parse(out)).toMatchObject({ worstCaseBottomCalls: 3, worstCaseLatencyMs: 1860 });
    } finally {
      rmSync(dir, { recursive: true });
    }
  });
});

describe('createRetryInterceptor leaves nothing behind', () => {
  it('clears its deadline timer when a call ends, retried or not', async () => {
    const { s, client } = await withInterceptor({ baseDelayMs: 1, budget: false });
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    await call(client, 'Unary', { deadlineMs: 60_000 }); // connect first
    const before = timers();
    for (let i = 0; i < 10; i++) {
      s.script({ code: UNAVAILABLE });
      expect((await call(client, 'Unary', { deadlineMs: 60_000 })).code).toBe(OK);
    }
    s.always({ code: INVALID_ARGUMENT });
    for (let i = 0; i < 10; i++) await call(client, 'Unary', { deadlineMs: 60_000 });
    // A 60 s timer per call would still be pending: 20 more than before. Short ones (a backoff's,
    // grpc-js's own) may still be running on a busy machine (beside two CPU hogs one was): they
    // are waited for, at most a second.
    for (let i = 0; i < 100 && timers() > before; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(timers()).toBeLessThanOrEqual(before);
  });
});

describe('createRetryInterceptor retry buffer', () => {
  it('does not retry a unary call whose request is larger than the buffer', async () => {
    const { s, client } = await withInterceptor({ baseDelayMs: 1, budget: false });
    s.script({ code: UNAVAILABLE }, { code: UNAVAILABLE });
    const big = 'x'.repeat(300 * 1024);
    expect((await call(client, 'Unary', { send: [{ big }] })).code).toBe(UNAVAILABLE);
    expect(s.seen).toHaveLength(1);
    const fits = 'x'.repeat(200 * 1024);
    expect((await call(client, 'Unary', { send: [{ fits }] })).code).toBe(OK);
    expect(s.seen).toHaveLength(3);
  });

  it('honours maxBufferBytes for streamed requests', async () => {
    const { s, client } = await withInterceptor({
      baseDelayMs: 1,
      budget: false,
      maxBufferBytes: 1000,
    });
    const message = { pad: 'x'.repeat(600) };
    s.script({ code: UNAVAILABLE });
    expect((await call(client, 'ClientStream', { send: [message] })).code).toBe(OK);
    expect(s.seen).toHaveLength(2);
    s.script({ code: UNAVAILABLE });
    expect((await call(client, 'ClientStream', { send: [message, message] })).code).toBe(
      UNAVAILABLE,
    );
    expect(s.seen).toHaveLength(3);
  });
});

/** What a caller receives from one call: the error grpc-js builds for it, and the final status. */
interface Received {
  readonly error: ServiceError | null;
  readonly status: StatusObject;
}

/**
 * Makes one call of `kind` and keeps what its caller gets: the callback's error (unary and
 * client-streaming) or the 'error' event's (server-streaming and bidi), and the 'status' event's
 * status, which grpc-js emits last.
 */
function receive(
  client: Client,
  kind: keyof typeof definition,
  onCall?: (c: { cancel(): void }) => void,
): Promise<Received> {
  const m = definition[kind];
  const encode = (v: object) => Buffer.from(JSON.stringify(v));
  const decode = (b: Buffer) => JSON.parse(b.toString()) as object;
  return new Promise((resolve) => {
    let error: ServiceError | null = null;
    const callback = (e: ServiceError | null) => {
      error = e;
    };
    const md = new Metadata();
    const onStatus = (status: StatusObject) => resolve({ error, status });
    if (kind === 'Unary') {
      const c = client.makeUnaryRequest(m.path, encode, decode, { a: 1 }, md, callback);
      c.on('status', onStatus);
      onCall?.(c);
    } else if (kind === 'ClientStream') {
      const c = client.makeClientStreamRequest(m.path, encode, decode, md, callback);
      c.on('status', onStatus);
      c.write({ a: 1 });
      c.end();
      onCall?.(c);
    } else if (kind === 'ServerStream') {
      const c = client.makeServerStreamRequest(m.path, encode, decode, { a: 1 }, md);
      c.on('data', () => {});
      c.on('error', callback);
      c.on('status', onStatus);
      onCall?.(c);
    } else {
      const c = client.makeBidiStreamRequest(m.path, encode, decode, md);
      c.on('data', () => {});
      c.on('error', callback);
      c.on('status', onStatus);
      c.write({ a: 1 });
      c.end();
      onCall?.(c);
    }
  });
}

describe('createRetryInterceptor: the report on the error the caller receives (issue 25)', () => {
  const exact = () =>
    ({ clock: instantClock(), jitter: 'none', baseDelayMs: 10, budget: false }) as const;

  it.each(['Unary', 'ClientStream', 'ServerStream', 'Bidi'] as const)(
    '%s: the error and the status say why the call gave up, after how many attempts and waits',
    async (kind) => {
      const { s, client } = await withInterceptor({ ...exact(), maxAttempts: 3 });
      s.always({ code: UNAVAILABLE, pushback: '25' });
      const { error, status } = await receive(client, kind);
      expect(s.seen).toHaveLength(3);
      const expected = { reason: 'max-attempts', attempts: 3, totalDelayMs: 50 };
      expect(getRetryReport(error)).toMatchObject(expected);
      expect(getRetryReport(status)).toMatchObject(expected);
    },
  );

  it('leaves the error as grpc-js made it: code, details, trailers, no extra keys', async () => {
    const { s, client } = await withInterceptor({ ...exact(), maxAttempts: 2 });
    s.always({ code: UNAVAILABLE, pushback: '25' });
    const { error, status } = await receive(client, 'Unary');
    expect(error).toMatchObject({ code: UNAVAILABLE, details: `scripted ${UNAVAILABLE}` });
    expect(error!.metadata).toBe(status.metadata);
    expect(error!.metadata.get('grpc-retry-pushback-ms')).toEqual(['25']);
    expect(Object.keys(error!).sort()).toEqual(['code', 'details', 'metadata']);
    expect(Object.getOwnPropertySymbols(error!)).toEqual([]);
    expect(Object.getOwnPropertySymbols(error!.metadata)).toEqual([]);
    expect(Object.getOwnPropertySymbols(status)).toEqual([]);
  });

  it('reports a call that never retried: its first status was not retryable', async () => {
    const { s, client } = await withInterceptor({ ...exact(), maxAttempts: 3 });
    s.always({ code: INVALID_ARGUMENT });
    for (const kind of ['Unary', 'Bidi'] as const) {
      const { error } = await receive(client, kind);
      expect(error?.code).toBe(INVALID_ARGUMENT);
      expect(getRetryReport(error)).toMatchObject({
        reason: 'not-retryable',
        attempts: 1,
        totalDelayMs: 0,
      });
    }
    expect(s.seen).toHaveLength(2);
  });

  it('reports a throttled call, and a call cancelled during its wait', async () => {
    const { s, client } = await withInterceptor({
      clock: instantClock(),
      jitter: 'none',
      baseDelayMs: 10,
      maxAttempts: 2,
      throttling: { maxTokens: 2, tokenRatio: 0.1 },
    });
    s.always({ code: UNAVAILABLE });
    // 2 tokens -> 1 after the first failure: at half, no retry.
    const throttled = await receive(client, 'Unary');
    expect(getRetryReport(throttled.error)).toMatchObject({ reason: 'budget', attempts: 1 });

    const clock = new ManualClock();
    const slow = await withInterceptor({ clock, baseDelayMs: 1000, budget: false });
    slow.s.always({ code: UNAVAILABLE });
    let cancel = () => {};
    const outcome = receive(slow.client, 'ServerStream', (c) => (cancel = () => c.cancel()));
    while (clock.sleeps.length === 0) await new Promise((r) => setTimeout(r, 5));
    cancel();
    const { error } = await outcome;
    expect(error?.code).toBe(1); // CANCELLED
    expect(getRetryReport(error)).toMatchObject({ reason: 'aborted', attempts: 1 });
    expect(clock.pending).toEqual({ timers: 0, listeners: 0 });
  });

  it('is passed up, not retried again, by a stormproof retry() around the call', async () => {
    const { s, client } = await withInterceptor({ ...exact(), maxAttempts: 2 });
    s.always({ code: UNAVAILABLE });
    const outer = createRetryPolicy({ maxAttempts: 3, clock: instantClock(), budget: false });
    const failing = async () => {
      const { error } = await receive(client, 'Unary');
      throw error;
    };
    const error: unknown = await outer.retry(failing).catch((e: unknown) => e);
    expect(getRetryReport(error)).toMatchObject({
      reason: 'already-retried',
      attempts: 1,
      inner: { reason: 'max-attempts', attempts: 2, totalDelayMs: 10 },
    });
    expect(s.seen).toHaveLength(2);
  });

  it('gives a call that succeeds after retries no error, and its tally to onSuccess', async () => {
    const successes: unknown[] = [];
    const { s, client } = await withInterceptor({
      ...exact(),
      maxAttempts: 3,
      onSuccess: (e) => successes.push(e),
    });
    s.script({ code: UNAVAILABLE }, { code: UNAVAILABLE });
    const { error, status } = await receive(client, 'Unary');
    expect(error).toBeNull();
    expect(status.code).toBe(OK);
    expect(getRetryReport(status)).toBeUndefined();
    expect(successes).toEqual([{ attempts: 3, totalDelayMs: 30, elapsedMs: 30 }]);
  });
});
