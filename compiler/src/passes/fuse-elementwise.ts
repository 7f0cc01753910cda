// Pass `fuse-elementwise`: a tree of float32 elementwise ops whose intermediate results each
// have one user becomes ONE fused_elementwise node, whose program lists the ops in order:
//   relu(add(mul(%x, 2), %b))  →  fused_elementwise(%x, %b) {program=[["mul","x0",2],["add","t0","x1"],["relu","t1"]]}
// Invariant: only intermediates read by nothing else are absorbed (shared ones stay inputs),
// and since elementwise ops commute with broadcasting, evaluating the whole tree per output
// element computes what the separate nodes computed.

import { fused, type Graph, type Node, type Value } from '@kiln/ir-spec';
import { countUses, rewriteGraph, type RewriteContext } from '../rewrite.js';
import { eliminateDeadCode } from './eliminate-dead-code.js';

type Arg = string | number;
type Instr = Arg[];
interface Program { inputs: Value[]; code: Instr[] }

const fusable = (op: string) => op in fused.FUSED_UNARY || op in fused.FUSED_BINARY;
const isF32 = (v: Value | null) => !!v && v.type.kind === 'tensor' && v.type.dtype === 'float32';

/** The program of a node this pass may absorb (a plain fusable op or a fused_elementwise). */
function programOf(n: Node): Program | undefined {
  if (n.op === 'fused_elementwise') return { inputs: n.inputs as Value[], code: n.attrs.program as Instr[] };
  if (fusable(n.op) && n.inputs.every(isF32) && isF32(n.outputs[0])) return { inputs: n.inputs as Value[], code: [[n.op, ...n.inputs.map((_, i) => `x${i}`)]] };
  return undefined;
}

/** Appends `p` to `out`, mapping its inputs through `argOf`; returns the ref of its result. */
function append(out: Program, p: Program, argOf: (v: Value) => Arg): Arg {
  const base = out.code.length;
  for (const [op, ...args] of p.code) {
    out.code.push([op, ...args.map((a) => (typeof a === 'number' ? a : a[0] === 'x' ? argOf(p.inputs[Number(a.slice(1))]) : `t${base + Number(a.slice(1))}`))]);
  }
  return `t${out.code.length - 1}`;
}

/**
 * Fuses chains of elementwise ops into fused_elementwise nodes.
 *
 * @example
 * fuseElementwise(g); // sigmoid(mul(%x, %y)) becomes one node
 */
export function fuseElementwise(g: Graph): Graph {
  const uses = countUses(g);
  const out = rewriteGraph(g, (node, ctx) => {
    const own = programOf(node);
    if (!own || node.op === 'fused_elementwise') return [node];
    let absorbed = 0;
    const prog: Program = { inputs: [], code: [] };
    const inputArg = (v: Value): Arg => {
      let k = prog.inputs.indexOf(v);
      if (k < 0) { k = prog.inputs.length; prog.inputs.push(v); }
      return `x${k}`;
    };
    const argOf = (v: Value): Arg => {
      const lit = literal(ctx, v);
      if (lit !== undefined) return lit;
      const d = ctx.def(v);
      const sub = d && uses.get(v) === 1 && d.outputs.length === 1 ? programOf(d) : undefined;
      if (!sub) return inputArg(v);
      absorbed++;
      return append(prog, sub, argOf);
    };
    append(prog, own, argOf);
    if (absorbed === 0) return [node];
    return [ctx.node('fused_elementwise', prog.inputs, { program: prog.code }, node.meta, node.outputs)];
  });
  return out === g ? g : eliminateDeadCode(out);
}

/** A float 0-d literal constant's value (it becomes a number in the program). */
function literal(ctx: RewriteContext, v: Value): number | undefined {
  const d = ctx.def(v);
  if (!d || d.op !== 'constant' || typeof d.attrs.value !== 'number' || d.attrs.dtype !== 'float32') return undefined;
  return Math.fround(d.attrs.value);
}
