// Element types of the op set and how they combine. Invariant: every tensor's data is
// the typed array that `arrayFor(dtype)` names, so kernels never inspect element types.

/** `int8`: quantized weights (quantization.quantizeDynamic); kernels read them, no op makes them. */
export type DType = 'float32' | 'int32' | 'bool' | 'int8';
export const DTYPES: readonly DType[] = ['float32', 'int32', 'bool', 'int8'];

export type TypedArray = Float32Array | Int32Array | Uint8Array | Int8Array;

/** Allocates a zeroed buffer of `n` elements for `dtype`. */
export function allocate(dtype: DType, n: number): TypedArray {
  switch (dtype) {
    case 'float32': return new Float32Array(n);
    case 'int32': return new Int32Array(n);
    case 'bool': return new Uint8Array(n);
    case 'int8': return new Int8Array(n);
  }
}

/** Converts any array-like of numbers into the buffer type of `dtype` (bool: nonzero → 1). */
export function convertArray(src: ArrayLike<number>, dtype: DType): TypedArray {
  const out = allocate(dtype, src.length);
  if (dtype === 'bool') for (let i = 0; i < src.length; i++) out[i] = src[i] ? 1 : 0;
  else if (dtype === 'int32' || dtype === 'int8') for (let i = 0; i < src.length; i++) out[i] = Math.trunc(src[i]);
  else out.set(src);
  return out;
}

export function isFloating(d: DType): boolean { return d === 'float32'; }

const RANK: Record<DType, number> = { bool: 0, int8: 1, int32: 2, float32: 3 };

/** PyTorch-style promotion of two tensor dtypes: bool < int8 < int32 < float32. */
export function promoteTypes(a: DType, b: DType): DType {
  return RANK[a] >= RANK[b] ? a : b;
}

/** The dtype of a JS number used as an operand next to a tensor of `other` dtype
 * (PyTorch's "weak" scalar rule: a Python int keeps an int tensor int, a float promotes). */
export function scalarDType(value: number | boolean, other: DType): DType {
  if (typeof value === 'boolean') return other;
  if (Number.isInteger(value)) return other === 'bool' ? 'int32' : other;
  return 'float32';
}
