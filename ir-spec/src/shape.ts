// Shapes and the helpers every shape rule uses. A dim is a number or a symbol (a dynamic
// size such as the batch `N`, or an expression over symbols such as `N*64`; see ir/dims.ts);
// eager code only ever sees numbers. Invariant: every helper takes a numbers-only fast path
// first, so eager shape checks cost what they did before symbols existed, and a symbolic result
// is in canonical text.

export type Dim = number | string;
export type Shape = readonly Dim[];

import type { DType } from './dtype.js';
import { canonicalDim, dimDivExact, dimEquals, dimFloorDiv, dimProductOf, dimSub, dimSumOf, isConcreteDim } from './ir/dims.js';

/** The static type of a tensor value. */
export interface TensorType { readonly dtype: DType; readonly shape: Shape }

/** A user error about shapes, dtypes or arguments of one op; the message names the op. */
export class OpError extends Error {
  constructor(readonly op: string, message: string) {
    super(`${op}: ${message}`);
    this.name = 'OpError';
  }
}

export function fmtShape(s: Shape): string { return `[${s.join(',')}]`; }

/** Number of elements; throws on a symbolic dim (callers that allow symbols must not call this). */
export function numel(s: Shape): number {
  let n = 1;
  for (const d of s) {
    if (typeof d !== 'number') throw new Error(`numel of symbolic shape ${fmtShape(s)}`);
    n *= d;
  }
  return n;
}

/** Row-major strides of a concrete shape. */
export function stridesOf(s: readonly number[]): number[] {
  const st = new Array<number>(s.length);
  let acc = 1;
  for (let i = s.length - 1; i >= 0; i--) { st[i] = acc; acc *= s[i]; }
  return st;
}

/** Normalizes a possibly negative dim index against `rank` (PyTorch's wrap rule). */
export function normDim(op: string, dim: number, rank: number): number {
  const r = Math.max(rank, 1);
  if (!Number.isInteger(dim) || dim < -r || dim >= r) {
    throw new OpError(op, `dim ${dim} is out of range for a tensor of rank ${rank} (expected ${-r}..${r - 1})`);
  }
  return dim < 0 ? dim + r : dim;
}

/** Normalized, sorted, de-duplicated dims; `undefined`/`null` means all dims. */
export function normDims(op: string, dims: number | readonly number[] | null | undefined, rank: number): number[] {
  if (dims === undefined || dims === null) return Array.from({ length: rank }, (_, i) => i);
  const list = typeof dims === 'number' ? [dims] : dims;
  const out = [...new Set(list.map((d) => normDim(op, d, rank)))].sort((a, b) => a - b);
  if (out.length !== list.length) throw new OpError(op, `dim ${JSON.stringify(dims)} repeats a dimension`);
  return out;
}

/** Whether two dims are the same size for every value of their symbols (`N*64` = `64*N`). */
export function sameDim(a: Dim, b: Dim): boolean {
  return a === b || ((typeof a !== 'number' || typeof b !== 'number') && dimEquals(a, b));
}

export function shapesEqual(a: Shape, b: Shape): boolean {
  return a.length === b.length && a.every((d, i) => sameDim(d, b[i]));
}

/**
 * NumPy/PyTorch broadcasting of two shapes; the error names the op and both shapes. A symbolic
 * dim broadcasts against 1 or against the same symbol only: `N` vs `M` or `N` vs 3 might be
 * equal at run time, but nothing proves it, so it is an error rather than a guess.
 */
export function broadcastShapes(op: string, a: Shape, b: Shape): Dim[] {
  const n = Math.max(a.length, b.length);
  const out = new Array<Dim>(n);
  for (let i = 0; i < n; i++) {
    const da = i < n - a.length ? 1 : a[i - (n - a.length)];
    const db = i < n - b.length ? 1 : b[i - (n - b.length)];
    if (da === db || db === 1) out[i] = da;
    else if (da === 1) out[i] = db;
    else if ((typeof da !== 'number' || typeof db !== 'number') && dimEquals(da, db)) out[i] = da;
    else {
      const why = typeof da === 'number' && typeof db === 'number' ? ''
        : ' (a symbolic dim broadcasts only against 1 or the same symbol; make the sizes concrete or reshape so they match)';
      throw new OpError(op, `shapes ${fmtShape(a)} and ${fmtShape(b)} cannot be broadcast: dimension ${i} is ${da} vs ${db}${why}`);
    }
  }
  return out;
}

/** Product of dims, symbolic if any dim is a symbol (`N*64`, canonical text). */
export function dimProduct(dims: readonly Dim[]): Dim {
  let n = 1;
  for (const d of dims) {
    if (typeof d !== 'number') return dimProductOf(dims);
    n *= d;
  }
  return n;
}

/** Sum of dims, symbolic if any dim is a symbol (`N+M`, `N*2`, canonical text). */
export function dimSum(dims: readonly Dim[]): Dim {
  let n = 0;
  for (const d of dims) {
    if (typeof d !== 'number') return dimSumOf(dims);
    n += d;
  }
  return n;
}

/**
 * A dim as a number, or an OpError saying which dim of which shape must be concrete and why.
 * `what` is a thunk so the eager path (numbers only) never builds the message.
 */
export function concreteDim(op: string, d: Dim, what: () => string, why: string): number {
  if (typeof d === 'number') return d;
  if (isConcreteDim(d)) return Number(canonicalDim(d));
  throw new OpError(op, `${what()} is ${d} but must be concrete: ${why}`);
}

/**
 * Output length of a sliding window along a SYMBOLIC dim (convolution, pooling):
 * floor((size + padBefore + padAfter - dilation·(k-1) - 1) / stride) + 1. Callers handle numbers
 * with the op's own formula (the eager path), and call this for strings. It works when the
 * symbolic part divides by the stride (stride 1 always does: `H-2` for a 3x3 kernel; `H*2` with
 * stride 2 gives `H`); with `ceil` (pool ceil_mode) the whole span must divide, so that ceil and
 * floor agree and PyTorch's last-window rule cannot apply. Otherwise the error names the dim
 * (`what()`, a thunk so no message is built unless it is needed) that must be concrete.
 *
 * @example symbolicWindowSize('conv2d', () => 'input dim 2', 'H', 3, 1, 1, 1, 1) // 'H'
 */
export function symbolicWindowSize(
  op: string, what: () => string, size: string, k: number, stride: number, padBefore: number, padAfter: number, dilation: number,
  ceil = false,
): Dim {
  const span = dimSub(size, dilation * (k - 1) + 1 - padBefore - padAfter);
  const q = ceil ? dimDivExact(span, stride) : dimFloorDiv(span, stride);
  if (q === undefined) {
    throw new OpError(op, `${what()} is ${size} but must be concrete: with stride ${stride}${ceil ? ' and ceil_mode' : ''} the output length ${ceil ? 'ceil' : 'floor'}((${span})/${stride})+1 is not a whole expression in it`);
  }
  return dimSumOf([q, 1]);
}
