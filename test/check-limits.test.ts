// Issue 25: `stormproof check` on a layer with `timeoutMs: 1e308` warned "No layer has a timeout
// or a deadline" (four attempts of 1e308 ms overflowed to Infinity), and a stack of 100 attempts
// with no cap printed its backoff as `6.338253001141147e+29 ms`.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { duration, num } from '../src/cli/output.js';
import { checkStack } from '../src/sim/check.js';
import { runCli as cli } from './helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'stormproof-check-limits-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function stackFile(name: string, stack: unknown): string {
  const file = join(dir, name);
  writeFileSync(file, JSON.stringify(stack));
  return file;
}

describe('checkStack refuses absurd durations, naming the field', () => {
  it.each([
    ['timeoutMs', { attempts: 4, timeoutMs: 1e308 }],
    ['attemptTimeoutMs', { attempts: 4, attemptTimeoutMs: 1e12 }],
    ['deadlineMs', { attempts: 4, timeoutMs: 1000, deadlineMs: 2 ** 31 }],
    ['baseDelayMs', { attempts: 4, baseDelayMs: 1e300 }],
    ['maxDelayMs', { attempts: 4, baseDelayMs: 100, maxDelayMs: 1e20 }],
  ])('%s', (field, layer) => {
    const run = () => checkStack({ layers: [{ name: 'client', ...layer }] });
    expect(run).toThrow(RangeError);
    expect(run).toThrow(new RegExp(`layers\\[0\\]\\.${field} must be at most 2147483647 ms`));
  });

  it('takes the longest timer JavaScript can set, 2^31 - 1 ms', () => {
    const r = checkStack({ layers: [{ name: 'client', attempts: 2, timeoutMs: 2 ** 31 - 1 }] });
    expect(r.worstCaseLatencyMs).toBe(2 * (2 ** 31 - 1));
    expect(r.warnings.some((w) => /No layer has a timeout/.test(w))).toBe(false);
  });
});

describe('large figures print readably', () => {
  it('durations: ms below 10 minutes, then min, h, days, years', () => {
    expect(duration(32_000)).toBe('32,000 ms');
    expect(duration(599_999)).toBe('599,999 ms');
    expect(duration(900_000)).toBe('15 min');
    expect(duration(2 * 3_600_000)).toBe('2 h');
    expect(duration(2_147_483_647)).toBe('24.86 days');
    expect(duration(4 * 365.25 * 86_400_000)).toBe('4 years');
    expect(duration(6.338253001141147e29)).toBe('2.01 × 10^19 years');
  });

  it('numbers beyond exact integers in scientific form, not e+29', () => {
    expect(num(80_164_443_372_117)).toBe('80,164,443,372,117');
    expect(num(6.338253001141147e29)).toBe('6.34 × 10^29');
    expect(num(-2e17)).toBe('-2.00 × 10^17');
  });
});

describe.concurrent('stormproof check with absurd or large values', () => {
  it('timeoutMs 1e308: exit 2, one line naming the field', async () => {
    const file = stackFile('absurd.json', {
      layers: [{ name: 'client', attempts: 4, timeoutMs: 1e308 }],
    });
    const r = await cli(['check', file]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      `stormproof check: ${file}: stack layers[0].timeoutMs must be at most 2147483647 ms (24.86 days, the longest timer JavaScript can set), got 1e+308\n`,
    );
  });

  it('a backoff of 2^99 ms prints in years, not 6.338253001141147e+29 ms', async () => {
    const file = stackFile('long.json', {
      layers: [{ name: 'client', attempts: 100, baseDelayMs: 1, timeoutMs: 1000 }],
    });
    const r = await cli(['check', file]);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toMatch(/e\+/);
    expect(r.stdout).toContain('2.01 × 10^19 years');
  });
});
