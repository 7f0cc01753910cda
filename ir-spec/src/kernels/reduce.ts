// Reduction over a set of dims of a dense row-major tensor. The tensor is viewed as
// [outer, reduced, inner] blocks after moving reduced dims; we avoid copies by iterating
// over the kept/reduced index spaces directly.

import { numel, stridesOf } from '../shape.js';
import type { TypedArray } from '../dtype.js';

export interface ReducePlan {
  /** Output shape with reduced dims kept as 1 (keepdim layout). */
  keptShape: number[];
  outSize: number;
  redSize: number;
  /** Offset of each output element's first input element. */
  outBase: Int32Array;
  /** Offset of each reduced position relative to the base. */
  redOffset: Int32Array;
}

export function planReduce(shape: readonly number[], dims: readonly number[]): ReducePlan {
  const st = stridesOf(shape);
  const isRed = shape.map((_, i) => dims.includes(i));
  const keptShape = shape.map((d, i) => (isRed[i] ? 1 : d));
  const keptDims = shape.map((_, i) => i).filter((i) => !isRed[i]);
  const redDims = shape.map((_, i) => i).filter((i) => isRed[i]);
  return {
    keptShape,
    outSize: numel(keptShape),
    redSize: numel(redDims.map((i) => shape[i])),
    outBase: offsets(keptDims.map((i) => shape[i]), keptDims.map((i) => st[i])),
    redOffset: offsets(redDims.map((i) => shape[i]), redDims.map((i) => st[i])),
  };
}

/** Row-major enumeration of the offsets of a sub-index-space. */
export function offsets(sizes: readonly number[], strides: readonly number[]): Int32Array {
  const n = numel(sizes);
  const out = new Int32Array(n);
  const pos = new Array<number>(sizes.length).fill(0);
  let off = 0;
  for (let i = 0; i < n; i++) {
    out[i] = off;
    for (let d = sizes.length - 1; d >= 0; d--) {
      pos[d]++;
      off += strides[d];
      if (pos[d] < sizes[d]) break;
      off -= strides[d] * sizes[d];
      pos[d] = 0;
    }
  }
  return out;
}

// reduceSum and reduceProd are the same fold written out twice on purpose: one fold taking the
// operator as a callback measured 5-7× slower once it sees two callbacks (V8 stops inlining a
// polymorphic call in the inner loop), and sum is a hot kernel.

/** Sum with a float64 accumulator (closer to PyTorch's pairwise sums than a float32 one). */
export function reduceSum(src: TypedArray, plan: ReducePlan, out: TypedArray): void {
  const { outBase, redOffset } = plan;
  for (let o = 0; o < plan.outSize; o++) {
    const base = outBase[o];
    let acc = 0;
    for (let r = 0; r < redOffset.length; r++) acc += src[base + redOffset[r]];
    out[o] = acc;
  }
}

/**
 * Max (or min) of each reduction group. NaN propagates as in PyTorch: once a group meets a NaN
 * its result stays NaN (`v > NaN` is false, and a NaN `v` always replaces the accumulator).
 */
export function reduceExtreme(src: TypedArray, plan: ReducePlan, out: TypedArray, max: boolean): void {
  const { outBase, redOffset } = plan;
  const m = redOffset.length;
  for (let o = 0; o < plan.outSize; o++) {
    const base = outBase[o];
    let acc = src[base + redOffset[0]];
    if (max) {
      for (let r = 1; r < m; r++) { const v = src[base + redOffset[r]]; if (v > acc || v !== v) acc = v; }
    } else {
      for (let r = 1; r < m; r++) { const v = src[base + redOffset[r]]; if (v < acc || v !== v) acc = v; }
    }
    out[o] = acc;
  }
}

/** Product of each reduction group, accumulated in float64 (as PyTorch's CPU reductions). */
export function reduceProd(src: TypedArray, plan: ReducePlan, out: TypedArray): void {
  const { outBase, redOffset } = plan;
  for (let o = 0; o < plan.outSize; o++) {
    const base = outBase[o];
    let acc = 1;
    for (let r = 0; r < redOffset.length; r++) acc *= src[base + redOffset[r]];
    out[o] = acc;
  }
}

/**
 * Index (0..size-1) of the first max (min) along the middle axis of an [outer, size, inner] view.
 * NaN counts as the extreme (PyTorch's rule): the first NaN wins over every number.
 */
export function argExtreme(
  src: TypedArray, outer: number, size: number, inner: number, out: Int32Array, max: boolean,
): void {
  for (let o = 0; o < outer; o++) {
    for (let t = 0; t < inner; t++) {
      const base = o * size * inner + t;
      let best = src[base], bi = 0;
      for (let j = 1; j < size && best === best; j++) {
        const v = src[base + j * inner];
        if ((max ? v > best : v < best) || v !== v) { best = v; bi = j; }
      }
      out[o * inner + t] = bi;
    }
  }
}

/** Inclusive prefix sums along the middle axis of [outer, size, inner], float64 accumulators. */
export function cumsumKernel(src: TypedArray, outer: number, size: number, inner: number, out: TypedArray): void {
  const acc = new Float64Array(inner);
  for (let o = 0; o < outer; o++) {
    acc.fill(0);
    for (let j = 0; j < size; j++) {
      const off = (o * size + j) * inner;
      for (let t = 0; t < inner; t++) { acc[t] += src[off + t]; out[off + t] = acc[t]; }
    }
  }
}
