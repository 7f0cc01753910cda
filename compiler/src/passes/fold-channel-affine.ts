// Pass `fold-channel-affine`: a per-channel constant multiply or add right after a conv2d or
// linear (whose result nothing else reads) is folded into its weight and bias:
//   conv(x, W, b) * s[c]  → conv(x, W·s[c], b·s[c])      conv(x, W, b) + t[c] → conv(x, W, b + t[c])
//   (also − t and / s; for linear the channel is the last dim, for conv2d dim 1).
// Invariant: fires only when the constant broadcasts per channel without changing the result
// type, so the folded op computes the same values up to float rounding.

import type { Graph, Node, Value } from '@kiln/ir-spec';
import { countUses, floatData, rewriteGraph, type RewriteContext } from '../rewrite.js';
import { eliminateDeadCode } from './eliminate-dead-code.js';

const OPS = new Set(['mul', 'div', 'add', 'sub']);

/** The per-channel values of constant `v` against `prod`'s result with C channels, or undefined. */
function perChannel(ctx: RewriteContext, v: Value | null, prod: Node, C: number): Float64Array | undefined {
  const t = ctx.constantData(v), d = floatData(t);
  if (!t || !d) return undefined;
  const rank = prod.outputs[0].type.kind === 'tensor' ? prod.outputs[0].type.shape.length : 0;
  const channelAxis = prod.op === 'conv2d' ? 1 : rank - 1;
  if (t.shape.length > rank) return undefined;
  const out = new Float64Array(C);
  if (d.length === 1) { out.fill(d[0]); return out; }
  // Right-aligned against the result: only the channel axis may be > 1.
  const offset = rank - t.shape.length;
  for (let i = 0; i < t.shape.length; i++) {
    const axis = i + offset;
    if (axis === channelAxis ? t.shape[i] !== C : t.shape[i] !== 1) return undefined;
  }
  d.forEach((x, c) => { out[c] = x; });
  return out;
}

/**
 * Folds per-channel constant scale/shift after conv2d/linear into the weights.
 *
 * @example
 * foldChannelAffine(g); // mul(conv2d(x, W, b), s) becomes conv2d(x, W', b')
 */
export function foldChannelAffine(g: Graph): Graph {
  const uses = countUses(g);
  const out = rewriteGraph(g, (node, ctx) => {
    if (!OPS.has(node.op)) return [node];
    const [a, b] = node.inputs;
    const right = ctx.def(a), left = ctx.def(b);
    const commutes = node.op === 'mul' || node.op === 'add';
    const prod = right && (right.op === 'conv2d' || right.op === 'linear') ? right : commutes && left && (left.op === 'conv2d' || left.op === 'linear') ? left : undefined;
    if (!prod || uses.get(prod.outputs[0]) !== 1 || JSON.stringify(prod.outputs[0].type) !== JSON.stringify(node.outputs[0].type)) return [node];
    const wT = ctx.constantData(prod.inputs[1]), w = floatData(wT);
    const bias = prod.inputs[2] ? floatData(ctx.constantData(prod.inputs[2])) : undefined;
    if (!wT || !w || (prod.inputs[2] && !bias)) return [node];
    const C = wT.shape[0];
    const k = perChannel(ctx, prod === right ? b : a, prod, C);
    if (!k) return [node];
    const per = w.length / C;
    const W = new Float32Array(w), B = new Float32Array(C);
    for (let c = 0; c < C; c++) {
      const b0 = bias ? bias[c] : 0;
      if (node.op === 'mul' || node.op === 'div') {
        const s = node.op === 'mul' ? k[c] : 1 / k[c];
        for (let i = 0; i < per; i++) W[c * per + i] = w[c * per + i] * s;
        B[c] = b0 * s;
      } else {
        B[c] = node.op === 'add' ? b0 + k[c] : b0 - k[c];
      }
    }
    const base = prod.meta.scope ?? 'folded';
    const wc = node.op === 'mul' || node.op === 'div' ? ctx.constant(`${base}.scaled_weight`, { dtype: 'float32', shape: wT.shape, data: W }, prod.meta) : undefined;
    const bc = ctx.constant(`${base}.shifted_bias`, { dtype: 'float32', shape: [C], data: B }, prod.meta);
    const weight = wc ? wc.outputs[0] : prod.inputs[1];
    return [...(wc ? [wc] : []), bc, ctx.node(prod.op, [prod.inputs[0], weight, bc.outputs[0]], prod.attrs, prod.meta, node.outputs)];
  });
  // The absorbed producers and their old weights are now unused.
  return out === g ? g : eliminateDeadCode(out);
}
