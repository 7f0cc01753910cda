// The drawing model shared by the DOT and HTML renderers: a tree of blocks (the graph body,
// then each if/loop region and each fused_elementwise's element body) holding nodes with op, output types, module scope and whether the
// node is a fused kernel, plus the edges between them. Invariant: one VizNode per graph node
// (regions included), so `countOps` equals the graph's node count; graph inputs, outputs, region
// arguments and yields are extra nodes of their own kinds.

import { nameValues, typeToString, type Block, type Graph, type Value } from '../ir/index.js';

export type VizKind = 'op' | 'input' | 'param' | 'output' | 'arg' | 'yield';

export interface VizNode {
  readonly id: string;
  readonly kind: VizKind;
  /** The op name, or the input/output name. */
  readonly label: string;
  /** Output types (`f32[N,8]`), one per output. */
  readonly types: readonly string[];
  readonly scope?: string;
  readonly loc?: string;
  /** A fused kernel (fused_conv2d, fused_linear, fused_elementwise). */
  readonly fused: boolean;
  readonly regions: readonly VizBlock[];
  /** Ids of the nodes whose values this node reads. */
  readonly from: readonly string[];
}

export interface VizBlock {
  readonly id: string;
  readonly label: string;
  readonly nodes: readonly VizNode[];
}

/** The drawing model of `g`; weights (params) are left out unless `params`. */
export function vizModel(g: Graph, opts: { params?: boolean } = {}): VizBlock {
  const names = nameValues(g);
  const producer = new Map<Value, string>();
  let next = 0;
  const fresh = () => `n${next++}`;
  const top: VizNode[] = [];
  for (const i of g.inputs) {
    if (i.kind === 'param' && !opts.params) continue;
    const id = fresh();
    producer.set(i.value, id);
    top.push({ id, kind: i.kind, label: i.name, types: [typeToString(i.value.type)], fused: false, regions: [], from: [] });
  }
  const from = (vs: readonly (Value | null)[]) => [...new Set(vs.flatMap((v) => (v && producer.has(v) ? [producer.get(v)!] : [])))];

  const walk = (b: Block, label: string): VizBlock => {
    const id = `cluster_${next++}`;
    const nodes: VizNode[] = [];
    for (const a of b.args) {
      const aid = fresh();
      producer.set(a, aid);
      nodes.push({ id: aid, kind: 'arg', label: names.get(a) ?? 'arg', types: [typeToString(a.type)], fused: false, regions: [], from: [] });
    }
    for (const n of b.nodes) {
      const nid = fresh();
      const regions = n.regions.map((r, k) => walk(r, regionLabel(n.op, k)));
      const named = n.op === 'constant' && typeof n.attrs.name === 'string' ? ` ${n.attrs.name}` : '';
      nodes.push({
        id: nid, kind: 'op', label: `${n.op}${named}`, types: n.outputs.map((o) => typeToString(o.type)), scope: n.meta.scope, loc: n.meta.loc,
        fused: n.op.startsWith('fused_'), regions, from: from(n.inputs),
      });
      for (const o of n.outputs) producer.set(o, nid);
    }
    if (b.yields.length) nodes.push({ id: fresh(), kind: 'yield', label: 'yield', types: [], fused: false, regions: [], from: from(b.yields) });
    return { id, label, nodes };
  };
  const body = walk(g.body, `@${g.name}`);
  const outs = g.outputs.map((o): VizNode => ({ id: fresh(), kind: 'output', label: o.name, types: [typeToString(o.value.type)], fused: false, regions: [], from: from([o.value]) }));
  return { id: body.id, label: body.label, nodes: [...top, ...body.nodes, ...outs] };
}

function regionLabel(op: string, k: number): string {
  if (op === 'if') return k === 0 ? 'then' : 'else';
  if (op === 'loop') return 'loop body';
  if (op === 'fused_elementwise') return 'element body';
  return `${op} region ${k}`;
}

/** The number of op nodes in the model (equals the graph's node count, regions included). */
export function countOps(b: VizBlock): number {
  return b.nodes.reduce((n, v) => n + (v.kind === 'op' ? 1 : 0) + v.regions.reduce((m, r) => m + countOps(r), 0), 0);
}
