// Pass `fold-constants`: a tensor op whose inputs are all constants is evaluated now, with the
// op's own CPU kernel, and replaced by constants in the tensor table. Invariant: a folded value
// is bit-identical to what the runtime's CPU executor would compute, and folding never grows
// the tensor table by more than FOLD_LIMIT elements per node beyond what its inputs hold (so an
// `expand` of a scalar to a huge shape stays an op).

import { getOp, isBuiltin, isEffectOp, type CpuTensor, type Graph, type TensorData } from '@kiln/ir-spec';
import { rewriteGraph } from '../rewrite.js';
import { eliminateDeadCode } from './eliminate-dead-code.js';

/** Largest growth (elements) one folded node may add to the tensor table. */
export const FOLD_LIMIT = 1 << 16;

const numel = (s: readonly number[]) => s.reduce((a, d) => a * d, 1);

/**
 * Evaluates constant subexpressions.
 *
 * @example
 * foldConstants(g); // `mul(constant 2, constant 3)` becomes one constant 6
 */
export function foldConstants(g: Graph): Graph {
  const out = rewriteGraph(g, (node, ctx) => {
    if (isBuiltin(node.op) || isEffectOp(node.op) || node.outputs.length === 0) return [node]; // a random op draws anew each run
    const datas: (TensorData | null)[] = [];
    for (const v of node.inputs) {
      if (!v) { datas.push(null); continue; }
      const d = ctx.constantData(v);
      if (!d) return [node];
      datas.push(d);
    }
    if (!datas.some((d) => d)) return [node];
    const outTypes = node.outputs.map((o) => o.type);
    if (!outTypes.every((t) => t.kind === 'tensor' && t.shape.every((d) => typeof d === 'number'))) return [node];
    const outElems = outTypes.reduce((a, t) => a + (t.kind === 'tensor' ? numel(t.shape as number[]) : 0), 0);
    const inElems = datas.reduce((a, d) => a + (d ? d.data.length : 0), 0);
    if (outElems > inElems + FOLD_LIMIT) return [node];
    let outs: CpuTensor[];
    try {
      outs = getOp(node.op).cpu(datas, node.attrs);
    } catch {
      return [node]; // the runtime will report it with the node's location
    }
    const made = outs.map((t, i) => {
      const c = ctx.constant(`${node.meta.scope ? `${node.meta.scope}.` : ''}folded`, { dtype: t.dtype, shape: [...t.shape], data: t.data.slice() }, node.meta);
      ctx.replace(node.outputs[i], c.outputs[0]);
      return c;
    });
    return made;
  });
  // The folded nodes' constant inputs may now be unused.
  return out === g ? g : eliminateDeadCode(out);
}
