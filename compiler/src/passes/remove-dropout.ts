// Pass `remove-dropout`: inference-mode dropout is the identity, so it is deleted and its
// users read its input. Invariant: only dropout that is the identity goes (training=false or
// p=0); training-mode dropout stays so the runtime reports it (run `freeze` first).

import type { Graph } from '@kiln/ir-spec';
import { any, applyRules, op, type Rule } from '../patterns.js';

export const RULES: readonly Rule[] = [
  // dropout(x) {training=false or p=0} → x
  {
    name: 'identity-dropout',
    pattern: op('dropout', any('x')).where((m) => m.optional('x') !== null && (m.root.attrs.training !== true || m.root.attrs.p === 0)),
    rewrite: (m, ctx) => { ctx.replace(m.root.outputs[0], m.value('x')); return []; },
  },
];

/**
 * Removes identity dropout nodes.
 *
 * @example
 * removeDropout(freeze(g)); // no `dropout` node is left
 */
export function removeDropout(g: Graph): Graph {
  return applyRules(g, RULES, { label: 'remove-dropout' }).graph;
}
