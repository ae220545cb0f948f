// axios-retry's predicates, for code that passes them as `retryCondition` or calls them itself.
// They keep axios-retry's meaning (its README and spec), so a condition written against
// axios-retry decides the same here. They are not stormproof's default classification (that is
// the engine's: timeouts retried, a 500 once, POST never without a key); they only say which
// failures a condition accepts, and the engine's rules still apply to what it accepts.

/**
 * The part of an axios error the predicates read: its code, its request's method, its
 * response's status. Any `AxiosError` has this shape.
 *
 * @example
 * ```ts
 * isIdempotentRequestError({ config: { method: 'put' }, response: { status: 503 } }); // true
 * ```
 */
export interface ConditionError {
  readonly code?: string | undefined;
  readonly config?: { readonly method?: string | undefined } | undefined;
  readonly response?: { readonly status?: number } | null | undefined;
}

/** Codes of a request that was cancelled or timed out: not a network error in axios-retry's sense. */
const NOT_NETWORK_CODES: ReadonlySet<string> = new Set(['ERR_CANCELED', 'ECONNABORTED']);

/**
 * Codes whose failure another try cannot fix: a name that does not resolve, a network that
 * cannot be reached, and a TLS certificate that does not verify (Node's and OpenSSL's names).
 */
const HOPELESS_CODES: ReadonlySet<string> = new Set([
  'ENOTFOUND',
  'ENETUNREACH',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_REJECTED',
  'CERT_REVOKED',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
  'CRL_HAS_EXPIRED',
  'CRL_NOT_YET_VALID',
  'CRL_SIGNATURE_FAILURE',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'ERROR_IN_CERT_NOT_AFTER_FIELD',
  'ERROR_IN_CERT_NOT_BEFORE_FIELD',
  'ERROR_IN_CRL_LAST_UPDATE_FIELD',
  'ERROR_IN_CRL_NEXT_UPDATE_FIELD',
  'HOSTNAME_MISMATCH',
  'INVALID_CA',
  'INVALID_PURPOSE',
  'OUT_OF_MEM',
  'PATH_LENGTH_EXCEEDED',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'UNABLE_TO_DECRYPT_CRL_SIGNATURE',
  'UNABLE_TO_GET_CRL',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
]);

/** Methods that only read (RFC 9110 section 9.2.1), in axios' lower case. */
const SAFE_METHODS: ReadonlySet<string> = new Set(['get', 'head', 'options']);

/** The safe methods, PUT and DELETE: the methods axios-retry repeats (RFC 9110 section 9.2.2). */
const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set([...SAFE_METHODS, 'put', 'delete']);

function bag(error: unknown): ConditionError {
  return typeof error === 'object' && error !== null ? (error as ConditionError) : {};
}

/**
 * Whether a request failed before any response, on a connection problem another try may fix: an
 * error with a code and no response, not a cancel (`ERR_CANCELED`) nor a timeout
 * (`ECONNABORTED`), nor a name that does not resolve, an unreachable network or a bad TLS
 * certificate. A browser's `Network Error` (`ERR_NETWORK`) is one.
 *
 * @example
 * ```ts
 * axiosRetry(axios, { retryCondition: isNetworkError }); // only dropped and refused connections
 * ```
 */
export function isNetworkError(error: unknown): boolean {
  const { code, response } = bag(error);
  if (response != null || typeof code !== 'string' || code === '') return false;
  return !NOT_NETWORK_CODES.has(code) && !HOPELESS_CODES.has(code);
}

/**
 * Whether a failure may pass on another try, whatever the method: not a timeout
 * (`ECONNABORTED`), and no response or a 429 or 5xx one.
 *
 * @example
 * ```ts
 * axiosRetry(axios, { retryCondition: isRetryableError }); // POST too: needs a key (docs/axios.md)
 * ```
 */
export function isRetryableError(error: unknown): boolean {
  const { code, response } = bag(error);
  if (code === 'ECONNABORTED') return false;
  if (response == null) return true;
  const status = response.status;
  return typeof status === 'number' && (status === 429 || (status >= 500 && status <= 599));
}

function methodOf(error: unknown): string | undefined {
  const method = bag(error).config?.method;
  return typeof method === 'string' && method !== '' ? method.toLowerCase() : undefined;
}

/**
 * {@link isRetryableError} on a GET, HEAD or OPTIONS request. False when the error carries no
 * request config (the method cannot be known).
 *
 * @example
 * ```ts
 * axiosRetry(axios, { retryCondition: isSafeRequestError });
 * ```
 */
export function isSafeRequestError(error: unknown): boolean {
  const method = methodOf(error);
  return method !== undefined && SAFE_METHODS.has(method) && isRetryableError(error);
}

/**
 * {@link isRetryableError} on a GET, HEAD, OPTIONS, PUT or DELETE request. False when the error
 * carries no request config.
 *
 * @example
 * ```ts
 * axiosRetry(axios, { retryCondition: isIdempotentRequestError });
 * ```
 */
export function isIdempotentRequestError(error: unknown): boolean {
  const method = methodOf(error);
  return method !== undefined && IDEMPOTENT_METHODS.has(method) && isRetryableError(error);
}

/**
 * axios-retry's default `retryCondition`: {@link isNetworkError} or
 * {@link isIdempotentRequestError}. Not stormproof's default (the engine's classification,
 * docs/axios.md); pass it to decide as axios-retry does, within stormproof's rules (a POST is
 * still sent once without an `Idempotency-Key`).
 *
 * @example
 * ```ts
 * axiosRetry(axios, { retryCondition: isNetworkOrIdempotentRequestError });
 * ```
 */
export function isNetworkOrIdempotentRequestError(error: unknown): boolean {
  return isNetworkError(error) || isIdempotentRequestError(error);
}
