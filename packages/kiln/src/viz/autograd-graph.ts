// The autograd graph behind eager results, for drawing (torchviz's make_dot). Invariant: one
// entry per backward node reachable from the outputs' gradFn (each once, however many paths
// reach it), one per leaf that receives a gradient (named from `params` when it is one), one per
// output, and one per tensor a node saved for its backward, with its shape; `from` lists the ids
// an entry's inputs come from, in the forward direction (leaf → node → output).

import { Tensor } from '@kiln/core';

export type AutogradVizKind = 'backward' | 'leaf' | 'output' | 'saved';

export interface AutogradVizNode {
  readonly id: string;
  readonly kind: AutogradVizKind;
  /** `conv2dBackward`, a parameter name, `output`, or `saved` (a saved tensor that is no parameter). */
  readonly label: string;
  readonly shape?: readonly number[];
  readonly from: readonly string[];
}

export interface MakeDotOptions {
  /** Names for leaf tensors, as `model.namedParameters()` gives them (or a record). */
  readonly params?: Iterable<readonly [string, Tensor]> | Readonly<Record<string, Tensor>>;
  /** Draw the tensors each node saved for backward (default true). */
  readonly showSaved?: boolean;
}

type AutogradNode = NonNullable<Tensor['gradFn']>;

/** The drawable autograd graph of `outputs`. */
export function autogradGraph(outputs: Tensor | readonly Tensor[], opts: MakeDotOptions = {}): AutogradVizNode[] {
  const outs = outputs instanceof Tensor ? [outputs] : [...outputs];
  outs.forEach((t, i) => {
    if (!(t instanceof Tensor)) throw new TypeError(`makeDot: output ${i} is not a Tensor`);
  });
  const names = new Map<Tensor, string>();
  const params = opts.params ?? [];
  for (const [n, t] of Symbol.iterator in params ? (params as Iterable<readonly [string, Tensor]>) : Object.entries(params)) names.set(t, n);
  const showSaved = opts.showSaved ?? true;
  const result: AutogradVizNode[] = [];
  const nodeIds = new Map<AutogradNode, string>(), leafIds = new Map<Tensor, string>();
  let next = 0;
  const leafId = (t: Tensor): string => {
    let id = leafIds.get(t);
    if (!id) {
      leafIds.set(t, (id = `g${next++}`));
      result.push({ id, kind: 'leaf', label: names.get(t) ?? 'leaf', shape: [...t.shape], from: [] });
    }
    return id;
  };
  const visit = (node: AutogradNode): string => {
    const known = nodeIds.get(node);
    if (known) return known;
    const id = `g${next++}`;
    nodeIds.set(node, id);
    const from = node.edges.flatMap((e) => (!e ? [] : 'leaf' in e ? [leafId(e.leaf)] : [visit(e.node)]));
    // Saved tensors are listed before their node, as its other inputs are (a topological order).
    for (const s of showSaved ? node.savedTensors() : []) {
      const sid = `g${next++}`;
      result.push({ id: sid, kind: 'saved', label: names.get(s) ?? 'saved', shape: [...s.shape], from: [] });
      from.push(sid);
    }
    result.push({ id, kind: 'backward', label: node.name, from });
    return id;
  };
  outs.forEach((t, i) => {
    const src = t.gradFn ? visit(t.gradFn) : t.requiresGrad ? leafId(t) : undefined;
    result.push({ id: `g${next++}`, kind: 'output', label: outs.length > 1 ? `output ${i}` : 'output', shape: [...t.shape], from: src ? [src] : [] });
  });
  return result;
}

const esc = (s: string) => s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
const STYLE: Record<AutogradVizKind, string> = {
  backward: 'shape=box, style="rounded,filled", fillcolor="#d3d3d3"',
  leaf: 'shape=box, style=filled, fillcolor="#add8e6"',
  output: 'shape=box, style=filled, fillcolor="#caff70"',
  saved: 'shape=box, style=filled, fillcolor="#ffa500"',
};

/**
 * The autograd graph of `outputs` as Graphviz DOT (torchviz's make_dot): backward nodes grey,
 * parameters blue (named from `params`), outputs green, saved tensors orange with their shapes.
 * @example
 * const y = model.forward(x);
 * writeFileSync('graph.dot', makeDot(y, { params: model.namedParameters() }));  // dot -Tsvg graph.dot
 */
export function makeDot(outputs: Tensor | readonly Tensor[], opts: MakeDotOptions = {}): string {
  const g = autogradGraph(outputs, opts);
  const label = (n: AutogradVizNode) => (n.shape ? `${n.label}\n(${n.shape.join(', ')})` : n.label);
  return [
    'digraph autograd {',
    '  graph [rankdir=TB]; node [fontname="Helvetica", fontsize=10, height=0.2];',
    ...g.map((n) => `  ${n.id} [label="${esc(label(n))}", ${STYLE[n.kind]}];`),
    ...g.flatMap((n) => n.from.map((f) => `  ${f} -> ${n.id}${g.find((x) => x.id === f)?.kind === 'saved' ? ' [style=dashed, dir=none]' : ''};`)),
    '}',
    '',
  ].join('\n');
}

/** Backward nodes reachable from `outputs` (a count for summaries). */
export function countBackwardNodes(g: readonly AutogradVizNode[]): number {
  return g.filter((n) => n.kind === 'backward').length;
}

