// What a fetch event may say about a URL: enough to find the request in logs, never a secret.
// Runtime-agnostic: no Node imports or globals.

/** What a redacted query value reads as. */
export const REDACTED = 'REDACTED';

/** `?a=1&b` -> `?a=REDACTED&REDACTED`: names stay, values go; a bare part may itself be a secret. */
function redactQuery(search: string): string {
  const query = search.startsWith('?') ? search.slice(1) : search;
  if (query === '') return '';
  const parts = query.split('&').map((part) => {
    if (part === '') return part;
    const eq = part.indexOf('=');
    return eq < 0 ? REDACTED : `${part.slice(0, eq)}=${REDACTED}`;
  });
  return `?${parts.join('&')}`;
}

/**
 * A URL as fetch events report it: without user name and password, with every query value
 * replaced by `REDACTED` (names are kept, a part without `=` is replaced whole), and without the
 * fragment. The scheme, host, port and path are kept as they are.
 *
 * Every query value goes, not only those whose names look secret: secrets travel under too many
 * names (`token`, `sig`, `X-Amz-Credential`, `code`, `key`, ...) for a list to be safe. A secret in
 * the path (some webhook URLs) is not recognised: keep such URLs out of logs yourself.
 *
 * A relative URL (a browser's `fetch('/api')`) is redacted the same way and stays relative. Never
 * throws.
 *
 * @param url - The URL, as a string or a `URL`.
 * @returns The redacted URL.
 *
 * @example
 * ```ts
 * redactUrl('https://bob:hunter2@api.example.com/v1/items?page=2&token=abc#top');
 * // 'https://api.example.com/v1/items?page=REDACTED&token=REDACTED'
 * ```
 */
export function redactUrl(url: string | URL): string {
  let text: string;
  try {
    text = String(url);
  } catch {
    return '';
  }
  let parsed: URL | undefined;
  try {
    parsed = new URL(text);
  } catch {
    parsed = undefined;
  }
  if (parsed !== undefined) {
    const search = parsed.search;
    parsed.username = '';
    parsed.password = '';
    parsed.hash = '';
    parsed.search = '';
    return parsed.href + redactQuery(search);
  }
  // Relative: path?query#fragment. A scheme-relative `//user:pass@host/...` loses its user info.
  const hash = text.indexOf('#');
  const noFragment = hash < 0 ? text : text.slice(0, hash);
  const q = noFragment.indexOf('?');
  const path = q < 0 ? noFragment : noFragment.slice(0, q);
  const query = q < 0 ? '' : redactQuery(noFragment.slice(q));
  return path.replace(/^(\/\/)[^/?#]*@/, '$1') + query;
}
