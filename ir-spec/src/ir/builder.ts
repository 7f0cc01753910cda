// Building graphs by hand (tests, the tracer, the scripter): each call appends one node to the
// current block and returns its result values, typed by the same rules the verifier uses.
// Region bodies are built by callbacks; the builder keeps a stack of open blocks.

import type { DType } from '../dtype.js';
import { OpError } from '../shape.js';
import { Block, Graph, Node, Value, type Attrs, type GraphInput, type GraphOutput, type NodeMeta, type TensorData } from './graph.js';
import { inferTypes } from './infer.js';
import { scalarType, tensorType, type IRType } from './types.js';

/** Called with every graph `GraphBuilder.build()` returns (test hooks: round-trip, verifier). */
export type GraphBuiltListener = (g: Graph) => void;

const builtListeners = new Set<GraphBuiltListener>();

/**
 * Registers `listener` to see every graph `GraphBuilder.build()` returns, before build returns
 * it (an exception from a listener propagates out of build). Returns the unregister function.
 *
 * @example
 * const off = onGraphBuilt((g) => assertRoundTrips(g));
 * // ... build graphs ...
 * off();
 */
export function onGraphBuilt(listener: GraphBuiltListener): () => void {
  builtListeners.add(listener);
  return () => { builtListeners.delete(listener); };
}

export class GraphBuilder {
  private readonly inputs: GraphInput[] = [];
  private readonly outputs: GraphOutput[] = [];
  private readonly tensors = new Map<string, TensorData>();
  private readonly stack: Block[] = [new Block([])];
  /** Metadata applied to every node created while set (e.g. the module scope). */
  meta: NodeMeta = {};

  constructor(readonly name = 'main', readonly metadata: Record<string, string> = {}) {}

  private get block(): Block { return this.stack[this.stack.length - 1]; }

  /** How many regions (`if` branches, `loop` bodies) are open around the point of insertion. */
  get regionDepth(): number { return this.stack.length - 1; }
  /** Whether nodes are being added inside an `if`/`loop` region (not the graph's body). */
  get inRegion(): boolean { return this.stack.length > 1; }

  /** A graph input supplied at run time. */
  input(name: string, type: IRType): Value {
    this.checkName(name);
    const v = new Value(type, name);
    this.inputs.push({ name, kind: 'input', value: v });
    return v;
  }

  /** A named parameter input whose value is stored in the tensor table. */
  param(name: string, data: TensorData): Value {
    this.checkName(name);
    this.tensors.set(name, data);
    const v = new Value(tensorType(data.dtype, data.shape), name);
    this.inputs.push({ name, kind: 'param', value: v });
    return v;
  }

  /** A constant tensor stored in the tensor table under `name`. */
  constant(name: string, data: TensorData): Value {
    if (this.tensors.has(name)) throw new Error(`GraphBuilder: tensor '${name}' is defined twice`);
    this.tensors.set(name, data);
    return this.op('constant', [], { name })[0];
  }

  /** A 0-d tensor literal. */
  literal(value: number | boolean, dtype: DType = 'float32'): Value {
    return this.op('constant', [], { value, dtype })[0];
  }

  /** A scalar literal. */
  scalar(value: number | boolean, dtype: DType = 'int32'): Value {
    return this.op('scalar', [], { value, dtype })[0];
  }

  /** Appends a tensor op or a structural op without regions; returns its results. */
  op(name: string, inputs: readonly (Value | null)[], attrs: Record<string, unknown> = {}, meta: NodeMeta = this.meta): Value[] {
    const { attrs: parsed, types } = inferTypes(name, inputs.map((v) => v?.type ?? null), attrs as Attrs, { tensors: this.tensors });
    const outs = types.map((t) => new Value(t));
    this.block.nodes.push(new Node(name, [...inputs], parsed, outs, [], meta));
    return outs;
  }

  op1(name: string, inputs: readonly (Value | null)[], attrs: Record<string, unknown> = {}): Value {
    return this.op(name, inputs, attrs)[0];
  }

  /**
   * A fused_elementwise over `inputs`: `body` gets one `f32[]` element of each input, builds
   * ordinary elementwise nodes (and `literal`s) on them and returns the result element.
   *
   * @example
   * b.fusedElementwise([x, bias], ([e, c]) => b.op1('relu', [b.op1('add', [b.op1('mul', [e, b.literal(2)]), c])]));
   */
  fusedElementwise(inputs: readonly Value[], body: (elements: Value[]) => Value): Value {
    const args = inputs.map(() => new Value(tensorType('float32', [])));
    return this.append('fused_elementwise', [...inputs], [this.region(args, () => [body(args)])])[0];
  }

  /** `if (cond) { then } else { else }`: both callbacks return the values they yield. */
  if(cond: Value, thenFn: () => Value[], elseFn: () => Value[]): Value[] {
    const then = this.region([], () => thenFn());
    const els = this.region([], () => elseFn());
    return this.append('if', [cond], [then, els]);
  }

  /**
   * A loop: runs while `i < maxTrips` (if given) and the last `continue` was true (if `cond`
   * given). `body(i, carried)` returns the next carried values and, optionally, `continue`.
   */
  loop(
    maxTrips: Value | null, cond: Value | null, init: readonly Value[],
    body: (i: Value, carried: Value[]) => { next: Value[]; continue?: Value },
  ): Value[] {
    const args = [new Value(scalarType('int32'), 'i'), ...init.map((v) => new Value(v.type))];
    const region = this.region(args, () => {
      const r = body(args[0], args.slice(1));
      return [r.continue ?? this.scalar(true, 'bool'), ...r.next];
    });
    return this.append('loop', [maxTrips, cond, ...init], [region]);
  }

  output(name: string, value: Value): void {
    if (this.outputs.some((o) => o.name === name)) throw new Error(`GraphBuilder: output '${name}' is defined twice`);
    this.outputs.push({ name, value });
  }

  build(): Graph {
    if (this.stack.length !== 1) throw new Error('GraphBuilder.build(): a region is still open');
    const g = new Graph(this.name, this.inputs, this.stack[0], this.outputs, this.tensors, this.metadata);
    for (const listener of [...builtListeners]) listener(g);
    return g;
  }

  private region(args: Value[], fn: () => Value[]): Block {
    const b = new Block(args);
    this.stack.push(b);
    try {
      b.yields = fn();
    } finally {
      this.stack.pop();
    }
    return b;
  }

  private append(op: string, inputs: (Value | null)[], regions: Block[]): Value[] {
    const { types } = inferTypes(op, inputs.map((v) => v?.type ?? null), {}, { tensors: this.tensors }, regions);
    const outs = types.map((t) => new Value(t));
    this.block.nodes.push(new Node(op, inputs, {}, outs, regions, this.meta));
    return outs;
  }

  private checkName(name: string): void {
    if (this.inputs.some((i) => i.name === name)) throw new OpError('graph', `input '${name}' is defined twice`);
  }
}
