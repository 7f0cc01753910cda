// The ONNX writer the exporter's op table emits through: it owns the node list of the graph (or
// subgraph) being written, names values, makes constants, and turns Kiln's symbolic dims into
// run-time int64 tensors. Invariant: a name is defined once across the model (subgraphs
// included), and a dim tensor is only reused in the scope that defined it or one inside it.

import type { DType, Dim, TypedArray } from '@kiln/ir-spec';
import { dimTerms, isPlainSymbol } from '@kiln/ir-spec';
import { ATTR_TYPE, ONNX_DTYPE, type AttributeProto, type GraphProto, type NodeProto, type TensorProto } from './proto.js';

/** An attribute value as the table writes it: numbers are ints unless wrapped by `float()`. */
export type OnnxAttr = number | string | readonly number[] | { float: number } | { floats: readonly number[] } | { graph: GraphProto } | { tensor: TensorProto };
export const float = (v: number): OnnxAttr => ({ float: v });
export const floats = (v: readonly number[]): OnnxAttr => ({ floats: v });

export const KILN_TO_ONNX_DTYPE: Record<DType, number> = { float32: ONNX_DTYPE.FLOAT, float16: ONNX_DTYPE.FLOAT16, bfloat16: ONNX_DTYPE.BFLOAT16, int32: ONNX_DTYPE.INT32, bool: ONNX_DTYPE.BOOL, int8: ONNX_DTYPE.INT8 };

/** An export the ONNX format (or this exporter) cannot express, naming the node. */
export class OnnxExportError extends Error {
  constructor(message: string) { super(message); this.name = 'OnnxExportError'; }
}

/** Where a plain symbol can be read at run time: dim `axis` of the tensor named `tensor`. */
export interface SymbolSource { readonly tensor: string; readonly axis: number }

interface Scope { readonly nodes: NodeProto[]; readonly dims: Map<string, string> }

function attribute(name: string, v: OnnxAttr): AttributeProto {
  if (typeof v === 'number') return { name, type: ATTR_TYPE.INT, i: v };
  if (typeof v === 'string') return { name, type: ATTR_TYPE.STRING, s: new TextEncoder().encode(v) };
  if (Array.isArray(v)) return { name, type: ATTR_TYPE.INTS, ints: [...v] };
  const o = v as Exclude<OnnxAttr, number | string | readonly number[]>;
  if ('float' in o) return { name, type: ATTR_TYPE.FLOAT, f: o.float };
  if ('floats' in o) return { name, type: ATTR_TYPE.FLOATS, floats: [...o.floats] };
  if ('graph' in o) return { name, type: ATTR_TYPE.GRAPH, g: o.graph };
  return { name, type: ATTR_TYPE.TENSOR, t: o.tensor };
}

/** A TensorProto holding `data` (raw little-endian bytes, as ONNX Runtime reads fastest). */
export function tensorProto(name: string, dtype: number, dims: readonly number[], data: TypedArray | readonly number[]): TensorProto {
  let bytes: Uint8Array;
  if (dtype === ONNX_DTYPE.FLOAT) bytes = u8(Float32Array.from(data as ArrayLike<number>));
  else if (dtype === ONNX_DTYPE.INT32) bytes = u8(Int32Array.from(data as ArrayLike<number>));
  else if (dtype === ONNX_DTYPE.INT64) bytes = u8(BigInt64Array.from(Array.from(data as ArrayLike<number>, (x) => BigInt(x))));
  else if (dtype === ONNX_DTYPE.BOOL) bytes = Uint8Array.from(data as ArrayLike<number>, (x) => (x ? 1 : 0));
  else throw new OnnxExportError(`exportOnnx: no tensor encoding for ONNX data type ${dtype}`);
  return { name, dims: [...dims], data_type: dtype, raw_data: bytes };
}
const u8 = (a: TypedArray | BigInt64Array): Uint8Array => new Uint8Array(a.buffer.slice(a.byteOffset, a.byteOffset + a.byteLength));

export class OnnxWriter {
  private readonly scopes: Scope[] = [];
  private counter = 0;
  /** Which opset the model declares; table entries check their minimum against it. */
  constructor(readonly opset: number, private readonly symbols: ReadonlyMap<string, SymbolSource>) {
    this.scopes.push({ nodes: [], dims: new Map() });
  }

  private get scope(): Scope { return this.scopes[this.scopes.length - 1]; }

  /** A fresh value name with a readable prefix. */
  fresh(prefix = 't'): string { return `${prefix}_${this.counter++}`; }

  /** Appends a node; returns its output names (fresh unless given). */
  node(opType: string, inputs: readonly string[], outputs: number | readonly string[] = 1, attrs: Record<string, OnnxAttr | undefined> = {}): string[] {
    const out = typeof outputs === 'number' ? Array.from({ length: outputs }, () => this.fresh(opType.toLowerCase())) : [...outputs];
    const attribute_ = Object.entries(attrs).filter(([, v]) => v !== undefined).map(([k, v]) => attribute(k, v!));
    this.scope.nodes.push({ name: `${opType}_${this.counter++}`, op_type: opType, input: [...inputs], output: out, attribute: attribute_ });
    return out;
  }
  node1(opType: string, inputs: readonly string[], attrs: Record<string, OnnxAttr | undefined> = {}): string {
    return this.node(opType, inputs, 1, attrs)[0];
  }

  /** A Constant node holding a tensor (works inside subgraphs, unlike initializers). */
  constant(dtype: number, dims: readonly number[], data: TypedArray | readonly number[]): string {
    const name = this.fresh('const');
    this.node('Constant', [], [name], { value: { tensor: tensorProto(name, dtype, dims, data) } });
    return name;
  }
  int64s(values: readonly number[]): string { return this.constant(ONNX_DTYPE.INT64, [values.length], values); }
  scalar(dtype: DType, value: number | boolean): string { return this.constant(KILN_TO_ONNX_DTYPE[dtype], [], [Number(value)]); }

  /** Fails unless the declared opset is at least `min`. */
  requireOpset(min: number, what: string): void {
    if (this.opset < min) throw new OnnxExportError(`exportOnnx: ${what} needs opset ${min} or newer; pass { opsetVersion: ${Math.max(min, 17)} }`);
  }

  /** An int64 [1] tensor holding the dim's size at run time. */
  dim(d: Dim): string {
    if (typeof d === 'number') return this.int64s([d]);
    for (let i = this.scopes.length - 1; i >= 0; i--) {
      const found = this.scopes[i].dims.get(d);
      if (found) return found;
    }
    let total: string | undefined;
    for (const term of dimTerms(d)) {
      let v: string | undefined = term.coef !== 1 || term.atoms.length === 0 ? this.int64s([term.coef]) : undefined;
      for (const atom of term.atoms) {
        const a = this.symbol(atom, d);
        v = v === undefined ? a : this.node1('Mul', [v, a]);
      }
      total = total === undefined ? v : this.node1('Add', [total, v!]);
    }
    const name = total ?? this.int64s([0]);
    this.scope.dims.set(d, name);
    return name;
  }

  private symbol(atom: string, whole: string): string {
    const src = isPlainSymbol(atom) ? this.symbols.get(atom) : undefined;
    if (!src) throw new OnnxExportError(`exportOnnx: the dim '${whole}' uses '${atom}', which is not a dim of any graph input; ONNX can only compute sizes from the inputs' shapes`);
    const shape = this.node1('Shape', [src.tensor]);
    return this.node1('Gather', [shape, this.int64s([src.axis])], { axis: 0 });
  }

  /** An int64 1-D tensor holding a whole shape (a constant when every dim is concrete). */
  shape(dims: readonly Dim[]): string {
    if (dims.every((d) => typeof d === 'number')) return this.int64s(dims as number[]);
    if (dims.length === 0) return this.int64s([]);
    return this.node1('Concat', dims.map((d) => this.dim(d)), { axis: 0 });
  }

  /** Runs `fn` with a fresh node list (a subgraph body); returns the nodes it wrote. */
  subgraph(fn: () => void): NodeProto[] {
    this.scopes.push({ nodes: [], dims: new Map() });
    try {
      fn();
      return this.scope.nodes;
    } finally {
      this.scopes.pop();
    }
  }

  /** The top-level node list. */
  get topNodes(): NodeProto[] { return this.scopes[0].nodes; }
}
