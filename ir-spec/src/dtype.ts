// Element types of the op set and how they combine. Invariant: every tensor's data is
// the typed array that `allocate(dtype)` makes, so kernels never inspect element types.
//
// float16 and bfloat16 are *storage* types (as PyTorch's CPU treats half): their data is a
// Float32Array holding only values the 16-bit type can represent exactly. Kernels compute in
// float32 and the dispatch rounds each float16/bfloat16 result once, round-to-nearest-even
// (`roundToDType`), so a result equals what a device computing in float32 and storing 16 bits
// gives. Files (`.tsgraph`, safetensors) store the 16-bit patterns (`toHalfBits`, `toBFloat16Bits`).

/** `int8`: quantized weights (quantization.quantizeDynamic); kernels read them, no op makes them. */
export type DType = 'float32' | 'float16' | 'bfloat16' | 'int32' | 'bool' | 'int8';
export const DTYPES: readonly DType[] = ['float32', 'float16', 'bfloat16', 'int32', 'bool', 'int8'];

export type TypedArray = Float32Array | Int32Array | Uint8Array | Int8Array;

/** Allocates a zeroed buffer of `n` elements for `dtype`. */
export function allocate(dtype: DType, n: number): TypedArray {
  switch (dtype) {
    case 'float32': case 'float16': case 'bfloat16': return new Float32Array(n);
    case 'int32': return new Int32Array(n);
    case 'bool': return new Uint8Array(n);
    case 'int8': return new Int8Array(n);
  }
}

/** Bytes per element of `dtype`'s array in memory (float16/bfloat16 are held widened: 4; files store 2). */
export const ELEMENT_BYTES: Readonly<Record<DType, number>> = { float32: 4, float16: 4, bfloat16: 4, int32: 4, bool: 1, int8: 1 };

/** Converts any array-like of numbers into the buffer type of `dtype` (bool: nonzero → 1; float16/bfloat16: rounded to nearest even). */
export function convertArray(src: ArrayLike<number>, dtype: DType): TypedArray {
  const out = allocate(dtype, src.length);
  if (dtype === 'bool') for (let i = 0; i < src.length; i++) out[i] = src[i] ? 1 : 0;
  else if (dtype === 'int32' || dtype === 'int8') for (let i = 0; i < src.length; i++) out[i] = Math.trunc(src[i]);
  else {
    out.set(src);
    if (dtype !== 'float32') roundInPlace(out as Float32Array, dtype);
  }
  return out;
}

export function isFloating(d: DType): boolean { return d === 'float32' || d === 'float16' || d === 'bfloat16'; }
/** float16 or bfloat16: the types whose values the dispatch rounds after every kernel. */
export function isReducedFloat(d: DType): d is 'float16' | 'bfloat16' { return d === 'float16' || d === 'bfloat16'; }

const RANK: Record<DType, number> = { bool: 0, int8: 1, int32: 2, float16: 3, bfloat16: 3, float32: 4 };

/** PyTorch-style promotion of two tensor dtypes: bool < int8 < int32 < float16, bfloat16 < float32 (float16 with bfloat16 gives float32). */
export function promoteTypes(a: DType, b: DType): DType {
  if (a !== b && isReducedFloat(a) && isReducedFloat(b)) return 'float32';
  return RANK[a] >= RANK[b] ? a : b;
}

/** The dtype of a JS number used as an operand next to a tensor of `other` dtype
 * (PyTorch's "weak" scalar rule: a Python int keeps an int tensor int, a float keeps a float tensor's dtype). */
export function scalarDType(value: number | boolean, other: DType): DType {
  if (typeof value === 'boolean') return other;
  if (Number.isInteger(value)) return other === 'bool' ? 'int32' : other;
  return isFloating(other) ? other : 'float32';
}

// ---- float16 / bfloat16 bit patterns -------------------------------------------------------

/** Rounds half to even at integers (exact for the doubles this file feeds it). */
function rint(x: number): number {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/**
 * The IEEE binary16 bits nearest to `x` (round to nearest, ties to even; beyond 65504 by half
 * an ulp or more → ±inf; NaN → the quiet NaN 0x7e00 with x's sign). `x` is any double; for a
 * float32 value this is PyTorch's `.half()`.
 */
export function toHalfBits(x: number): number {
  if (Number.isNaN(x)) return 0x7e00;
  const sign = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
  const a = Math.abs(x);
  if (a >= 65520) return sign | 0x7c00;
  if (a < 2 ** -14) return sign | rint(a * 2 ** 24); // subnormal (1024 = the smallest normal, bits 0x0400)
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) e--; else if (2 ** (e + 1) <= a) e++; // log2 may be off by one near powers of two
  let f = rint((a / 2 ** e - 1) * 1024);
  if (f === 1024) { f = 0; e++; }
  return e > 15 ? sign | 0x7c00 : sign | ((e + 15) << 10) | f;
}

/** The value of binary16 bits `h`. */
export function fromHalfBits(h: number): number {
  const sign = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, f = h & 0x3ff;
  if (e === 0) return sign * f * 2 ** -24;
  if (e === 31) return f ? NaN : sign * Infinity;
  return sign * (1 + f / 1024) * 2 ** (e - 15);
}

const f32 = new Float32Array(1), u32 = new Uint32Array(f32.buffer);

/** The bfloat16 bits nearest to the float32 value of `x` (ties to even; NaN stays a quiet NaN), as PyTorch's `.bfloat16()`. */
export function toBFloat16Bits(x: number): number {
  f32[0] = x;
  const u = u32[0];
  if (Number.isNaN(f32[0])) return ((u >>> 16) | 0x40) & 0xffff;
  return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
}

/** The value of bfloat16 bits `b` (the top half of a float32). */
export function fromBFloat16Bits(b: number): number {
  u32[0] = (b & 0xffff) << 16;
  return f32[0];
}

let halfValues: Float32Array | undefined;
/** All 65536 binary16 values, built once: rounding reads it instead of recomputing. */
function halfTable(): Float32Array {
  if (!halfValues) {
    halfValues = new Float32Array(65536);
    for (let h = 0; h < 65536; h++) halfValues[h] = fromHalfBits(h);
  }
  return halfValues;
}

/** `x` rounded to the nearest value of `dtype` (float32: to the nearest float32). */
export function roundToDType(x: number, dtype: 'float32' | 'float16' | 'bfloat16'): number {
  if (dtype === 'float16') return halfTable()[toHalfBits(x)];
  if (dtype === 'bfloat16') return fromBFloat16Bits(toBFloat16Bits(x));
  return Math.fround(x);
}

/** Rounds every element of `data` to the nearest `dtype` value, in place. */
export function roundInPlace(data: Float32Array, dtype: 'float16' | 'bfloat16'): void {
  if (dtype === 'bfloat16') {
    const u = new Uint32Array(data.buffer, data.byteOffset, data.length);
    for (let i = 0; i < u.length; i++) {
      const v = u[i];
      if ((v & 0x7f800000) === 0x7f800000 && (v & 0x7fffff)) u[i] = (v | 0x400000) & 0xffff0000;
      else u[i] = ((v + 0x7fff + ((v >>> 16) & 1)) >>> 16) << 16;
    }
    return;
  }
  // On the float32 bits: normal results keep 10 of the 23 fraction bits (ties to even; a carry
  // moves into the exponent), subnormal ones are multiples of 2^-24, beyond 65520 is inf.
  const u = new Uint32Array(data.buffer, data.byteOffset, data.length);
  for (let i = 0; i < u.length; i++) {
    const v = u[i], abs = v & 0x7fffffff, sign = v & 0x80000000;
    if (abs >= 0x7f800000) continue; // inf, NaN
    if (abs >= 0x477ff000) u[i] = (sign | 0x7f800000) >>> 0;
    else if (abs >= 0x38800000) u[i] = (sign | ((abs + 0xfff + ((abs >>> 13) & 1)) & ~0x1fff)) >>> 0;
    else data[i] = rint(data[i] * 2 ** 24) * 2 ** -24; // exact: a float32 times a power of two
  }
}

/** The 16-bit patterns of float16/bfloat16 values (file storage). */
export function toBits16(data: Float32Array, dtype: 'float16' | 'bfloat16'): Uint16Array {
  const out = new Uint16Array(data.length);
  if (dtype === 'bfloat16') {
    for (let i = 0; i < data.length; i++) out[i] = toBFloat16Bits(data[i]);
    return out;
  }
  // toHalfBits on the float32 bits (a weight table of millions: no log2 per element): NaN is
  // 0x7e00, ≥ 65520 infinity, normal values keep 10 fraction bits (ties to even, the carry
  // moves into the exponent), subnormal ones are multiples of 2^-24.
  const u = new Uint32Array(data.buffer, data.byteOffset, data.length);
  for (let i = 0; i < u.length; i++) {
    const v = u[i], abs = v & 0x7fffffff, sign = (v >>> 16) & 0x8000;
    if (abs > 0x7f800000) out[i] = 0x7e00;
    else if (abs >= 0x477ff000) out[i] = sign | 0x7c00;
    else if (abs >= 0x38800000) out[i] = sign | (((abs + 0xfff + ((abs >>> 13) & 1)) >>> 13) - 0x1c000);
    else out[i] = sign | rint(Math.abs(data[i]) * 2 ** 24);
  }
  return out;
}

/** The values of 16-bit patterns, widened to float32 (loading a file). */
export function fromBits16(bits: Uint16Array, dtype: 'float16' | 'bfloat16'): Float32Array {
  const out = new Float32Array(bits.length);
  if (dtype === 'float16') {
    const t = halfTable();
    for (let i = 0; i < bits.length; i++) out[i] = t[bits[i]];
  } else {
    new Uint32Array(out.buffer).set(bits);
    const u = new Uint32Array(out.buffer);
    for (let i = 0; i < u.length; i++) u[i] <<= 16;
  }
  return out;
}
