// F: activation functions (torch.nn.functional). All are composites over the primitive ops
// (relu, sigmoid, tanh, erf, exp, log, clamp, where, ...) except hardswish, an op whose entry
// fusion and the code generators derive it from, and dropout's identity form, which
// dispatches the `dropout` op so that compiler passes can find and remove it. Composites are
// written so that no branch a `where` discards can produce inf/NaN, since its gradient would
// still be multiplied through (0 · inf = NaN).

import { autocastFloat32 } from '../amp/autocast.js';
import { isFloating } from '@kiln/ir-spec';
import { Tensor } from '../tensor.js';
import { dispatch1 } from '../dispatch.js';
import { randLike } from '../creation.js';
import * as E from '../ops/elementwise.js';

export { relu, sigmoid, tanh, gelu } from '../ops/elementwise.js';

/**
 * max(0, x) with slope `negativeSlope` for x <= 0.
 * @example leakyRelu(x, 0.2)
 */
export function leakyRelu(x: Tensor, negativeSlope = 0.01): Tensor {
  return E.where(E.gt(x, 0), x, E.mul(x, negativeSlope));
}

/**
 * min(max(x, minVal), maxVal). The gradient passes only strictly inside (minVal, maxVal), as in
 * PyTorch (clamp's gradient also passes on the bounds, so this is written with `where`).
 * @example hardtanh(x, -2, 2)
 */
export function hardtanh(x: Tensor, minVal = -1, maxVal = 1): Tensor {
  if (minVal > maxVal) throw new Error(`hardtanh: minVal (${minVal}) must not be greater than maxVal (${maxVal})`);
  // le/ge are false for NaN, so NaN passes through as in PyTorch.
  return E.where(E.le(x, minVal), minVal, E.where(E.ge(x, maxVal), maxVal, x));
}

/** min(max(0, x), 6) (hardtanh(x, 0, 6), as PyTorch). */
export function relu6(x: Tensor): Tensor { return hardtanh(x, 0, 6); }

/**
 * log(1 + e^(βx)) / β, and x itself where βx > threshold (PyTorch's linear region).
 * @example softplus(x, { beta: 2, threshold: 5 })
 */
export function softplus(x: Tensor, opts: { beta?: number; threshold?: number } = {}): Tensor {
  x = autocastFloat32(x); // PyTorch autocast: fp32 list
  const beta = opts.beta ?? 1, threshold = opts.threshold ?? 20;
  const bx = beta === 1 ? x : E.mul(x, beta);
  // exp only sees βx <= threshold, so the discarded branch stays finite.
  const soft = E.log(E.add(E.exp(E.clamp(bx, null, threshold)), 1));
  return E.where(E.gt(bx, threshold), x, beta === 1 ? soft : E.div(soft, beta));
}

/** x · σ(x) (also called swish). */
export function silu(x: Tensor): Tensor { return E.mul(x, E.sigmoid(x)); }

/**
 * x for x > 0, alpha · (e^x - 1) otherwise.
 * @example elu(x, 1.0)
 */
export function elu(x: Tensor, alpha = 1): Tensor {
  // e^min(x, 0): the positive side never reaches exp, so it cannot overflow.
  const neg = E.mul(E.sub(E.exp(E.clamp(x, null, 0)), 1), alpha);
  return E.where(E.gt(x, 0), x, neg);
}

/** relu6(x + 3) / 6; the gradient is 1/6 strictly inside (-3, 3), as in PyTorch. */
export function hardsigmoid(x: Tensor): Tensor { return E.div(hardtanh(E.add(x, 3), 0, 6), 6); }

/** x · relu6(x + 3) / 6: the `hardswish` op (its gradient is x/3 + 1/2 on [-3, 3], as in PyTorch). */
export function hardswish(x: Tensor): Tensor { return dispatch1('hardswish', [x]); }

/** x · tanh(softplus(x)). */
export function mish(x: Tensor): Tensor { return E.mul(x, E.tanh(softplus(x))); }

/** log σ(x), computed stably as min(x, 0) - log(1 + e^-|x|). */
export function logsigmoid(x: Tensor): Tensor {
  return E.sub(E.minimum(x, 0), E.log(E.add(E.exp(E.neg(E.abs(x))), 1)));
}

/** x / (1 + |x|). */
export function softsign(x: Tensor): Tensor { return E.div(x, E.add(E.abs(x), 1)); }

/**
 * x for x > 0, weight · x otherwise, with one slope per channel (dim 1) or a single shared
 * slope (`weight` of one element).
 * @example prelu(x, full([channels], 0.25))
 */
export function prelu(x: Tensor, weight: Tensor): Tensor {
  const c = x.ndim >= 2 ? x.shape[1] : 1;
  let w = weight;
  if (weight.numel() !== 1) {
    if (weight.ndim !== 1 || weight.shape[0] !== c) {
      throw new Error(`prelu: weight of shape [${weight.shape.join(',')}] must have 1 or ${c} elements (input [${x.shape.join(',')}] has ${c} channels in dim 1)`);
    }
    // [C] → [C, 1, ..., 1] so that it broadcasts along dim 1.
    w = weight.reshape([c, ...x.shape.slice(2).map(() => 1)]);
  } else if (weight.ndim > 0) {
    w = weight.reshape([]);
  }
  return E.where(E.gt(x, 0), x, E.mul(w, x));
}

/**
 * Randomly zeroes elements with probability `p` and scales the rest by 1/(1-p) when
 * `training` (the default, as torch.nn.functional.dropout); the identity otherwise.
 * The mask comes from the default generator (seed it with manualSeed). Training mode is a
 * composite over the `uniform` op — x · where(uniform_like(x) >= p, 1/(1-p), 0) — so jit.trace
 * and jit.script record a mask drawn at run time, never a constant one.
 * @example dropout(x, { p: 0.1, training: model.training })
 */
export function dropout(x: Tensor, opts: { p?: number; training?: boolean } = {}): Tensor {
  const p = opts.p ?? 0.5, training = opts.training ?? true;
  if (!(p >= 0 && p <= 1)) throw new Error(`dropout: probability p has to be between 0 and 1, but got ${p}`);
  if (!training || p === 0) return dispatch1('dropout', [x], { p, training: false });
  if (!isFloating(x.dtype)) throw new Error(`dropout: training-mode dropout needs a floating-point tensor, got ${x.dtype}`);
  if (p === 1) return E.mul(x, 0);
  const mask = E.where(E.ge(randLike(x), p), 1 / (1 - p), 0);
  return E.mul(x, mask);
}
