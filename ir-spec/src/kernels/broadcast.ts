// Broadcasting loops for elementwise kernels. Invariant: inputs are dense row-major; the
// output has the broadcast shape; a size-1 (or missing leading) input dim gets stride 0.

import { allocate, isReducedFloat, roundInPlace, type DType, type TypedArray } from '../dtype.js';
import { numel } from '../shape.js';
import type { CpuTensor } from '../op-def.js';

/** Strides of `inShape` read against `outShape` (0 along broadcast dims). */
export function broadcastStrides(inShape: readonly number[], outShape: readonly number[]): number[] {
  const r = outShape.length, lead = r - inShape.length;
  const st = new Array<number>(r).fill(0);
  let acc = 1;
  for (let i = inShape.length - 1; i >= 0; i--) {
    st[i + lead] = inShape[i] === 1 ? 0 : acc;
    acc *= inShape[i];
  }
  return st;
}

/** Offsets into each input for every output element, in row-major output order. */
export function broadcastIndex(inShapes: readonly (readonly number[])[], outShape: readonly number[]): Int32Array[] {
  const n = numel(outShape), r = outShape.length;
  const strides = inShapes.map((s) => broadcastStrides(s, outShape));
  const idx = inShapes.map(() => new Int32Array(n));
  const pos = new Array<number>(r).fill(0);
  const off = inShapes.map(() => 0);
  for (let i = 0; i < n; i++) {
    for (let k = 0; k < off.length; k++) idx[k][i] = off[k];
    for (let d = r - 1; d >= 0; d--) {
      pos[d]++;
      for (let k = 0; k < off.length; k++) off[k] += strides[k][d];
      if (pos[d] < outShape[d]) break;
      for (let k = 0; k < off.length; k++) off[k] -= strides[k][d] * outShape[d];
      pos[d] = 0;
    }
  }
  return idx;
}

/** A whole-buffer unary loop (`out[i] = f(src[i])`), for hot ops that must not pay a call per element. */
export type UnaryLoop = (src: TypedArray, out: TypedArray) => void;

/** `into` (here and in mapBinary/mapTernary): the result's buffer when the caller has one of its dtype and size; it may be a full-size input (element k is read before it is written). */
export function mapUnary(x: CpuTensor, outDtype: DType, f: (v: number) => number, loop?: UnaryLoop, into?: TypedArray): CpuTensor {
  const src = x.data, n = src.length, out = into ?? allocate(outDtype, n);
  if (loop) loop(src, out);
  else for (let i = 0; i < n; i++) out[i] = f(src[i]);
  return { data: out, shape: x.shape, dtype: outDtype };
}

/**
 * One contiguous run of a binary op: `out[o+k] = A[ia+k*sa] ∘ B[ib+k*sb]` for k < n (strides
 * 0 or 1 along the run). Hot ops give their own closure-free row (about 4x faster than calling
 * `f` per element, which V8 cannot inline once many ops share `mapBinary`).
 */
export type BinaryRow = (A: TypedArray, ia: number, sa: number, B: TypedArray, ib: number, sb: number, out: TypedArray, o: number, n: number) => void;

/** A row that calls `f` per element (the generic path). */
function rowOf(f: (x: number, y: number) => number): BinaryRow {
  return (A, ia, sa, B, ib, sb, out, o, n) => {
    for (let k = 0; k < n; k++) out[o + k] = f(A[ia + k * sa], B[ib + k * sb]);
  };
}

export function mapBinary(
  a: CpuTensor, b: CpuTensor, outShape: readonly number[], outDtype: DType,
  f: (x: number, y: number) => number, row: BinaryRow = rowOf(f), into?: TypedArray,
): CpuTensor {
  const n = numel(outShape), out = into ?? allocate(outDtype, n);
  const A = a.data, B = b.data;
  // An input holding n elements has the output's layout (it differs only by size-1 dims).
  if (A.length === n && B.length === n) row(A, 0, 1, B, 0, 1, out, 0, n);
  else if (B.length === 1 && A.length === n) row(A, 0, 1, B, 0, 0, out, 0, n);
  else if (A.length === 1 && B.length === n) row(A, 0, 0, B, 0, 1, out, 0, n);
  else if (n > 0) {
    // General broadcast: coalesce dims into as few as possible, then run the innermost dim as rows.
    const sA = broadcastStrides(a.shape, outShape), sB = broadcastStrides(b.shape, outShape);
    const dims: number[] = [], as: number[] = [], bs: number[] = [];
    for (let d = 0; d < outShape.length; d++) {
      const size = outShape[d], k = dims.length - 1;
      if (size === 1) continue;
      if (k >= 0 && as[k] === sA[d] * size && bs[k] === sB[d] * size) { dims[k] *= size; as[k] = sA[d]; bs[k] = sB[d]; }
      else { dims.push(size); as.push(sA[d]); bs.push(sB[d]); }
    }
    const m = dims.length, inner = dims[m - 1], sa = as[m - 1], sb = bs[m - 1];
    const pos = new Array<number>(m).fill(0);
    let ia = 0, ib = 0;
    for (let o = 0; o < n; o += inner) {
      row(A, ia, sa, B, ib, sb, out, o, inner);
      for (let d = m - 2; d >= 0; d--) {
        pos[d]++; ia += as[d]; ib += bs[d];
        if (pos[d] < dims[d]) break;
        ia -= as[d] * dims[d]; ib -= bs[d] * dims[d]; pos[d] = 0;
      }
    }
  }
  return { data: out, shape: outShape, dtype: outDtype };
}

export function mapTernary(
  a: CpuTensor, b: CpuTensor, c: CpuTensor, outShape: readonly number[], outDtype: DType,
  f: (x: number, y: number, z: number) => number, into?: TypedArray,
): CpuTensor {
  const n = numel(outShape), out = into ?? allocate(outDtype, n);
  const A = a.data, B = b.data, C = c.data;
  if ((A.length === n || A.length === 1) && (B.length === n || B.length === 1) && (C.length === n || C.length === 1)) {
    // Full-size or scalar operands (the common case): no index tables.
    const sa = A.length === n ? 1 : 0, sb = B.length === n ? 1 : 0, sc = C.length === n ? 1 : 0;
    for (let i = 0; i < n; i++) out[i] = f(A[i * sa], B[i * sb], C[i * sc]);
  } else {
    const [ia, ib, ic] = broadcastIndex([a.shape, b.shape, c.shape], outShape);
    for (let i = 0; i < n; i++) out[i] = f(A[ia[i]], B[ib[i]], C[ic[i]]);
  }
  return { data: out, shape: outShape, dtype: outDtype };
}

/** Rounds through a typed array of `dtype` (int32 truncation, bool 0/1, float16/bfloat16 to nearest even). */
export function castArray(src: TypedArray, dtype: DType): TypedArray {
  const out = allocate(dtype, src.length);
  if (dtype === 'bool') for (let i = 0; i < src.length; i++) out[i] = src[i] !== 0 ? 1 : 0;
  else out.set(src);
  if (isReducedFloat(dtype)) roundInPlace(out as Float32Array, dtype);
  return out;
}
