// Function forms of reductions. Primitives: sum, amax, amin, argmax, argmin, prod, cumsum.
// mean/var/std/logsumexp/norm/softmax/logSoftmax/max/min are composites over them.

import { normDims } from '@kiln/ir-spec';
import type { Tensor } from '../tensor.js';
import { dispatch1 } from '../dispatch.js';
import * as E from './elementwise.js';

type Dims = number | number[] | null | undefined;
type KeepOpt = { keepdim?: boolean };

const dimAttr = (dim: Dims) => (dim === undefined ? null : dim);

export function sum(x: Tensor, dim?: Dims, opts: KeepOpt = {}): Tensor {
  return dispatch1('sum', [x], { dim: dimAttr(dim), keepdim: opts.keepdim ?? false });
}

/** Number of elements folded into each output of a reduction over `dim`. */
export function reducedCount(x: Tensor, dim?: Dims): number {
  return normDims('mean', dimAttr(dim), x.ndim).reduce((n, d) => n * x.shape[d], 1);
}

export function mean(x: Tensor, dim?: Dims, opts: KeepOpt = {}): Tensor {
  if (x.dtype !== 'float32') throw new Error(`mean: input dtype should be float32, got ${x.dtype}; call .float() first`);
  return E.div(sum(x, dim, opts), reducedCount(x, dim));
}

export function prod(x: Tensor, dim?: number | null, opts: KeepOpt = {}): Tensor { throw notYet('prod'); }
export function max(x: Tensor, dim?: number, opts: KeepOpt = {}): Tensor | [Tensor, Tensor] { throw notYet('max'); }
export function min(x: Tensor, dim?: number, opts: KeepOpt = {}): Tensor | [Tensor, Tensor] { throw notYet('min'); }
export function amax(x: Tensor, dim?: Dims, opts: KeepOpt = {}): Tensor { throw notYet('amax'); }
export function amin(x: Tensor, dim?: Dims, opts: KeepOpt = {}): Tensor { throw notYet('amin'); }
export function argmax(x: Tensor, dim?: number | null, opts: KeepOpt = {}): Tensor { throw notYet('argmax'); }
export function argmin(x: Tensor, dim?: number | null, opts: KeepOpt = {}): Tensor { throw notYet('argmin'); }
export function variance(x: Tensor, dim?: Dims, opts: { unbiased?: boolean; keepdim?: boolean } = {}): Tensor { throw notYet('var'); }
export function std(x: Tensor, dim?: Dims, opts: { unbiased?: boolean; keepdim?: boolean } = {}): Tensor { throw notYet('std'); }
export function logsumexp(x: Tensor, dim: number | number[], opts: KeepOpt = {}): Tensor { throw notYet('logsumexp'); }
export function norm(x: Tensor, p?: number, dim?: Dims, opts: KeepOpt = {}): Tensor { throw notYet('norm'); }
export function cumsum(x: Tensor, dim: number): Tensor { throw notYet('cumsum'); }
export function softmax(x: Tensor, dim: number): Tensor { throw notYet('softmax'); }
export function logSoftmax(x: Tensor, dim: number): Tensor { throw notYet('logSoftmax'); }

function notYet(name: string): Error { return new Error(`${name} is not implemented yet`); }
