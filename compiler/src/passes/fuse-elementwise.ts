// Pass `fuse-elementwise`: a tree of float32 elementwise ops whose intermediate results each
// have one user becomes ONE fused_elementwise node whose element body holds those ops, in order:
//   relu(add(mul(%x, 2), %b))  →  fused_elementwise(%x, %b) ({ ^(%e0, %e1): %c = constant 2;
//                                 %m = mul(%e0, %c); %s = add(%m, %e1); %r = relu(%s); yield %r })
// Which ops fuse comes from their entries (isFusable: an elementwise entry with a scalar); a
// fused_elementwise met as a producer is absorbed by copying its body's nodes.
// Invariant: only intermediates read by nothing else are absorbed (shared ones stay inputs),
// and since elementwise ops commute with broadcasting, evaluating the whole tree per output
// element computes what the separate nodes computed. A fused node never reads more tensors than
// its kernel may bind: inputs + 1 output ≤ `maxStorageBuffers` (WebGPU's default per-stage limit,
// 8, unless the target says otherwise); a tree that would need more is split — the subtree that
// does not fit stays a separate node (itself fused as far as it fits) whose result is an input.

import { Block, isFusable, Node, tensorType, Value, type Graph } from '@kiln/ir-spec';
import { countUses, rewriteGraph, type RewriteContext } from '../rewrite.js';

/** WebGPU's guaranteed `maxStorageBuffersPerShaderStage` (a device may allow more). */
export const WEBGPU_DEFAULT_STORAGE_BUFFERS = 8;

export interface FuseElementwiseOptions {
  /** Storage buffers one kernel may bind (its inputs and its output); default 8, WebGPU's default limit. */
  readonly maxStorageBuffers?: number;
  /**
   * Fuse only chains whose result has at most this many elements (a known size; default: any).
   * jit.compile's training graphs on the CPU fuse small chains (the batch norms' running
   * statistics: there the cost per node is the run's, not the loop's) and leave large ones to
   * the per-op WebAssembly kernels.
   */
  readonly maxElements?: number;
}

const ELEMENT = tensorType('float32', []);
const isF32 = (v: Value | null) => !!v && v.type.kind === 'tensor' && v.type.dtype === 'float32';

/** What a node this pass may absorb computes: an element body over its inputs (one node for a plain op). */
interface Source { readonly inputs: readonly Value[]; readonly body: Block }

function sourceOf(n: Node): Source | undefined {
  if (n.op === 'fused_elementwise') return { inputs: n.inputs as Value[], body: n.regions[0] };
  if (!isFusable(n.op) || !n.inputs.every(isF32) || !isF32(n.outputs[0])) return undefined;
  const args = n.inputs.map(() => new Value(ELEMENT)), y = new Value(ELEMENT);
  return { inputs: n.inputs as Value[], body: new Block(args, [new Node(n.op, args, n.attrs, [y], [], n.meta)], [y]) };
}

/** The operand slots of `s`'s body that read one of its arguments (not literals or body results). */
const inputSlots = (s: Source) => s.body.nodes.reduce((k, n) => k + n.inputs.filter((v) => s.body.args.includes(v!)).length, 0);

/**
 * An operand of a body under construction: a body value, or a literal that becomes a constant
 * node right before the node that reads it (one per use, as the tree spelled it).
 */
type Operand = Value | number;

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
  const maxElements = opts.maxElements ?? Infinity;
  const uses = countUses(g);
  const out = rewriteGraph(g, (node, ctx) => {
    const own = sourceOf(node);
    if (!own || node.op === 'fused_elementwise') return [node];
    if (maxElements < Infinity && !(knownSize(node.outputs[0]) <= maxElements)) return [node];
    if (new Set(node.inputs).size > maxInputs) return [node];
    // The body being built: the fused node's inputs with their body arguments, and its nodes.
    const inputs: Value[] = [], args: Value[] = [], nodes: Node[] = [];
    const memo = new Map<Value, Operand>();
    let absorbed = 0;

    const inputArg = (v: Value): Value => {
      let k = inputs.indexOf(v);
      if (k < 0) { k = inputs.length; inputs.push(v); args.push(new Value(ELEMENT)); }
      return args[k];
    };
    // `reserve`: operand slots still to be resolved after this one, each of which may need an input.
    const operandOf = (v: Value, reserve: number): Operand => {
      const known = memo.get(v);
      if (known !== undefined) return known;
      const lit = literal(ctx, v);
      if (lit !== undefined) return lit;
      const d = ctx.def(v);
      const sub = d && uses.get(v) === 1 && d.outputs.length === 1 ? sourceOf(d) : undefined;
      if (sub) {
        const mark = { inputs: inputs.length, nodes: nodes.length, memo: [...memo.keys()], absorbed };
        const ref = emit(sub, reserve);
        if (inputs.length + reserve <= maxInputs) {
          absorbed++;
          memo.set(v, ref);
          return ref;
        }
        // Over the binding limit: undo, and read the subtree's result as an input instead.
        inputs.length = args.length = mark.inputs;
        nodes.length = mark.nodes;
        for (const k of [...memo.keys()]) if (!mark.memo.includes(k)) memo.delete(k);
        absorbed = mark.absorbed;
      }
      const ref = inputArg(v);
      memo.set(v, ref);
      return ref;
    };
    /** `o` as a body value: a literal becomes a constant node here. */
    const valueOf = (o: Operand): Value => {
      if (typeof o !== 'number') return o;
      const c = new Node('constant', [], { dtype: 'float32', value: o }, [new Value(ELEMENT)]);
      nodes.push(c);
      return c.outputs[0];
    };
    /** Appends `s`'s body nodes (resolving its inputs, absorbing producers); returns its result. */
    const emit = (s: Source, reserve: number): Operand => {
      let pending = inputSlots(s);
      const local = new Map<Value, Operand>();
      const resolve = (v: Value): Operand => {
        const l = local.get(v);
        if (l !== undefined) return l;
        pending--;
        return operandOf(s.inputs[s.body.args.indexOf(v)], reserve + pending);
      };
      for (const n of s.body.nodes) {
        if (n.op === 'constant') { local.set(n.outputs[0], n.attrs.value as number); continue; }
        const ops = n.inputs.map((v) => resolve(v!));
        const m = new Node(n.op, ops.map(valueOf), n.attrs, [new Value(ELEMENT)], [], n.meta); // keeps its provenance
        nodes.push(m);
        local.set(n.outputs[0], m.outputs[0]);
      }
      return resolve(s.body.yields[0]);
    };

    const result = emit(own, 0);
    if (absorbed === 0 || inputs.length > maxInputs) return [node];
    const body = new Block(args, nodes, [valueOf(result)]);
    return [ctx.node('fused_elementwise', inputs, {}, node.meta, node.outputs, [body])];
  });
  // The absorbed producers are now unused: the pipeline's sweep (runPass) removes them.
  return out;
}

/** A tensor value's element count, NaN while a dim is symbolic. */
function knownSize(v: Value): number {
  if (v.type.kind !== 'tensor') return NaN;
  let n = 1;
  for (const d of v.type.shape) n *= typeof d === 'number' ? d : NaN;
  return n;
}

/** A float 0-d literal constant's value (it becomes a literal node in the body). */
function literal(ctx: RewriteContext, v: Value): number | undefined {
  const d = ctx.def(v, { outer: true }); // reading a literal absorbs nothing
  if (!d || d.op !== 'constant' || typeof d.attrs.value !== 'number' || d.attrs.dtype !== 'float32') return undefined;
  return Math.fround(d.attrs.value);
}
