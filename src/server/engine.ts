// Every adapter takes either an engine made by `createShedder` or options to make one.
import type { ShedderOptions } from './options.js';
import { createShedder, type Shedder } from './shedder.js';

/** The engine given, or a new one made from the options given. */
export function shedderOf(from: Shedder | ShedderOptions | undefined): Shedder {
  return from !== undefined && typeof (from as Shedder | null)?.admit === 'function'
    ? (from as Shedder)
    : createShedder(from as ShedderOptions | undefined);
}
