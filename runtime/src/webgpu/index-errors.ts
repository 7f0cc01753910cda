// Out-of-range index values on WebGPU (issue 17): the CPU kernels of index_select, gather,
// index_add and scatter_add refuse an index outside [0, size) with an error; a GPU kernel cannot
// raise, so it clamps (robust access keeps it inside its buffers) and reports the bad value
// through a small error buffer the device binds at group 1, binding 0. Invariant: the device
// reads every such buffer at the next read of any tensor and, if a kernel reported, throws the
// NODE RuntimeError the CPU would have thrown (same message), then clears the buffers — so a run
// on WebGPU fails exactly when the same run on the CPU fails, only later in the run.

import { normDim } from '@kiln/ir-spec';
import { RuntimeError } from '../errors.js';

/**
 * The declaration an index-checking kernel carries: word 0 counts the bad indices seen, word 1
 * holds the first one (as i32 bits). The compiler's index kernels emit exactly this line.
 */
export const INDEX_ERROR_DECL = '@group(1) @binding(0) var<storage, read_write> index_error: array<atomic<u32>, 2>;';

/** Bytes of one index-error buffer. */
export const INDEX_ERROR_BYTES = 8;

/** Whether a kernel's WGSL declares the index-error binding (group 1). */
export function checksIndices(wgsl: string): boolean {
  return wgsl.includes(INDEX_ERROR_DECL);
}

/** What the device keeps of a dispatch that may report: enough to word the CPU's error. */
export interface IndexCheck {
  readonly op: string;
  /** The dim indexed (normalized) and its size. */
  readonly dim: number;
  readonly size: number;
}

/** The dim and size an index op indexes, as its CPU kernel computes them. */
export function indexCheckOf(op: string, attrs: Readonly<Record<string, unknown>>, xShape: readonly number[]): IndexCheck {
  const rank = xShape.length;
  const dim = normDim(op, Number(attrs.dim ?? 0), rank);
  // index_select splits x at dim (a 0-d x has one position); gather and scatter_add read x's dim.
  const size = rank ? xShape[dim] : 1;
  return { op, dim, size };
}

/** The error for a reported bad index `value`: the CPU kernel's message (ir-spec checkIndices). */
export function indexError(c: IndexCheck, value: number): RuntimeError {
  const valid = c.size ? `valid indices are 0..${c.size - 1}` : 'the dim is empty';
  const message = `${c.op}: index ${value} is out of range for dim ${c.dim} of size ${c.size} (${valid})`;
  return new RuntimeError('NODE', `${message}; reported by the WebGPU kernel at the next read (the CPU reports it at the node)`);
}
