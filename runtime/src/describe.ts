// Node text for error messages, in the IR text form (ir-spec's printer), on one line.
// Invariant: names come from the whole graph (`nameValues`), so a node reads the same in a
// runtime error as in `printGraph`, `kiln inspect` and verifier messages; a node with regions
// prints its head only (`%5 = loop(%3, none, %2) : f32[N,4]`), not its bodies.

import { Node, printNode, type Value } from '@kiln/ir-spec';

export { nameValues } from '@kiln/ir-spec';

/** The node in one line of the text form, with its scope and source location when known. */
export function describeNode(node: Node, names: ReadonlyMap<Value, string>): string {
  const head = node.regions.length ? new Node(node.op, node.inputs, node.attrs, node.outputs, [], node.meta) : node;
  return printNode(head, names);
}
