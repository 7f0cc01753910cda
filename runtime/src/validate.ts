// Checking run() inputs against the graph's inputs. Invariant: an accepted input has the
// declared dtype, rank and every concrete dim, its data is the dtype's typed array with exactly
// numel(shape) elements, and every symbolic dim is bound to one size across all inputs (`N`
// means the same batch everywhere). Each refusal is an INPUT RuntimeError naming the input and
// its expected type: `input 'x': expected f32[N,3,32,32], got f32[2,3,32,31]`.

import {
  BindError, bindSymbols, convertArray, DTYPE_FROM_SHORT, numel, typeToString,
  type DType, type GraphInput, type IRType, type TypedArray,
} from '@kiln/ir-spec';
import { RuntimeError } from './errors.js';
import { toScalar, type Scalar } from './scalar.js';
import type { DeviceTensor } from './device.js';

/** A tensor given to run(): plain data, or any object with these fields (a kiln Tensor). */
export interface TensorInput {
  readonly data: ArrayLike<number>;
  readonly shape: readonly number[];
  readonly dtype: string;
}

/** One input of run(): a tensor, or a number/boolean for a scalar input. */
export type InputValue = TensorInput | number | boolean;

/** An accepted tensor input, on the host. */
export interface HostTensor { readonly data: TypedArray; readonly shape: readonly number[]; readonly dtype: DType }

export interface ValidatedInputs {
  /** Sizes of the symbolic dims: `N` → 8. */
  readonly env: Map<string, number>;
  /** The inputs in graph order: host tensors or scalars. */
  readonly values: readonly (HostTensor | Scalar)[];
}

const ARRAY_CLASS: Record<DType, { new (n: number): TypedArray; name: string }> = {
  float32: Float32Array, float16: Float32Array, bfloat16: Float32Array, int32: Int32Array, bool: Uint8Array, int8: Int8Array,
};
// A Map, not an object: a dtype given as 'constructor' or 'toString' must not find Object's members.
const DTYPE_NAMES: ReadonlyMap<string, DType> = new Map<string, DType>([['float32', 'float32'], ['float16', 'float16'], ['bfloat16', 'bfloat16'], ['int32', 'int32'], ['bool', 'bool'], ['int8', 'int8'], ...Object.entries(DTYPE_FROM_SHORT)]);

/** The dtype an input's `dtype` field names, or undefined (only strings name dtypes). */
function dtypeNamed(d: unknown): DType | undefined {
  return typeof d === 'string' ? DTYPE_NAMES.get(d) : undefined;
}

/** An input's `dtype` field as a message shows it, whatever it holds. */
function dtypeText(d: unknown): string {
  return typeof d === 'string' ? d : d === null ? 'null' : typeof d === 'object' ? 'an object' : `${typeof d} ${String(d)}`;
}

/**
 * A plain array's elements as `dtype` data, as torch.tensor() converts them: numbers and
 * booleans only (a string would silently become NaN), and an int32 or bool tensor takes no NaN or
 * infinity (PyTorch refuses to convert them). NaN and infinities in float32 data are IEEE values
 * and pass, as in PyTorch.
 */
function plainData(name: string, t: IRType, data: readonly unknown[], dtype: DType): TypedArray {
  for (let i = 0; i < data.length; i++) {
    const x = data[i];
    if (typeof x === 'boolean') continue;
    if (typeof x !== 'number') throw inputError(name, t, `got ${x === null ? 'null' : typeof x} at data[${i}]; a plain data array holds numbers (or booleans)`);
    if (dtype !== 'float32' && !Number.isFinite(x)) throw inputError(name, t, `got ${x} at data[${i}], which ${dtype} data cannot hold`);
  }
  return convertArray(data as ArrayLike<number>, dtype);
}

const inputError = (name: string, t: IRType, why: string) =>
  new RuntimeError('INPUT', `input '${name}': expected ${typeToString(t)}, ${why}`);

function isTensorLike(v: unknown): v is TensorInput {
  return typeof v === 'object' && v !== null && 'data' in v && 'shape' in v && 'dtype' in v;
}

function shapeText(dtype: string, shape: readonly number[]): string {
  const short = Object.entries(DTYPE_FROM_SHORT).find(([, d]) => d === dtype)?.[0] ?? dtype;
  return `${short}[${shape.join(',')}]`;
}

function hostScalar(name: string, t: Extract<IRType, { kind: 'scalar' }>, v: unknown): Scalar {
  let x: unknown = v;
  if (isTensorLike(v)) {
    if (!Array.isArray(v.shape) || v.shape.length !== 0 || v.data?.length !== 1) {
      throw inputError(name, t, `got a tensor of shape [${Array.isArray(v.shape) ? v.shape.join(',') : '?'}]; pass a number, a boolean or a 0-d tensor`);
    }
    if (dtypeNamed(v.dtype) !== t.dtype) throw inputError(name, t, `got a 0-d ${dtypeText(v.dtype)} tensor`);
    x = t.dtype === 'bool' ? v.data[0] !== 0 : v.data[0];
  }
  if (t.dtype === 'bool') {
    if (typeof x !== 'boolean') throw inputError(name, t, `got ${describe(x)}`);
    return x;
  }
  if (typeof x !== 'number') throw inputError(name, t, `got ${describe(x)}`);
  if (t.dtype === 'int32' && (x | 0) !== x) throw inputError(name, t, `got ${x}, which is not an int32`);
  return toScalar(x, t.dtype);
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array (wrap it as { data, shape, dtype })';
  if (typeof v === 'object') return 'an object without data, shape and dtype';
  return `${typeof v} ${String(v)}`;
}

/** The input's shape and dtype, checked against `t` (its concrete dims), and its type as an error shows it. */
function checkType(name: string, t: Extract<IRType, { kind: 'tensor' }>, v: { readonly shape: unknown; readonly dtype: unknown }): { shape: number[]; dtype: DType; got: () => string } {
  const shape = v.shape;
  if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
    throw inputError(name, t, `got shape ${JSON.stringify(shape)}; a shape is an array of non-negative integers`);
  }
  const dtype = dtypeNamed(v.dtype);
  // Built only for an error (a run checks every input).
  const got = () => `got ${dtype ? shapeText(dtype, shape) : `dtype ${dtypeText(v.dtype)}, shape [${shape.join(',')}]`}`;
  if (dtype !== t.dtype || shape.length !== t.shape.length) throw inputError(name, t, got());
  t.shape.forEach((d, i) => {
    if (typeof d === 'number' && d !== shape[i]) throw inputError(name, t, `${got()} (dim ${i} must be ${d})`);
  });
  return { shape, dtype, got };
}

function hostTensor(name: string, t: Extract<IRType, { kind: 'tensor' }>, v: unknown): HostTensor {
  // A number or boolean is the value of a 0-d tensor input (a scripted `n: number` argument).
  if (t.shape.length === 0 && (typeof v === 'number' || typeof v === 'boolean')) {
    const x = hostScalar(name, { kind: 'scalar', dtype: t.dtype }, v);
    return { data: convertArray([Number(x)], t.dtype), shape: [], dtype: t.dtype };
  }
  if (!isTensorLike(v)) throw inputError(name, t, `got ${describe(v)}`);
  const { shape, dtype, got } = checkType(name, t, v);
  const data = v.data;
  const cls = ARRAY_CLASS[dtype];
  let typed: TypedArray;
  if (data instanceof cls) typed = data;
  else if (Array.isArray(data)) typed = plainData(name, t, data, dtype);
  else {
    const kind = typeof data === 'object' && data !== null ? (Object.getPrototypeOf(data) === Object.prototype ? 'plain object' : (data as object).constructor?.name ?? 'object') : typeof data;
    throw inputError(name, t, `${got()} with data in a ${kind}; ${dtype} data must be a ${cls.name} (or a plain number array)`);
  }
  const n = numel(shape);
  if (typed.length !== n) throw inputError(name, t, `${got()}, but its data has ${typed.length} elements where the shape needs ${n}`);
  return { data: typed, shape: [...shape], dtype };
}

/**
 * Checks `given` against the graph inputs `decl` (in order) and binds the symbolic dims.
 * Throws an INPUT RuntimeError naming the first bad input.
 */
export function validateInputs(decl: readonly GraphInput[], given: readonly unknown[]): ValidatedInputs {
  if (!Array.isArray(given)) throw new RuntimeError('INPUT', `run() takes an array of inputs (${signature(decl)}); use runNamed() for a record keyed by input name`);
  if (given.length !== decl.length) {
    throw new RuntimeError('INPUT', `expected ${decl.length} input${decl.length === 1 ? '' : 's'} (${signature(decl)}), got ${given.length}`);
  }
  const values = decl.map((d, k) => {
    const t = d.value.type;
    if (t.kind === 'scalar') return hostScalar(d.name, t, given[k]);
    if (t.kind === 'tensor') return hostTensor(d.name, t, given[k]);
    throw new RuntimeError('GRAPH', `input '${d.name}' has type ${typeToString(t)}; the runtime takes tensor and scalar inputs only`);
  });
  return { env: bindInputDims(decl, values), values };
}

/**
 * validateInputs for Model.runDevice: tensors are device tensors of the model's device (their
 * `buffer` is not looked into), checked by dtype and shape; scalars as run() checks them.
 */
export function validateDeviceInputs(decl: readonly GraphInput[], given: readonly unknown[]): { env: Map<string, number>; values: readonly (DeviceTensor | Scalar)[] } {
  if (!Array.isArray(given) || given.length !== decl.length) {
    throw new RuntimeError('INPUT', `expected ${decl.length} input${decl.length === 1 ? '' : 's'} (${signature(decl)}), got ${Array.isArray(given) ? given.length : typeof given}`);
  }
  const values = decl.map((d, k): DeviceTensor | Scalar => {
    const t = d.value.type, v = given[k];
    if (t.kind === 'scalar') return hostScalar(d.name, t, v);
    if (t.kind !== 'tensor') throw new RuntimeError('GRAPH', `input '${d.name}' has type ${typeToString(t)}; the runtime takes tensor and scalar inputs only`);
    if (typeof v !== 'object' || v === null || !('buffer' in v) || !('shape' in v) || !('dtype' in v)) throw inputError(d.name, t, `got ${describe(v)}; runDevice() takes device tensors ({ buffer, shape, dtype })`);
    const { shape, dtype } = checkType(d.name, t, v);
    return { buffer: v.buffer, shape, dtype };
  });
  return { env: bindInputDims(decl, values), values };
}

/** Binds the inputs' symbolic dims (`N` the same size everywhere), or throws an INPUT error naming the input and dim. */
function bindInputDims(decl: readonly GraphInput[], values: readonly ({ readonly shape: readonly number[]; readonly dtype: DType } | Scalar)[]): Map<string, number> {
  let env: Map<string, number>;
  try {
    env = bindSymbols(decl.map((d) => d.value.type), values.map((v) => (typeof v === 'object' ? v.shape : [])), decl.map((d) => d.name));
  } catch (e) {
    if (!(e instanceof BindError)) throw e;
    // ir-spec names the input and dim; the runtime's message leads with the expected type.
    const k = decl.findIndex((d) => d.name === e.input);
    const v = values[k];
    if (k < 0 || typeof v !== 'object') throw new RuntimeError('INPUT', e.message, undefined, { cause: e });
    const detail = e.message.replace(/^input '[^']*'(?: dim \d+)?: /, '');
    const dim = e.dim === null ? '' : `dim ${e.dim}: `;
    throw inputError(decl[k].name, decl[k].value.type, `got ${shapeText(v.dtype, v.shape)} (${dim}${detail})`);
  }
  return env;
}

/** `x: f32[N,3,32,32], steps: i32`. */
export function signature(decl: readonly GraphInput[]): string {
  return decl.map((d) => `${d.name}: ${typeToString(d.value.type)}`).join(', ');
}
