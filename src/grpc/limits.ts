// gRFC A6's cap on attempts, shared by the interceptor and the service config.

/** gRFC A6's limit on attempts: a higher `maxAttempts` is treated as 5. */
export const MAX_ATTEMPTS_LIMIT = 5;

/** Caps `maxAttempts` at A6's limit, with a process warning, as the gRFC asks. */
export function capMaxAttempts(owner: string, value: number): number {
  if (value <= MAX_ATTEMPTS_LIMIT) return value;
  process.emitWarning(
    `stormproof: ${owner} maxAttempts ${value} is treated as ${MAX_ATTEMPTS_LIMIT}, gRFC A6's limit`,
    { code: 'STORMPROOF_GRPC_MAX_ATTEMPTS' },
  );
  return MAX_ATTEMPTS_LIMIT;
}
