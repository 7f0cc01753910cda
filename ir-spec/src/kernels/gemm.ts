// Dense float32 matrix products for the CPU kernels (matmul, linear, convolutions).
// The one hot loop is the "NT" product C[M,N] = A[M,K]·B[N,K]ᵀ with a 4x4 tile of scalar
// locals: both operands are read along K with unit stride, which is what plain JS needs to
// reach ~4 GFLOP/s. Other layouts are reduced to it by packing blocks (a copy costs O(K·N),
// the product O(M·N·K)). Invariants: operands are addressed by explicit strides; sums are
// accumulated in JS doubles and rounded to float32 once per output element and K block.

/** The buffers these kernels read and write (one element type keeps the hot loops monomorphic). */
type FloatArray = Float32Array;

import { kernelTick } from './deadline.js';

/** K is split into blocks of this length so a 4-row strip of A stays in L1 while B streams. */
const KC = 512;
/** N is split into blocks of this many rows of B so a [NC, KC] block of B (512 KB) stays in L2. */
const NC = 256;

let panelB = new Float32Array(0);
let panelA = new Float32Array(0);
/** Reused packing buffers: kernels run one at a time, so one pair serves every call. */
function scratchB(n: number): Float32Array { if (panelB.length < n) panelB = new Float32Array(n); return panelB; }
function scratchA(n: number): Float32Array { if (panelA.length < n) panelA = new Float32Array(n); return panelA; }
/** A float64 row accumulator, so the small-M path rounds to float32 once per element. */
let rowAcc = new Float64Array(0);
function rowScratch(n: number): Float64Array { if (rowAcc.length < n) rowAcc = new Float64Array(n); return rowAcc; }

/**
 * What a product does to each element of C after its sum (linear's bias and activation, so a
 * fast gemm applies them while C is in its memory): C[i,j] += bias[j] (float32 add), then relu
 * by the bit rule of ir-spec's reluLoop (a set sign bit gives +0 unless the value is a NaN).
 */
export interface GemmEpilogue {
  readonly bias?: Float32Array;
  readonly relu?: boolean;
}

/**
 * C[M,N] = A[M,K]·B[K,N] (or `+=` when `accumulate`) for any operand strides: element (i,k) of A
 * is `A[aOff + i*sai + k*sak]`, (k,j) of B is `B[bOff + k*sbk + j*sbj]`, (i,j) of C is
 * `C[cOff + i*ldc + j]`, then the `epilogue` on every element of C. Operands not K-contiguous
 * are packed per block (B per [NC,KC] block, A per 4-row strip) so the register-tiled kernel
 * always reads unit stride.
 */
export function gemm(
  M: number, N: number, K: number,
  A: FloatArray, aOff: number, sai: number, sak: number,
  B: FloatArray, bOff: number, sbk: number, sbj: number,
  C: Float32Array, cOff: number, ldc: number,
  accumulate = false, epilogue?: GemmEpilogue,
): void {
  gemmProduct(M, N, K, A, aOff, sai, sak, B, bOff, sbk, sbj, C, cOff, ldc, accumulate);
  if (epilogue) applyGemmEpilogue(M, N, C, cOff, ldc, epilogue);
}

/** The epilogue (see GemmEpilogue) on rows [0, M) of C. */
export function applyGemmEpilogue(M: number, N: number, C: Float32Array, cOff: number, ldc: number, { bias, relu }: GemmEpilogue): void {
  if (bias) for (let i = 0; i < M; i++) for (let j = 0, o = cOff + i * ldc; j < N; j++, o++) C[o] += bias[j];
  if (!relu) return;
  const bits = new Int32Array(C.buffer, C.byteOffset, C.length);
  for (let i = 0; i < M; i++) {
    for (let j = 0, o = cOff + i * ldc; j < N; j++, o++) {
      const b = bits[o];
      bits[o] = b & ~((b >> 31) & ~((0x7f800000 - (b & 0x7fffffff)) >> 31));
    }
  }
}

function gemmProduct(
  M: number, N: number, K: number,
  A: FloatArray, aOff: number, sai: number, sak: number,
  B: FloatArray, bOff: number, sbk: number, sbj: number,
  C: Float32Array, cOff: number, ldc: number,
  accumulate: boolean,
): void {
  if (M === 0 || N === 0) return;
  if (K === 0) {
    if (!accumulate) for (let i = 0; i < M; i++) C.fill(0, cOff + i * ldc, cOff + i * ldc + N);
    return;
  }
  // A few rows times a row-major B: packing B would cost as much as the product.
  if (M < 4 && sbk !== 1 && sbj === 1) {
    gemmSmallM(M, N, K, A, aOff, sai, sak, B, bOff, sbk, C, cOff, ldc, accumulate);
    return;
  }
  for (let j0 = 0; j0 < N; j0 += NC) {
    const nb = Math.min(NC, N - j0);
    for (let k0 = 0; k0 < K; k0 += KC) {
      const kb = Math.min(KC, K - k0);
      const acc = accumulate || k0 > 0;
      let Bp: FloatArray = B, bo = bOff + j0 * sbj + k0 * sbk, ldb = sbj;
      if (sbk !== 1) {
        Bp = scratchB(nb * kb);
        packRows(B, bo, nb, kb, sbj, sbk, Bp as Float32Array);
        bo = 0; ldb = kb;
      }
      const aPacked = sak !== 1;
      const Ap = aPacked ? scratchA(4 * kb) : A;
      let i = 0;
      for (; i + 4 <= M; i += 4) {
        let ao = aOff + i * sai + k0 * sak, lda = sai;
        if (aPacked) { packRows(A, ao, 4, kb, sai, sak, Ap as Float32Array); ao = 0; lda = kb; }
        strip4(nb, kb, Ap, ao, lda, Bp, bo, ldb, C, cOff + i * ldc + j0, ldc, acc);
        kernelTick(4 * nb * kb);
      }
      for (; i < M; i++) {
        let ao = aOff + i * sai + k0 * sak;
        if (aPacked) { packRows(A, ao, 1, kb, sai, sak, Ap as Float32Array); ao = 0; }
        gemvNT(nb, kb, Ap, ao, Bp, bo, ldb, C, cOff + i * ldc + j0, acc);
        kernelTick(nb * kb);
      }
    }
  }
}

/** C[M,N] = A[M,K]·B[N,K]ᵀ (or `+=`): both operands K-contiguous, no packing. */
export function gemmNT(
  M: number, N: number, K: number,
  A: FloatArray, aOff: number, lda: number,
  B: FloatArray, bOff: number, ldb: number,
  C: Float32Array, cOff: number, ldc: number,
  accumulate = false,
): void {
  gemm(M, N, K, A, aOff, lda, 1, B, bOff, 1, ldb, C, cOff, ldc, accumulate);
}

/** dst[r*cols + c] = src[off + r*sr + c*sc]: gathers a strided block into K-contiguous rows. */
function packRows(src: FloatArray, off: number, rows: number, cols: number, sr: number, sc: number, dst: Float32Array): void {
  if (sr === 1 && rows > 1) {
    // Columns of the source are contiguous: read them in order, write with stride `cols`.
    for (let c = 0; c < cols; c++) {
      const s = off + c * sc;
      for (let r = 0; r < rows; r++) dst[r * cols + c] = src[s + r];
    }
    return;
  }
  for (let r = 0; r < rows; r++) {
    const s = off + r * sr, d = r * cols;
    for (let c = 0; c < cols; c++) dst[d + c] = src[s + c * sc];
  }
}

/**
 * A 4-row strip of C: 4x4 register tiles, then 4x1 tiles for the last columns.
 * kernels/implicit-gemm.ts has the same tile reading B through an index table. They stay two
 * copies on purpose: running this one through that kernel with an identity table (one more load
 * per k) measured ~7% slower on matmul 512³ (4.1 → 3.85 GFLOP/s), so fix a bug in both.
 */
function strip4(
  N: number, K: number,
  A: FloatArray, a0: number, lda: number,
  B: FloatArray, bOff: number, ldb: number,
  C: Float32Array, r0: number, ldc: number,
  acc: boolean,
): void {
  const a1 = a0 + lda, a2 = a1 + lda, a3 = a2 + lda;
  const r1 = r0 + ldc, r2 = r1 + ldc, r3 = r2 + ldc;
  let j = 0;
  for (; j + 4 <= N; j += 4) {
    const b0 = bOff + j * ldb, b1 = b0 + ldb, b2 = b1 + ldb, b3 = b2 + ldb;
    let c00 = 0, c01 = 0, c02 = 0, c03 = 0, c10 = 0, c11 = 0, c12 = 0, c13 = 0;
    let c20 = 0, c21 = 0, c22 = 0, c23 = 0, c30 = 0, c31 = 0, c32 = 0, c33 = 0;
    for (let k = 0; k < K; k++) {
      const x0 = A[a0 + k], x1 = A[a1 + k], x2 = A[a2 + k], x3 = A[a3 + k];
      const y0 = B[b0 + k], y1 = B[b1 + k], y2 = B[b2 + k], y3 = B[b3 + k];
      c00 += x0 * y0; c01 += x0 * y1; c02 += x0 * y2; c03 += x0 * y3;
      c10 += x1 * y0; c11 += x1 * y1; c12 += x1 * y2; c13 += x1 * y3;
      c20 += x2 * y0; c21 += x2 * y1; c22 += x2 * y2; c23 += x2 * y3;
      c30 += x3 * y0; c31 += x3 * y1; c32 += x3 * y2; c33 += x3 * y3;
    }
    if (acc) {
      C[r0 + j] += c00; C[r0 + j + 1] += c01; C[r0 + j + 2] += c02; C[r0 + j + 3] += c03;
      C[r1 + j] += c10; C[r1 + j + 1] += c11; C[r1 + j + 2] += c12; C[r1 + j + 3] += c13;
      C[r2 + j] += c20; C[r2 + j + 1] += c21; C[r2 + j + 2] += c22; C[r2 + j + 3] += c23;
      C[r3 + j] += c30; C[r3 + j + 1] += c31; C[r3 + j + 2] += c32; C[r3 + j + 3] += c33;
    } else {
      C[r0 + j] = c00; C[r0 + j + 1] = c01; C[r0 + j + 2] = c02; C[r0 + j + 3] = c03;
      C[r1 + j] = c10; C[r1 + j + 1] = c11; C[r1 + j + 2] = c12; C[r1 + j + 3] = c13;
      C[r2 + j] = c20; C[r2 + j + 1] = c21; C[r2 + j + 2] = c22; C[r2 + j + 3] = c23;
      C[r3 + j] = c30; C[r3 + j + 1] = c31; C[r3 + j + 2] = c32; C[r3 + j + 3] = c33;
    }
  }
  for (; j < N; j++) {
    const b0 = bOff + j * ldb;
    let c0 = 0, c1 = 0, c2 = 0, c3 = 0;
    for (let k = 0; k < K; k++) {
      const y = B[b0 + k];
      c0 += A[a0 + k] * y; c1 += A[a1 + k] * y; c2 += A[a2 + k] * y; c3 += A[a3 + k] * y;
    }
    if (acc) { C[r0 + j] += c0; C[r1 + j] += c1; C[r2 + j] += c2; C[r3 + j] += c3; } else { C[r0 + j] = c0; C[r1 + j] = c1; C[r2 + j] = c2; C[r3 + j] = c3; }
  }
}

/**
 * y[N] = B[N,K]·x[K] (or `+=`): the matrix-vector product of a batch-1 linear layer. Eight rows
 * of B per pass so each load of x feeds eight multiply-adds (a 1x4 tile is ~20% slower).
 */
export function gemvNT(
  N: number, K: number, x: FloatArray, xOff: number,
  B: FloatArray, bOff: number, ldb: number,
  y: Float32Array, yOff: number, acc: boolean,
): void {
  let j = 0;
  for (; j + 8 <= N; j += 8) {
    const b0 = bOff + j * ldb, b1 = b0 + ldb, b2 = b1 + ldb, b3 = b2 + ldb;
    const b4 = b3 + ldb, b5 = b4 + ldb, b6 = b5 + ldb, b7 = b6 + ldb;
    let c0 = 0, c1 = 0, c2 = 0, c3 = 0, c4 = 0, c5 = 0, c6 = 0, c7 = 0;
    for (let k = 0; k < K; k++) {
      const v = x[xOff + k];
      c0 += v * B[b0 + k]; c1 += v * B[b1 + k]; c2 += v * B[b2 + k]; c3 += v * B[b3 + k];
      c4 += v * B[b4 + k]; c5 += v * B[b5 + k]; c6 += v * B[b6 + k]; c7 += v * B[b7 + k];
    }
    const o = yOff + j;
    if (acc) {
      y[o] += c0; y[o + 1] += c1; y[o + 2] += c2; y[o + 3] += c3; y[o + 4] += c4; y[o + 5] += c5; y[o + 6] += c6; y[o + 7] += c7;
    } else {
      y[o] = c0; y[o + 1] = c1; y[o + 2] = c2; y[o + 3] = c3; y[o + 4] = c4; y[o + 5] = c5; y[o + 6] = c6; y[o + 7] = c7;
    }
  }
  for (; j < N; j++) {
    const b0 = bOff + j * ldb;
    let c = 0;
    for (let k = 0; k < K; k++) c += x[xOff + k] * B[b0 + k];
    if (acc) y[yOff + j] += c; else y[yOff + j] = c;
  }
}

/**
 * C[M,N] = A[M,K]·B[K,N] (or `+=`) for M < 4 with B row-contiguous along N: each pass adds four
 * rows of B, scaled by four elements of A, into a row of C, all unit-stride. Used where packing
 * B would cost as much as the product itself (a batch-1 backward through a linear layer).
 */
function gemmSmallM(
  M: number, N: number, K: number,
  A: FloatArray, aOff: number, sai: number, sak: number,
  B: FloatArray, bOff: number, sbk: number,
  C: Float32Array, cOff: number, ldc: number,
  accumulate: boolean,
): void {
  const row = rowScratch(N);
  for (let i = 0; i < M; i++) {
    const c0 = cOff + i * ldc, a = aOff + i * sai;
    if (accumulate) for (let j = 0; j < N; j++) row[j] = C[c0 + j];
    else row.fill(0, 0, N);
    let k = 0;
    for (; k + 4 <= K; k += 4) {
      const x0 = A[a + k * sak], x1 = A[a + (k + 1) * sak], x2 = A[a + (k + 2) * sak], x3 = A[a + (k + 3) * sak];
      const b0 = bOff + k * sbk, b1 = b0 + sbk, b2 = b1 + sbk, b3 = b2 + sbk;
      for (let j = 0; j < N; j++) row[j] += x0 * B[b0 + j] + x1 * B[b1 + j] + x2 * B[b2 + j] + x3 * B[b3 + j];
    }
    for (; k < K; k++) {
      const x0 = A[a + k * sak], b0 = bOff + k * sbk;
      for (let j = 0; j < N; j++) row[j] += x0 * B[b0 + j];
    }
    for (let j = 0; j < N; j++) C[c0 + j] = row[j];
    kernelTick(N * K);
  }
}
