// Strided walks over dense row-major buffers: the kernels of slice, slice_backward, flip and cat.
// Invariant: the dense side is walked in row-major order; the other side is addressed by
// `start + sum(pos[d] * strides[d])`, where strides may be negative (flip) or scaled (step).

import { numel } from '../shape.js';
import type { TypedArray } from '../dtype.js';

/** A shape seen as [outer, size, inner] around `dim` (how most per-dim kernels iterate). */
export interface DimSplit { outer: number; size: number; inner: number }

export function splitAt(shape: readonly number[], dim: number): DimSplit {
  let outer = 1, inner = 1;
  for (let i = 0; i < dim; i++) outer *= shape[i];
  for (let i = dim + 1; i < shape.length; i++) inner *= shape[i];
  return { outer, size: shape.length ? shape[dim] : 1, inner };
}

/** out[i] (dense, row-major over `shape`) = src[start + pos·strides]. */
export function stridedCopy(
  src: TypedArray, shape: readonly number[], strides: readonly number[], start: number, out: TypedArray,
): void {
  walk(shape, strides, start, (o, s, inner, is) => {
    for (let k = 0; k < inner; k++, s += is) out[o + k] = src[s];
  });
}

/** out[start + pos·strides] = src[i] (src dense, row-major over `shape`); other elements untouched. */
export function stridedScatter(
  src: TypedArray, shape: readonly number[], strides: readonly number[], start: number, out: TypedArray,
): void {
  walk(shape, strides, start, (o, s, inner, is) => {
    for (let k = 0; k < inner; k++, s += is) out[s] = src[o + k];
  });
}

/** Calls `row` once per innermost row (not per element: the element loop stays in the caller). */
function walk(
  shape: readonly number[], strides: readonly number[], start: number,
  row: (denseOffset: number, stridedOffset: number, inner: number, innerStride: number) => void,
): void {
  const n = numel(shape), r = shape.length;
  if (n === 0) return;
  if (r === 0) { row(0, start, 1, 0); return; }
  const inner = shape[r - 1], is = strides[r - 1];
  const pos = new Array<number>(r).fill(0);
  let off = start;
  for (let o = 0; o < n; o += inner) {
    row(o, off, inner, is);
    for (let d = r - 2; d >= 0; d--) {
      pos[d]++; off += strides[d];
      if (pos[d] < shape[d]) break;
      off -= strides[d] * shape[d]; pos[d] = 0;
    }
  }
}

/** Copies `count` elements; typed-array `set` pays off only for longer runs. */
export function copyRun(src: TypedArray, from: number, out: TypedArray, to: number, count: number): void {
  if (count >= 64 && src.constructor === out.constructor) out.set(src.subarray(from, from + count), to);
  else for (let k = 0; k < count; k++) out[to + k] = src[from + k];
}
