// Index-driven kernels: index_select/index_add (whole slices picked by a 1-D index),
// gather/scatter_add (one element per index entry), masked_select/masked_scatter, tril/triu.
// Invariant: every index is range-checked before any element moves, so a bad index throws an
// OpError naming the op, the value and the valid range, and never reads or writes out of bounds.

import { OpError, fmtShape, stridesOf } from '../shape.js';
import type { TypedArray } from '../dtype.js';
import { offsets } from './reduce.js';
import { broadcastIndex } from './broadcast.js';
import { copyRun, splitAt, type DimSplit } from './strided.js';

/** Throws unless every index is in 0..size-1 (PyTorch's index_select/gather rule: no wrapping). */
export function checkIndices(op: string, index: TypedArray, size: number, dim: number): void {
  for (let i = 0; i < index.length; i++) {
    const v = index[i];
    if (v < 0 || v >= size) {
      throw new OpError(op, `index ${v} is out of range for dim ${dim} of size ${size} (${size ? `valid indices are 0..${size - 1}` : 'the dim is empty'})`);
    }
  }
}

/** out[o, j, t] = x[o, index[j], t]; `x` is [outer, size, inner], out is [outer, index.length, inner]. */
export function indexSelectKernel(x: TypedArray, { outer, size, inner }: DimSplit, index: TypedArray, out: TypedArray): void {
  const k = index.length;
  for (let o = 0; o < outer; o++) {
    for (let j = 0; j < k; j++) {
      copyRun(x, (o * size + index[j]) * inner, out, (o * k + j) * inner, inner);
    }
  }
}

/** out[o, index[j], t] += src[o, j, t]; `out` (already holding x) is [outer, size, inner]. */
export function indexAddKernel(out: TypedArray, { outer, size, inner }: DimSplit, index: TypedArray, src: TypedArray): void {
  const k = index.length;
  for (let o = 0; o < outer; o++) {
    for (let j = 0; j < k; j++) {
      const to = (o * size + index[j]) * inner, from = (o * k + j) * inner;
      for (let t = 0; t < inner; t++) out[to + t] += src[from + t];
    }
  }
}

/**
 * For every position p of `indexShape` (row-major), the offset into a tensor with `strides` of p
 * with p[dim] replaced by 0: where gather/scatter_add find "the same place, other index".
 */
function baseOffsets(indexShape: readonly number[], strides: readonly number[], dim: number): Int32Array {
  return offsets(indexShape, strides.map((s, i) => (i === dim ? 0 : s)));
}

/** True when `index` has the extent of `other` in every dim but `dim` (the common case). */
function alignedExceptDim(indexShape: readonly number[], other: readonly number[], dim: number): boolean {
  return indexShape.every((s, i) => i === dim || s === other[i]);
}

/** out[p] = x[p with p[dim] = index[p]]. */
export function gatherKernel(
  x: TypedArray, xShape: readonly number[], index: TypedArray, indexShape: readonly number[], dim: number, out: TypedArray,
): void {
  if (xShape.length && alignedExceptDim(indexShape, xShape, dim)) {
    // index is [outer, k, inner] over x's [outer, size, inner]: no offset tables needed.
    const { outer, size, inner } = splitAt(xShape, dim), k = indexShape[dim];
    for (let o = 0, i = 0; o < outer; o++) {
      const xo = o * size * inner;
      for (let j = 0; j < k; j++) for (let t = 0; t < inner; t++, i++) out[i] = x[xo + index[i] * inner + t];
    }
    return;
  }
  const st = stridesOf(xShape);
  const base = baseOffsets(indexShape, st, dim), sd = st[dim] ?? 0;
  for (let i = 0; i < index.length; i++) out[i] = x[base[i] + index[i] * sd];
}

/** out[p with p[dim] = index[p]] += src[p] for every position p of index; `out` holds x. */
export function scatterAddKernel(
  out: TypedArray, outShape: readonly number[], index: TypedArray, indexShape: readonly number[],
  src: TypedArray, srcShape: readonly number[], dim: number,
): void {
  const srcAligned = alignedExceptDim(indexShape, srcShape, -1);
  if (outShape.length && srcAligned && alignedExceptDim(indexShape, outShape, dim)) {
    const { outer, size, inner } = splitAt(outShape, dim), k = indexShape[dim];
    for (let o = 0, i = 0; o < outer; o++) {
      const xo = o * size * inner;
      for (let j = 0; j < k; j++) for (let t = 0; t < inner; t++, i++) out[xo + index[i] * inner + t] += src[i];
    }
    return;
  }
  const st = stridesOf(outShape);
  const base = baseOffsets(indexShape, st, dim), sd = st[dim] ?? 0;
  const srcOff = srcAligned ? null : offsets(indexShape, stridesOf(srcShape));
  for (let i = 0; i < index.length; i++) out[base[i] + index[i] * sd] += src[srcOff ? srcOff[i] : i];
}

/** Offsets of x and mask for each element of the broadcast shape (identity when shapes agree). */
function maskPlan(xShape: readonly number[], maskShape: readonly number[], shape: readonly number[], n: number): [Int32Array | null, Int32Array | null] {
  const same = (s: readonly number[]) => s.length === shape.length && s.every((d, i) => d === shape[i]);
  const ix = same(xShape) ? null : xShape.length === 0 ? new Int32Array(n) : broadcastIndex([xShape], shape)[0];
  const im = same(maskShape) ? null : maskShape.length === 0 ? new Int32Array(n) : broadcastIndex([maskShape], shape)[0];
  return [ix, im];
}

/** The elements of x (broadcast with mask) where mask is set, in row-major order. */
export function maskedSelectKernel(
  x: TypedArray, xShape: readonly number[], mask: TypedArray, maskShape: readonly number[], shape: readonly number[], n: number,
  alloc: (count: number) => TypedArray,
): TypedArray {
  const [ix, im] = maskPlan(xShape, maskShape, shape, n);
  let count = 0;
  if (im) { for (let i = 0; i < n; i++) if (mask[im[i]]) count++; } else for (let i = 0; i < n; i++) count += mask[i];
  const out = alloc(count);
  if (!ix && !im) { for (let i = 0, k = 0; i < n; i++) if (mask[i]) out[k++] = x[i]; } else {
    for (let i = 0, k = 0; i < n; i++) if (mask[im ? im[i] : i]) out[k++] = x[ix ? ix[i] : i];
  }
  return out;
}

/**
 * out = x broadcast to `shape`, then the positions where mask is set take src's elements in
 * order (PyTorch's masked_scatter). Throws when src has fewer elements than the mask selects.
 */
export function maskedScatterKernel(
  x: TypedArray, xShape: readonly number[], mask: TypedArray, maskShape: readonly number[], shape: readonly number[], n: number,
  src: TypedArray, out: TypedArray,
): void {
  const [ix, im] = maskPlan(xShape, maskShape, shape, n);
  let k = 0;
  for (let i = 0; i < n; i++) {
    if (mask[im ? im[i] : i]) {
      if (k >= src.length) {
        throw new OpError('masked_scatter', `source has ${src.length} elements but the mask of shape ${fmtShape(maskShape)} selects more`);
      }
      out[i] = src[k++];
    } else out[i] = x[ix ? ix[i] : i];
  }
}

/** Keeps (r, c) of each trailing [rows, cols] matrix where c - r <= diagonal (lower) or >= (upper). */
export function triangleKernel(
  x: TypedArray, rows: number, cols: number, diagonal: number, upper: boolean, out: TypedArray,
): void {
  const mat = rows * cols;
  if (mat === 0) return;
  for (let base = 0; base < x.length; base += mat) {
    for (let r = 0; r < rows; r++) {
      // Columns [lo, hi) are kept in this row.
      const lo = upper ? Math.min(Math.max(r + diagonal, 0), cols) : 0;
      const hi = upper ? cols : Math.min(Math.max(r + diagonal + 1, 0), cols);
      const row = base + r * cols;
      for (let c = lo; c < hi; c++) out[row + c] = x[row + c];
    }
  }
}
