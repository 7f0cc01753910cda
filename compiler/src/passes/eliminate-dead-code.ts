// Pass `eliminate-dead-code`: removes nodes none of whose results is used, regions included,
// and tensor table entries nothing refers to any more. Invariant: every op is pure (kernels
// never mutate inputs; `if`/`loop` only compute their results) except the effect ops
// (`host_call`, `raise`, and any `if`/`loop` holding one), which stay even when unused.

import { Block, Graph, hasEffects, Node, type Value } from '@kiln/ir-spec';
import { countUses } from '../rewrite.js';

function sweep(b: Block, uses: Map<Value, number>): Block {
  const nodes = b.nodes.filter((n) => hasEffects(n) || n.outputs.some((o) => (uses.get(o) ?? 0) > 0));
  let changed = nodes.length !== b.nodes.length;
  const rebuilt = nodes.map((n) => {
    const regions = n.regions.map((r) => sweep(r, uses));
    if (regions.every((r, i) => r === n.regions[i])) return n;
    changed = true;
    return new Node(n.op, n.inputs, n.attrs, n.outputs, regions, n.meta);
  });
  return changed ? new Block(b.args, rebuilt, b.yields) : b;
}

/**
 * Deletes unused nodes (to a fixpoint: a node used only by dead nodes is dead too) and unused
 * tensors.
 *
 * @example
 * eliminateDeadCode(g); // a `%3 = relu(%x)` nobody reads is gone
 */
export function eliminateDeadCode(g: Graph): Graph {
  let body = g.body;
  for (;;) {
    const uses = countUses(new Graph(g.name, g.inputs, body, g.outputs, g.tensors));
    const next = sweep(body, uses);
    if (next === body) break;
    body = next;
  }
  const referenced = new Set<string>(g.inputs.filter((i) => i.kind === 'param').map((i) => i.name));
  const mark = (b: Block) => {
    for (const n of b.nodes) {
      if (n.op === 'constant' && typeof n.attrs.name === 'string') referenced.add(n.attrs.name);
      n.regions.forEach(mark);
    }
  };
  mark(body);
  const tensors = [...g.tensors.keys()].every((k) => referenced.has(k)) ? g.tensors : new Map([...g.tensors].filter(([k]) => referenced.has(k)));
  if (body === g.body && tensors === g.tensors) return g;
  return new Graph(g.name, g.inputs, body, g.outputs, tensors, g.metadata);
}
