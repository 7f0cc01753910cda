// Pass `fold-conv-bn`: an inference batch_norm right after a conv2d (or, in `fold-linear-bn`,
// a linear) whose result nothing else reads is folded into the conv's weight and bias:
//   s = gamma / sqrt(var + eps);  W' = W · s[co];  b' = (b − mean) · s + beta
// Invariant: the folded conv computes batch_norm(conv(x)) up to float rounding (≤ 1e-5
// relative, checked against PyTorch's fuse_conv_bn_eval in tests/parity), and it needs every
// statistic as a constant (a frozen graph); otherwise the pair is left alone.

import type { Graph, Node, TensorData } from '@kiln/ir-spec';
import { countUses, floatData, rewriteGraph, type RewriteContext } from '../rewrite.js';
import { eliminateDeadCode } from './eliminate-dead-code.js';

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

/** The shared pass body for `producer` ∈ {conv2d, linear}. */
export function foldBnInto(g: Graph, producer: 'conv2d' | 'linear'): Graph {
  const uses = countUses(g);
  const out = rewriteGraph(g, (node, ctx) => {
    if (node.op !== 'batch_norm') return [node];
    const prod = ctx.def(node.inputs[0]);
    if (!prod || prod.op !== producer || uses.get(prod.outputs[0]) !== 1) return [node];
    const folded = fold(node, prod, ctx);
    return folded ? [...folded, ctx.node(producer, [prod.inputs[0], folded[0].outputs[0], folded[1].outputs[0]], prod.attrs, prod.meta, node.outputs)] : [node];
  });
  // The absorbed producers and their old weights are now unused.
  return out === g ? g : eliminateDeadCode(out);
}

function fold(bn: Node, prod: Node, ctx: RewriteContext): [Node, Node] | null {
  const wT = ctx.constantData(prod.inputs[1]);
  const w = floatData(wT), bT = prod.inputs[2] ? floatData(ctx.constantData(prod.inputs[2])) : undefined;
  const [, m, v, ga, be] = bn.inputs;
  const mean = floatData(ctx.constantData(m)), variance = floatData(ctx.constantData(v));
  const gamma = ga ? floatData(ctx.constantData(ga)) : undefined, beta = be ? floatData(ctx.constantData(be)) : undefined;
  if (!wT || !w || !mean || !variance || (prod.inputs[2] && !bT) || (ga && !gamma) || (be && !beta)) return null;
  // linear's channel must be batch_norm's dim 1: a 2-D [N, F] result.
  if (prod.op === 'linear' && (prod.outputs[0].type.kind !== 'tensor' || prod.outputs[0].type.shape.length !== 2)) return null;
  const { weight, bias } = foldBnParams(w, bT, mean, variance, gamma, beta, Number(bn.attrs.eps));
  const base = bn.meta.scope ?? prod.meta.scope ?? 'folded';
  const wd: TensorData = { dtype: 'float32', shape: wT.shape, data: weight };
  return [ctx.constant(`${base}.folded_weight`, wd, prod.meta), ctx.constant(`${base}.folded_bias`, { dtype: 'float32', shape: [bias.length], data: bias }, prod.meta)];
}

/**
 * Folds `batch_norm(conv2d(x, W, b))` into `conv2d(x, W', b')`.
 *
 * @example
 * foldConvBn(freeze(g)); // no batch_norm after a conv2d is left
 */
export function foldConvBn(g: Graph): Graph {
  return foldBnInto(g, 'conv2d');
}
