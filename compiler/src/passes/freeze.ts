// Pass `freeze`: parameters become constants and the graph is fixed to inference mode.
// Invariant: the frozen graph computes what the original computed with the tensor table's
// values bound to its params, and takes only the run-time inputs.
//   param %w  →  %w = constant() {name="w"}   (same value, first in the body; table unchanged)
//   dropout {training=true}  →  dropout {training=false}   (identity; removeDropout deletes it)

import { Block, Node, type Graph } from '@kiln/ir-spec';
import { rewriteGraph, withParts } from '../rewrite.js';

/**
 * Turns every `param` input into a `constant` node and folds `training` to false.
 *
 * @example
 * const frozen = freeze(graph); // frozen.inputs holds only run-time inputs
 */
export function freeze(g: Graph): Graph {
  const params = g.inputs.filter((i) => i.kind === 'param');
  let out = g;
  if (params.length) {
    const consts = params.map((p) => new Node('constant', [], { name: p.name }, [p.value], [], {}));
    const body = new Block(g.body.args, [...consts, ...g.body.nodes], g.body.yields);
    out = withParts(g, { inputs: g.inputs.filter((i) => i.kind !== 'param'), body });
  }
  return rewriteGraph(out, (node, ctx) => {
    if (node.op === 'dropout' && node.attrs.training === true) {
      return [ctx.node('dropout', node.inputs, { ...node.attrs, training: false }, node.meta, node.outputs)];
    }
    return [node];
  });
}
