// The "implicit GEMM" of convolutions: C[M,N] = A[M,K]·B where element (k, j) of B is read as
// X[xOff + kOff[k] + jOff[j]] straight from a (zero-padded) input image, so no im2col matrix is
// built. For a convolution, k runs over (channel, ky, kx) with kOff = c·plane + ky·dh·row + kx·dw
// and j over output positions with jOff = oy·sh·row + ox·sw (swapped for the weight gradient,
// whose contraction runs over positions). The 4x4 register tile is that of kernels/gemm.ts with
// one extra index load per k. Invariant: every kOff[k] + jOff[j] addresses a valid element.
// Under a run's deadline it ticks (kernels/deadline.ts) after each strip of a column block.

import { kernelTick } from './deadline.js';

/** K is split into blocks of this length so the 4-row strip of A stays in L1. */
const KC = 1024;
/** N is split into blocks of this many columns: a strip of one block is ≤ 4·NC·KC multiply-adds (see kernels/deadline.ts). */
const NC = 1024;

/**
 * C[M,N] = A·B (or `+=` when `accumulate`), with A(i,k) = A[aOff + i·lda + k] and
 * B(k,j) = X[xOff + kOff[k] + jOff[j]]; C(i,j) = C[cOff + i·ldc + j].
 */
export function gemmGather(
  M: number, N: number, K: number,
  A: Float32Array, aOff: number, lda: number,
  X: Float32Array, xOff: number, kOff: Int32Array, jOff: Int32Array,
  C: Float32Array, cOff: number, ldc: number,
  accumulate: boolean,
): void {
  if (M === 0 || N === 0) return;
  if (K === 0) {
    if (!accumulate) for (let i = 0; i < M; i++) C.fill(0, cOff + i * ldc, cOff + i * ldc + N);
    return;
  }
  // Column blocks of NC (a view of jOff each) bound the work between two deadline ticks; every
  // element still sums its k blocks in the same order.
  const blocks = N <= NC ? [jOff] : Array.from({ length: Math.ceil(N / NC) }, (_, b) => jOff.subarray(b * NC, Math.min(N, (b + 1) * NC)));
  for (let k0 = 0; k0 < K; k0 += KC) {
    const kb = Math.min(KC, K - k0);
    const acc = accumulate || k0 > 0;
    let i = 0;
    for (; i + 4 <= M; i += 4) {
      for (let b = 0; b < blocks.length; b++) {
        const jb = blocks[b];
        strip4(jb.length, k0, kb, A, aOff + i * lda, lda, X, xOff, kOff, jb, C, cOff + i * ldc + b * NC, ldc, acc);
        kernelTick(4 * jb.length * kb);
      }
    }
    for (; i < M; i++) {
      for (let b = 0; b < blocks.length; b++) {
        const jb = blocks[b];
        row1(jb.length, k0, kb, A, aOff + i * lda, X, xOff, kOff, jb, C, cOff + i * ldc + b * NC, acc);
        kernelTick(jb.length * kb);
      }
    }
  }
}

/**
 * A 4-row strip of C in 4x4 register tiles: the tile of kernels/gemm.ts `strip4` with B read
 * through kOff/jOff. Deliberately a second copy (see the comment there): sharing one kernel
 * costs the plain GEMM its unit-stride B loads.
 */
function strip4(
  N: number, k0: number, kb: number,
  A: Float32Array, a0: number, lda: number,
  X: Float32Array, xOff: number, kOff: Int32Array, jOff: Int32Array,
  C: Float32Array, r0: number, ldc: number, acc: boolean,
): void {
  const a1 = a0 + lda, a2 = a1 + lda, a3 = a2 + lda;
  const r1 = r0 + ldc, r2 = r1 + ldc, r3 = r2 + ldc;
  const kEnd = k0 + kb;
  let j = 0;
  for (; j + 4 <= N; j += 4) {
    const b0 = xOff + jOff[j], b1 = xOff + jOff[j + 1], b2 = xOff + jOff[j + 2], b3 = xOff + jOff[j + 3];
    let c00 = 0, c01 = 0, c02 = 0, c03 = 0, c10 = 0, c11 = 0, c12 = 0, c13 = 0;
    let c20 = 0, c21 = 0, c22 = 0, c23 = 0, c30 = 0, c31 = 0, c32 = 0, c33 = 0;
    for (let k = k0; k < kEnd; k++) {
      const o = kOff[k];
      const x0 = A[a0 + k], x1 = A[a1 + k], x2 = A[a2 + k], x3 = A[a3 + k];
      const y0 = X[o + b0], y1 = X[o + b1], y2 = X[o + b2], y3 = X[o + b3];
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
    const b = xOff + jOff[j];
    let c0 = 0, c1 = 0, c2 = 0, c3 = 0;
    for (let k = k0; k < kEnd; k++) {
      const y = X[kOff[k] + b];
      c0 += A[a0 + k] * y; c1 += A[a1 + k] * y; c2 += A[a2 + k] * y; c3 += A[a3 + k] * y;
    }
    if (acc) { C[r0 + j] += c0; C[r1 + j] += c1; C[r2 + j] += c2; C[r3 + j] += c3; } else { C[r0 + j] = c0; C[r1 + j] = c1; C[r2 + j] = c2; C[r3 + j] = c3; }
  }
}

/** One row of C (M remainders, and depthwise convolutions with one output channel per group). */
function row1(
  N: number, k0: number, kb: number,
  A: Float32Array, a: number,
  X: Float32Array, xOff: number, kOff: Int32Array, jOff: Int32Array,
  C: Float32Array, r: number, acc: boolean,
): void {
  const kEnd = k0 + kb;
  let j = 0;
  for (; j + 4 <= N; j += 4) {
    const b0 = xOff + jOff[j], b1 = xOff + jOff[j + 1], b2 = xOff + jOff[j + 2], b3 = xOff + jOff[j + 3];
    let c0 = 0, c1 = 0, c2 = 0, c3 = 0;
    for (let k = k0; k < kEnd; k++) {
      const o = kOff[k], v = A[a + k];
      c0 += v * X[o + b0]; c1 += v * X[o + b1]; c2 += v * X[o + b2]; c3 += v * X[o + b3];
    }
    if (acc) { C[r + j] += c0; C[r + j + 1] += c1; C[r + j + 2] += c2; C[r + j + 3] += c3; } else { C[r + j] = c0; C[r + j + 1] = c1; C[r + j + 2] = c2; C[r + j + 3] = c3; }
  }
  for (; j < N; j++) {
    const b = xOff + jOff[j];
    let c = 0;
    for (let k = k0; k < kEnd; k++) c += A[a + k] * X[kOff[k] + b];
    if (acc) C[r + j] += c; else C[r + j] = c;
  }
}
