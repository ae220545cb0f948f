// What an interceptor's call keeps of the listener the application gives it: every callback,
// bound to it, and one that does nothing where it gave none.
import type { InterceptingListener } from '@grpc/grpc-js';

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
