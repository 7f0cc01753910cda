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
 * position wins is unspecified: here they add up, so give distinct indices. With `reduce`, the
 * values are added to ('add') or multiplied into ('multiply') x instead.
 */
export function scatter(x: Tensor, dim: number, index: Tensor, src: Tensor | number, opts: { reduce?: 'add' | 'multiply' } = {}): Tensor {
  // reduce: 'add' adds into x (scatter_add), 'multiply' multiplies x by each value sent to it.
  if (opts.reduce === 'add') return dispatch1('scatter_add', [x, index, srcOf(x, index, src)], { dim });
  if (opts.reduce === 'multiply') return scatterReduce(x, dim, index, srcOf(x, index, src), 'prod');
  if (opts.reduce !== undefined) throw new Error(`scatter: reduce must be 'add' or 'multiply', got '${String(opts.reduce)}'`);
  const hit = dispatch1('gt', [hitCount(x, dim, index), Tensor._scalar(0, 'float32')]);
  const written = dispatch1('scatter_add', [zerosOf(x), index, srcOf(x, index, src)], { dim });
  return dispatch1('where', [hit, written, x]);
}

export type ScatterReduce = 'sum' | 'mean' | 'prod' | 'amax' | 'amin';

/**
 * Out of place torch.scatter_reduce: each position (p with p[dim] = index[p]) of x reduces the
 * src values sent to it with `reduce`, together with x's own value when includeSelf (default
 * true); positions nothing is sent to keep x's value. 'sum'/'mean' go through scatter_add;
 * 'prod'/'amax'/'amin' build a [..., m, n] table (m the index length along dim, n x's) and
 * reduce it, so their gradients are prod's and amax's (ties share evenly, as PyTorch). index
 * and src must have x's sizes except along dim.
 */
export function scatterReduce(x: Tensor, dim: number, index: Tensor, src: Tensor, reduce: ScatterReduce, opts: { includeSelf?: boolean } = {}): Tensor {
  const includeSelf = opts.includeSelf ?? true;
  if (!['sum', 'mean', 'prod', 'amax', 'amin'].includes(reduce)) throw new Error(`scatterReduce: unknown reduce '${String(reduce)}'; use 'sum', 'mean', 'prod', 'amax' or 'amin'`);
  if (reduce === 'sum' || reduce === 'mean') {
    const count = hitCount(x, dim, index);
    const hit = dispatch1('gt', [count, Tensor._scalar(0, 'float32')]);
    const total = dispatch1('scatter_add', [includeSelf ? x : zerosOf(x), index, src], { dim });
    if (reduce === 'sum') return includeSelf ? total : dispatch1('where', [hit, total, x]);
    const n = includeSelf ? dispatch1('add', [count, Tensor._scalar(1, 'float32')]) : count;
    return dispatch1('where', [hit, dispatch1('div', [total, n]), x]);
  }
  const r = x.ndim, d = ((dim % Math.max(r, 1)) + Math.max(r, 1)) % Math.max(r, 1);
  if (index.ndim !== r || src.ndim !== r || index.shape.some((s, k) => s !== src.shape[k] || (k !== d && s !== x.shape[k]))) {
    throw new Error(`scatterReduce: with reduce '${reduce}', index [${index.shape}] and src [${src.shape}] must have equal shapes, equal to x [${x.shape}] except along dim ${dim}`);
  }
  const last = (t: Tensor): Tensor => (d === r - 1 ? t : dispatch1('permute', [t], { dims: moveToEnd(r, d) }));
  const xt = last(x), it = last(index), st = last(src);
  const n = x.shape[d], m = index.shape[d], lead = xt.shape.slice(0, -1);
  const classes = Tensor._fromCpu({ data: Int32Array.from({ length: n }, (_, k) => k), shape: [n], dtype: 'int32' });
  const sends = dispatch1('eq', [dispatch1('reshape', [it], { shape: [...lead, m, 1] }), classes]); // [..., m, n]
  const neutral = reduce === 'prod' ? 1 : x.dtype === 'float32' ? (reduce === 'amax' ? -Infinity : Infinity) : (reduce === 'amax' ? -2147483648 : 2147483647);
  let table = dispatch1('where', [sends, dispatch1('reshape', [st], { shape: [...lead, m, 1] }), Tensor._scalar(neutral, x.dtype)]);
  if (includeSelf) table = dispatch1('cat', [table, dispatch1('reshape', [xt], { shape: [...lead, 1, n] })], { dim: -2 });
  const reduced = reduce === 'prod'
    ? dispatch1('prod', [table], { dim: -2, keepdim: false })
    : dispatch1(reduce, [table], { dim: -2, keepdim: false });
  const hit = dispatch1('gt', [dispatch1('sum', [sends], { dim: -2, keepdim: false }), Tensor._scalar(0, 'int32')]);
  const out = dispatch1('where', [hit, reduced, xt]);
  return d === r - 1 ? out : dispatch1('permute', [out], { dims: inversePerm(moveToEnd(r, d)) });
}
const moveToEnd = (r: number, d: number): number[] => [...Array.from({ length: r }, (_, k) => k).filter((k) => k !== d), d];
const inversePerm = (p: number[]): number[] => { const q = new Array<number>(p.length); p.forEach((v, i) => { q[v] = i; }); return q; };

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
