// Worker threads: a product split over 2 threads equals the single-threaded one bit for bit (by
// rows and, for one-row products, by column panels), and so does a direct convolution (split by
// blocks of output channels, odd counts included), a Winograd F(4×4) one and the int8 quantized
// linear (split by blocks of weight rows), with chunks run by whichever thread claims them. That a process using the workers exits by itself is checked by tests/build/smoke.mjs,
// in plain Node.

import { describe, expect, it } from 'vitest';
import { getNumThreads, setNumThreads, wasmKernels } from './heap.js';
import { WasmGemm } from './gemm.js';
import { wasmConv2d } from './conv.js';
import { wasmWinograd4 } from './winograd.js';
import { wasmQuantizedLinear } from './qlinear.js';
import { REFERENCE_PRIMITIVES } from '@kiln/ir-spec';
import { setThreadHost } from './threads.js';
import { nodeThreadHost } from './node-threads.js';
import { randomFloats } from './test-helpers.js';

// What the Node entry point (runtime/src/index.ts) installs.
setThreadHost(nodeThreadHost);

describe('WebAssembly kernels on worker threads', () => {
  it('uses a shared memory in Node', () => {
    expect(wasmKernels()!.threaded).toBe(true);
  });

  // First in this file (a fresh kernel instance): products below PARALLEL_WORK start no worker.
  it('starts no worker for products too small to split', () => {
    const saved = getNumThreads();
    try {
      setNumThreads(2);
      const g = new WasmGemm(wasmKernels()!);
      const [M, N, K] = [4, 512, 784]; // 1.6M multiply-adds, an MLP layer at batch 4
      const C = new Float32Array(M * N);
      g.gemm(M, N, K, randomFloats(M * K, 1), 0, K, 1, randomFloats(K * N, 2), 0, N, 1, C, 0, N);
      expect(wasmKernels()!.workersStarted).toBe(0);
      expect(wasmKernels()!.splitProducts).toBe(0);
    } finally {
      setNumThreads(saved);
    }
  });

  /**
   * Calls `run(threads)` at 1 thread, then at 2 threads 20 times and until a call was split and
   * workers ran some of its chunks (for at most 20 s: workers start in the background and join
   * once ready); every result must equal the single-threaded one.
   */
  async function expectSplitIdentical(run: (threads: number) => Float32Array): Promise<void> {
    const h = wasmKernels()!, saved = getNumThreads(), splitsBefore = h.splitProducts, helpedBefore = h.workerChunks;
    try {
      const one = run(1);
      const deadline = Date.now() + 20_000;
      for (let runs = 0; (runs < 20 || h.splitProducts === splitsBefore || h.workerChunks === helpedBefore) && Date.now() < deadline; runs++) {
        await new Promise((r) => setTimeout(r, 20));
        expect(run(2)).toEqual(one);
      }
      expect(h.splitProducts).toBeGreaterThan(splitsBefore);
      expect(h.workerChunks).toBeGreaterThan(helpedBefore);
    } finally {
      setNumThreads(saved);
    }
  }

  // Each call is at least heap.ts's PARALLEL_WORK (2^23 multiply-adds), below which nothing splits.
  // 70, 11 and 2 groups of 18 output channels: the last block of 4 channels is ragged.
  for (const [C, Cout, H, G] of [[64, 70, 16, 1], [3, 11, 128, 1], [32, 36, 32, 2]] as const) {
    it(`splits a direct 3x3 convolution of 2 images C${C} ${H}x${H} → ${Cout} in ${G} group(s) over 2 threads with identical results`, async () => {
      const conv = wasmConv2d(wasmKernels()!, undefined, () => false, () => false); // the direct kernel, no Winograd
      const x = randomFloats(2 * C * H * H, 3), w = randomFloats((Cout * C * 9) / G, 4), b = randomFloats(Cout, 5);
      const d = { N: 2, C, H, W: H, Cout, G, OH: H, OW: H, win: { kh: 3, kw: 3, sh: 1, sw: 1, pt: 1, pl: 1, dh: 1, dw: 1 } };
      await expectSplitIdentical((threads) => {
        setNumThreads(threads);
        return conv(x, w, b, d, { relu: true });
      });
    });
  }

  // Winograd F(4×4) splits by runs of whole tile chunks, each run in its own scratch: 4 images of
  // 32×30 (ragged tile rows and columns) → 40 channels: 2^24 multiply-adds after the transforms.
  it('splits a Winograd F(4x4) convolution over 2 threads with identical results', async () => {
    const conv = wasmWinograd4(wasmKernels()!);
    const [N, C, Cout, H, W] = [4, 48, 40, 32, 30];
    const x = randomFloats(N * C * H * W, 6), w = randomFloats(Cout * C * 9, 7), b = randomFloats(Cout, 8);
    const d = { N, C, H, W, Cout, G: 1, OH: H, OW: W, win: { kh: 3, kw: 3, sh: 1, sw: 1, pt: 1, pl: 1, dh: 1, dw: 1 } };
    await expectSplitIdentical((threads) => {
      setNumThreads(threads);
      return conv(x, w, b, d, { relu: true });
    });
  });

  // The weight transform splits by runs of groups of 4 filters: 181×187 filters (36·9·S ≥ 2^23;
  // S = 33,847 is not a multiple of 4, so the last group is ragged).
  it('splits a Winograd F(4x4) weight transform over 2 threads with identical results', async () => {
    const h = wasmKernels()!, S = 181 * 187;
    const w = randomFloats(S * 9, 9);
    await expectSplitIdentical((threads) => {
      setNumThreads(threads);
      const src = h.alloc(w.length * 4), U = h.alloc(36 * S * 4);
      try {
        h.f32().set(w, src >> 2);
        h.winograd4Weights(S, src, U);
        return h.copyOutF32(U, 36 * S);
      } finally {
        h.free(src); h.free(U);
      }
    });
  });

  // quantizedLinear splits by runs of the packed weight's 4-row groups: 33·515·500 ≥ 2^23
  // multiply-adds, N ragged (the last group has 3 rows), an odd M (the kernel takes rows in pairs).
  for (const perChannel of [false, true]) {
    it(`splits an int8 quantized linear 33x515x500 (${perChannel ? 'per channel' : 'per tensor'}, relu) over 2 threads with identical results`, async () => {
      const q = wasmQuantizedLinear(wasmKernels()!);
      const [M, N, K] = [33, 515, 500];
      const x = randomFloats(M * K, 9), w = Int8Array.from(randomFloats(N * K, 10), (v) => Math.round(v * 127));
      const wScale = Float32Array.from({ length: perChannel ? N : 1 }, (_, i) => 0.002 + 0.0001 * (i % 9)), bias = randomFloats(N, 11);
      const want = new Float32Array(M * N);
      REFERENCE_PRIMITIVES.quantizedLinear(M, N, K, x, true, w, wScale, bias, want, true);
      await expectSplitIdentical((threads) => {
        setNumThreads(threads);
        const out = new Float32Array(M * N);
        q(M, N, K, x, true, w, wScale, bias, out, true);
        expect(out).toEqual(want);
        return out;
      });
    });
  }

  for (const [M, N, K] of [[256, 300, 256], [4096, 5, 1024], [3, 4000, 1500], [1, 8192, 2048]] as const) {
    it(`splits ${M}x${N}x${K} over 2 threads with identical results`, async () => {
      const g = new WasmGemm(wasmKernels()!);
      const A = randomFloats(M * K, 1), B = randomFloats(K * N, 2);
      g.pin(B);
      const run = (threads: number) => {
        setNumThreads(threads);
        const C = new Float32Array(M * N);
        g.gemm(M, N, K, A, 0, K, 1, B, 0, N, 1, C, 0, N);
        return C;
      };
      await expectSplitIdentical(run);
    });
  }
});
