// Pass `remove-dropout`: inference-mode dropout is the identity, so it is deleted and its
// users read its input. Invariant: only dropout that is the identity goes (training=false or
// p=0); training-mode dropout stays so the runtime reports it (run `freeze` first).

import type { Graph } from '@kiln/ir-spec';
import { rewriteGraph } from '../rewrite.js';

/**
 * Removes identity dropout nodes.
 *
 * @example
 * removeDropout(freeze(g)); // no `dropout` node is left
 */
export function removeDropout(g: Graph): Graph {
  return rewriteGraph(g, (node, ctx) => {
    if (node.op !== 'dropout' || (node.attrs.training === true && node.attrs.p !== 0) || !node.inputs[0]) return [node];
    ctx.replace(node.outputs[0], node.inputs[0]);
    return [];
  });
}
