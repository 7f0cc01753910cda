// The runtime's one error type. Invariant: everything `load`, `createModel` and `run` refuse
// or fail at is a RuntimeError whose `code` says what went wrong and whose message names the
// place (the input, the output, or the node in text form) and what to do about it. Errors of
// the `.tsgraph` reader stay TsgraphErrors (ir-spec) and pass through unchanged.

export const RUNTIME_ERROR_CODES = [
  /** A string source could not be read (missing file, failed fetch). */
  'SOURCE',
  /** The requested backend is unknown or not available. */
  'BACKEND',
  /** The graph cannot be run by this runtime (an unsupported input kind, a missing tensor). */
  'GRAPH',
  /** The inputs given to run() do not match the graph's inputs. */
  'INPUT',
  /** A node failed while running (a kernel error, a shape that does not match its type). */
  'NODE',
  /** A loop ran past the trip limit (a loop that never ends, or a limit set too low). */
  'LOOP_LIMIT',
  /** A tensor would exceed the allocation limit. */
  'TOO_LARGE',
  /** The run's intermediate tensors alive at once would exceed the live-bytes limit (maxLiveBytes). */
  'MEMORY_LIMIT',
  /** The run took longer than its time limit (maxRunMs). */
  'TIME_LIMIT',
  /** A graph output does not match its declared type. */
  'OUTPUT',
] as const;

export type RuntimeErrorCode = typeof RUNTIME_ERROR_CODES[number];

/**
 * An error of the standalone runtime.
 *
 * @example
 * ```ts
 * try { await model.run([x]); }
 * catch (e) { if (e instanceof RuntimeError && e.code === 'INPUT') console.error(e.message); }
 * ```
 */
export class RuntimeError extends Error {
  constructor(
    readonly code: RuntimeErrorCode,
    message: string,
    /** The failing node in text form, when a node failed. */
    readonly node?: string,
    options?: { cause?: unknown },
  ) {
    super(`${code}: ${message}`, options);
    this.name = 'RuntimeError';
  }
}
