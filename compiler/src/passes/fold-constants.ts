// Pass `fold-constants`: a tensor op whose inputs are all constants is evaluated now, with the
// op's own CPU kernel, and replaced by constants in the tensor table. Invariant: a folded value
// is bit-identical to what the runtime's CPU executor would compute, and folding never grows
// the tensor table by more than FOLD_LIMIT elements per node beyond what its inputs hold (so an
// `expand` of a scalar to a huge shape stays an op). One rule for the pattern driver; the inputs
// it folds away are swept by the pipeline.

import { getOp, isBuiltin, isEffectOp, type CpuTensor, type Graph, type Node, type TensorData } from '@kiln/ir-spec';
import { anyOp, applyRules, type Match, type Rule } from '../patterns.js';
import type { RewriteContext } from '../rewrite.js';

/** Largest growth (elements) one folded node may add to the tensor table. */
export const FOLD_LIMIT = 1 << 16;

const numel = (s: readonly number[]) => s.reduce((a, d) => a * d, 1);

/** The constant data of every input (null for an absent one), or undefined if one is not constant. */
function inputData(m: Match): (TensorData | null)[] | undefined {
  const datas: (TensorData | null)[] = [];
  for (const v of m.root.inputs) {
    if (!v) { datas.push(null); continue; }
    const d = m.ctx.constantData(v);
    if (!d) return undefined;
    datas.push(d);
  }
  return datas.some((d) => d) ? datas : undefined;
}

/** op(constants…) → constants computed by op's CPU kernel. */
function fold(m: Match, ctx: RewriteContext): Node[] | null {
  const node = m.root, datas = inputData(m)!;
  let outs: CpuTensor[];
  try {
    outs = getOp(node.op).cpu(datas, node.attrs);
  } catch {
    return null; // the runtime will report it with the node's location
  }
  return outs.map((t, i) => {
    const c = ctx.constant(`${node.meta.scope ? `${node.meta.scope}.` : ''}folded`, { dtype: t.dtype, shape: [...t.shape], data: t.data.slice() }, node.meta);
    ctx.replace(node.outputs[i], c.outputs[0]);
    return c;
  });
}

export const RULES: readonly Rule[] = [
  // op(c1, c2, …) → constant   (a registry op, no effects, concrete result shapes, bounded growth)
  {
    name: 'fold-constant-op',
    pattern: anyOp().where((m) => {
      const node = m.root;
      // A random op draws anew each run.
      if (isBuiltin(node.op) || isEffectOp(node.op) || node.outputs.length === 0) return false;
      const outTypes = node.outputs.map((o) => o.type);
      if (!outTypes.every((t) => t.kind === 'tensor' && t.shape.every((d) => typeof d === 'number'))) return false;
      const datas = inputData(m);
      if (!datas) return false;
      const outElems = outTypes.reduce((a, t) => a + (t.kind === 'tensor' ? numel(t.shape as number[]) : 0), 0);
      const inElems = datas.reduce((a, d) => a + (d ? d.data.length : 0), 0);
      return outElems <= inElems + FOLD_LIMIT;
    }),
    rewrite: fold,
  },
];

/**
 * Evaluates constant subexpressions.
 *
 * @example
 * foldConstants(g); // `mul(constant 2, constant 3)` becomes one constant 6
 */
export function foldConstants(g: Graph): Graph {
  return applyRules(g, RULES, { label: 'fold-constants' }).graph;
}
