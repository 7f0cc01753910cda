// Pass `freeze`: parameters become constants and the graph is fixed to inference mode.
// Invariant: the frozen graph computes what the original computed with the tensor table's
// values bound to its params, and takes only the run-time inputs. A graph that updates buffers
// (training-mode BatchNorm statistics) is refused: its params are state, not constants.
// Random ops (rand/randn, training-mode dropout's mask) stay: they draw at run time.
//   param %w  →  %w = constant() {name="w"}   (same value, first in the body; table unchanged)
//   dropout {training=true}  →  dropout {training=false}   (identity; removeDropout deletes it)

import { Block, bufferUpdates, Node, type Graph } from '@kiln/ir-spec';
import { rewriteGraph, withParts } from '../rewrite.js';

/**
 * Turns every `param` input into a `constant` node and folds `training` to false.
 *
 * @example
 * const frozen = freeze(graph); // frozen.inputs holds only run-time inputs
 */
export function freeze(g: Graph): Graph {
  const updates = bufferUpdates(g);
  if (updates.length) {
    throw new Error(`freeze: graph @${g.name} updates buffers (${updates.map((u) => `'${u.param}'`).join(', ')}: running statistics of a layer in training mode), ` +
      'so its params are state, not constants; call model.eval() before tracing or scripting, then freeze');
  }
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
