// Graphviz DOT for a VizBlock tree. Invariant: deterministic text (ids from the model), regions
// as `subgraph cluster_*`, fused kernels outlined (bold, double border), every label escaped.

import type { VizBlock, VizNode } from './model.js';

const esc = (s: string) => s.replace(/\\/g, '\\\\').replace(/"/g, '\\"');

const SHAPES: Record<VizNode['kind'], string> = {
  op: 'box, style="rounded,filled", fillcolor="#eef3fb"',
  input: 'ellipse, style=filled, fillcolor="#e3f4e1"',
  param: 'note, style=filled, fillcolor="#f4f1e1"',
  output: 'ellipse, style=filled, fillcolor="#fbe9e7"',
  arg: 'ellipse, style=dashed',
  yield: 'cds, style=dashed',
};

function nodeLine(n: VizNode, indent: string): string {
  const lines = [n.label, ...n.types];
  if (n.scope) lines.push(n.scope);
  const extra = n.fused ? ', penwidth=2.5, peripheries=2, color="#c2410c", fillcolor="#fff3e8"' : '';
  const tip = n.loc ? `, tooltip="${esc(n.loc)}"` : '';
  return `${indent}${n.id} [label="${lines.map(esc).join('\\n')}", shape=${SHAPES[n.kind]}${extra}${tip}];`;
}

function blockLines(b: VizBlock, indent: string, edges: string[]): string[] {
  const out: string[] = [];
  for (const n of b.nodes) {
    out.push(nodeLine(n, indent));
    for (const f of n.from) edges.push(`  ${f} -> ${n.id};`);
    n.regions.forEach((r) => {
      out.push(`${indent}subgraph ${r.id} {`, `${indent}  label="${esc(`${n.label}: ${r.label}`)}"; style="rounded,dashed"; color="#64748b";`);
      out.push(...blockLines(r, `${indent}  `, edges));
      out.push(`${indent}}`);
      const y = r.nodes.find((x) => x.kind === 'yield');
      if (y) edges.push(`  ${y.id} -> ${n.id} [style=dashed];`);
    });
  }
  return out;
}

/** The DOT text of a drawing model. */
export function toDot(b: VizBlock, title: string): string {
  const edges: string[] = [];
  const body = blockLines(b, '  ', edges);
  return [
    `digraph "${esc(title)}" {`,
    '  rankdir=TB; node [fontname="Helvetica", fontsize=10]; edge [color="#475569"];',
    ...body,
    ...edges,
    '}',
    '',
  ].join('\n');
}
