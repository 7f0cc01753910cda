// Function forms of index-based ops: index_select, gather, scatter_add, masked_select, tril/triu.
// Each is one dispatch of the ir-spec op of the same name; index tensors are int32, masks bool.

import type { Tensor } from '../tensor.js';
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
