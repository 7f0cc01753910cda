// Broadcasting loops for elementwise kernels. Invariant: inputs are dense row-major; the
// output has the broadcast shape; a size-1 (or missing leading) input dim gets stride 0.

import { allocate, type DType, type TypedArray } from '../dtype.js';
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

export function mapUnary(x: CpuTensor, outDtype: DType, f: (v: number) => number): CpuTensor {
  const src = x.data, n = src.length, out = allocate(outDtype, n);
  for (let i = 0; i < n; i++) out[i] = f(src[i]);
  return { data: out, shape: x.shape, dtype: outDtype };
}

export function mapBinary(
  a: CpuTensor, b: CpuTensor, outShape: readonly number[], outDtype: DType,
  f: (x: number, y: number) => number,
): CpuTensor {
  const n = numel(outShape), out = allocate(outDtype, n);
  const A = a.data, B = b.data;
  if (A.length === n && B.length === n) {
    for (let i = 0; i < n; i++) out[i] = f(A[i], B[i]);
  } else if (B.length === 1 && A.length === n) {
    const y = B[0];
    for (let i = 0; i < n; i++) out[i] = f(A[i], y);
  } else if (A.length === 1 && B.length === n) {
    const x = A[0];
    for (let i = 0; i < n; i++) out[i] = f(x, B[i]);
  } else {
    const [ia, ib] = broadcastIndex([a.shape, b.shape], outShape);
    for (let i = 0; i < n; i++) out[i] = f(A[ia[i]], B[ib[i]]);
  }
  return { data: out, shape: outShape, dtype: outDtype };
}

export function mapTernary(
  a: CpuTensor, b: CpuTensor, c: CpuTensor, outShape: readonly number[], outDtype: DType,
  f: (x: number, y: number, z: number) => number,
): CpuTensor {
  const n = numel(outShape), out = allocate(outDtype, n);
  const [ia, ib, ic] = broadcastIndex([a.shape, b.shape, c.shape], outShape);
  const A = a.data, B = b.data, C = c.data;
  for (let i = 0; i < n; i++) out[i] = f(A[ia[i]], B[ib[i]], C[ic[i]]);
  return { data: out, shape: outShape, dtype: outDtype };
}

/** Rounds through a typed array of `dtype` (int32 truncation, bool 0/1). */
export function castArray(src: TypedArray, dtype: DType): TypedArray {
  const out = allocate(dtype, src.length);
  if (dtype === 'bool') for (let i = 0; i < src.length; i++) out[i] = src[i] !== 0 ? 1 : 0;
  else out.set(src);
  return out;
}
