// F.scaledDotProductAttention, F.normalize, F.cosineSimilarity, F.oneHot, F.glu, F.dropout2d:
// composites over matmul, softmax, norms and elementwise ops.

import { fmtShape, OpError } from '@kiln/ir-spec';
import { Tensor } from '../tensor.js';
import { dispatch1 } from '../dispatch.js';
import { rand } from '../creation.js';
import * as E from '../ops/elementwise.js';
import * as R from '../ops/reduce.js';
import * as S from '../ops/shape.js';
import { matmul } from '../ops/linalg.js';

export interface AttentionOptions {
  /** bool (true = may attend) or float (added to the scores), broadcast to [..., L, S]. */
  attnMask?: Tensor | null;
  dropoutP?: number;
  /** Each query attends to keys at its position and before (a lower-triangular mask). */
  isCausal?: boolean;
  /** Multiplies q·kᵀ; default 1/√E. */
  scale?: number | null;
  /** Whether dropout applies (default true when dropoutP > 0, as in PyTorch). */
  training?: boolean;
}

/**
 * softmax(q·kᵀ·scale + mask)·v over the last two dims (torch 2.x's
 * scaled_dot_product_attention): q [..., L, E], k [..., S, E], v [..., S, Ev] → [..., L, Ev].
 */
export function scaledDotProductAttention(q: Tensor, k: Tensor, v: Tensor, opts: AttentionOptions = {}): Tensor {
  if (q.ndim < 2 || k.ndim < 2 || v.ndim < 2) throw new OpError('scaledDotProductAttention', `q, k, v need at least 2 dims, got ${fmtShape(q.shape)}, ${fmtShape(k.shape)}, ${fmtShape(v.shape)}`);
  const e = q.shape[q.ndim - 1];
  if (opts.isCausal && opts.attnMask) throw new OpError('scaledDotProductAttention', 'give either attnMask or isCausal, not both');
  const scale = opts.scale ?? 1 / Math.sqrt(e);
  let scores = E.mul(matmul(q, S.transpose(k, -2, -1)), scale);
  let mask = opts.attnMask ?? null;
  // The causal mask is tril of ones shaped like the scores, built with ops so that a symbolic
  // sequence length in a traced graph stays symbolic (row i keeps keys 0..i, as PyTorch).
  if (opts.isCausal) mask = E.gt(dispatch1('tril', [E.filledLike(scores, 1)], { diagonal: 0 }), 0);
  if (mask) scores = mask.dtype === 'bool' ? E.maskedFill(scores, E.logicalNot(mask), -Infinity) : E.add(scores, mask);
  let attn = R.softmax(scores, -1);
  const p = opts.dropoutP ?? 0;
  if (p > 0 && (opts.training ?? true)) attn = E.mul(attn, E.where(E.ge(rand(attn.shape), p), 1 / (1 - p), 0));
  return matmul(attn, v);
}

/** x / max(‖x‖_p, eps) along `dim` (torch.nn.functional.normalize; defaults p 2, dim 1, eps 1e-12). */
export function normalize(x: Tensor, opts: { p?: number; dim?: number; eps?: number } = {}): Tensor {
  const norm = R.norm(x, opts.p ?? 2, opts.dim ?? 1, { keepdim: true });
  return E.div(x, E.clamp(norm, opts.eps ?? 1e-12));
}

/**
 * Cosine of the angle between x1 and x2 along `dim` (default 1), broadcasting: each is divided by
 * max(‖x‖, eps) first, then the products summed (PyTorch 1.13's formula; eps default 1e-8).
 */
export function cosineSimilarity(x1: Tensor, x2: Tensor, opts: { dim?: number; eps?: number } = {}): Tensor {
  const dim = opts.dim ?? 1, eps = opts.eps ?? 1e-8;
  const n1 = E.clamp(R.norm(x1, 2, dim, { keepdim: true }), eps), n2 = E.clamp(R.norm(x2, 2, dim, { keepdim: true }), eps);
  return R.sum(E.mul(E.div(x1, n1), E.div(x2, n2)), dim);
}

/**
 * int32 one-hot rows: [..., numClasses] with 1 at each value (torch.nn.functional.one_hot);
 * numClasses -1 (default) reads max + 1 from the data.
 */
export function oneHot(x: Tensor, numClasses = -1): Tensor {
  if (x.dtype !== 'int32') throw new OpError('oneHot', `expects an int32 tensor of class indices, got ${x.dtype}`);
  // Inferring the class count reads the values (a traced graph keeps that count); the range
  // check with an explicit count reads them without baking anything into a trace.
  const data = numClasses === -1 ? Array.from(x.toArray()) : Array.from(x.data.subarray(0, x.numel()));
  const max = data.reduce((m, v) => Math.max(m, v), -1);
  if (data.some((v) => v < 0)) throw new OpError('oneHot', 'class values must be non-negative');
  const c = numClasses === -1 ? max + 1 : numClasses;
  if (max >= c) throw new OpError('oneHot', `class value ${max} is out of range for numClasses ${c}`);
  const classes = Tensor._fromCpu({ data: Int32Array.from({ length: c }, (_, i) => i), shape: [c], dtype: 'int32' });
  return E.cast(E.eq(S.unsqueeze(x, -1), classes), 'int32');
}

/** a · sigmoid(b) for the halves a, b of x along `dim` (default -1; torch.nn.functional.glu). */
export function glu(x: Tensor, dim = -1): Tensor {
  const d = dim < 0 ? dim + x.ndim : dim;
  if (x.shape[d] % 2) throw new OpError('glu', `dim ${dim} of shape ${fmtShape(x.shape)} must have an even size`);
  const [a, b] = S.chunk(x, 2, d);
  return E.mul(a, E.sigmoid(b));
}

/**
 * Zeroes whole channels with probability `p` (one draw per [N, C] for an [N, C, ...] input; per C
 * for a 3-D [C, H, W] input) and scales the rest by 1/(1−p), when `training` (default true).
 */
export function dropout2d(x: Tensor, opts: { p?: number; training?: boolean } = {}): Tensor {
  const p = opts.p ?? 0.5, training = opts.training ?? true;
  if (!(p >= 0 && p <= 1)) throw new OpError('dropout2d', `probability p has to be between 0 and 1, but got ${p}`);
  if (x.ndim !== 3 && x.ndim !== 4) throw new OpError('dropout2d', `expects a 3-D [C, H, W] or 4-D [N, C, H, W] input, got ${fmtShape(x.shape)}`);
  if (!training || p === 0) return dispatch1('dropout', [x], { p, training: false });
  if (p === 1) return E.mul(x, 0);
  const lead = x.ndim === 4 ? 2 : 1;
  const u = rand([...x.shape.slice(0, lead), ...new Array<number>(x.ndim - lead).fill(1)]);
  return E.mul(x, E.where(E.ge(u, p), 1 / (1 - p), 0));
}
