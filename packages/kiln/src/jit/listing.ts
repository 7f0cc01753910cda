// `TracedModule.code`: the graph as a readable TypeScript-like function, one statement per node,
// with the module scope as a trailing comment. For reading only; the IR text is the real format.

import { nameValues, printAttrValue, printType, type Block, type Graph, type Node, type Value } from '@kiln/ir-spec';

export function graphListing(g: Graph): string {
  const names = nameValues(g);
  const id = (v: Value | null): string => {
    if (!v) return 'undefined';
    const n = names.get(v) ?? '?';
    const bare = n.replace(/^%/, '');
    return /^[A-Za-z_$][\w$]*$/.test(bare) ? bare : /^\d+$/.test(bare) ? `v${bare}` : `this[${JSON.stringify(bare)}]`;
  };
  const lines: string[] = [];
  const params = g.inputs.filter((i) => i.kind === 'input').map((i) => `${id(i.value)}: ${printType(i.value.type)}`);
  lines.push(`function forward(${params.join(', ')}) {`);
  const block = (b: Block, indent: string) => {
    for (const n of b.nodes) statement(n, indent);
  };
  const statement = (n: Node, indent: string) => {
    const outs = n.outputs.map(id);
    const lhs = outs.length === 1 ? `const ${outs[0]} = ` : outs.length ? `const [${outs.join(', ')}] = ` : '';
    const note = n.meta.scope ? `  // ${n.meta.scope}` : '';
    if (n.op === 'if') {
      lines.push(`${indent}let ${outs.join(', ')};${note}`);
      lines.push(`${indent}if (${id(n.inputs[0])}) {`);
      block(n.regions[0], indent + '  ');
      lines.push(`${indent}  ${assign(outs, n.regions[0].yields.map(id))}`);
      lines.push(`${indent}} else {`);
      block(n.regions[1], indent + '  ');
      lines.push(`${indent}  ${assign(outs, n.regions[1].yields.map(id))}`);
      lines.push(`${indent}}`);
      return;
    }
    if (n.op === 'loop') {
      const body = n.regions[0];
      const [i, ...carried] = body.args.map(id);
      const init = n.inputs.slice(2).map(id);
      lines.push(`${indent}let ${carried.map((c, k) => `${c} = ${init[k]}`).join(', ')};${note}`);
      const trips = n.inputs[0] ? `${i} < ${id(n.inputs[0])}` : 'true';
      lines.push(`${indent}for (let ${i} = 0, go = ${n.inputs[1] ? id(n.inputs[1]) : 'true'}; go && ${trips}; ${i}++) {`);
      block(body, indent + '  ');
      const ys = body.yields.map(id);
      lines.push(`${indent}  go = ${ys[0]};${carried.length ? ` ${assign(carried, ys.slice(1))}` : ''}`);
      lines.push(`${indent}}`);
      if (outs.length) lines.push(`${indent}${lhs}${outs.length === 1 ? carried[0] : `[${carried.join(', ')}]`};`);
      return;
    }
    const attrs = Object.keys(n.attrs).length ? `, ${printAttrValue(n.attrs)}` : '';
    lines.push(`${indent}${lhs}${n.op}(${n.inputs.map(id).join(', ')}${attrs});${note}`);
  };
  block(g.body, '  ');
  const outs = g.outputs.map((o) => `${JSON.stringify(o.name)}: ${id(o.value)}`);
  lines.push(`  return { ${outs.join(', ')} };`);
  lines.push('}');
  return lines.join('\n');
}

function assign(targets: string[], values: string[]): string {
  return targets.map((t, k) => `${t} = ${values[k]};`).join(' ');
}
