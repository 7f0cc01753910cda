// Function forms of shape ops. Primitives: reshape (a view), permute, expand (copies).
// view/flatten/squeeze/unsqueeze are reshapes; transpose/t are permutes.

import { normDim, OpError, fmtShape } from '@kiln/ir-spec';
import type { IndexItem, Tensor } from '../tensor.js';
import { dispatch1 } from '../dispatch.js';

/** Accepts both `f(2, 3)` and `f([2, 3])` argument styles. */
export function shapeArg(args: number[] | [readonly number[]]): number[] {
  return args.length === 1 && Array.isArray(args[0]) ? [...(args[0] as readonly number[])] : (args as number[]);
}

export function reshape(x: Tensor, shape: readonly number[]): Tensor {
  return dispatch1('reshape', [x], { shape: [...shape] });
}
/** Same as reshape here: our tensors are always contiguous, so a view is always possible. */
export const view = reshape;

export function permute(x: Tensor, dims: readonly number[]): Tensor {
  return dispatch1('permute', [x], { dims: [...dims] });
}
export function transpose(x: Tensor, dim0: number, dim1: number): Tensor {
  const r = x.ndim;
  const a = normDim('transpose', dim0, r), b = normDim('transpose', dim1, r);
  const dims = Array.from({ length: r }, (_, i) => i);
  [dims[a], dims[b]] = [dims[b], dims[a]];
  return a === b ? x : permute(x, dims);
}
export function t(x: Tensor): Tensor {
  if (x.ndim > 2) throw new OpError('t', `expects a tensor with <= 2 dims, got shape ${fmtShape(x.shape)}; use transpose(dim0, dim1)`);
  return x.ndim < 2 ? x : transpose(x, 0, 1);
}
export function expand(x: Tensor, shape: readonly number[]): Tensor {
  return dispatch1('expand', [x], { shape: [...shape] });
}
export function flatten(x: Tensor, startDim = 0, endDim = -1): Tensor {
  if (x.ndim === 0) return reshape(x, [1]);
  const s = normDim('flatten', startDim, x.ndim), e = normDim('flatten', endDim, x.ndim);
  if (s > e) throw new OpError('flatten', `startDim ${startDim} comes after endDim ${endDim}`);
  const mid = x.shape.slice(s, e + 1).reduce((a, d) => a * d, 1);
  return reshape(x, [...x.shape.slice(0, s), mid, ...x.shape.slice(e + 1)]);
}
export function squeeze(x: Tensor, dim?: number | number[]): Tensor {
  const dims = dim === undefined ? null : (typeof dim === 'number' ? [dim] : dim).map((d) => normDim('squeeze', d, x.ndim));
  return reshape(x, x.shape.filter((d, i) => !(d === 1 && (dims === null || dims.includes(i)))));
}
export function unsqueeze(x: Tensor, dim: number): Tensor {
  const d = normDim('unsqueeze', dim, x.ndim + 1);
  return reshape(x, [...x.shape.slice(0, d), 1, ...x.shape.slice(d)]);
}

export function repeat(x: Tensor, repeats: readonly number[]): Tensor { throw notYet('repeat'); }
export function flip(x: Tensor, dims: number | number[]): Tensor { throw notYet('flip'); }
export function cat(xs: readonly Tensor[], dim = 0): Tensor { throw notYet('cat'); }
export function stack(xs: readonly Tensor[], dim = 0): Tensor { throw notYet('stack'); }
export function split(x: Tensor, sizeOrSections: number | number[], dim = 0): Tensor[] { throw notYet('split'); }
export function chunk(x: Tensor, chunks: number, dim = 0): Tensor[] { throw notYet('chunk'); }
export function unbind(x: Tensor, dim = 0): Tensor[] { throw notYet('unbind'); }
export function slice(x: Tensor, dim: number, start?: number | null, end?: number | null, step = 1): Tensor { throw notYet('slice'); }
export function index(x: Tensor, items: readonly IndexItem[]): Tensor { throw notYet('index'); }

function notYet(name: string): Error { return new Error(`${name} is not implemented yet`); }
