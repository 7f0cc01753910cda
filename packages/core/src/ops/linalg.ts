// Function forms of matrix products: matmul (PyTorch's broadcasting rules), mm (2-D only),
// bmm (3-D only, equal batches) and linear. mm/bmm are checked forms of the matmul primitive.

import { fmtShape, OpError } from '@kiln/ir-spec';
import type { Tensor } from '../tensor.js';
import { dispatch1 } from '../dispatch.js';

/**
 * Matrix product with PyTorch semantics: 1-D·1-D is a dot product, a 1-D operand acts as a
 * row (left) or column (right) vector, and batch dims broadcast.
 * @example matmul(randn([2, 3, 4]), randn([4, 5])).shape // [2, 3, 5]
 */
export function matmul(a: Tensor, b: Tensor): Tensor {
  return dispatch1('matmul', [a, b]);
}

/** 2-D matrix product `[n,m] @ [m,p]` (no broadcasting, as torch.mm). */
export function mm(a: Tensor, b: Tensor): Tensor {
  if (a.ndim !== 2 || b.ndim !== 2) {
    throw new OpError('mm', `${fmtShape(a.shape)} @ ${fmtShape(b.shape)}: both arguments must be 2-D; use matmul for other ranks`);
  }
  return matmul(a, b);
}

/** Batched product `[B,n,m] @ [B,m,p]` (3-D, equal batch sizes, no broadcasting, as torch.bmm). */
export function bmm(a: Tensor, b: Tensor): Tensor {
  if (a.ndim !== 3 || b.ndim !== 3) {
    throw new OpError('bmm', `${fmtShape(a.shape)} @ ${fmtShape(b.shape)}: both arguments must be 3-D; use matmul for other ranks`);
  }
  if (a.shape[0] !== b.shape[0]) {
    throw new OpError('bmm', `${fmtShape(a.shape)} @ ${fmtShape(b.shape)}: batch sizes ${a.shape[0]} and ${b.shape[0]} differ`);
  }
  return matmul(a, b);
}

/**
 * `x·weightᵀ + bias` over the last dim of `x` (torch.nn.functional.linear).
 * @example linear(randn([8, 4]), randn([3, 4]), zeros([3])).shape // [8, 3]
 */
export function linear(x: Tensor, weight: Tensor, bias?: Tensor | null): Tensor {
  return dispatch1('linear', [x, weight, bias ?? null]);
}
