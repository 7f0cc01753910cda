// Pure graph rewriting shared by the passes. Invariants: the input graph is never mutated (its
// Blocks, Nodes and Values are reused only where unchanged, which is safe because they are
// immutable); a rewrite that emits every node unchanged returns the SAME graph object; a value
// replaced through `replace` is substituted in every later input, region, yield and output;
// `def` never looks across a region boundary unless the caller asks for outer producers, so a
// node inside a `loop`/`if` body cannot absorb (and recompute every trip) a node outside it; an
// element body (fused_elementwise's region, hasElementBody) is part of its node's kernel and is
// never entered, so no rule matches inside it or across its boundary.

import {
  Block, Graph, hasEffects, hasElementBody, inferTypes, Node, Value, walkNodes,
  type Attrs, type GraphInput, type NodeMeta, type TensorData,
} from '@kiln/ir-spec';

/** What a pass's visitor may do while a graph is rebuilt. */
export class RewriteContext {
  readonly subst = new Map<Value, Value>();
  /** Defining node of every value emitted so far (and of the original graph's values). */
  readonly defs = new Map<Value, Node>();
  readonly tensors: Map<string, TensorData>;
  changed = false;
  /** The block (of the input graph) each node output is defined in. */
  private readonly blockOf = new Map<Value, Block>();
  /** The block whose nodes are being visited (new nodes are emitted into it). */
  private block: Block;

  constructor(readonly graph: Graph) {
    this.tensors = new Map(graph.tensors);
    this.block = graph.body;
    const index = (b: Block) => {
      for (const n of b.nodes) {
        for (const o of n.outputs) { this.defs.set(o, n); this.blockOf.set(o, b); }
        n.regions.forEach(index);
      }
    };
    index(graph.body);
  }

  /** Runs `f` with `b` as the block being visited (rewriteBlock's bookkeeping). */
  inBlock<T>(b: Block, f: () => T): T {
    const outer = this.block;
    this.block = b;
    try { return f(); } finally { this.block = outer; }
  }

  /** Records `n` as the producer of its results, in the block being visited. */
  define(n: Node): void {
    for (const o of n.outputs) { this.defs.set(o, n); this.blockOf.set(o, this.block); }
  }

  /** The value `v` now stands for. */
  resolve(v: Value): Value {
    let r = v;
    for (let s = this.subst.get(r); s; s = this.subst.get(r)) r = s;
    return r;
  }

  /** Every later use of `from` reads `to` instead (same type). */
  replace(from: Value, to: Value): void {
    if (from !== to) { this.subst.set(from, to); this.changed = true; }
  }

  /**
   * The node defining `v`, if `v` is a node output in the block being visited. A producer in an
   * enclosing block is returned only with `{ outer: true }`: a rule may read it (a constant's
   * data) but must not absorb it, or a loop body would recompute it every trip.
   */
  def(v: Value | null, opts?: { readonly outer?: boolean }): Node | undefined {
    if (!v) return undefined;
    const r = this.resolve(v);
    if (!opts?.outer && this.blockOf.get(r) !== this.block) return undefined;
    return this.defs.get(r);
  }

  /**
   * The tensor a `constant {name}` or literal constant node holds, or undefined. Constants of
   * enclosing blocks count: reading data absorbs nothing.
   */
  constantData(v: Value | null): TensorData | undefined {
    const n = this.def(v, { outer: true });
    if (!n || n.op !== 'constant') return undefined;
    if (typeof n.attrs.name === 'string') return this.tensors.get(n.attrs.name);
    const value = n.attrs.value;
    if (typeof value !== 'number' && typeof value !== 'boolean') return undefined;
    const dtype = n.attrs.dtype === 'int32' ? 'int32' : n.attrs.dtype === 'bool' ? 'bool' : 'float32';
    const data = dtype === 'float32' ? new Float32Array([Number(value)]) : dtype === 'int32' ? new Int32Array([Number(value)]) : new Uint8Array([Number(value)]);
    return { dtype, shape: [], data };
  }

  /** Adds a tensor under a fresh name derived from `base`; returns the name. */
  addTensor(base: string, data: TensorData): string {
    let name = base, k = 1;
    while (this.tensors.has(name)) name = `${base}_${k++}`;
    this.tensors.set(name, data);
    this.changed = true;
    return name;
  }

  /**
   * A new node of `op`, typed by the registry; `outputs` reuses existing result values (their
   * types must match, which is checked) so readable names survive a rewrite.
   */
  node(op: string, inputs: readonly (Value | null)[], attrs: Record<string, unknown>, meta: NodeMeta, outputs?: readonly Value[], regions: readonly Block[] = []): Node {
    const { attrs: parsed, types } = inferTypes(op, inputs.map((v) => v?.type ?? null), attrs as Attrs, { tensors: this.tensors }, regions);
    const outs = outputs ?? types.map((t) => new Value(t));
    if (outputs) {
      types.forEach((t, i) => {
        if (JSON.stringify(t) !== JSON.stringify(outputs[i].type)) throw new Error(`rewrite: ${op} gives ${JSON.stringify(t)} for result ${i}, expected ${JSON.stringify(outputs[i].type)}`);
      });
    }
    const n = new Node(op, [...inputs], parsed, outs, [...regions], meta);
    this.define(n);
    this.changed = true;
    return n;
  }

  /** A `constant {name}` node for a new tensor table entry. */
  constant(base: string, data: TensorData, meta: NodeMeta = {}): Node {
    return this.node('constant', [], { name: this.addTensor(base, data) }, meta);
  }
}

/**
 * Visits one node (inputs already substituted, regions already rewritten) and returns the
 * nodes to emit in its place: `[node]` keeps it, `[]` drops it (after `ctx.replace` of its
 * results, or when they are unused).
 */
export type NodeVisitor = (node: Node, ctx: RewriteContext) => Node[];

function rewriteBlock(b: Block, visit: NodeVisitor, ctx: RewriteContext): Block {
  const nodes: Node[] = [];
  let same = true;
  for (const old of b.nodes) {
    const regions = hasElementBody(old) ? old.regions : old.regions.map((r) => ctx.inBlock(r, () => rewriteBlock(r, visit, ctx)));
    const inputs = old.inputs.map((v) => (v ? ctx.resolve(v) : null));
    const touched = regions.some((r, i) => r !== old.regions[i]) || inputs.some((v, i) => v !== old.inputs[i]);
    const node = touched ? new Node(old.op, inputs, old.attrs, old.outputs, regions, old.meta) : old;
    if (touched) ctx.define(node);
    const out = visit(node, ctx);
    if (out.length !== 1 || out[0] !== old) same = false;
    nodes.push(...out);
  }
  const yields = b.yields.map((v) => ctx.resolve(v));
  if (same && yields.every((v, i) => v === b.yields[i])) return b;
  return new Block(b.args, nodes, yields);
}

/** Rebuilds `g` through `visit`; returns `g` itself when nothing changed. */
export function rewriteGraph(g: Graph, visit: NodeVisitor, prepare?: (ctx: RewriteContext) => void): Graph {
  const ctx = new RewriteContext(g);
  prepare?.(ctx);
  const body = rewriteBlock(g.body, visit, ctx);
  const outputs = g.outputs.map((o) => ({ name: o.name, value: ctx.resolve(o.value) }));
  if (body === g.body && !ctx.changed && outputs.every((o, i) => o.value === g.outputs[i].value)) return g;
  return new Graph(g.name, g.inputs, body, outputs, ctx.tensors, g.metadata);
}

/** A copy of `g` with other inputs / tensor table (the body and outputs are shared). */
export function withParts(g: Graph, parts: { inputs?: readonly GraphInput[]; body?: Block; tensors?: ReadonlyMap<string, TensorData> }): Graph {
  return new Graph(g.name, parts.inputs ?? g.inputs, parts.body ?? g.body, g.outputs, parts.tensors ?? g.tensors, g.metadata);
}

/** Number of uses of every value (regions, yields and graph outputs count). */
export function countUses(g: Graph): Map<Value, number> {
  const uses = new Map<Value, number>();
  const use = (v: Value | null) => { if (v) uses.set(v, (uses.get(v) ?? 0) + 1); };
  const visit = (b: Block) => {
    for (const n of b.nodes) { n.inputs.forEach(use); n.regions.forEach(visit); }
    b.yields.forEach(use);
  };
  visit(g.body);
  g.outputs.forEach((o) => use(o.value));
  return uses;
}

/**
 * Number of uses of every value by LIVE nodes: a node none of whose results is used (to a
 * fixpoint, as eliminate-dead-code decides) and that has no effects does not count, so a
 * rewrite that left its absorbed producer behind (swept later by the pipeline) still sees the
 * producer's operands as single-use; a dead node's results count 0.
 */
export function countLiveUses(g: Graph): Map<Value, number> {
  const uses = countUses(g);
  const dead = new Set<Node>();
  const producer = new Map<Value, Node>();
  for (const n of walkNodes(g.body)) for (const o of n.outputs) producer.set(o, n);
  const unused = (n: Node) => !dead.has(n) && !hasEffects(n) && n.outputs.every((o) => (uses.get(o) ?? 0) === 0);
  const work: Node[] = [];
  const drop = (v: Value | null) => {
    if (!v) return;
    uses.set(v, (uses.get(v) ?? 0) - 1);
    const p = producer.get(v);
    if (p && unused(p)) work.push(p);
  };
  // A dead node's regions die with it: everything they read or yield loses a use.
  const kill = (n: Node) => {
    dead.add(n);
    n.inputs.forEach(drop);
    for (const r of n.regions) { for (const k of r.nodes) if (!dead.has(k)) kill(k); r.yields.forEach(drop); }
  };
  for (const n of walkNodes(g.body)) if (unused(n)) work.push(n);
  while (work.length) {
    const n = work.pop()!;
    if (!dead.has(n)) kill(n);
  }
  return uses;
}

/** Number of nodes, regions included. */
export function countNodes(g: Graph): number {
  let n = 0;
  for (const _ of walkNodes(g.body)) n++;
  return n;
}

/** Dense float32 data of a concrete-shaped tensor table entry, or undefined. */
export function floatData(t: TensorData | undefined): Float32Array | undefined {
  return t && t.dtype === 'float32' && t.data instanceof Float32Array ? t.data : undefined;
}
