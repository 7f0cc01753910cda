// Worker threads: a product split over 2 threads equals the single-threaded one bit for bit (by
// rows and, for one-row products, by column panels). That a process using the workers exits by
// itself is checked by tests/build/smoke.mjs, in plain Node.

import { describe, expect, it } from 'vitest';
import { getNumThreads, setNumThreads, wasmKernels } from './heap.js';
import { WasmGemm } from './gemm.js';
import { setThreadHost } from './threads.js';
import { nodeThreadHost } from './node-threads.js';
import { randomFloats } from './test-helpers.js';

// What the Node entry point (runtime/src/index.ts) installs.
setThreadHost(nodeThreadHost);

describe('WebAssembly kernels on worker threads', () => {
  it('uses a shared memory in Node', () => {
    expect(wasmKernels()!.threaded).toBe(true);
  });

  // Each product is at least heap.ts's PARALLEL_WORK (2^24 multiply-adds), below which nothing splits.
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
      const saved = getNumThreads(), splitsBefore = wasmKernels()!.splitProducts;
      try {
        const one = run(1);
        // Workers start in the background and join once ready: keep calling (each result must
        // equal the single-threaded one, partial last panels included) 40 times and until a call
        // was split, for at most 20 s.
        const deadline = Date.now() + 20_000;
        for (let runs = 0; (runs < 40 || wasmKernels()!.splitProducts === splitsBefore) && Date.now() < deadline; runs++) {
          await new Promise((r) => setTimeout(r, 20));
          expect(run(2)).toEqual(one);
        }
        expect(wasmKernels()!.splitProducts).toBeGreaterThan(splitsBefore);
      } finally {
        setNumThreads(saved);
      }
    });
  }
});
