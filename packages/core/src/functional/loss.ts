// F: the loss functions (torch.nn.functional losses), composites over primitive ops with
// PyTorch's semantics and defaults. Invariants: the graph a loss builds depends only on shapes
// and options, never on tensor values (so a trace is valid for any data; values are only read to
// validate targets); 'mean' over class targets divides by the summed weights of non-ignored
// targets; class selection is a one-hot `where` + sum, whose gradient is a plain `where`.

import { autocastFloat32, isAutocastEnabled } from '../amp/autocast.js';
import { fmtShape, isFloating } from '@kiln/ir-spec';
import type { Tensor } from '../tensor.js';
import { arange } from '../creation.js';
import * as E from '../ops/elementwise.js';
import * as R from '../ops/reduce.js';
import * as S from '../ops/shape.js';

/** How per-element losses are combined. */
export type Reduction = 'none' | 'mean' | 'sum';

function reduce(op: string, l: Tensor, reduction: Reduction): Tensor {
  switch (reduction) {
    case 'none': return l;
    case 'sum': return R.sum(l);
    case 'mean': return R.mean(l);
    default: throw new Error(`${op}: reduction must be 'none', 'mean' or 'sum', got '${String(reduction)}'`);
  }
}

function checkFloat(op: string, what: string, t: Tensor): void {
  if (!isFloating(t.dtype)) throw new Error(`${op}: ${what} must be floating point, got ${t.dtype} (shape ${fmtShape(t.shape)}); call .float() first`);
}

/** Elementwise losses take input and target of the same shape (PyTorch warns and broadcasts; we require it). */
function checkSameShape(op: string, input: Tensor, target: Tensor): void {
  checkFloat(op, 'input', input);
  checkFloat(op, 'target', target);
  if (input.ndim !== target.ndim || input.shape.some((d, i) => d !== target.shape[i])) {
    throw new Error(`${op}: input ${fmtShape(input.shape)} and target ${fmtShape(target.shape)} must have the same shape; reshape the target (e.g. unsqueeze(1)) to match`);
  }
}

// ---- regression losses ---------------------------------------------------------------------

/**
 * Mean squared error (torch.nn.functional.mse_loss).
 * @example F.mseLoss(pred, target)            // mean of (pred - target)²
 */
export function mseLoss(input: Tensor, target: Tensor, opts: { reduction?: Reduction } = {}): Tensor {
  input = autocastFloat32(input); target = autocastFloat32(target); // PyTorch autocast: fp32 list
  checkSameShape('mseLoss', input, target);
  const d = E.sub(input, target);
  return reduce('mseLoss', E.mul(d, d), opts.reduction ?? 'mean');
}

/** Mean absolute error (torch.nn.functional.l1_loss). @example F.l1Loss(pred, target) */
export function l1Loss(input: Tensor, target: Tensor, opts: { reduction?: Reduction } = {}): Tensor {
  input = autocastFloat32(input); target = autocastFloat32(target); // PyTorch autocast: fp32 list
  checkSameShape('l1Loss', input, target);
  return reduce('l1Loss', E.abs(E.sub(input, target)), opts.reduction ?? 'mean');
}

/**
 * Smooth L1 (torch.nn.functional.smooth_l1_loss): 0.5·d²/beta where |d| < beta, else |d| − 0.5·beta.
 * @example F.smoothL1Loss(pred, target, { beta: 0.5 })
 */
export function smoothL1Loss(input: Tensor, target: Tensor, opts: { reduction?: Reduction; beta?: number } = {}): Tensor {
  input = autocastFloat32(input); target = autocastFloat32(target); // PyTorch autocast: fp32 list
  const beta = opts.beta ?? 1;
  if (!(beta >= 0)) throw new Error(`smoothL1Loss: beta must be >= 0, got ${beta}`);
  if (beta === 0) return l1Loss(input, target, opts);
  checkSameShape('smoothL1Loss', input, target);
  const z = E.abs(E.sub(input, target));
  const l = E.where(E.lt(z, beta), E.mul(E.mul(z, z), 0.5 / beta), E.sub(z, 0.5 * beta));
  return reduce('smoothL1Loss', l, opts.reduction ?? 'mean');
}

/**
 * Huber loss (torch.nn.functional.huber_loss): 0.5·d² where |d| < delta, else delta·(|d| − 0.5·delta).
 * @example F.huberLoss(pred, target, { delta: 1.5 })
 */
export function huberLoss(input: Tensor, target: Tensor, opts: { reduction?: Reduction; delta?: number } = {}): Tensor {
  input = autocastFloat32(input); target = autocastFloat32(target); // PyTorch autocast: fp32 list
  const delta = opts.delta ?? 1;
  if (!(delta > 0)) throw new Error(`huberLoss: delta must be > 0, got ${delta}`);
  checkSameShape('huberLoss', input, target);
  const z = E.abs(E.sub(input, target));
  const l = E.where(E.lt(z, delta), E.mul(E.mul(z, z), 0.5), E.mul(E.sub(z, 0.5 * delta), delta));
  return reduce('huberLoss', l, opts.reduction ?? 'mean');
}

// ---- binary classification -----------------------------------------------------------------

/**
 * Binary cross entropy on probabilities (torch.nn.functional.binary_cross_entropy); each log is
 * clamped at −100 as in PyTorch, so a probability of exactly 0 or 1 gives a finite loss.
 * @example F.binaryCrossEntropy(probs, targets)
 */
export function binaryCrossEntropy(input: Tensor, target: Tensor, opts: { weight?: Tensor | null; reduction?: Reduction } = {}): Tensor {
  if (isAutocastEnabled()) {
    throw new Error('binaryCrossEntropy: unsafe to autocast (as in PyTorch): run the sigmoid and the loss as one binaryCrossEntropyWithLogits, or compute it outside autocast');
  }
  checkSameShape('binaryCrossEntropy', input, target);
  const x = input.device === 'cpu' ? input.data : []; // not read back from a GPU
  for (let i = 0; i < x.length && i < input.numel(); i++) {
    if (!(x[i] >= 0 && x[i] <= 1)) {
      throw new Error(`binaryCrossEntropy: all elements of input should be between 0 and 1, element ${i} is ${x[i]}; apply sigmoid first or use binaryCrossEntropyWithLogits`);
    }
  }
  const logX = E.clamp(E.log(input), -100), log1mX = E.clamp(E.log(E.sub(1, input)), -100);
  let l = E.neg(E.add(E.mul(target, logX), E.mul(E.sub(1, target), log1mX)));
  if (opts.weight) l = E.mul(l, opts.weight);
  return reduce('binaryCrossEntropy', l, opts.reduction ?? 'mean');
}

/**
 * Binary cross entropy on logits (torch.nn.functional.binary_cross_entropy_with_logits), in
 * PyTorch's stable form (1−t)·x + w_p·(m + log(e^−m + e^(−x−m))) with m = max(−x, 0), where
 * w_p = 1 + (posWeight − 1)·t. Its gradient is exactly −w_p·sigmoid(−x) + (1−t) even at x = 0.
 * @example F.binaryCrossEntropyWithLogits(logits, targets, { posWeight: tensor([3]) })
 */
export function binaryCrossEntropyWithLogits(
  input: Tensor, target: Tensor,
  opts: { weight?: Tensor | null; posWeight?: Tensor | null; reduction?: Reduction } = {},
): Tensor {
  input = autocastFloat32(input); target = autocastFloat32(target); // PyTorch autocast: fp32 list
  checkSameShape('binaryCrossEntropyWithLogits', input, target);
  const m = E.relu(E.neg(input));
  const softplusNeg = E.add(m, E.log(E.add(E.exp(E.neg(m)), E.exp(E.sub(E.neg(input), m)))));
  const logWeight = opts.posWeight ? E.add(E.mul(E.sub(opts.posWeight, 1), target), 1) : null;
  let l = E.add(E.mul(E.sub(1, target), input), logWeight ? E.mul(logWeight, softplusNeg) : softplusNeg);
  if (opts.weight) l = E.mul(l, opts.weight);
  return reduce('binaryCrossEntropyWithLogits', l, opts.reduction ?? 'mean');
}

// ---- distributions -------------------------------------------------------------------------

/**
 * Kullback–Leibler divergence (torch.nn.functional.kl_div): `input` holds log-probabilities;
 * `target` probabilities (or log-probabilities with `logTarget`). Pointwise t·(log t − input),
 * 0 where t = 0. 'batchmean' divides the sum by the batch size (the mathematically correct KL);
 * 'mean' divides by the number of elements, as PyTorch does.
 * @example F.klDiv(logp, q, { reduction: 'batchmean' })
 */
export function klDiv(input: Tensor, target: Tensor, opts: { reduction?: Reduction | 'batchmean'; logTarget?: boolean } = {}): Tensor {
  input = autocastFloat32(input); target = autocastFloat32(target); // PyTorch autocast: fp32 list
  checkSameShape('klDiv', input, target);
  let l: Tensor;
  if (opts.logTarget) l = E.mul(E.exp(target), E.sub(target, input));
  else {
    // xlogy(t, t) with log(1) = 0 at t = 0: no 0·(−inf) in the value or in the gradient.
    const isZero = E.eq(target, 0);
    l = E.sub(E.mul(target, E.log(E.where(isZero, 1, target))), E.mul(target, input));
  }
  const reduction = opts.reduction ?? 'mean';
  if (reduction === 'batchmean') return input.ndim === 0 ? R.sum(l) : E.div(R.sum(l), input.shape[0]);
  return reduce('klDiv', l, reduction);
}

// ---- multi-class classification ---------------------------------------------------------------

interface ClassOptions {
  /** A weight per class ([C]). */
  weight?: Tensor | null;
  /** Targets equal to this contribute 0 and are excluded from the mean. */
  ignoreIndex?: number;
  reduction?: Reduction;
}

/** Shapes of a class-index problem: input [C] / [N,C] / [N,C,d1,...], target [] / [N] / [N,d1,...]. */
function classLayout(op: string, input: Tensor, target: Tensor, weight: Tensor | null, ignoreIndex: number) {
  checkFloat(op, 'input', input);
  if (input.ndim === 0) throw new Error(`${op}: input must have a class dimension, got a 0-d tensor`);
  const classDim = input.ndim === 1 ? 0 : 1;
  const C = input.shape[classDim];
  const want = input.shape.filter((_, i) => i !== classDim);
  if (target.dtype !== 'int32') throw new Error(`${op}: target must be int32 class indices (or float probabilities of the input's shape for crossEntropy), got ${target.dtype} of shape ${fmtShape(target.shape)}`);
  if (target.ndim !== want.length || target.shape.some((d, i) => d !== want[i])) {
    throw new Error(`${op}: for input of shape ${fmtShape(input.shape)} (classes in dim ${classDim}) the target must have shape ${fmtShape(want)}, got ${fmtShape(target.shape)}`);
  }
  if (weight) {
    checkFloat(op, 'weight', weight);
    if (weight.ndim !== 1 || weight.shape[0] !== C) throw new Error(`${op}: weight must have shape [${C}] (one per class), got ${fmtShape(weight.shape)}`);
  }
  // A GPU target is not read back (that would wait for the GPU): out-of-range classes there match no class.
  const t = target.device === 'cpu' ? target.data : [];
  for (let i = 0; i < t.length && i < target.numel(); i++) {
    if (t[i] !== ignoreIndex && (t[i] < 0 || t[i] >= C)) {
      throw new Error(`${op}: target ${t[i]} (element ${i}) is out of bounds for ${C} classes; valid targets are 0..${C - 1}${ignoreIndex < 0 || ignoreIndex >= C ? ` or the ignoreIndex ${ignoreIndex}` : ''}`);
    }
  }
  // [C, 1, ..., 1]: a per-class vector that broadcasts against the input along the class dim.
  const classShape = [C, ...new Array<number>(input.ndim - classDim - 1).fill(1)];
  return { classDim, C, classShape };
}

/** Per-target pieces shared by nllLoss and crossEntropy: the selected log-probabilities, the
 * target weights (0 for ignored targets) and the weighted sum used by 'mean'. */
function pickTargets(op: string, logp: Tensor, target: Tensor, weight: Tensor | null, ignoreIndex: number) {
  const { classDim, C, classShape } = classLayout(op, logp, target, weight, ignoreIndex);
  const onehot = E.eq(S.unsqueeze(target, classDim), S.reshape(arange(C, undefined, 1, { device: target.device }), classShape));
  const picked = R.sum(E.where(onehot, logp, 0), classDim);
  const valid = E.ne(target, ignoreIndex);
  const w = weight
    ? E.where(valid, R.sum(E.where(onehot, S.reshape(weight, classShape), 0), classDim), 0)
    : E.cast(valid, 'float32');
  return { classDim, C, classShape, picked, valid, w };
}

/**
 * Negative log-likelihood on log-probabilities (torch.nn.functional.nll_loss).
 * @example F.nllLoss(logits.logSoftmax(1), labels)
 */
export function nllLoss(input: Tensor, target: Tensor, opts: ClassOptions = {}): Tensor {
  input = autocastFloat32(input); target = autocastFloat32(target); // PyTorch autocast: fp32 list
  const { picked, w } = pickTargets('nllLoss', input, target, opts.weight ?? null, opts.ignoreIndex ?? -100);
  return classReduce('nllLoss', E.neg(E.mul(picked, w)), w, opts.reduction ?? 'mean');
}

/** 'mean' over class targets: the weighted sum divided by the summed target weights. */
function classReduce(op: string, l: Tensor, w: Tensor, reduction: Reduction): Tensor {
  if (reduction === 'mean') return E.div(R.sum(l), R.sum(w));
  return reduce(op, l, reduction);
}

/**
 * Cross entropy of logits (torch.nn.functional.cross_entropy). `target` is either int32 class
 * indices ([N] for input [N,C], [N,d1,...] for [N,C,d1,...]) or float class probabilities of the
 * input's shape. With `labelSmoothing` ε the target mixes (1−ε) of itself with ε/C uniform.
 * @example F.crossEntropy(logits, labels, { labelSmoothing: 0.1 })
 */
export function crossEntropy(input: Tensor, target: Tensor, opts: ClassOptions & { labelSmoothing?: number } = {}): Tensor {
  input = autocastFloat32(input); target = autocastFloat32(target); // PyTorch autocast: fp32 list
  const ls = opts.labelSmoothing ?? 0, reduction = opts.reduction ?? 'mean', ignoreIndex = opts.ignoreIndex ?? -100;
  const weight = opts.weight ?? null;
  if (!(ls >= 0 && ls <= 1)) throw new Error(`crossEntropy: labelSmoothing must be in [0, 1], got ${ls}`);
  checkFloat('crossEntropy', 'input', input);
  const classDim = input.ndim === 1 ? 0 : 1;
  const logp = R.logSoftmax(input, classDim);
  if (target.dtype === 'float32') return crossEntropyProbs(input, logp, target, weight, ignoreIndex, ls, reduction);

  const { C, classShape, picked, valid, w } = pickTargets('crossEntropy', logp, target, weight, ignoreIndex);
  const nll = classReduce('crossEntropy', E.neg(E.mul(picked, w)), w, reduction);
  if (ls === 0) return nll;
  // The uniform part: −Σ_c w_c·logp_c per target (0 for ignored targets), reduced like the NLL.
  const wlogp = weight ? E.mul(logp, S.reshape(weight, classShape)) : logp;
  const smooth = E.where(valid, E.neg(R.sum(wlogp, classDim)), 0);
  return E.add(E.mul(nll, 1 - ls), E.mul(classReduce('crossEntropy', smooth, w, reduction), ls / C));
}

function crossEntropyProbs(input: Tensor, logp: Tensor, target: Tensor, weight: Tensor | null, ignoreIndex: number, ls: number, reduction: Reduction): Tensor {
  if (input.ndim !== target.ndim || input.shape.some((d, i) => d !== target.shape[i])) {
    throw new Error(`crossEntropy: float (probability) targets must have the input's shape ${fmtShape(input.shape)}, got ${fmtShape(target.shape)}; class-index targets must be int32`);
  }
  if (ignoreIndex >= 0) throw new Error('crossEntropy: ignoreIndex is not supported for float (probability) targets');
  const classDim = input.ndim === 1 ? 0 : 1, C = input.shape[classDim];
  const t = ls > 0 ? E.add(E.mul(target, 1 - ls), ls / C) : target;
  let prod = E.mul(logp, t);
  if (weight) {
    if (weight.ndim !== 1 || weight.shape[0] !== C) throw new Error(`crossEntropy: weight must have shape [${C}] (one per class), got ${fmtShape(weight.shape)}`);
    prod = E.mul(prod, S.reshape(weight, [C, ...new Array<number>(input.ndim - classDim - 1).fill(1)]));
  }
  const l = E.neg(R.sum(prod, classDim));
  // 'mean' divides by the number of targets (N·d1·...), not by the weights.
  return reduce('crossEntropy', l, reduction);
}
