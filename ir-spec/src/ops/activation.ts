// Op family 'activation': the special functions activations are built from (erf, sigmoid,
// tanh), hardswish (a formula over clamp, so fusion and every code generator derive it) and
// dropout. Everything else (gelu, softplus, silu, ...) is a composite in @kiln/core's F over
// these and the elementwise ops. Kernels compute in double precision and
// round once to float32, so each op is within half an ulp of the exact result.

import * as z from 'zod';
import { defineOp } from '../op-def.js';
import { OpError } from '../shape.js';
import { defineUnary, viaInput, viaOutput } from './elementwise.js';
import { S } from '../scalar.js';

// ---- erf ----------------------------------------------------------------------------------

const TWO_OVER_SQRT_PI = 1.1283791670955126; // 2/√π
const INV_SQRT_PI = 0.5641895835477563; // 1/√π

/**
 * The error function in double precision (|error| < 1e-11 over the real line; float32 rounding
 * then dominates, < 4e-8). |x| < 2: the Maclaurin series, whose alternating terms stay below
 * ~2 there, so cancellation costs at most one digit. |x| >= 2: erfc from its continued
 * fraction 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))), 20 levels deep (the error at x = 2 is
 * ~5e-12 and shrinks quickly with x). |x| >= 6: ±1 (erfc(6) ≈ 2e-17).
 */
export function erfScalar(x: number): number {
  const ax = Math.abs(x);
  if (ax < 2) {
    const x2 = x * x;
    let term = x, sum = x;
    for (let n = 1; n < 60; n++) {
      term *= -x2 / n; // (-1)^n x^(2n+1) / n!
      const c = term / (2 * n + 1);
      sum += c;
      if (Math.abs(c) <= 1e-16 * Math.abs(sum)) break;
    }
    return TWO_OVER_SQRT_PI * sum;
  }
  if (ax >= 6) return x > 0 ? 1 : -1;
  let f = ax; // NaN falls through to here and stays NaN
  for (let k = 20; k >= 1; k--) f = ax + (k / 2) / f;
  const erfc = (Math.exp(-ax * ax) * INV_SQRT_PI) / f;
  return x > 0 ? 1 - erfc : erfc - 1;
}

export const erf = defineUnary({
  name: 'erf', doc: 'error function 2/√π ∫₀ˣ e^(-t²) dt', scalar: { primitive: erfScalar }, float: true,
  loop: (src, out) => { for (let i = 0; i < src.length; i++) out[i] = erfScalar(src[i]); },
  // d/dx erf(x) = 2/√π e^(-x²)
  grad: viaInput((b, x) => b.mulScalar(b.unary('exp', b.neg(b.mul(x, x))), TWO_OVER_SQRT_PI)),
});

// ---- sigmoid, tanh --------------------------------------------------------------------------

/** 1/(1+e^-x) without overflow: e^x is only taken for x < 0, where it is < 1. */
function sigmoidScalar(x: number): number {
  if (x >= 0) return 1 / (1 + Math.exp(-x));
  const e = Math.exp(x);
  return e / (1 + e);
}

export const sigmoid = defineUnary({
  name: 'sigmoid', doc: 'logistic function 1/(1+e^-x), stable for large |x|', scalar: { primitive: sigmoidScalar }, float: true,
  epilogue: { nonDecreasing: true },
  loop: (src, out) => { for (let i = 0; i < src.length; i++) out[i] = sigmoidScalar(src[i]); },
  // σ' = σ(1-σ), from the saved output (as PyTorch).
  grad: viaOutput((b, y) => b.mul(y, b.sub(b.scalar(1, b.dtype(y)), y))),
});

export const tanh = defineUnary({
  name: 'tanh', doc: 'hyperbolic tangent (Math.tanh saturates to ±1 without overflow)', scalar: { primitive: Math.tanh }, float: true,
  epilogue: { nonDecreasing: true },
  // tanh' = 1 - y², from the saved output.
  grad: viaOutput((b, y) => b.sub(b.scalar(1, b.dtype(y)), b.mul(y, y))),
});

// ---- hardswish ------------------------------------------------------------------------------

export const hardswish = defineUnary({
  name: 'hardswish', doc: 'x · relu6(x + 3) / 6 (MobileNetV3)', float: true,
  scalar: { formula: ([x]) => S.div(S.mul(x, S.call('clamp', [S.add(x, 3)], { min: 0, max: 6 })), 6) },
  // Not monotone (its minimum is at x = -3/2), so fused_conv2d never pools before applying it.
  epilogue: { nonDecreasing: false },
  // PyTorch's hardswish_backward: 0 below -3, x/3 + 1/2 on [-3, 3] (bounds included), 1 above.
  grad: viaInput((b, x) => {
    const dt = b.dtype(x);
    const mid = b.addScalar(b.div(x, b.scalar(3, dt)), 0.5);
    return b.where(b.compare('lt', x, b.scalar(-3, dt)), b.scalar(0, dt), b.where(b.compare('le', x, b.scalar(3, dt)), mid, b.scalar(1, dt)));
  }),
});

// ---- dropout --------------------------------------------------------------------------------

const dropoutAttrs = z.object({
  p: z.number().min(0).max(1).default(0.5),
  training: z.boolean().default(false),
}).strict();

/**
 * Dropout stays an op (rather than vanishing from eval graphs) so that passes can find and
 * remove it. Only the identity form runs here: training-mode dropout is the composite
 * x · where(uniform(x) >= p, 1/(1−p), 0) over the random `uniform` op (packages/core F.dropout),
 * so graphs draw its mask at run time; F.dropout never dispatches this op with training=true
 * and p > 0.
 */
export const dropout = defineOp({
  name: 'dropout', doc: 'identity (eval mode, or p = 0); training-mode dropout is a composite over the random op uniform (F.dropout)',
  inputs: ['x'], attrs: dropoutAttrs,
  view: ({ p, training }) => !(training && p > 0),
  infer([x]) {
    if (!x) throw new OpError('dropout', "input 'x' is required");
    return [{ dtype: x.dtype, shape: x.shape }];
  },
  cpu([x], { p, training }) {
    if (training && p > 0) {
      throw new OpError('dropout', `a dropout node with training=true (p=${p}) has no kernel: training-mode dropout is recorded as a mask drawn by the uniform op (F.dropout); ` +
        'rebuild the graph from the model, or set training=false for the identity');
    }
    // The identity returns the input's buffer: the dispatch turns that into a view, like
    // PyTorch's eval-mode dropout, which returns its input.
    return [x!];
  },
  grad: {
    rule: (_b, { gradOutputs: [g] }) => [g],
  },
});
