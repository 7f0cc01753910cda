// Pass `fuse-elementwise`: a tree of float32 elementwise ops whose intermediate results each
// have one user becomes ONE fused_elementwise node whose element body holds those ops, in order:
//   relu(add(mul(%x, 2), %b))  →  fused_elementwise(%x, %b) ({^(%e0, %e1): mul(%e0, 2) → add(·, %e1) → relu(·); yield})
// Which ops fuse comes from their entries (isFusable: an elementwise entry with a scalar). While
// it grows a tree the pass keeps it as a list of instructions `[op, arg, arg?]` (`x<k>` input k,
// `t<k>` instruction k's result, or a literal), easy to cut back when a subtree does not fit;
// the node it emits holds the body those instructions spell (programToBody).
// Invariant: only intermediates read by nothing else are absorbed (shared ones stay inputs),
// and since elementwise ops commute with broadcasting, evaluating the whole tree per output
// element computes what the separate nodes computed. A fused node never reads more tensors than
// its kernel may bind: inputs + 1 output ≤ `maxStorageBuffers` (WebGPU's default per-stage limit,
// 8, unless the target says otherwise); a tree that would need more is split — the subtree that
// does not fit stays a separate node (itself fused as far as it fits) whose result is an input.

import { bodyToProgram, isFusable, programToBody, type Graph, type Node, type Value } from '@kiln/ir-spec';
import { countUses, rewriteGraph, type RewriteContext } from '../rewrite.js';

type Arg = string | number;
type Instr = Arg[];
interface Program { inputs: Value[]; code: Instr[] }

/** WebGPU's guaranteed `maxStorageBuffersPerShaderStage` (a device may allow more). */
export const WEBGPU_DEFAULT_STORAGE_BUFFERS = 8;

export interface FuseElementwiseOptions {
  /** Storage buffers one kernel may bind (its inputs and its output); default 8, WebGPU's default limit. */
  readonly maxStorageBuffers?: number;
}

const isF32 = (v: Value | null) => !!v && v.type.kind === 'tensor' && v.type.dtype === 'float32';

/** The program of a node this pass may absorb (a plain fusable op or a fused_elementwise). */
function programOf(n: Node): Program | undefined {
  if (n.op === 'fused_elementwise') return { inputs: n.inputs as Value[], code: bodyToProgram(n.regions[0]) as Instr[] };
  if (isFusable(n.op) && n.inputs.every(isF32) && isF32(n.outputs[0])) return { inputs: n.inputs as Value[], code: [[n.op, ...n.inputs.map((_, i) => `x${i}`)]] };
  return undefined;
}

/** The operand slots of `p` that read one of its inputs (not literals or temporaries). */
const inputSlots = (p: Program) => p.code.reduce((n, [, ...args]) => n + args.filter((a) => typeof a === 'string' && a[0] === 'x').length, 0);

/**
 * Fuses chains of elementwise ops into fused_elementwise nodes of at most
 * `maxStorageBuffers - 1` inputs.
 *
 * @example
 * fuseElementwise(g); // sigmoid(mul(%x, %y)) becomes one node
 * fuseElementwise(g, { maxStorageBuffers: 10 }); // for an adapter that binds 10 storage buffers
 */
export function fuseElementwise(g: Graph, opts: FuseElementwiseOptions = {}): Graph {
  const limit = opts.maxStorageBuffers ?? WEBGPU_DEFAULT_STORAGE_BUFFERS;
  if (!Number.isInteger(limit) || limit < 2) throw new RangeError(`fuseElementwise: maxStorageBuffers must be an integer >= 2 (one input and the output), got ${limit}`);
  const maxInputs = limit - 1;
  const uses = countUses(g);
  const out = rewriteGraph(g, (node, ctx) => {
    const own = programOf(node);
    if (!own || node.op === 'fused_elementwise') return [node];
    if (new Set(node.inputs).size > maxInputs) return [node];
    const prog: Program = { inputs: [], code: [] };
    const memo = new Map<Value, Arg>();
    let absorbed = 0;

    const inputArg = (v: Value): Arg => {
      let k = prog.inputs.indexOf(v);
      if (k < 0) { k = prog.inputs.length; prog.inputs.push(v); }
      return `x${k}`;
    };
    // `reserve`: operand slots still to be resolved after this one, each of which may need an input.
    const argOf = (v: Value, reserve: number): Arg => {
      const known = memo.get(v);
      if (known !== undefined) return known;
      const lit = literal(ctx, v);
      if (lit !== undefined) return lit;
      const d = ctx.def(v);
      const sub = d && uses.get(v) === 1 && d.outputs.length === 1 ? programOf(d) : undefined;
      if (sub) {
        const mark = { inputs: prog.inputs.length, code: prog.code.length, memo: [...memo.keys()], absorbed };
        const ref = emit(sub, reserve);
        if (prog.inputs.length + reserve <= maxInputs) {
          absorbed++;
          memo.set(v, ref);
          return ref;
        }
        // Over the binding limit: undo, and read the subtree's result as an input instead.
        prog.inputs.length = mark.inputs;
        prog.code.length = mark.code;
        for (const k of [...memo.keys()]) if (!mark.memo.includes(k)) memo.delete(k);
        absorbed = mark.absorbed;
      }
      const ref = inputArg(v);
      memo.set(v, ref);
      return ref;
    };
    /** Appends `p`'s code (resolving its inputs, absorbing producers); returns its result's ref. */
    const emit = (p: Program, reserve: number): Arg => {
      let pending = inputSlots(p);
      const local: Arg[] = [];
      for (const [op, ...args] of p.code) {
        const mapped = args.map((a) => {
          if (typeof a === 'number') return a;
          if (a[0] === 't') return local[Number(a.slice(1))];
          pending--;
          return argOf(p.inputs[Number(a.slice(1))], reserve + pending);
        });
        prog.code.push([op as string, ...mapped]);
        local.push(`t${prog.code.length - 1}`);
      }
      return local[local.length - 1];
    };

    emit(own, 0);
    if (absorbed === 0 || prog.inputs.length > maxInputs) return [node];
    return [ctx.node('fused_elementwise', prog.inputs, {}, node.meta, node.outputs, [programToBody(prog.code, prog.inputs.length)])];
  });
  // The absorbed producers are now unused: the pipeline's sweep (runPass) removes them.
  return out;
}

/** A float 0-d literal constant's value (it becomes a literal node in the body). */
function literal(ctx: RewriteContext, v: Value): number | undefined {
  const d = ctx.def(v, { outer: true }); // reading a literal absorbs nothing
  if (!d || d.op !== 'constant' || typeof d.attrs.value !== 'number' || d.attrs.dtype !== 'float32') return undefined;
  return Math.fround(d.attrs.value);
}
