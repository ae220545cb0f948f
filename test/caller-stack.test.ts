// The caller's frames on a retried operation's error (issue 19: p-retry keeps V8's async stack
// through its await loop; the engine runs attempts from callbacks and timers, so it cannot).
// `callerStack: true` appends the caller's stack, captured once per call.
import { describe, expect, it } from 'vitest';
import { createRetryPolicy, type RetryPolicy } from '../src/index.js';
import { instantClock } from './helpers/clocks.js';

const unavailable = async () => {
  await Promise.resolve();
  throw Object.assign(new Error('unavailable'), { status: 503 });
};

async function callerLevelTwo(policy: RetryPolicy) {
  return policy.retry(unavailable);
}
async function callerLevelOne(policy: RetryPolicy) {
  return await callerLevelTwo(policy);
}
async function callerMain(policy: RetryPolicy) {
  return await callerLevelOne(policy);
}

async function stackOf(policy: RetryPolicy): Promise<string> {
  try {
    await callerMain(policy);
  } catch (error) {
    return (error as Error).stack ?? '';
  }
  throw new Error('the call succeeded');
}

describe('callerStack', () => {
  it("regression: the caller's frames are kept on the error of the third attempt", async () => {
    const policy = createRetryPolicy({ clock: instantClock(), budget: false, callerStack: true });
    const stack = await stackOf(policy);
    expect(stack).toMatch(/^Error: unavailable/);
    expect(stack).toContain('called from');
    for (const name of ['callerLevelTwo', 'callerLevelOne', 'callerMain']) {
      expect(stack).toContain(name);
    }
    // Once, even when the error passes through another stormproof call on its way up.
    const outer = createRetryPolicy({ clock: instantClock(), budget: false, callerStack: true });
    let nested = '';
    try {
      await outer.retry(() => callerMain(policy));
    } catch (error) {
      nested = (error as Error).stack ?? '';
    }
    expect(nested.split('called from').length).toBe(2);
  });

  it('is off by default: the error keeps its own stack only (what the option adds)', async () => {
    const policy = createRetryPolicy({ clock: instantClock(), budget: false });
    const stack = await stackOf(policy);
    expect(stack).not.toContain('called from');
    expect(stack).not.toContain('callerMain');
  });

  it('leaves a frozen error and a thrown non-error as they are', async () => {
    const frozen = Object.freeze(Object.assign(new Error('frozen'), { status: 503 }));
    const policy = createRetryPolicy({
      clock: instantClock(),
      budget: false,
      callerStack: true,
      maxAttempts: 1,
    });
    await expect(policy.retry(() => Promise.reject(frozen))).rejects.toBe(frozen);
    await expect(policy.retry(() => Promise.reject('text'))).rejects.toBe('text');
    expect(() => createRetryPolicy({ callerStack: 'yes' as never })).toThrow(/callerStack/);
  });
});
