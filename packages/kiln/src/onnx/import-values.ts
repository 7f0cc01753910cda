// What the importer knows about each ONNX value: a Kiln run-time Value, or a constant known
// while importing (initializers, Constant nodes, and shape arithmetic: Shape → Gather → Concat
// chains fold here, with symbolic dims as strings such as 'batch'). Constants become Kiln
// tensors only where a run-time op reads them (materialize). Invariant: a constant's data has
// prod(shape) entries; strings appear only in int32 constants (dims).

import { dimAdd, dimMul, dimSub, dimTerms, isPlainSymbol, tensorType, type DType, type Dim, type GraphBuilder, type Value } from '@kiln/ir-spec';
import { ONNX_DTYPE, type TensorProto } from './proto.js';

export interface ConstVal { readonly kind: 'const'; readonly dtype: DType; readonly shape: readonly number[]; readonly data: readonly Dim[] }
export interface RunVal { readonly kind: 'value'; readonly v: Value }
export type IVal = ConstVal | RunVal;

/** An ONNX model Kiln cannot import, naming the node, its op type and the opset. */
export class OnnxImportError extends Error {
  constructor(message: string) { super(message); this.name = 'OnnxImportError'; }
}

export const constVal = (dtype: DType, shape: readonly number[], data: readonly Dim[]): ConstVal => ({ kind: 'const', dtype, shape: [...shape], data: [...data] });
export const runVal = (v: Value): RunVal => ({ kind: 'value', v });

/** Kiln's dtype for an ONNX data type (int64 narrows to int32: Kiln has no 64-bit integers). */
export function kilnDtype(t: number, where: string): DType {
  if (t === ONNX_DTYPE.FLOAT || t === ONNX_DTYPE.DOUBLE) return 'float32';
  if (t === ONNX_DTYPE.INT64 || t === ONNX_DTYPE.INT32 || t === ONNX_DTYPE.INT8 || t === ONNX_DTYPE.UINT8) return 'int32';
  if (t === ONNX_DTYPE.BOOL) return 'bool';
  throw new OnnxImportError(`${where}: ONNX data type ${t} has no Kiln dtype (Kiln has float32, int32 and bool)`);
}

function aligned(bytes: Uint8Array): ArrayBuffer {
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
}

/** A TensorProto's values as numbers (int64 checked to fit int32). */
export function tensorData(t: TensorProto, where: string): ConstVal {
  const dtype = kilnDtype(t.data_type, where);
  const shape = (t.dims ?? []).map(Number);
  const n = shape.reduce((a, b) => a * b, 1);
  let data: number[];
  const raw = t.raw_data && t.raw_data.length ? t.raw_data : undefined;
  switch (t.data_type) {
    case ONNX_DTYPE.FLOAT: data = raw ? Array.from(new Float32Array(aligned(raw))) : (t.float_data ?? []).map(Number); break;
    case ONNX_DTYPE.DOUBLE: data = raw ? Array.from(new Float64Array(aligned(raw))) : (t.double_data ?? []).map(Number); break;
    case ONNX_DTYPE.INT32: data = raw ? Array.from(new Int32Array(aligned(raw))) : (t.int32_data ?? []).map(Number); break;
    case ONNX_DTYPE.INT64: data = raw ? Array.from(new BigInt64Array(aligned(raw)), Number) : (t.int64_data ?? []).map(Number); break;
    case ONNX_DTYPE.BOOL: case ONNX_DTYPE.UINT8: data = raw ? Array.from(raw) : (t.int32_data ?? []).map(Number); break;
    case ONNX_DTYPE.INT8: data = raw ? Array.from(new Int8Array(aligned(raw))) : (t.int32_data ?? []).map(Number); break;
    default: throw new OnnxImportError(`${where}: ONNX data type ${t.data_type} is not supported`);
  }
  if (data.length !== n) throw new OnnxImportError(`${where}: tensor '${t.name ?? ''}' has ${data.length} values for shape [${shape}]`);
  if (dtype === 'int32') {
    // int64 sentinels (slice ends such as INT64_MAX) clamp to the int32 range.
    data = data.map((x) => Math.max(-2147483648, Math.min(2147483647, x)));
  }
  return constVal(dtype, shape, data);
}

export const numel = (shape: readonly number[]) => shape.reduce((a, b) => a * b, 1);

/** The numbers of a constant; throws naming `what` when a dim is symbolic. */
export function numbers(c: ConstVal, what: string): number[] {
  return c.data.map((d) => {
    if (typeof d !== 'number') throw new OnnxImportError(`${what} depends on the symbolic size '${d}'; only shapes may`);
    return d;
  });
}

/** Dim arithmetic on constant entries (symbolic dims stay symbolic). */
export function dimBinary(op: string, a: Dim, b: Dim): Dim | undefined {
  if (typeof a === 'number' && typeof b === 'number') {
    switch (op) {
      case 'Add': return a + b;
      case 'Sub': return a - b;
      case 'Mul': return a * b;
      case 'Div': return Math.trunc(a / b);
      default: return undefined;
    }
  }
  switch (op) {
    case 'Add': return dimAdd(a, b);
    case 'Sub': return dimSub(a, b);
    case 'Mul': return dimMul(a, b);
    default: return undefined;
  }
}

/** Where each symbol can be read at run time (a graph input's dim). */
export type SymbolTable = Map<string, { v: Value; axis: number }>;

let constCounter = 0;

/** The constant as a Kiln value: a literal, a stored tensor, or (for symbolic dims) run-time dims. */
export function materialize(b: GraphBuilder, c: ConstVal, symbols: SymbolTable, tensorName: () => string): Value {
  if (c.data.every((d) => typeof d === 'number')) {
    const nums = c.data as number[];
    if (c.shape.length === 0) return b.literal(c.dtype === 'bool' ? nums[0] !== 0 : nums[0], c.dtype);
    const arr = c.dtype === 'float32' ? Float32Array.from(nums) : c.dtype === 'int32' ? Int32Array.from(nums) : Uint8Array.from(nums);
    return b.constant(tensorName(), { dtype: c.dtype, shape: c.shape, data: arr });
  }
  // Symbolic entries: each dim as a run-time scalar, then one int32 vector.
  const parts = c.data.map((d) => b.op1('reshape', [b.op1('to_tensor', [dimScalar(b, d, symbols)], { dtype: 'int32' })], { shape: [1] }));
  const vec = parts.length === 1 ? parts[0] : b.op1('cat', parts, { dim: 0 });
  return c.shape.length === 0 ? b.op1('reshape', [vec], { shape: [] }) : vec;
}

/** A dim (number or symbolic polynomial) as an i32 scalar computed at run time. */
export function dimScalar(b: GraphBuilder, d: Dim, symbols: SymbolTable): Value {
  if (typeof d === 'number') return b.scalar(d, 'int32');
  let total: Value | undefined;
  for (const term of dimTerms(d)) {
    let v: Value | undefined = term.coef !== 1 || term.atoms.length === 0 ? b.scalar(term.coef, 'int32') : undefined;
    for (const atom of term.atoms) {
      const src = isPlainSymbol(atom) ? symbols.get(atom) : undefined;
      if (!src) throw new OnnxImportError(`the size '${d}' uses '${atom}', which is not a dim of any graph input`);
      const a = b.op1('dim', [src.v], { index: src.axis });
      v = v === undefined ? a : b.op1('scalar_op', [v, a], { fn: 'mul' });
    }
    total = total === undefined ? v : b.op1('scalar_op', [total, v!], { fn: 'add' });
  }
  return total ?? b.scalar(0, 'int32');
}

export function nextConstName(prefix: string): string { return `${prefix}.${constCounter++}`; }
export { tensorType };
