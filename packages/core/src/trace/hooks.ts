// The tracer's listening points inside eager code that do not go through the dispatch: a
// tensor's value reaching JavaScript, and in-place writes. Invariant: `listener` is null except
// while a trace is recording, so eager code pays one null check.

import type { Tensor } from '../tensor.js';

export interface TraceListener {
  /** A tensor's value was read into JavaScript (`item()`, `toArray()`, a `>` comparison...). */
  onValueRead(what: string, t: Tensor): void;
  /** `t` was overwritten in place with the value of `result`. */
  onInplace(t: Tensor, result: Tensor): void;
}

export const traceHooks: { listener: TraceListener | null } = { listener: null };
