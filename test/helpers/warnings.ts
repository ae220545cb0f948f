// Some suites cause warnings on purpose (a maxAttempts above gRFC A6's 5; grpc-js's own timer
// overflow on a pushback past 2^31-1, which the conformance suite pins). They must not clutter
// the test run, but any other warning must still print.
import { afterAll, beforeAll } from 'vitest';

/** Hides warnings whose code or name is in `expected`, for the suite it is called in. */
export function hideExpectedWarnings(expected: readonly string[]): void {
  let printers: ((warning: Error) => void)[] = [];
  const filter = (warning: Error & { code?: string }) => {
    if (expected.includes(warning.code ?? '') || expected.includes(warning.name)) return;
    for (const print of printers) print(warning);
  };
  beforeAll(() => {
    printers = process.listeners('warning') as ((warning: Error) => void)[];
    for (const print of printers) process.off('warning', print);
    process.on('warning', filter);
  });
  afterAll(() => {
    process.off('warning', filter);
    for (const print of printers) process.on('warning', print);
  });
}
