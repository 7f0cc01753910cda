// Function forms of reductions. Primitives: sum, amax, amin, argmax, argmin, prod, cumsum.
// mean/var/std/logsumexp/norm/softmax/logSoftmax/max/min are composites over them (and over
// elementwise ops); stabilizing maxima are detached, as they do not change the value.

import { autocastFloat32 } from '../amp/autocast.js';
import { isFloating, normDim, normDims } from '@kiln/ir-spec';
import { Tensor } from '../tensor.js';
import { dispatch1 } from '../dispatch.js';
import * as E from './elementwise.js';
import * as S from './shape.js';

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
  if (!isFloating(x.dtype)) throw new Error(`mean: input dtype should be floating point, got ${x.dtype}; call .float() first`);
  return E.div(sum(x, dim, opts), reducedCount(x, dim));
}

/** Product over `dim` (all elements when omitted); int/bool inputs give int32. */
export function prod(x: Tensor, dim?: number | null, opts: KeepOpt = {}): Tensor {
  return dispatch1('prod', [x], { dim: dimAttr(dim), keepdim: opts.keepdim ?? false });
}

/**
 * Without `dim`: the largest element (NaN if any). With `dim`: `[values, indices]` as torch.max,
 * indices int32 of the first maximum; the gradient goes to that element only, as in PyTorch.
 * @example const [v, i] = max(x, 1) as [Tensor, Tensor];
 */
export function max(x: Tensor, dim?: number, opts: KeepOpt = {}): Tensor | [Tensor, Tensor] {
  return dim === undefined ? amax(x) : selectExtreme(x, dim, opts.keepdim ?? false, 'argmax');
}
/** Without `dim`: the smallest element. With `dim`: `[values, indices]` as torch.min. */
export function min(x: Tensor, dim?: number, opts: KeepOpt = {}): Tensor | [Tensor, Tensor] {
  return dim === undefined ? amin(x) : selectExtreme(x, dim, opts.keepdim ?? false, 'argmin');
}
/** Values picked by gather at the arg index, so the gradient flows to that one element. */
function selectExtreme(x: Tensor, dim: number, keepdim: boolean, arg: 'argmax' | 'argmin'): [Tensor, Tensor] {
  if (x.ndim === 0) return [S.reshape(x, []), dispatch1(arg, [x], { dim: null, keepdim: false })];
  const idx = dispatch1(arg, [x], { dim, keepdim: true });
  const values = dispatch1('gather', [x, idx], { dim });
  if (keepdim) return [values, idx];
  const shape = x.shape.filter((_, i) => i !== normDim('max', dim, x.ndim));
  return [S.reshape(values, shape), S.reshape(idx, shape)];
}

/** Maximum over dims; ties share the gradient evenly (torch.amax). */
export function amax(x: Tensor, dim?: Dims, opts: KeepOpt = {}): Tensor {
  return dispatch1('amax', [x], { dim: dimAttr(dim), keepdim: opts.keepdim ?? false });
}
/** Minimum over dims; ties share the gradient evenly (torch.amin). */
export function amin(x: Tensor, dim?: Dims, opts: KeepOpt = {}): Tensor {
  return dispatch1('amin', [x], { dim: dimAttr(dim), keepdim: opts.keepdim ?? false });
}
/** int32 index of the first maximum along `dim`; without `dim`, into the flattened tensor. */
export function argmax(x: Tensor, dim?: number | null, opts: KeepOpt = {}): Tensor {
  return dispatch1('argmax', [x], { dim: dim ?? null, keepdim: opts.keepdim ?? false });
}
/** int32 index of the first minimum along `dim`; without `dim`, into the flattened tensor. */
export function argmin(x: Tensor, dim?: number | null, opts: KeepOpt = {}): Tensor {
  return dispatch1('argmin', [x], { dim: dim ?? null, keepdim: opts.keepdim ?? false });
}

/**
 * Variance over `dim` (all when omitted); `unbiased` (default true) divides by N-1 (Bessel).
 * @example x.var(1, { unbiased: false, keepdim: true })
 */
export function variance(x: Tensor, dim?: Dims, opts: { unbiased?: boolean; keepdim?: boolean } = {}): Tensor {
  needFloat('var', x);
  const d = E.sub(x, mean(x, dim, { keepdim: true }));
  // The divisor from a 0-d count: a trace generalizes the count to the dynamic sizes, so a
  // compiled graph divides by its own batch's N − 1 (a plain number would be baked in).
  const count = Tensor._scalar(reducedCount(x, dim), 'float32');
  const n = (opts.unbiased ?? true) ? E.sub(count, 1) : count;
  return E.div(sum(E.mul(d, d), dim, { keepdim: opts.keepdim }), n);
}
/** Standard deviation: sqrt of {@link variance}; a zero std gets a zero gradient (as PyTorch). */
export function std(x: Tensor, dim?: Dims, opts: { unbiased?: boolean; keepdim?: boolean } = {}): Tensor {
  return safeRoot(variance(x, dim, opts), 2);
}

/**
 * `s^(1/p)` whose gradient is 0 (not inf·0 = NaN) where s is 0, as PyTorch's norm/std backward:
 * the root is taken of `where(s == 0, 1, s)`, so no infinite derivative is ever formed.
 */
function safeRoot(s: Tensor, p: number): Tensor {
  const zero = E.eq(s, 0);
  const safe = E.where(zero, 1, s);
  return E.where(zero, 0, p === 2 ? E.sqrt(safe) : E.pow(safe, 1 / p));
}

/**
 * log(sum(exp(x))) over `dim`, computed stably: the max (detached, ±inf replaced by 0) is
 * subtracted before exp and added back.
 */
export function logsumexp(x: Tensor, dim: number | number[], opts: KeepOpt = {}): Tensor {
  x = autocastFloat32(x); // PyTorch autocast: fp32 list
  needFloat('logsumexp', x);
  const m = finiteOrZero(amax(x, dim, { keepdim: true }).detach());
  const r = E.add(E.log(sum(E.exp(E.sub(x, m)), dim, { keepdim: true })), m);
  return opts.keepdim ? r : S.reshape(r, reducedShape(x, dim));
}

/** `m` with ±inf (and NaN) replaced by 0: `m - m` is 0 exactly for finite values. */
function finiteOrZero(m: Tensor): Tensor {
  return E.where(E.eq(E.sub(m, m), 0), m, 0);
}

/**
 * The p-norm over `dim` (all when omitted): p = 2 by default, any p > 0, Infinity (max |x|) or
 * 0 (count of nonzeros). A zero norm gets a zero gradient, as in PyTorch.
 */
export function norm(x: Tensor, p = 2, dim?: Dims, opts: KeepOpt = {}): Tensor {
  needFloat('norm', x);
  const keep = { keepdim: opts.keepdim };
  if (p === Infinity) return amax(E.abs(x), dim, keep);
  if (p === 0) return sum(E.cast(E.ne(x, 0), 'float32'), dim, keep);
  if (!(p > 0)) throw new Error(`norm: p must be positive, Infinity or 0, got ${p}`);
  if (p === 2) return safeRoot(sum(E.mul(x, x), dim, keep), 2);
  if (p === 1) return sum(E.abs(x), dim, keep);
  return safeRoot(sum(E.pow(E.abs(x), p), dim, keep), p);
}

/** Inclusive prefix sums along `dim` (int/bool give int32). */
export function cumsum(x: Tensor, dim: number): Tensor {
  return dispatch1('cumsum', [x], { dim });
}

/** exp(x) / sum(exp(x)) along `dim`, with the (detached) max subtracted first for stability. */
export function softmax(x: Tensor, dim: number): Tensor {
  x = autocastFloat32(x); // PyTorch autocast: fp32 list
  needFloat('softmax', x);
  const e = E.exp(E.sub(x, amax(x, dim, { keepdim: true }).detach()));
  return E.div(e, sum(e, dim, { keepdim: true }));
}
/** x - logsumexp(x) along `dim`, computed stably (max subtracted, detached). */
export function logSoftmax(x: Tensor, dim: number): Tensor {
  x = autocastFloat32(x); // PyTorch autocast: fp32 list
  needFloat('logSoftmax', x);
  const s = E.sub(x, amax(x, dim, { keepdim: true }).detach());
  return E.sub(s, E.log(sum(E.exp(s), dim, { keepdim: true })));
}

function needFloat(op: string, x: Tensor): void {
  if (!isFloating(x.dtype)) throw new Error(`${op}: input dtype should be floating point, got ${x.dtype}; call .float() first`);
}
/** Shape of `x` with the dims in `dim` removed. */
function reducedShape(x: Tensor, dim: Dims): number[] {
  const dims = normDims('reduce', dimAttr(dim), x.ndim);
  return x.shape.filter((_, i) => !dims.includes(i));
}

/**
 * Inclusive prefix products along `dim` (int/bool give int32). A composite: row j of an n×n
 * lower-triangular table holds x_0..x_j (1 above the diagonal) and prod reduces it, so the
 * gradient is prod's, exact at zeros; it costs n² per line (cumprod lines are short in practice).
 */
export function cumprod(x: Tensor, dim: number): Tensor {
  if (!x.ndim) return E.cast(x, x.dtype === 'float32' ? 'float32' : 'int32');
  const d = normDim('cumprod', dim, x.ndim), n = x.shape[d];
  const last = S.transpose(x, d, -1);
  const rows = S.expand(S.unsqueeze(last, -2), [...last.shape.slice(0, -1), n, n]);
  const keep = new Uint8Array(n * n);
  for (let j = 0; j < n; j++) for (let k = 0; k <= j; k++) keep[j * n + k] = 1;
  const mask = Tensor._fromCpu({ data: keep, shape: [n, n], dtype: 'bool' });
  const y = prod(E.where(mask, rows, Tensor._scalar(1, x.dtype)), -1);
  return S.transpose(y, d, -1);
}

/** Whether any element (along `dim`) is nonzero, as bool (false for an empty reduction). */
export function any(x: Tensor, dim?: number | null, opts: KeepOpt = {}): Tensor {
  return E.gt(sum(E.ne(x, 0), dim, opts), 0);
}
/** Whether every element (along `dim`) is nonzero, as bool (true for an empty reduction). */
export function all(x: Tensor, dim?: number | null, opts: KeepOpt = {}): Tensor {
  return E.eq(sum(E.eq(x, 0), dim, opts), 0);
}
