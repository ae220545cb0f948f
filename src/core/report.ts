// Why a call gave up, kept beside its error (never written on it), so the error the caller gets
// is the operation's own and a layer above can still tell that it came out of a retrying call.
import type { GiveUpReason, RetryReport } from './options.js';

const reports = new WeakMap<object, RetryReport>();

/** Keeps `report` beside `error` (a thrown primitive cannot carry one). */
export function setReport(error: unknown, report: RetryReport): void {
  if (typeof error === 'object' && error !== null) reports.set(error, report);
}

/** Finds the report of an error that was built outside the engine, or undefined. */
export type ReportFinder = (error: object) => RetryReport | undefined;

const finders: ReportFinder[] = [];

/**
 * Lets an adapter find reports for errors it never holds: grpc-js, say, builds the error its
 * caller receives from the adapter's final status, after the adapter is done. The same finder
 * is added once however often it is passed.
 * @internal
 */
export function addReportFinder(finder: ReportFinder): void {
  if (!finders.includes(finder)) finders.push(finder);
}

/**
 * What the engine knows about a call that gave up with `error`: why, after how many attempts,
 * and how long it waited. The error itself is never wrapped or changed; the report is kept
 * beside it. Undefined for errors that did not come out of a retrying call, and for thrown
 * primitives (which cannot carry one).
 *
 * @example
 * ```ts
 * try {
 *   await retry(callApi);
 * } catch (error) {
 *   const report = getRetryReport(error); // { reason: 'deadline', attempts: 3, ... }
 * }
 * ```
 */
export function getRetryReport(error: unknown): RetryReport | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const report = reports.get(error);
  if (report !== undefined) return report;
  for (const find of finders) {
    const found = find(error);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** Reasons for which a call that made one attempt still had its say about retrying. */
const SETTLED_AFTER_ONE: ReadonlySet<GiveUpReason> = new Set(['not-retryable', 'max-attempts']);

/**
 * The report of the stormproof call that `error` came out of, when that call already retried or
 * refused to (its budget, its deadline, an unsafe request): a layer above must pass such a
 * failure up instead of retrying it again. Not for an abort (the layer above may have caused it),
 * nor for a call that made one attempt because it was never meant to retry (`maxAttempts: 1`)
 * or because the failure could not pass: the layer above judges those itself.
 */
export function retriedBelow(error: unknown): RetryReport | undefined {
  const report = getRetryReport(error);
  if (report === undefined || report.reason === 'aborted') return undefined;
  if (report.attempts === 1 && SETTLED_AFTER_ONE.has(report.reason)) return undefined;
  return report;
}
