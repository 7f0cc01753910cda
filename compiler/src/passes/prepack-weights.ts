// Pass `prepack-weights`: a convolution whose weight is a constant gets that weight stored in the
// layout its fastest CPU kernel reads, computed once at compile time instead of on every run:
//   fused_conv2d(x, W, b) {…}  → fused_conv2d(x, pack(W), b) {…, layout="winograd4x4"}
//   conv2d(x, W, b) {…}        → fused_conv2d(x, pack(W), b) {…, activation="none", layout="winograd4x4"}
// for 3×3, stride 1, dilation 1, groups 1 (pack = fused.packConvWeight: the 6×6 Winograd
// F(4×4, 3×3) weight tiles, [Cout, 36, 2, C]). The packed weight is an ordinary constant in the
// tensor table, so `.tsgraph` saves and loads it. The pass needs frozen weights (run after
// freeze); a weight that is a graph input is left alone. Invariant: the packed node computes the
// same conv (hi/lo weight pairs and double intermediates keep it within ~1e-7 of the output's
// RMS of an exact conv, like the direct form; tests/passes-perf.test.ts checks it and the seed
// model against eager); convs sharing one weight share one packed constant; other nodes are
// untouched. On WebGPU the layout runs as codegen/winograd.ts's kernel (with a fused pool only
// when it is 2×2, stride 2; codegen reports any other fused pool as unsupported).

import { fused, type Graph, type Value } from '@kiln/ir-spec';
import { floatData, rewriteGraph } from '../rewrite.js';

/**
 * Stores constant 3×3 conv weights pre-transformed for Winograd F(4×4, 3×3).
 *
 * @example
 * prepackWeights(g); // fused_conv2d(%x, %w4, %b) {layout="winograd4x4", …}, %w4 f32[128,36,2,64]
 */
export function prepackWeights(g: Graph): Graph {
  const packed = new Map<Value, Value>();
  const out = rewriteGraph(g, (node, ctx) => {
    if ((node.op !== 'conv2d' && node.op !== 'fused_conv2d') || node.attrs.layout !== undefined) return [node];
    const [x, w, ...rest] = node.inputs;
    const a = node.attrs as unknown as fused.ConvGeometry;
    if (!w || w.type.kind !== 'tensor' || !fused.canPackConvWeight('winograd4x4', w.type.shape, a)) return [node];
    const source = ctx.resolve(w);
    const done = packed.get(source);
    const attrs = { ...node.attrs, activation: node.attrs.activation ?? 'none', layout: 'winograd4x4' };
    if (done) return [ctx.node('fused_conv2d', [x, done, ...rest], attrs, node.meta, node.outputs)];
    const wt = ctx.constantData(w), data = floatData(wt);
    if (!wt || !data) return [node];
    const p = fused.packConvWeight('winograd4x4', data, wt.shape, a);
    if (!p) return [node];
    const c = ctx.constant(`${node.meta.scope ?? 'conv'}.weight_winograd4x4`, { dtype: 'float32', shape: p.shape, data: p.data }, node.meta);
    packed.set(source, c.outputs[0]);
    return [c, ctx.node('fused_conv2d', [x, c.outputs[0], ...rest], attrs, node.meta, node.outputs)];
  });
  // The unpacked weights are now unused; the pipeline sweeps them.
  return out;
}
