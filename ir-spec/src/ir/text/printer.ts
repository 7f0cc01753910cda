// The printer of the IR text form (grammar in ir-spec/SPEC.md). Invariants: deterministic (the
// text depends only on the graph's content: names from names.ts, attributes sorted by key,
// numbers in their shortest round-trip form); total (any graph prints, even a malformed one, so
// error messages can show it); and `printGraph(parseGraph(printGraph(g)))` equals `printGraph(g)`.
// Tensor data is never printed: params and `constant {name}` refer to the tensor table by name.

import type { Block, Graph, Node, NodeMeta, Value } from '../graph.js';
import {
  printAttrDict, printGraphName, printMetaLoc, printMetaScope, printType, printValueName, printWord,
} from './format.js';
import { graphNamer, ValueNamer } from './names.js';

const INDENT = '  ';
/** Headers longer than this put each graph input on its own line. */
const MAX_HEADER = 100;

/**
 * The text form of a graph.
 *
 * @example
 * const b = new GraphBuilder('f');
 * const x = b.input('x', tensorType('float32', ['N', 4]));
 * b.output('y', b.op1('relu', [x]));
 * printGraph(b.build());
 * // graph @f(%x: f32[N,4]) -> (y: f32[N,4]) {
 * //   %0 = relu(%x) : f32[N,4]
 * //   return y=%0
 * // }
 */
export function printGraph(g: Graph): string {
  const namer = graphNamer(g);
  const ref = (v: Value) => printValueName(namer.get(v));
  const inputs = g.inputs.map((i) => `${i.kind === 'param' ? 'param ' : ''}${ref(i.value)}: ${printType(i.value.type)}`);
  const outputs = `(${g.outputs.map((o) => `${printWord(o.name)}: ${printType(o.value.type)}`).join(', ')})`;
  const meta = Object.keys(g.metadata).length ? ` metadata ${printAttrDict(g.metadata)}` : '';
  const tail = `) -> ${outputs}${meta} {`;
  const head = `graph ${printGraphName(g.name)}(`;
  const oneLine = head + inputs.join(', ') + tail;
  const lines = [oneLine.length <= MAX_HEADER || inputs.length < 2 ? oneLine : `${head}\n${inputs.map((s) => INDENT + INDENT + s).join(',\n')}\n${tail}`];
  printNodes(g.body.nodes, namer, INDENT, lines);
  lines.push(`${INDENT}return${g.outputs.length ? ' ' : ''}${g.outputs.map((o) => `${printWord(o.name)}=${ref(o.value)}`).join(', ')}`);
  lines.push('}');
  return lines.join('\n') + '\n';
}

/**
 * One node (with its regions) in text form, as a line of `printGraph` shows it. Pass the
 * graph's names (`nameValues(g)`) to name values as the whole graph's text does; without them
 * the node's own inputs and results are numbered from 0.
 *
 * @example
 * printNode(node, nameValues(g)); // '%3, %4 = max_pool2d(%2) {...} : f32[N,4,4,4], i32[N,4,4,4]'
 */
export function printNode(node: Node, names?: ReadonlyMap<Value, string>): string {
  const namer = new ValueNamer(null, names);
  if (!names) node.inputs.forEach((v) => { if (v) namer.define(v); });
  namer.defineNode(node);
  const lines: string[] = [];
  printNodes([node], namer, '', lines);
  return lines.join('\n');
}

function printNodes(nodes: readonly Node[], namer: ValueNamer, indent: string, lines: string[]): void {
  for (const n of nodes) printOne(n, namer, indent, lines);
}

function printOne(n: Node, namer: ValueNamer, indent: string, lines: string[]): void {
  const ref = (v: Value | null) => (v ? printValueName(namer.get(v)) : 'none');
  const results = n.outputs.length ? `${n.outputs.map(ref).join(', ')} = ` : '';
  const attrs = Object.keys(n.attrs).some((k) => n.attrs[k] !== undefined) ? ` ${printAttrDict(n.attrs)}` : '';
  let text = `${indent}${results}${printWord(n.op)}(${n.inputs.map(ref).join(', ')})${attrs}`;
  if (n.regions.length) {
    text += ' (';
    n.regions.forEach((r, i) => {
      lines.push(`${text}${i ? ', ' : ''}{`);
      printBlock(r, namer, indent, lines);
      text = `${indent}}`;
    });
    text += ')';
  }
  if (n.outputs.length) text += ` : ${n.outputs.map((o) => printType(o.type)).join(', ')}`;
  lines.push(text + printMeta(n.meta));
}

/** A region: `^(args):` at the owner's indent (omitted without args), nodes, then `yield`. */
function printBlock(b: Block, namer: ValueNamer, indent: string, lines: string[]): void {
  const ref = (v: Value) => printValueName(namer.get(v));
  if (b.args.length) lines.push(`${indent}^(${b.args.map((a) => `${ref(a)}: ${printType(a.type)}`).join(', ')}):`);
  printNodes(b.nodes, namer, indent + INDENT, lines);
  lines.push(`${indent}${INDENT}yield${b.yields.length ? ' ' : ''}${b.yields.map(ref).join(', ')}`);
}

/** `  // scope @ loc`, `  // scope`, `  // @ loc`, or nothing. */
function printMeta(meta: NodeMeta): string {
  const scope = typeof meta.scope === 'string' ? printMetaScope(meta.scope) : undefined;
  const loc = typeof meta.loc === 'string' ? printMetaLoc(meta.loc) : undefined;
  if (scope === undefined && loc === undefined) return '';
  return `  // ${[scope, loc === undefined ? undefined : `@ ${loc}`].filter((s) => s !== undefined).join(' ')}`;
}
