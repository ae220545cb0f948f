// Virtual clocks for tests: time moves only when a test says so, so every wait is exact.
import type { Clock } from '../../src/index.js';

/** A clock whose sleeps return at once and move time forward; it records every sleep. */
export interface InstantClock extends Clock {
  t: number;
  readonly sleeps: number[];
}

export function instantClock(start = 0): InstantClock {
  const clock: InstantClock = {
    t: start,
    sleeps: [],
    now: () => clock.t,
    sleep: (ms, signal) => {
      if (signal?.aborted) return Promise.reject(signal.reason);
      clock.sleeps.push(ms);
      clock.t += ms;
      return Promise.resolve();
    },
  };
  return clock;
}

interface Timer {
  at: number;
  resolve: () => void;
  cancel: () => void;
}

/**
 * A clock whose sleeps and timers wait until `advance` moves time past them. It counts its
 * pending timers and the abort listeners they hold, so a test can assert that nothing was left
 * behind. With `lateMs`, every sleep and timer fires that much after it is due, as real timers
 * do on a busy machine.
 */
export class ManualClock implements Clock {
  t = 0;
  readonly sleeps: number[] = [];
  private readonly timers = new Set<Timer>();
  private listeners = 0;
  readonly lateMs: number;

  constructor({ lateMs = 0 }: { lateMs?: number } = {}) {
    this.lateMs = lateMs;
  }

  setTimer = (ms: number, callback: () => void): (() => void) => {
    const timer: Timer = {
      at: this.t + ms + this.lateMs,
      resolve: () => {
        this.timers.delete(timer);
        callback();
      },
      cancel: () => {
        this.timers.delete(timer);
      },
    };
    this.timers.add(timer);
    return timer.cancel;
  };

  now = (): number => this.t;

  sleep = (ms: number, signal?: AbortSignal): Promise<void> => {
    if (signal?.aborted) return Promise.reject(signal.reason);
    this.sleeps.push(ms);
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        timer.cancel();
        reject(signal?.reason);
      };
      const timer: Timer = {
        at: this.t + ms + this.lateMs,
        resolve: () => {
          timer.cancel();
          resolve();
        },
        cancel: () => {
          if (!this.timers.delete(timer)) return;
          if (signal) {
            signal.removeEventListener('abort', onAbort);
            this.listeners--;
          }
        },
      };
      this.timers.add(timer);
      if (signal) {
        signal.addEventListener('abort', onAbort, { once: true });
        this.listeners++;
      }
    });
  };

  /** Timers still waiting, and abort listeners they still hold. */
  get pending(): { timers: number; listeners: number } {
    return { timers: this.timers.size, listeners: this.listeners };
  }

  /** Moves time forward by `ms`, firing due timers in order and letting their callers run. */
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      await flush();
      let next: Timer | undefined;
      for (const timer of this.timers)
        if (timer.at <= end && (!next || timer.at < next.at)) next = timer;
      if (!next) break;
      this.t = next.at;
      next.resolve();
    }
    this.t = end;
    await flush();
  }
}

/** Lets every queued promise callback run. */
export async function flush(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

/** An error shaped like an HTTP client's, with a status and optional headers. */
export function httpError(status: number, headers?: Record<string, string>): Error {
  return Object.assign(new Error(`HTTP ${status}`), { status, ...(headers ? { headers } : {}) });
}
