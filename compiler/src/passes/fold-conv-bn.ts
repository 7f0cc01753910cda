// Pass `fold-conv-bn`: an inference batch_norm right after a conv2d (or, in `fold-linear-bn`,
// a linear) whose result nothing else reads is folded into the conv's weight and bias:
//   s = gamma / sqrt(var + eps);  W' = W · s[co];  b' = (b − mean) · s + beta
// Invariant: the folded conv computes batch_norm(conv(x)) up to float rounding (≤ 1e-5
// relative, checked against PyTorch's fuse_conv_bn_eval in tests/parity), and it needs every
// statistic as a constant (a frozen graph); otherwise the pair is left alone. The conv and the
// batch_norm must be in the same block (the folded conv replaces the batch_norm where it is).

import { mergedMeta, type Graph } from '@kiln/ir-spec';
import { any, applyRules, constant, maybe, op, type Rule } from '../patterns.js';
import { floatData } from '../rewrite.js';

/** Folded weight and bias of an affine op followed by batch_norm, in double precision. */
export function foldBnParams(
  w: Float32Array, b: Float32Array | undefined, mean: Float32Array, variance: Float32Array,
  gamma: Float32Array | undefined, beta: Float32Array | undefined, eps: number,
): { weight: Float32Array; bias: Float32Array } {
  const C = mean.length, per = w.length / C;
  const weight = new Float32Array(w.length), bias = new Float32Array(C);
  for (let c = 0; c < C; c++) {
    const s = (gamma ? gamma[c] : 1) / Math.sqrt(variance[c] + eps);
    for (let k = 0; k < per; k++) weight[c * per + k] = w[c * per + k] * s;
    bias[c] = ((b ? b[c] : 0) - mean[c]) * s + (beta ? beta[c] : 0);
  }
  return { weight, bias };
}

/**
 * The rule batch_norm(producer(x, W, b?)) → producer(x, W', b'), producer ∈ {conv2d, linear}:
 * every statistic a float32 constant, the producer's result read only by the batch_norm.
 */
export function foldBnRule(producer: 'conv2d' | 'linear'): Rule {
  const f32 = (name: string) => maybe(constant(name).where((m) => !!floatData(m.data(name))));
  return {
    name: `fold-${producer}-bn`,
    pattern: op('batch_norm',
      op(producer, any('x'), constant('w').where((m) => !!floatData(m.data('w'))), f32('b')).as('prod').oneUse(),
      f32('mean'), f32('var'), f32('gamma'), f32('beta'),
    ).where((m) => {
      // linear's channel must be batch_norm's dim 1: a 2-D [N, F] result.
      const t = m.node('prod').outputs[0].type;
      return m.optional('mean') !== null && m.optional('var') !== null && (producer === 'conv2d' || (t.kind === 'tensor' && t.shape.length === 2));
    }),
    rewrite: (m, ctx) => {
      const prod = m.node('prod'), bn = m.root, wT = m.data('w');
      const opt = (name: string) => (m.optional(name) ? floatData(m.data(name)) : undefined);
      const { weight, bias } = foldBnParams(floatData(wT)!, opt('b'), opt('mean')!, opt('var')!, opt('gamma'), opt('beta'), Number(bn.attrs.eps));
      const base = bn.meta.scope ?? prod.meta.scope ?? 'folded';
      const w = ctx.constant(`${base}.folded_weight`, { dtype: 'float32', shape: wT.shape, data: weight }, prod.meta);
      const b = ctx.constant(`${base}.folded_bias`, { dtype: 'float32', shape: [bias.length], data: bias }, prod.meta);
      return [w, b, ctx.node(producer, [m.value('x'), w.outputs[0], b.outputs[0]], prod.attrs, mergedMeta(prod, [bn]), bn.outputs)];
    },
  };
}

/**
 * Folds `batch_norm(conv2d(x, W, b))` into `conv2d(x, W', b')`.
 *
 * @example
 * foldConvBn(freeze(g)); // no batch_norm after a conv2d is left
 */
export function foldConvBn(g: Graph): Graph {
  return applyRules(g, [foldBnRule('conv2d')], { label: 'fold-conv-bn' }).graph;
}
