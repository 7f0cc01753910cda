// AssemblyScript source of the float32 GEMM kernels (built into WebAssembly by
// scripts/build-wasm.mjs; JavaScript side: runtime/src/wasm/gemm.ts). All pointers are byte
// addresses in the one linear memory the JavaScript side manages; nothing here allocates.
//
// C[M,N] (+)= A[M,K]·B[K,N]. B is first packed (packB) into K-blocks of KC rows, each block a
// run of panels of NR = 8 columns stored k-major (panel p, row k at (p*kb + k)*8 floats, columns
// past N zero), so the micro-kernel reads B with unit stride and A by broadcasting one element of
// each of MR = 4 rows: 8 v128 accumulators, 2 loads of B and 4 splats of A per k.
// Invariant: results are float32 sums in k order within a block, blocks added in order (the last
// M mod 4 rows, which kernel1x8 takes, sum even and odd k apart and add the two at the end: a
// matrix-vector product is bound by the add latency otherwise), so a product does not depend on
// the thread split (rows split at multiples of 4) or the packing of B; no function writes
// memory other than its outputs (threads run them concurrently on one shared memory).

import { fma, NR, storeRow } from './lib/simd';

const MR: i32 = 4;
/** Rows of B per block: a 4-row strip of A (4 KB) and one panel (8 KB) stay in L1. */
export const KC: i32 = 256;

/** Floats packB writes for a [K,N] operand. */
export function packedSize(K: i32, N: i32): i32 {
  return K * (((N + NR - 1) / NR) * NR);
}

/**
 * Packs B (element (k,j) at b + (k*sbk + j*sbj)*4) into dst (packedSize(K, N) floats): K-blocks
 * of KC rows in order; within a block of kb rows, panel p holds columns 8p..8p+7, row-major.
 */
export function packB(K: i32, N: i32, b: usize, sbk: i32, sbj: i32, dst: usize): void {
  const panels = (N + NR - 1) / NR;
  for (let k0 = 0; k0 < K; k0 += KC) {
    const kb = min(KC, K - k0);
    for (let p = 0; p < panels; p++) {
      const j = p * NR;
      const w = min(NR, N - j);
      let out = dst + (<usize>(k0 * panels * NR + p * kb * NR) << 2);
      if (w == NR && sbj == 1) {
        let src = b + (<usize>(k0 * sbk + j) << 2);
        for (let k = 0; k < kb; k++) {
          v128.store(out, v128.load(src));
          v128.store(out, v128.load(src, 16), 16);
          out += 32; src += <usize>sbk << 2;
        }
      } else {
        for (let k = 0; k < kb; k++) {
          const row = b + (<usize>((k0 + k) * sbk + j * sbj) << 2);
          for (let t = 0; t < NR; t++) store<f32>(out + (<usize>t << 2), t < w ? load<f32>(row + (<usize>(t * sbj) << 2)) : 0);
          out += 32;
        }
      }
    }
  }
}

/**
 * C (row stride ldc floats) (+)= A (row stride lda, unit stride along K) · packed B, for rows
 * [m0, m1) and column panels [p0, p1) of C only — so threads can split M or N. `accumulate`
 * adds to C instead of overwriting it.
 */
export function gemmPacked(m0: i32, m1: i32, p0: i32, p1: i32, N: i32, K: i32, a: usize, lda: i32, bp: usize, c: usize, ldc: i32, accumulate: i32): void {
  const panels = (N + NR - 1) / NR;
  for (let k0 = 0; k0 < K; k0 += KC) {
    const kb = min(KC, K - k0);
    const acc = accumulate != 0 || k0 > 0;
    const block = bp + (<usize>(k0 * panels * NR) << 2);
    for (let p = p0; p < p1; p++) {
      const j = p * NR;
      const w = min(NR, N - j);
      const panel = block + (<usize>(p * kb * NR) << 2);
      let i = m0;
      for (; i + MR <= m1; i += MR) kernel4x8(kb, a + (<usize>(i * lda + k0) << 2), lda, panel, c + (<usize>(i * ldc + j) << 2), ldc, w, acc);
      for (; i < m1; i++) kernel1x8(kb, a + (<usize>(i * lda + k0) << 2), panel, c + (<usize>(i * ldc + j) << 2), w, acc);
    }
  }
}


function kernel4x8(kb: i32, a: usize, lda: i32, bp: usize, c: usize, ldc: i32, w: i32, acc: bool): void {
  let c00 = f32x4.splat(0), c01 = f32x4.splat(0);
  let c10 = f32x4.splat(0), c11 = f32x4.splat(0);
  let c20 = f32x4.splat(0), c21 = f32x4.splat(0);
  let c30 = f32x4.splat(0), c31 = f32x4.splat(0);
  const s = <usize>lda << 2;
  let a0 = a, a1 = a + s, a2 = a + 2 * s, a3 = a + 3 * s;
  let b = bp;
  for (let k = 0; k < kb; k++) {
    const b0 = v128.load(b), b1 = v128.load(b, 16);
    let x = v128.load32_splat(a0);
    c00 = fma(x, b0, c00); c01 = fma(x, b1, c01);
    x = v128.load32_splat(a1);
    c10 = fma(x, b0, c10); c11 = fma(x, b1, c11);
    x = v128.load32_splat(a2);
    c20 = fma(x, b0, c20); c21 = fma(x, b1, c21);
    x = v128.load32_splat(a3);
    c30 = fma(x, b0, c30); c31 = fma(x, b1, c31);
    a0 += 4; a1 += 4; a2 += 4; a3 += 4; b += 32;
  }
  const sc = <usize>ldc << 2;
  storeRow(c, c00, c01, w, acc);
  storeRow(c + sc, c10, c11, w, acc);
  storeRow(c + 2 * sc, c20, c21, w, acc);
  storeRow(c + 3 * sc, c30, c31, w, acc);
}

function kernel1x8(kb: i32, a: usize, bp: usize, c: usize, w: i32, acc: bool): void {
  let c0 = f32x4.splat(0), c1 = f32x4.splat(0), d0 = f32x4.splat(0), d1 = f32x4.splat(0);
  let b = bp;
  let k = 0;
  for (; k + 2 <= kb; k += 2) {
    const x = v128.load32_splat(a + (<usize>k << 2)), y = v128.load32_splat(a + (<usize>k << 2), 4);
    c0 = fma(x, v128.load(b), c0);
    c1 = fma(x, v128.load(b, 16), c1);
    d0 = fma(y, v128.load(b, 32), d0);
    d1 = fma(y, v128.load(b, 48), d1);
    b += 64;
  }
  if (k < kb) {
    const x = v128.load32_splat(a + (<usize>k << 2));
    c0 = fma(x, v128.load(b), c0);
    c1 = fma(x, v128.load(b, 16), c1);
  }
  storeRow(c, f32x4.add(c0, d0), f32x4.add(c1, d1), w, acc);
}

/**
 * linear's epilogue over rows [0, M) of C (row stride ldc floats): C[i,j] += bias[j] (bias = 0:
 * none), then relu != 0 maps the bit patterns as ir-spec's reluLoop does (a set sign bit gives +0
 * unless the value is a NaN), so results equal the reference bit for bit.
 */
export function gemmEpilogue(M: i32, N: i32, c: usize, ldc: i32, bias: usize, relu: i32): void {
  const inf = i32x4.splat(0x7f800000), abs = i32x4.splat(0x7fffffff);
  for (let i = 0; i < M; i++) {
    const row = c + (<usize>(i * ldc) << 2);
    let j = 0;
    for (; j + 4 <= N; j += 4) {
      const at = row + (<usize>j << 2);
      let v = v128.load(at);
      if (bias != 0) v = f32x4.add(v, v128.load(bias + (<usize>j << 2)));
      if (relu != 0) {
        // mask = sign(v) & !NaN(v): lanes to clear.
        const notNan = v128.not(i32x4.shr_s(i32x4.sub(inf, v128.and(v, abs)), 31));
        v = v128.andnot(v, v128.and(i32x4.shr_s(v, 31), notNan));
      }
      v128.store(at, v);
    }
    for (; j < N; j++) {
      const at = row + (<usize>j << 2);
      let v = load<f32>(at);
      if (bias != 0) v += load<f32>(bias + (<usize>j << 2));
      if (relu != 0) {
        const b = reinterpret<i32>(v);
        v = reinterpret<f32>(b & ~((b >> 31) & ~((0x7f800000 - (b & 0x7fffffff)) >> 31)));
      }
      store<f32>(at, v);
    }
  }
}

/** First byte free for the JavaScript side's allocator (after this module's static data). */
export function heapBase(): usize {
  return (__heap_base + 63) & ~63;
}
