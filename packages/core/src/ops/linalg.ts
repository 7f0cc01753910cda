// Function forms of matrix products: matmul (PyTorch's broadcasting rules), mm, bmm, linear.

import type { Tensor } from '../tensor.js';

export function matmul(a: Tensor, b: Tensor): Tensor { throw notYet('matmul'); }
export function mm(a: Tensor, b: Tensor): Tensor { throw notYet('mm'); }
export function bmm(a: Tensor, b: Tensor): Tensor { throw notYet('bmm'); }
export function linear(x: Tensor, weight: Tensor, bias?: Tensor | null): Tensor { throw notYet('linear'); }

function notYet(name: string): Error { return new Error(`${name} is not implemented yet`); }
