// Pass `eliminate-common-subexpressions`: a node that repeats an earlier node (same op, same
// attributes, same inputs, no regions) is replaced by the earlier node's results. Invariant:
// the earlier node dominates the later one — it is in the same block before it, or in an
// enclosing block — so its results are defined wherever the later node's are used. Effect ops
// (`host_call`, `raise`) and random ops (`uniform`, `normal`) are never merged: each call happens.

import { isEffectOp, type Graph, type Node, type Value } from '@kiln/ir-spec';
import { rewriteGraph } from '../rewrite.js';

/**
 * Merges identical pure nodes (regions are searched too, seeing the enclosing blocks' nodes).
 *
 * @example
 * eliminateCommonSubexpressions(g); // two `relu(%x)` become one
 */
export function eliminateCommonSubexpressions(g: Graph): Graph {
  const ids = new Map<Value, number>();
  const id = (v: Value | null) => {
    if (!v) return -1;
    let k = ids.get(v);
    if (k === undefined) { k = ids.size; ids.set(v, k); }
    return k;
  };
  // One table for the whole walk: rewriteGraph visits a region's nodes before the nodes after
  // the region's owner, so each entry remembers its block, and a match counts only when that
  // block encloses the current one. Blocks are known by the original node lists, found through
  // the (rewrite-stable) result values.
  const seen = new Map<string, { node: Node; block: readonly Node[] }>();
  const blockOf = new Map<Value, readonly Node[]>();
  const parentOf = new Map<readonly Node[], readonly Node[]>();
  const index = (nodes: readonly Node[]) => {
    for (const n of nodes) {
      for (const o of n.outputs) blockOf.set(o, nodes);
      for (const r of n.regions) { parentOf.set(r.nodes, nodes); index(r.nodes); }
    }
  };
  index(g.body.nodes);
  const encloses = (outer: readonly Node[], inner: readonly Node[]) => {
    for (let b: readonly Node[] | undefined = inner; b; b = parentOf.get(b)) if (b === outer) return true;
    return false;
  };
  return rewriteGraph(g, (node, ctx) => {
    if (node.regions.length || node.outputs.length === 0 || isEffectOp(node.op)) return [node];
    const key = `${node.op}(${node.inputs.map(id).join(',')})${JSON.stringify(node.attrs)}`;
    const prev = seen.get(key);
    const here = blockOf.get(node.outputs[0]);
    if (!here) return [node];
    if (prev && encloses(prev.block, here)) {
      node.outputs.forEach((o, i) => ctx.replace(o, prev.node.outputs[i]));
      return [];
    }
    seen.set(key, { node, block: here });
    return [node];
  });
}
