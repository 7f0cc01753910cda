// Function forms of index-based ops: index_select, gather, scatter_add, masked_select, tril/triu.
// Each is one dispatch of the ir-spec op of the same name; index tensors are int32, masks bool.

import { Tensor } from '../tensor.js';
import { dispatch1 } from '../dispatch.js';

/**
 * Slices of x along `dim` at the positions of a 1-D int32 `index` (repeats allowed).
 * @example x.indexSelect(0, tensor([2, 0, 2], { dtype: 'int32' }))
 */
export function indexSelect(x: Tensor, dim: number, index: Tensor): Tensor {
  return dispatch1('index_select', [x, index], { dim });
}
/** out[i][j] = x[index[i][j]][j] for dim 0 (and likewise for other dims); out has index's shape. */
export function gather(x: Tensor, dim: number, index: Tensor): Tensor {
  return dispatch1('gather', [x, index], { dim });
}
/** Out of place: x with src[i][j] added at [index[i][j]][j] (dim 0; likewise for other dims). */
export function scatterAdd(x: Tensor, dim: number, index: Tensor, src: Tensor): Tensor {
  return dispatch1('scatter_add', [x, index, src], { dim });
}
/** The elements of x (broadcast with the bool `mask`) where mask is true, as a 1-D tensor. */
export function maskedSelect(x: Tensor, mask: Tensor): Tensor {
  return dispatch1('masked_select', [x, mask]);
}
/** Lower triangle of the last two dims: keeps (r, c) with c - r <= diagonal, zeroes the rest. */
export function tril(x: Tensor, diagonal = 0): Tensor {
  return dispatch1('tril', [x], { diagonal });
}
/** Upper triangle of the last two dims: keeps (r, c) with c - r >= diagonal, zeroes the rest. */
export function triu(x: Tensor, diagonal = 0): Tensor {
  return dispatch1('triu', [x], { diagonal });
}

// ---- scatter, scatterReduce, nonzero: composites over scatter_add / masked_select ---------------

/** A float32 map of `x`'s shape: 1 where some position of `index` points (along `dim`), else 0. */
function hitCount(x: Tensor, dim: number, index: Tensor): Tensor {
  const zeros = dispatch1('expand', [Tensor._scalar(0, 'float32')], { shape: [...x.shape] });
  const ones = dispatch1('expand', [Tensor._scalar(1, 'float32')], { shape: [...index.shape] });
  return dispatch1('scatter_add', [zeros, index, ones], { dim });
}
const zerosOf = (x: Tensor): Tensor => dispatch1('expand', [Tensor._scalar(0, x.dtype)], { shape: [...x.shape] });
const srcOf = (x: Tensor, index: Tensor, src: Tensor | number): Tensor =>
  typeof src === 'number' ? dispatch1('expand', [Tensor._scalar(src, x.dtype)], { shape: [...index.shape] }) : src;

/**
 * Out of place torch.scatter: x with src[p] (or the number `src`) written at (p with p[dim] =
 * index[p]) for each position p of index. As in PyTorch, which of several writes to one
 * position wins is unspecified: here they add up, so give distinct indices.
 */
export function scatter(x: Tensor, dim: number, index: Tensor, src: Tensor | number): Tensor {
  const hit = dispatch1('gt', [hitCount(x, dim, index), Tensor._scalar(0, 'float32')]);
  const written = dispatch1('scatter_add', [zerosOf(x), index, srcOf(x, index, src)], { dim });
  return dispatch1('where', [hit, written, x]);
}

/**
 * Out of place torch.scatter_reduce with reduce 'sum' or 'mean' (includeSelf: x's own value
 * takes part, default true; a mean divides by the number of values reduced).
 */
export function scatterReduce(x: Tensor, dim: number, index: Tensor, src: Tensor, reduce: 'sum' | 'mean', opts: { includeSelf?: boolean } = {}): Tensor {
  if (reduce !== 'sum' && reduce !== 'mean') throw new Error(`scatterReduce: reduce '${String(reduce)}' is not supported; use 'sum' or 'mean'`);
  const includeSelf = opts.includeSelf ?? true;
  const count = hitCount(x, dim, index);
  const hit = dispatch1('gt', [count, Tensor._scalar(0, 'float32')]);
  const total = dispatch1('scatter_add', [includeSelf ? x : zerosOf(x), index, src], { dim });
  if (reduce === 'sum') return includeSelf ? total : dispatch1('where', [hit, total, x]);
  const n = includeSelf ? dispatch1('add', [count, Tensor._scalar(1, 'float32')]) : count;
  return dispatch1('where', [hit, dispatch1('div', [total, n]), x]);
}

/**
 * Coordinates of the nonzero elements, row-major order: an int32 tensor [n, ndim] (torch.nonzero),
 * or with asTuple one 1-D tensor per dim. Each coordinate column is masked_select of an index grid.
 */
export function nonzero(x: Tensor): Tensor;
export function nonzero(x: Tensor, opts: { asTuple: true }): Tensor[];
export function nonzero(x: Tensor, opts: { asTuple?: boolean } = {}): Tensor | Tensor[] {
  const t = x.ndim ? x : dispatch1('reshape', [x], { shape: [1] });
  const mask = dispatch1('ne', [t, Tensor._scalar(0, t.dtype)]);
  const cols = t.shape.map((n, d) => {
    const grid = Tensor._fromCpu({ data: Int32Array.from({ length: n }, (_, i) => i), shape: t.shape.map((s, k) => (k === d ? s : 1)), dtype: 'int32' });
    return dispatch1('masked_select', [grid, mask]);
  });
  if (!x.ndim) {
    const n = cols[0].shape[0];
    return opts.asTuple ? [cols[0]] : Tensor._fromCpu({ data: new Int32Array(0), shape: [n, 0], dtype: 'int32' });
  }
  if (opts.asTuple) return cols;
  return dispatch1('cat', cols.map((c) => dispatch1('reshape', [c], { shape: [c.shape[0], 1] })), { dim: 1 });
}
