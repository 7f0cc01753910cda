// The WebAssembly GEMM against ir-spec's reference loops: every operand layout, ragged sizes
// around the 4x8 micro-tile and the K block, batch-1 rows, accumulation, pinned constants reused
// across calls, and the kernel memory returned after each call. The tests fail (not skip) when
// the engine has no WebAssembly SIMD: Node 20 has it.

import { describe, expect, it } from 'vitest';
import { applyGemmEpilogue, getOp, REFERENCE_PRIMITIVES, type CpuTensor } from '@kiln/ir-spec';
import { fastPrimitives } from './primitives.js';
import { wasmKernels, WasmHeap } from './heap.js';
import { WasmGemm } from './gemm.js';
import { randomFloats } from './test-helpers.js';

function heap(): WasmHeap {
  const h = wasmKernels();
  if (!h) throw new Error('no WebAssembly SIMD in this engine');
  return h;
}

const sizes: [number, number, number][] = [
  [4, 8, 128], [5, 9, 130], [17, 6, 33], [1, 600, 40], [3, 37, 257], [33, 65, 513], [64, 17, 9], [7, 8, 1000], [128, 40, 3],
];

describe('WebAssembly gemm', () => {
  it('picks a SIMD variant on this engine', () => {
    expect(['simd', 'relaxed']).toContain(heap().variant);
  });

  for (const aT of [false, true]) {
    for (const bT of [false, true]) {
      it(`matches the reference for A ${aT ? '[K,M]' : '[M,K]'} · B ${bT ? '[N,K]' : '[K,N]'}, with and without accumulation`, () => {
        const h = heap();
        const g = new WasmGemm(h);
        const before = h.liveBytes;
        for (const [M, N, K] of sizes) {
          const A = randomFloats(M * K + 3, M + 7 * K), B = randomFloats(N * K + 5, N + 3 * K);
          const sai = aT ? 1 : K, sak = aT ? M : 1, sbk = bT ? 1 : N, sbj = bT ? K : 1;
          for (const acc of [false, true]) {
            const ldc = N + 2;
            const want = randomFloats(M * ldc + 1, 5), got = want.slice();
            REFERENCE_PRIMITIVES.gemm(M, N, K, A, 3, sai, sak, B, 5, sbk, sbj, want, 1, ldc, acc);
            g.gemm(M, N, K, A, 3, sai, sak, B, 5, sbk, sbj, got, 1, ldc, acc);
            for (let i = 0; i < got.length; i++) {
              const tol = 1e-6 * Math.sqrt(K) * 4 * (1 + Math.abs(want[i]));
              if (!(Math.abs(got[i] - want[i]) <= tol)) throw new Error(`C[${i}] = ${got[i]}, want ${want[i]} (M=${M} N=${N} K=${K} acc=${acc})`);
            }
          }
        }
        expect(h.liveBytes).toBe(before);
      });
    }
  }

  it("applies linear's epilogue (bias, relu) like the reference, bit for bit after the same product", () => {
    const h = heap();
    const g = new WasmGemm(h);
    const before = h.liveBytes;
    for (const [M, N, K] of [[1, 37, 300], [5, 9, 130], [64, 70, 33], [3, 8, 1000]]) {
      const W = randomFloats(N * K, N), x = randomFloats(M * K, M + K), bias = randomFloats(N, 3);
      // A NaN and a NaN with its sign bit set in the bias reach C: relu keeps NaNs.
      bias[0] = NaN; new Int32Array(bias.buffer)[N - 1] = 0xffc00001 | 0;
      for (const epilogue of [{ bias }, { relu: true }, { bias, relu: true }]) {
        const plain = new Float32Array(M * N), got = new Float32Array(M * N);
        g.gemm(M, N, K, x, 0, K, 1, W, 0, 1, K, plain, 0, N);
        g.gemm(M, N, K, x, 0, K, 1, W, 0, 1, K, got, 0, N, false, epilogue);
        // The reference epilogue on the fast product: the epilogue must match it exactly.
        applyGemmEpilogue(M, N, plain, 0, N, epilogue);
        expect(Array.from(got)).toEqual(Array.from(plain));
        expect(got.some((v) => Number.isNaN(v))).toBe(!!epilogue.bias);
      }
    }
    expect(h.liveBytes).toBe(before);
  });

  it('applies a pinned bias (copied into the kernel memory once) for one row and for many', () => {
    const g = new WasmGemm(heap());
    const [N, K] = [70, 300];
    const W = randomFloats(N * K, 4), bias = randomFloats(N, 5);
    g.pin(W); g.pin(bias);
    for (const M of [1, 6, 1]) {
      const x = randomFloats(M * K, M), want = new Float32Array(M * N), got = new Float32Array(M * N);
      g.gemm(M, N, K, x, 0, K, 1, W, 0, 1, K, want, 0, N);
      applyGemmEpilogue(M, N, want, 0, N, { bias, relu: true });
      g.gemm(M, N, K, x, 0, K, 1, W, 0, 1, K, got, 0, N, false, { bias, relu: true });
      expect(Array.from(got)).toEqual(Array.from(want));
    }
  });

  it('packs a pinned constant once and keeps using it, also for one row', () => {
    const h = heap();
    const g = new WasmGemm(h);
    const [N, K] = [70, 300];
    const W = randomFloats(N * K, 9);
    g.pin(W);
    const before = h.liveBytes;
    for (const M of [1, 2, 5, 1]) {
      const x = randomFloats(M * K, M);
      const want = new Float32Array(M * N), got = new Float32Array(M * N);
      REFERENCE_PRIMITIVES.gemm(M, N, K, x, 0, K, 1, W, 0, 1, K, want, 0, N);
      g.gemm(M, N, K, x, 0, K, 1, W, 0, 1, K, got, 0, N);
      for (let i = 0; i < got.length; i++) expect(Math.abs(got[i] - want[i])).toBeLessThan(1e-4);
    }
    // One packed copy of W stays (K·N rounded up to 8 columns), nothing else.
    expect(h.liveBytes - before).toBe(Math.ceil((K * Math.ceil(N / 8) * 8 * 4) / 64) * 64);
  });
});

describe('matmul with the CPU device primitives', () => {
  const t = (shape: number[], seed: number): CpuTensor => ({ data: randomFloats(shape.reduce((a, b) => a * b, 1), seed), shape, dtype: 'float32' });
  // One B for all rows (a linear layer's backward) and batched operands with a broadcast batch dim.
  for (const [a, b] of [[[32, 10], [10, 64]], [[2, 3, 5, 7], [3, 7, 4]]]) {
    it(`writes [${a}]·[${b}] into an offered (stale) result buffer, as the fresh one`, () => {
      const x = t(a, 1), y = t(b, 2);
      const want = getOp('matmul').cpu([x, y], {})[0];
      for (const prims of [REFERENCE_PRIMITIVES, fastPrimitives()]) {
        const slot = new Float32Array(want.data.length).fill(Number.NaN);
        const got = getOp('matmul').cpu([x, y], {}, { prims, out: [slot] })[0];
        expect(got.data).toBe(slot);
        for (let i = 0; i < slot.length; i++) expect(Math.abs(slot[i] - want.data[i])).toBeLessThanOrEqual(1e-5 * (1 + Math.abs(want.data[i])));
      }
    });
  }
});

describe('WasmHeap', () => {
  it('reuses freed blocks and merges neighbours', () => {
    const h = heap();
    const base = h.liveBytes;
    const a = h.alloc(100), b = h.alloc(200), c = h.alloc(64);
    expect(a % 64).toBe(0);
    expect(b).toBeGreaterThanOrEqual(a + 128);
    h.free(a); h.free(b);
    const d = h.alloc(300);       // fits in the merged a+b block
    expect(d).toBe(a);
    h.free(d); h.free(c);
    expect(h.liveBytes).toBe(base);
    expect(() => h.free(12345)).toThrow(/not an allocated block/);
  });
});
