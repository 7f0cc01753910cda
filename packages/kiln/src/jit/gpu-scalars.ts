// Number arguments of a graph bound for WebGPU. The capture takes a number argument as a 0-d
// tensor input that the code reads back with `item`; on the GPU that read would wait for the
// device in the middle of the run. Here such an input becomes a host scalar input: `item` of it
// is the scalar itself, and any use as a tensor reads a `to_tensor` of it (written from the host,
// no read back). Invariant: the graph computes what it did for the same argument values.

import { Block, Graph, Node, Value, type GraphInput } from '@kiln/ir-spec';
import { rewriteGraph } from '@kiln/compiler';

/** `g` with the 0-d tensor inputs named in `numbers` taken as host scalars. */
export function numbersAsScalars(g: Graph, numbers: ReadonlySet<string>): Graph {
  const scalarOf = new Map<Value, Value>();
  const inputs = g.inputs.map((i): GraphInput => {
    const t = i.value.type;
    if (i.kind !== 'input' || !numbers.has(i.name) || t.kind !== 'tensor' || t.shape.length) return i;
    const v = new Value({ kind: 'scalar', dtype: t.dtype }, i.value.hint);
    scalarOf.set(i.value, v);
    return { ...i, value: v };
  });
  if (!scalarOf.size) return g;
  // The old tensor value now comes from to_tensor(scalar); dead-code elimination drops it when `item` was its only use.
  const defs = [...scalarOf].map(([tensor, scalar]) => new Node('to_tensor', [scalar], { dtype: (tensor.type as { dtype: string }).dtype }, [tensor], [], {}));
  const body = new Block(g.body.args, [...defs, ...g.body.nodes], g.body.yields);
  return rewriteGraph(new Graph(g.name, inputs, body, g.outputs, g.tensors, g.metadata), (node, ctx) => {
    const scalar = node.op === 'item' && node.inputs[0] ? scalarOf.get(node.inputs[0]) : undefined;
    if (!scalar) return [node];
    ctx.replace(node.outputs[0], scalar);
    return [];
  });
}
