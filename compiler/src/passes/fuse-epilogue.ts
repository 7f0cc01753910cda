// Pass `fuse-epilogue`: conv2d / linear with a constant weight, plus a constant bias add and an
// activation, become one fused_conv2d or fused_linear node that applies the epilogue in its
// output loop (rules for the pattern driver):
//   relu(conv2d(x, W, b))              → fused_conv2d(x, W, b) {activation="relu"}
//   act(linear(x, W, b))               → fused_linear(x, W, b) {activation=act}   (act: an entry with `epilogue`)
//   add(linear(x, W), bc[N])           → fused_linear(x, W, bc)
//   max_pool2d(fused_conv2d(…))        → fused_conv2d(…) {pool={kernel_size, stride}}   (indices unused; a
//                                        non-decreasing activation, so pooling first is exact)
//   relu(quantized_linear(…))          → quantized_linear(…) {relu=true}   (linear_relu_dynamic)
// canonicalize's matmul → linear rule runs first in the same table, so the pass alone also fuses
// matmul(x, Wc) epilogues (Wc constant 2-D). Invariant: a producer is absorbed only when the
// epilogue op is its single live user in the same block, so no intermediate anyone else reads
// disappears and nothing moves into a loop body.

import { epilogueActivations, isNonDecreasing, mergedMeta, type Graph } from '@kiln/ir-spec';
import { any, applyRules, constant, op, type Match, type Rule } from '../patterns.js';
import { MATMUL_AS_LINEAR } from './canonicalize.js';

const FUSED: Readonly<Record<string, string>> = { conv2d: 'fused_conv2d', linear: 'fused_linear', fused_conv2d: 'fused_conv2d', fused_linear: 'fused_linear' };
/** A producer without an activation yet, whose result only the epilogue reads. */
const noActivation = (m: Match) => (m.node('prod').attrs.activation ?? 'none') === 'none';
const same = (v: unknown, w: readonly number[]) => JSON.stringify(v) === JSON.stringify(w);

export const RULES: readonly Rule[] = [
  MATMUL_AS_LINEAR,
  // act(conv2d | linear | fused_*(…)) → fused_*(…) {activation=act}, act any entry marked `epilogue`
  {
    name: 'activation-epilogue',
    pattern: op([...epilogueActivations()], op(Object.keys(FUSED)).as('prod').oneUse().where(noActivation)),
    rewrite: (m, ctx) => {
      const prod = m.node('prod');
      return [ctx.node(FUSED[prod.op], prod.inputs, { ...prod.attrs, activation: m.root.op }, mergedMeta(prod, [m.root]), m.root.outputs)];
    },
  },
  // add(linear(x, W), bc[N]) → fused_linear(x, W, bc)
  {
    name: 'bias-epilogue',
    pattern: op('add', op(['linear', 'fused_linear'], any('x'), constant('w'), any('b0')).as('prod').oneUse().where(noActivation), constant('b'))
      .where((m) => {
        const b = m.data('b');
        return m.optional('b0') === null && b.dtype === 'float32' && b.shape.length === 1 && b.shape[0] === m.data('w').shape[0];
      }),
    rewrite: (m, ctx) => {
      const prod = m.node('prod');
      return [ctx.node('fused_linear', [m.value('x'), m.value('w'), m.value('b')], { ...prod.attrs, activation: 'none' }, mergedMeta(prod, [m.root]), m.root.outputs)];
    },
  },
  // relu(quantized_linear(…)) → quantized_linear(…) {relu=true}: the kernel applies relu's own bit rule.
  {
    name: 'quantized-relu-epilogue',
    pattern: op('relu', op('quantized_linear').as('prod').oneUse().where((m) => m.node('prod').attrs.relu !== true)),
    rewrite: (m, ctx) => {
      const prod = m.node('prod');
      return [ctx.node('quantized_linear', prod.inputs, { ...prod.attrs, relu: true }, mergedMeta(prod, [m.root]), m.root.outputs)];
    },
  },
  // max_pool2d(fused_conv2d(…)) → fused_conv2d(…) {pool}   (floor mode, unpadded, indices unused)
  {
    name: 'pool-epilogue',
    pattern: op('max_pool2d', op('fused_conv2d').as('prod').oneUse()).where((m) => {
      const a = m.root.attrs, prod = m.node('prod'), t = prod.outputs[0].type;
      return prod.attrs.pool === null && isNonDecreasing(String(prod.attrs.activation)) && prod.attrs.groups === 1 && a.ceil_mode === false && same(a.padding, [0, 0]) && same(a.dilation, [1, 1])
        && t.kind === 'tensor' && typeof t.shape[2] === 'number' && typeof t.shape[3] === 'number'
        // The indices result has no counterpart in the fused node: nobody may read it.
        && m.root.outputs.slice(1).every((o) => m.uses(o) === 0);
    }),
    rewrite: (m, ctx) => {
      const prod = m.node('prod'), a = m.root.attrs;
      return [ctx.node('fused_conv2d', prod.inputs, { ...prod.attrs, pool: { kernel_size: a.kernel_size, stride: a.stride } }, mergedMeta(prod, [m.root]), [m.root.outputs[0]])];
    },
  },
];

/**
 * Fuses bias and activation epilogues into their conv2d / linear / matmul.
 *
 * @example
 * fuseEpilogue(g); // relu(conv2d(...)) becomes fused_conv2d {activation="relu"}
 */
export function fuseEpilogue(g: Graph): Graph {
  return applyRules(g, RULES, { label: 'fuse-epilogue' }).graph;
}
