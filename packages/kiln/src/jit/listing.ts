// `TracedModule.code`: the graph as a readable TypeScript-like function, one statement per node,
// with the module scope as a trailing comment; parameters read as `this["features.0.weight"]`,
// literals as plain numbers. For reading only; the IR text is the real format.

import { nameValues, printAttrValue, printType, type Block, type Graph, type Node, type Value } from '@kiln/ir-spec';

export function graphListing(g: Graph): string {
  const names = nameValues(g);
  const paramValues = new Set(g.inputs.filter((i) => i.kind === 'param').map((i) => i.value));
  const id = (v: Value | null): string => {
    if (!v) return 'undefined';
    const n = names.get(v) ?? '?';
    const bare = n.replace(/^%/, '');
    const ident = /^[A-Za-z_$][\w$]*$/.test(bare);
    // Parameters and buffers read as the module's fields: `this.mask`, `this["features.0.weight"]`.
    if (paramValues.has(v)) return ident ? `this.${bare}` : `this[${JSON.stringify(bare)}]`;
    return ident ? bare : /^\d+$/.test(bare) ? `v${bare}` : `this[${JSON.stringify(bare)}]`;
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
      if (outs.length) lines.push(`${indent}let ${outs.join(', ')};${note}`);
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
    if ((n.op === 'constant' || n.op === 'scalar') && 'value' in n.attrs) {
      // A literal reads as one: `const v1 = 0;  // f32`.
      lines.push(`${indent}${lhs}${printAttrValue(n.attrs.value)};  // ${printType(n.outputs[0].type)}${n.meta.scope ? `, ${n.meta.scope}` : ''}`);
      return;
    }
    const args = [...n.inputs.map(id), ...(Object.keys(n.attrs).length ? [printAttrValue(n.attrs)] : [])];
    lines.push(`${indent}${lhs}${n.op}(${args.join(', ')});${note}`);
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
