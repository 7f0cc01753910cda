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

/** Folds each reduction group with `step`, starting from `init`. */
export function reduceWith(
  src: TypedArray, plan: ReducePlan, out: TypedArray,
  init: number, step: (acc: number, v: number) => number,
): void {
  const { outBase, redOffset } = plan;
  for (let o = 0; o < plan.outSize; o++) {
    const base = outBase[o];
    let acc = init;
    for (let r = 0; r < redOffset.length; r++) acc = step(acc, src[base + redOffset[r]]);
    out[o] = acc;
  }
}

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
