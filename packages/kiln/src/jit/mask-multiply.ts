// A rewrite for jit.compile's backward graphs: a gradient masked by a comparison,
// mul(g, cast(mask)) with `mask` a bool tensor of g's shape (what relu's gradient rule emits:
// g · (y > 0)), becomes where(mask, g, 0) — one pass over the tensor instead of two, and no
// float copy of the mask. Invariant: the same values wherever g is finite (for an infinite or
// NaN g the masked-off entries are 0 rather than NaN, as PyTorch's threshold_backward gives).

import { any, applyRules, op, sameType, type Match, type Rule } from '@kiln/compiler';
import type { Graph, Node } from '@kiln/ir-spec';

function boolMaskOf(m: Match): boolean {
  const mask = m.value('mask'), g = m.value('g'), out = m.root.outputs[0];
  return out.type.kind === 'tensor' && out.type.dtype === 'float32' && mask.type.kind === 'tensor' && mask.type.dtype === 'bool' && sameType(g, out) && m.node('cast').outputs[0].type.kind === 'tensor' && sameType(m.node('cast').outputs[0], out);
}

function toWhere(m: Match, ctx: RewriteContextLike): Node[] {
  const out = m.root.outputs[0];
  const zero = ctx.node('constant', [], { value: 0, dtype: 'float32' }, m.root.meta);
  const where = ctx.node('where', [m.value('mask'), m.value('g'), zero.outputs[0]], {}, m.root.meta, [out]);
  return [zero, where];
}

type RewriteContextLike = Parameters<Rule['rewrite']>[1];

export const MASK_MULTIPLY_RULES: readonly Rule[] = [
  {
    name: 'mask-multiply-right',
    pattern: op('mul', any('g'), op('cast', any('mask')).as('cast')).where(boolMaskOf),
    rewrite: (m, ctx) => toWhere(m, ctx),
  },
  {
    name: 'mask-multiply-left',
    pattern: op('mul', op('cast', any('mask')).as('cast'), any('g')).where(boolMaskOf),
    rewrite: (m, ctx) => toWhere(m, ctx),
  },
];

/** `g` with every mul(g, cast(bool mask)) turned into where(mask, g, 0); the dead casts are swept by the pipeline. */
export function maskMultiply(g: Graph): Graph {
  return applyRules(g, MASK_MULTIPLY_RULES, { label: 'mask-multiply' }).graph;
}
