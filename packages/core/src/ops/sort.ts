// Sorting: sort is one dispatch of the ir-spec 'sort' entry (stable); argsort and topk are
// composites over it. Tie order (documented): equal values keep their input order, in both
// directions, so topk of ties returns the lowest indices first. PyTorch's topk leaves the tie
// order unspecified, and its unstable sort may differ; its stable sort agrees with ours.

import { normDim, OpError } from '@kiln/ir-spec';
import type { Tensor } from '../tensor.js';
import { dispatch } from '../dispatch.js';
import * as S from './shape.js';

export interface SortOptions { dim?: number; descending?: boolean; stable?: boolean }

/**
 * `[values, indices]` sorted along `dim` (default -1); always stable; NaN sorts as the largest.
 * @example const [v, i] = sort(x, { descending: true });
 */
export function sort(x: Tensor, opts: SortOptions = {}): [Tensor, Tensor] {
  const [values, indices] = dispatch('sort', [x], { dim: opts.dim ?? -1, descending: opts.descending ?? false });
  return [values, indices];
}

/** int32 indices that sort `x` along `dim` (stable). */
export function argsort(x: Tensor, opts: SortOptions = {}): Tensor {
  return sort(x, opts)[1];
}

/**
 * The `k` largest (or smallest) elements along `dim` (default -1) and their int32 indices, in
 * sorted order; ties keep the lower index first.
 * @example const [v, i] = topk(x, 3);
 */
export function topk(x: Tensor, k: number, opts: { dim?: number; largest?: boolean; sorted?: boolean } = {}): [Tensor, Tensor] {
  const dim = opts.dim ?? -1;
  const size = x.ndim ? x.shape[normDim('topk', dim, x.ndim)] : 1;
  if (!Number.isInteger(k) || k < 0 || k > size) throw new OpError('topk', `k = ${k} must be an integer in [0, ${size}] (the size of dim ${dim} of shape [${x.shape.join(',')}])`);
  const [v, i] = sort(x, { dim, descending: opts.largest ?? true });
  if (!x.ndim) return [v, i];
  return [S.slice(v, dim, 0, k), S.slice(i, dim, 0, k)];
}
