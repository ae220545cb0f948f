// What an interceptor's call hands the application: the listener it was given, completed, and,
// for a call that gave up, the report `getRetryReport` finds from the error grpc-js builds.
import type { InterceptingListener, StatusObject } from '@grpc/grpc-js';
import type { RetryReport } from '../core/options.js';
import type { ReportFinder } from '../core/report.js';

/** The listener of a call not started yet. */
export const noListener: InterceptingListener = {
  onReceiveMetadata: () => {},
  onReceiveMessage: () => {},
  onReceiveStatus: () => {},
};

/** `listener` with each of its callbacks bound to it, and a no-op for each it lacks. */
export function wholeListener(listener?: Partial<InterceptingListener>): InterceptingListener {
  return {
    onReceiveMetadata: listener?.onReceiveMetadata?.bind(listener) ?? noListener.onReceiveMetadata,
    onReceiveMessage: listener?.onReceiveMessage?.bind(listener) ?? noListener.onReceiveMessage,
    onReceiveStatus: listener?.onReceiveStatus?.bind(listener) ?? noListener.onReceiveStatus,
  };
}

/**
 * The reports of calls that gave up, by their final trailers. grpc-js builds the error its caller
 * receives after the interceptor is done, by copying the final status's fields onto a new Error:
 * the trailers object is the one thing of ours that reaches it, so the report is found from it,
 * and neither the error nor the trailers gain a key.
 */
const reportsByTrailers = new WeakMap<object, RetryReport>();

/** Keeps the report of a call that gave up with `status`, for `getRetryReport`. */
export function keepReport(status: StatusObject, report: RetryReport): void {
  reportsByTrailers.set(status.metadata, report);
}

/** Finds the report of a caller's error, or of the status grpc-js emits, by its trailers. */
export const findByTrailers: ReportFinder = (error) => {
  // Not `instanceof Metadata`: the application's grpc-js may be another copy than ours.
  const trailers = (error as { metadata?: unknown }).metadata;
  return typeof trailers === 'object' && trailers !== null
    ? reportsByTrailers.get(trailers)
    : undefined;
};
