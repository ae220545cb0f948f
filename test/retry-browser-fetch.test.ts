// Regression (issue 19): `retry(() => fetch(url))` in a browser never retried a network failure.
// A browser's fetch reports a failed connection as a bare TypeError with a fixed message and
// nothing else; the engine's default classifier did not know those messages (only
// stormproof/fetch did), so wrapping fetch in retry() gave up after one attempt. The messages
// below are fixtures of what each browser throws; test/retry-fetch.browser.test.ts checks
// Chromium's for real.
import { describe, expect, it, vi } from 'vitest';
import { isFetchNetworkError } from '../src/fetch/network-error.js';
import { classify, retry } from '../src/index.js';
import { instantClock } from './helpers/clocks.js';

/** What each browser's fetch throws when the connection is refused, reset or dropped. */
const BROWSER_MESSAGES = [
  ['Chromium', 'Failed to fetch'],
  ['Chromium, with the host', 'Failed to fetch (api.example.com)'],
  ['Firefox', 'NetworkError when attempting to fetch resource.'],
  ['Safari', 'Load failed'],
  ['Safari, with the host', 'Load failed (api.example.com)'],
] as const;

const NETWORK = { retryable: true, kind: 'network' };

/** A fetch double that rejects with each of `failures` in turn, then resolves with 'ok'. */
function fetchFailing(...failures: unknown[]) {
  return vi.fn(async () => {
    if (failures.length > 0) throw failures.shift();
    return 'ok';
  });
}

describe('retry(() => fetch(url)) in a browser never retries a network failure (issue 19)', () => {
  it.each(BROWSER_MESSAGES)(
    '%s: classify judges the bare TypeError %j a network error',
    (_, message) => {
      expect(classify(new TypeError(message))).toEqual(NETWORK);
    },
  );

  it.each(BROWSER_MESSAGES)('%s: retry() retries %j and resolves', async (_, message) => {
    const clock = instantClock();
    const kinds: string[] = [];
    const fetchDouble = fetchFailing(new TypeError(message), new TypeError(message));
    const result = await retry(() => fetchDouble(), {
      clock,
      random: () => 0.5,
      onRetry: ({ verdict }) => void kinds.push(verdict.kind),
    });
    expect(result).toBe('ok');
    expect(fetchDouble).toHaveBeenCalledTimes(3);
    expect(kinds).toEqual(['network', 'network']);
    expect(clock.sleeps).toEqual([100, 200]);
  });

  it('keeps one list: every message the engine retries, stormproof/fetch retries too', () => {
    for (const [, message] of BROWSER_MESSAGES) {
      expect(
        isFetchNetworkError(new TypeError(message), 'https://api.example.com/', 'GET', undefined),
      ).toBe(true);
    }
  });

  class FetchLikeError extends TypeError {}

  it.each([
    ['another message', new TypeError('Failed to fetch!')],
    ['an argument error', new TypeError("Failed to execute 'fetch' on 'Window': Invalid name")],
    ['a prefix of a known message', new TypeError('Failed to')],
    ['lower case', new TypeError('failed to fetch')],
    ['a subclass of TypeError', new FetchLikeError('Failed to fetch')],
    ['a plain Error', new Error('Failed to fetch')],
    ['a DOMException', new DOMException('Failed to fetch', 'NetworkError')],
    ['an object shaped like one', { name: 'TypeError', message: 'Failed to fetch' }],
    ['an unrelated cause', new TypeError('Failed to fetch', { cause: new Error('bug') })],
    ['a cause of null', Object.assign(new TypeError('Load failed'), { cause: null })],
    ['a code of its own', Object.assign(new TypeError('Load failed'), { code: 'E_OTHER' })],
  ])('does not retry %s', async (_, error) => {
    expect(classify(error)).toEqual({ retryable: false, kind: 'permanent' });
    const fetchDouble = fetchFailing(error);
    await expect(retry(() => fetchDouble(), { clock: instantClock() })).rejects.toBe(error);
    expect(fetchDouble).toHaveBeenCalledTimes(1);
  });

  it("undici's TypeError: fetch failed is judged by its cause, as before, not by the message", () => {
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    expect(classify(new TypeError('fetch failed', { cause: reset }))).toEqual(NETWORK);
    expect(classify(new TypeError('fetch failed')).retryable).toBe(false);
    expect(
      classify(new TypeError('fetch failed', { cause: new Error('bad port') })).retryable,
    ).toBe(false);
  });
});
