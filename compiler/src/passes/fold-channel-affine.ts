// Pass `fold-channel-affine`: a per-channel constant multiply or add right after a conv2d or
// linear (whose result nothing else reads) is folded into its weight and bias:
//   conv(x, W, b) * s[c]  → conv(x, W·s[c], b·s[c])      conv(x, W, b) + t[c] → conv(x, W, b + t[c])
//   (also − t and / s; for linear the channel is the last dim, for conv2d dim 1);
//   conv(x, W) + t[C] → conv(x, W, t)   (no bias yet: the 1-D constant becomes the bias as is, so
//   canonicalize's linear(x, Wᵀ) from matmul + bias fuses exactly as before).
// Invariant: fires only when the constant broadcasts per channel without changing the result
// type, so the folded op computes the same values up to float rounding, and only when the
// producer is in the root's block and read by nothing else (rules for the pattern driver).

import { mergedMeta, type Graph, type Node, type TensorData } from '@kiln/ir-spec';
import { any, applyRules, constant, maybe, op, sameType, type Match, type Rule } from '../patterns.js';
import { floatData, type RewriteContext } from '../rewrite.js';

/** The per-channel values of constant `t` against `prod`'s result with C channels, or undefined. */
function perChannel(t: TensorData, prod: Node, C: number): Float64Array | undefined {
  const d = floatData(t);
  if (!d) return undefined;
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

/** conv2d / linear with a float32 constant weight (and bias, if any), read only by the root. */
const producer = () => op(['conv2d', 'linear'], any('x'), constant('w').where((m) => !!floatData(m.data('w'))), maybe(constant('b').where((m) => !!floatData(m.data('b')))))
  .as('prod').oneUse();
/** The folded op keeps the root's exact type, and the constant is per channel. */
const foldable = (m: Match) => sameType(m.node('prod').outputs[0], m.root.outputs[0]) && !!perChannel(m.data('k'), m.node('prod'), m.data('w').shape[0]);

/** prod(x, W, b) ∘ k → prod(x, W', b') for the root's op (mul, div, add, sub). */
function fold(m: Match, ctx: RewriteContext): Node[] {
  const prod = m.node('prod'), opName = m.root.op, wT = m.data('w'), w = floatData(wT)!;
  const bias = m.optional('b') ? floatData(m.data('b')) : undefined;
  const C = wT.shape[0], k = perChannel(m.data('k'), prod, C)!;
  const per = w.length / C;
  const W = new Float32Array(w), B = new Float32Array(C);
  for (let c = 0; c < C; c++) {
    const b0 = bias ? bias[c] : 0;
    if (opName === 'mul' || opName === 'div') {
      const s = opName === 'mul' ? k[c] : 1 / k[c];
      for (let i = 0; i < per; i++) W[c * per + i] = w[c * per + i] * s;
      B[c] = b0 * s;
    } else {
      B[c] = opName === 'add' ? b0 + k[c] : b0 - k[c];
    }
  }
  const base = prod.meta.scope ?? 'folded';
  const wc = opName === 'mul' || opName === 'div' ? ctx.constant(`${base}.scaled_weight`, { dtype: 'float32', shape: wT.shape, data: W }, prod.meta) : undefined;
  const bc = ctx.constant(`${base}.shifted_bias`, { dtype: 'float32', shape: [C], data: B }, prod.meta);
  const weight = wc ? wc.outputs[0] : m.value('w');
  return [...(wc ? [wc] : []), bc, ctx.node(prod.op, [m.value('x'), weight, bc.outputs[0]], prod.attrs, mergedMeta(prod, [m.root]), m.root.outputs)];
}

export const RULES: readonly Rule[] = [
  // prod(x, W) + b[C] → prod(x, W, b)   (no bias yet, a 1-D per-channel constant: it becomes the bias as is)
  {
    name: 'fold-channel-bias',
    pattern: op('add', producer(), constant('k')).commutative().where((m) => {
      const k = m.data('k');
      return m.optional('b') === null && k.shape.length === 1 && k.shape[0] === m.data('w').shape[0] && !!floatData(k) && foldable(m);
    }),
    rewrite: (m, ctx) => {
      const prod = m.node('prod');
      return [ctx.node(prod.op, [m.value('x'), m.value('w'), m.value('k')], prod.attrs, mergedMeta(prod, [m.root]), m.root.outputs)];
    },
  },
  // prod * k[c], k[c] * prod, prod + t[c], t[c] + prod → prod'
  { name: 'fold-channel-scale-shift', pattern: op(['mul', 'add'], producer(), constant('k')).commutative().where(foldable), rewrite: fold },
  // prod / s[c], prod − t[c] → prod'
  { name: 'fold-channel-div-sub', pattern: op(['div', 'sub'], producer(), constant('k')).where(foldable), rewrite: fold },
];

/**
 * Folds per-channel constant scale/shift after conv2d/linear into the weights.
 *
 * @example
 * foldChannelAffine(g); // mul(conv2d(x, W, b), s) becomes conv2d(x, W', b')
 */
export function foldChannelAffine(g: Graph): Graph {
  return applyRules(g, RULES, { label: 'fold-channel-affine' }).graph;
}
