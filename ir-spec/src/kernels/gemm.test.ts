// The GEMM kernels against a plain double-precision triple loop: every operand layout (packed or
// not), sizes around the 4x4 tile, the N and K block edges, the small-M path, accumulation, and
// the implicit (gathered) form used by convolutions.

import { describe, it, expect } from 'vitest';
import { gemm, gemmNT } from './gemm.js';
import { gemmGather } from './implicit-gemm.js';

/** A deterministic pseudo-random buffer (xorshift), values in [-1, 1). */
function buffer(n: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  let s = seed * 2654435761 >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    out[i] = s / 2 ** 31 - 1;
  }
  return out;
}

function reference(M: number, N: number, K: number, a: (i: number, k: number) => number, b: (k: number, j: number) => number): Float64Array {
  const out = new Float64Array(M * N);
  for (let i = 0; i < M; i++) for (let j = 0; j < N; j++) {
    let s = 0;
    for (let k = 0; k < K; k++) s += a(i, k) * b(k, j);
    out[i * N + j] = s;
  }
  return out;
}

function expectMatch(C: Float32Array, cOff: number, ldc: number, M: number, N: number, want: Float64Array, K: number): void {
  for (let i = 0; i < M; i++) for (let j = 0; j < N; j++) {
    const got = C[cOff + i * ldc + j], w = want[i * N + j];
    // Double accumulation, one float32 rounding per element and K block.
    if (!(Math.abs(got - w) <= 1e-6 * (1 + Math.sqrt(K)) * (1 + Math.abs(w)))) {
      throw new Error(`C[${i},${j}] = ${got}, want ${w} (M=${M} N=${N} K=${K})`);
    }
  }
}

describe('gemm', () => {
  const sizes: [number, number, number][] = [
    [1, 1, 1], [3, 5, 7], [4, 4, 4], [5, 9, 3], [17, 6, 33], [8, 300, 20], [2, 7, 1100], [9, 13, 1300], [1, 600, 40], [6, 3, 0],
  ];
  // Layouts as (A stored [M,K] or [K,M]) × (B stored [N,K] or [K,N]).
  for (const aT of [false, true]) {
    for (const bT of [false, true]) {
      it(`A ${aT ? '[K,M]' : '[M,K]'} · B ${bT ? '[K,N]' : '[N,K]'} for edge and block sizes`, () => {
        for (const [M, N, K] of sizes) {
          const A = buffer(M * K + 3, M + 7 * K), B = buffer(N * K + 5, N + 3 * K);
          const aOff = 3, bOff = 5;
          const [sai, sak] = aT ? [1, M] : [K, 1];
          const [sbk, sbj] = bT ? [N, 1] : [1, K];
          const want = reference(M, N, K, (i, k) => A[aOff + i * sai + k * sak], (k, j) => B[bOff + k * sbk + j * sbj]);
          const ldc = N + 2, C = new Float32Array(M * ldc + 4).fill(NaN);
          gemm(M, N, K, A, aOff, sai, sak, B, bOff, sbk, sbj, C, 4, ldc);
          expectMatch(C, 4, ldc, M, N, want, K);
          // The padding columns of C are left alone.
          for (let i = 0; i < M; i++) expect(Number.isNaN(C[4 + i * ldc + N])).toBe(true);
        }
      });
    }
  }

  it('accumulates into C when asked', () => {
    for (const [M, N, K] of [[5, 6, 7], [2, 9, 5], [8, 8, 1500]] as const) {
      const A = buffer(M * K, 1), B = buffer(N * K, 2), C0 = buffer(M * N, 3);
      const prod = reference(M, N, K, (i, k) => A[i * K + k], (k, j) => B[j * K + k]);
      const want = prod.map((v, i) => v + C0[i]);
      const C = C0.slice();
      gemmNT(M, N, K, A, 0, K, B, 0, K, C, 0, N, true);
      expectMatch(C, 0, N, M, N, want, K);
      // The small-M path (B row-major along N) accumulates too.
      const Bt = new Float32Array(K * N);
      for (let k = 0; k < K; k++) for (let j = 0; j < N; j++) Bt[k * N + j] = B[j * K + k];
      const C2 = C0.slice();
      gemm(M, N, K, A, 0, K, 1, Bt, 0, N, 1, C2, 0, N, true);
      expectMatch(C2, 0, N, M, N, want, K);
    }
  });

  it('K = 0 gives zeros (or leaves C when accumulating)', () => {
    const C = new Float32Array(6).fill(7);
    gemmNT(2, 3, 0, new Float32Array(0), 0, 0, new Float32Array(0), 0, 0, C, 0, 3, true);
    expect([...C]).toEqual([7, 7, 7, 7, 7, 7]);
    gemmNT(2, 3, 0, new Float32Array(0), 0, 0, new Float32Array(0), 0, 0, C, 0, 3);
    expect([...C]).toEqual([0, 0, 0, 0, 0, 0]);
  });
});

describe('gemmGather', () => {
  it('reads B(k, j) at X[xOff + kOff[k] + jOff[j]]', () => {
    for (const [M, N, K] of [[1, 1, 1], [4, 4, 4], [7, 10, 13], [3, 5, 1100], [9, 6, 2]] as const) {
      const X = buffer(5000, M * 31 + N), A = buffer(M * K, K);
      const kOff = Int32Array.from({ length: K }, (_, k) => (k * 37) % 1500);
      const jOff = Int32Array.from({ length: N }, (_, j) => (j * 53) % 900);
      const want = reference(M, N, K, (i, k) => A[i * K + k], (k, j) => X[11 + kOff[k] + jOff[j]]);
      const C = new Float32Array(M * N);
      gemmGather(M, N, K, A, 0, K, X, 11, kOff, jOff, C, 0, N, false);
      expectMatch(C, 0, N, M, N, want, K);
      const C2 = new Float32Array(M * N).fill(1);
      gemmGather(M, N, K, A, 0, K, X, 11, kOff, jOff, C2, 0, N, true);
      expectMatch(C2, 0, N, M, N, want.map((v) => v + 1), K);
    }
  });
});
