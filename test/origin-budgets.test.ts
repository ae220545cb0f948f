// The per-origin maps behind fetch, axios, undici and gRPC: `originOf` must name the origin the
// URL parser names (its fast path for plain absolute URLs included), and `OriginBudgets` must
// forget exactly the least recently used origin (its shortcut for a repeated origin included).
import { describe, expect, it } from 'vitest';
import { OriginBudgets, originOf } from '../src/fetch/budgets.js';
import { seededRandom } from '../src/sim/limits/run.js';

/** What the URL parser says, '' where it refuses. */
function parsed(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '';
  }
}

describe('originOf', () => {
  it.each([
    'http://a.com/x',
    'http://A.com/x',
    'HTTP://a.com/',
    'http://a.com:80/',
    'http://a.com:080/',
    'https://a.com:443',
    'https://a.com:80',
    'http://a.com:0/',
    'http://a.com:1/',
    'http://a.com:00080/',
    'http://a.com:000080/',
    'https://a.com:0443/',
    'http://0.0.0.0/',
    'http://01.2.3.4/',
    'http://1.2.3.4.5/',
    'http://a-b.c-d/',
    'http://axn--b.com/',
    'http://a.com:65535/',
    'http://a.com:65536/',
    'http://a.com:99999/',
    'http://a.com:/',
    'http://a.com:8080x/',
    'http://127.1/',
    'http://0x7f.0.0.1/',
    'http://127.0.0.1:8080/forecast',
    'http://1.2.3.04/',
    'http://999.1.1.1/',
    'http://1.2.3/',
    'http://256.0.0.1/',
    'http://user@a.com/',
    'http://user:pw@a.com:81/',
    'http://a.com./',
    'http://a..b/',
    'http://xn--a/',
    'http://xn--bcher-kva.example/',
    'http://[::1]:8080/',
    'http://a_b.com/',
    'http://a.com?x',
    'http://a.com#f',
    'http://a.1/',
    'http://a.0x1/',
    'http://a.09/',
    'http://a.com\\x',
    'http:/a.com/',
    ' http://a.com/',
    'http://a\tb.com/',
    'http://a-.com/',
    'http://-a.com/',
    'ftp://a.com/',
    'file:///etc/passwd',
    'data:text/plain,x',
    '',
    '/relative',
  ])('names %j as the URL parser does', (url) => {
    expect(originOf(url)).toBe(parsed(url));
  });

  it('agrees with the URL parser on 20,000 generated URLs', () => {
    const random = seededRandom(7);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
    const pieces = [
      'a',
      'z',
      'x',
      'n',
      '-',
      '--',
      '.',
      '0',
      '1',
      '9',
      '25',
      '255',
      '256',
      'A',
      '_',
      '0x',
      'xn--',
    ];
    const ports = [
      '',
      ':',
      ':0',
      ':80',
      ':443',
      ':080',
      ':8080',
      ':65535',
      ':65536',
      ':1x',
      ':00080',
      ':0443',
      ':123456',
    ];
    const tails = ['', '/', '/p?q=1', '?q', '#f', '\\', ' ', '@b.com/'];
    for (let i = 0; i < 20_000; i++) {
      let host = '';
      const length = 1 + Math.floor(random() * 8);
      for (let j = 0; j < length; j++) host += pick(pieces);
      const url = `${pick(['http', 'https', 'HTTP', 'ftp'])}://${host}${pick(ports)}${pick(tails)}`;
      expect(originOf(url), url).toBe(parsed(url));
    }
  });

  it('takes a URL object as it is', () => {
    expect(originOf(new URL('https://a.com:444/x'))).toBe('https://a.com:444');
  });
});

describe('OriginBudgets', () => {
  it('forgets exactly the origin used least recently, as a reference LRU does', () => {
    const random = seededRandom(3);
    const made: string[] = [];
    const budgets = new OriginBudgets(3, (origin) => {
      made.push(origin);
      return { origin };
    });
    const reference: string[] = []; // least recently used first
    const origins = ['a', 'b', 'c', 'd', 'e'];
    for (let i = 0; i < 5_000; i++) {
      // Repeats are common, as with one API called again and again.
      const origin =
        random() < 0.4 && reference.length > 0
          ? reference.at(-1)!
          : origins[Math.floor(random() * 5)]!;
      const before = made.length;
      expect(budgets.get(origin).origin).toBe(origin);
      const known = reference.indexOf(origin);
      expect(made.length - before, `call ${i} (${origin})`).toBe(known === -1 ? 1 : 0);
      if (known !== -1) reference.splice(known, 1);
      reference.push(origin);
      if (reference.length > 3) reference.shift();
      expect(budgets.size).toBe(reference.length);
    }
  });

  it('keeps an origin used again and again while others come and go', () => {
    const budgets = new OriginBudgets(2, (origin) => ({ origin }));
    const a = budgets.get('a');
    budgets.get('b');
    expect(budgets.get('a')).toBe(a); // a is the newest now
    budgets.get('a');
    budgets.get('c'); // forgets b, not a
    expect(budgets.get('a')).toBe(a);
    const b = budgets.get('b'); // b comes back fresh and forgets c
    budgets.get('a');
    expect(budgets.get('b')).toBe(b);
  });
});
