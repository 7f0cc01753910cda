// Function forms of matrix products: matmul (PyTorch's broadcasting rules), mm (2-D only),
// bmm (3-D only, equal batches) and linear. mm/bmm are checked forms of the matmul primitive.

import { fmtShape, OpError } from '@kiln/ir-spec';
import { Tensor } from '../tensor.js';
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

/** The outer product a ⊗ b of two 1-D tensors: out[i][j] = a[i]·b[j]. */
export function outer(a: Tensor, b: Tensor): Tensor {
  if (a.ndim !== 1 || b.ndim !== 1) throw new OpError('outer', `expects two 1-D tensors, got shapes ${fmtShape(a.shape)} and ${fmtShape(b.shape)}`);
  return dispatch1('mul', [dispatch1('reshape', [a], { shape: [a.shape[0], 1] }), dispatch1('reshape', [b], { shape: [1, b.shape[0]] })]);
}

/**
 * torch.diag: a 1-D tensor becomes a square matrix with it on diagonal `diagonal` (above the main
 * one when positive); a 2-D tensor gives that diagonal as 1-D. Built as index_select of fixed
 * positions (a zero appended for the off-diagonal cells), so it differentiates.
 */
export function diag(x: Tensor, diagonal = 0): Tensor {
  if (!Number.isInteger(diagonal)) throw new OpError('diag', `diagonal must be an integer, got ${diagonal}`);
  const k = diagonal;
  if (x.ndim === 1) {
    const n = x.shape[0], m = n + Math.abs(k);
    const idx = new Int32Array(m * m).fill(n); // position n is the appended zero
    for (let i = 0; i < n; i++) idx[(k >= 0 ? i : i - k) * m + (k >= 0 ? i + k : i)] = i;
    const padded = dispatch1('cat', [x, dispatch1('expand', [dispatch1('reshape', [zeroLike(x)], { shape: [1] })], { shape: [1] })], { dim: 0 });
    const flat = dispatch1('index_select', [padded, Tensor._fromCpu({ data: idx, shape: [m * m], dtype: 'int32' })], { dim: 0 });
    return dispatch1('reshape', [flat], { shape: [m, m] });
  }
  if (x.ndim === 2) {
    const [r, c] = x.shape;
    const pos: number[] = [];
    for (let i = Math.max(0, -k); i < r && i + k < c; i++) pos.push(i * c + i + k);
    const flat = dispatch1('reshape', [x], { shape: [r * c] });
    return dispatch1('index_select', [flat, Tensor._fromCpu({ data: Int32Array.from(pos), shape: [pos.length], dtype: 'int32' })], { dim: 0 });
  }
  throw new OpError('diag', `expects a 1-D or 2-D tensor, got shape ${fmtShape(x.shape)}`);
}
const zeroLike = (x: Tensor): Tensor => Tensor._scalar(0, x.dtype);
