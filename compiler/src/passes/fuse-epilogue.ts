// Pass `fuse-epilogue`: conv2d / linear / matmul with a constant weight, plus a constant bias
// add and an activation, become one fused_conv2d or fused_linear node that applies the
// epilogue in its output loop:
//   relu(conv2d(x, W, b))            → fused_conv2d(x, W, b) {activation="relu"}
//   matmul(x, Wc)                     → fused_linear(x, Wcᵀ) {activation="none"}   (Wc constant 2-D)
//   add(fused_linear(x, W), bc[N])    → fused_linear(x, W, bc)
//   act(linear(x, W, b))              → fused_linear(x, W, b) {activation=act}   (act: an entry with `epilogue`)
//   max_pool2d(fused_conv2d(…))       → fused_conv2d(…) {pool={kernel_size, stride}}   (indices unused; a
//                                       non-decreasing activation, so pooling first is exact)
// Invariant: a producer is absorbed only when the epilogue op is its single user, so no
// intermediate anyone else reads disappears.

import { epilogueActivations, isNonDecreasing, type Graph, type Node, type Value } from '@kiln/ir-spec';
import { countUses, floatData, rewriteGraph, type RewriteContext } from '../rewrite.js';
import { eliminateDeadCode } from './eliminate-dead-code.js';

const FUSED: Record<string, string> = { conv2d: 'fused_conv2d', linear: 'fused_linear', fused_conv2d: 'fused_conv2d', fused_linear: 'fused_linear' };

/** matmul(x, constant W [K, N]) as fused_linear(x, Wᵀ): linear's weight layout is [N, K]. */
function matmulAsLinear(node: Node, ctx: RewriteContext): Node[] | null {
  const [x, w] = node.inputs;
  const wt = ctx.constantData(w), data = floatData(wt);
  if (!x || !wt || !data || wt.shape.length !== 2 || x.type.kind !== 'tensor' || x.type.shape.length < 2) return null;
  const [K, N] = wt.shape;
  const t = new Float32Array(K * N);
  for (let k = 0; k < K; k++) for (let n = 0; n < N; n++) t[n * K + k] = data[k * N + n];
  const c = ctx.constant(`${node.meta.scope ?? 'matmul'}.weight_t`, { dtype: 'float32', shape: [N, K], data: t }, node.meta);
  return [c, ctx.node('fused_linear', [x, c.outputs[0]], { activation: 'none' }, node.meta, node.outputs)];
}

/** A floor-mode, unpadded max pool whose indices nobody reads, folded into a fused_conv2d. */
function poolEpilogue(node: Node, prod: Node, uses: Map<Value, number>, ctx: RewriteContext): Node[] | null {
  const a = node.attrs, same = (v: unknown, w: number[]) => JSON.stringify(v) === JSON.stringify(w);
  if (prod.op !== 'fused_conv2d' || prod.attrs.pool !== null || !isNonDecreasing(String(prod.attrs.activation)) || prod.attrs.groups !== 1 || (uses.get(node.outputs[1]) ?? 0) > 0) return null;
  if (a.ceil_mode !== false || !same(a.padding, [0, 0]) || !same(a.dilation, [1, 1])) return null;
  const t = prod.outputs[0].type;
  if (t.kind !== 'tensor' || typeof t.shape[2] !== 'number' || typeof t.shape[3] !== 'number') return null;
  return [ctx.node('fused_conv2d', prod.inputs, { ...prod.attrs, pool: { kernel_size: a.kernel_size, stride: a.stride } }, prod.meta, [node.outputs[0]])];
}

/**
 * Fuses bias and activation epilogues into their conv2d / linear / matmul.
 *
 * @example
 * fuseEpilogue(g); // relu(conv2d(...)) becomes fused_conv2d {activation="relu"}
 */
export function fuseEpilogue(g: Graph): Graph {
  const uses = countUses(g);
  const single = (v: Value | null) => !!v && uses.get(v) === 1;
  const out = rewriteGraph(g, (node, ctx) => {
    if (node.op === 'matmul') return matmulAsLinear(node, ctx) ?? [node];
    const prod = ctx.def(node.inputs[0]);
    if (!prod || !FUSED[prod.op] || !single(prod.outputs[0])) return [node];
    if (node.op !== 'max_pool2d' && (prod.attrs.activation ?? 'none') !== 'none') return [node];
    if (node.op === 'max_pool2d') return poolEpilogue(node, prod, uses, ctx) ?? [node];
    const attrs = { ...prod.attrs, activation: 'none' };
    if (epilogueActivations().includes(node.op)) {
      return [ctx.node(FUSED[prod.op], prod.inputs, { ...attrs, activation: node.op }, prod.meta, node.outputs)];
    }
    if (node.op === 'add' && prod.op === 'fused_linear' && !prod.inputs[2]) {
      const b = ctx.constantData(node.inputs[1]);
      const N = ctx.constantData(prod.inputs[1])?.shape[0];
      if (!b || b.dtype !== 'float32' || b.shape.length !== 1 || b.shape[0] !== N) return [node];
      return [ctx.node('fused_linear', [prod.inputs[0], prod.inputs[1], node.inputs[1]], attrs, prod.meta, node.outputs)];
    }
    return [node];
  });
  // The absorbed producers and their old weights are now unused.
  return out === g ? g : eliminateDeadCode(out);
}
