// The WebAssembly batch_norm_backward (kernels in runtime/wasm/norm-grad.ts) behind ir-spec's
// batchNormBackward primitive: the per-channel sums and dx in the kernel memory, the small
// per-channel coefficients (batchNormBackwardCoefficients) in JavaScript; dx is written into the
// buffer the caller offers (an arena slot of the compiled backward graph), not a fresh array.
// Below MIN_ELEMENTS the reference loops run (copying in and out costs more there).
// Invariant: dx equals the reference's for the same sums; the sums differ only in their order.

import { batchNormBackward as referenceBatchNormBackward, batchNormBackwardCoefficients, type CpuPrimitives } from '@kiln/ir-spec';
import type { WasmHeap } from './heap.js';
import { MIN_ELEMENTS } from './elementwise.js';

/** The exports of runtime/wasm/norm-grad.ts. */
interface NormGradExports {
  batchNormGradSums(N: number, C: number, inner: number, g: number, x: number, relu: number, mean: number, sums: number): void;
  batchNormGradInput(N: number, C: number, inner: number, g: number, x: number, relu: number, coef: number, dx: number): void;
}

export function wasmBatchNormBackward(heap: WasmHeap): NonNullable<CpuPrimitives['batchNormBackward']> {
  const k = heap.k as unknown as NormGradExports;
  return (g, x, relu, N, C, inner, mean, variance, weight, eps, dx) => {
    const n = x.length;
    if (n < MIN_ELEMENTS) return referenceBatchNormBackward(g, x, relu, N, C, inner, mean, variance, weight, eps, dx);
    // Coefficients (float64 [3C]) first, on the block's alignment; then mean, g, x and relu.
    const pgAt = (C * 28 + 15) & ~15;
    const at = heap.alloc(pgAt + n * 4 * (relu ? 3 : 2));
    const pc = at, pm = at + C * 24, pg = at + pgAt, px = pg + n * 4, pr = relu ? px + n * 4 : 0;
    try {
      const f = heap.f32();
      f.set(g, pg >> 2); f.set(x, px >> 2); if (relu) f.set(relu, pr >> 2); f.set(mean, pm >> 2);
      k.batchNormGradSums(N, C, inner, pg, px, pr, pm, pc);
      const sums = new Float64Array(heap.memory.buffer, pc, 2 * C).slice();
      const coef = batchNormBackwardCoefficients(sums, N * inner, mean, variance, weight, eps);
      new Float64Array(heap.memory.buffer, pc, 3 * C).set(coef);
      k.batchNormGradInput(N, C, inner, pg, px, pr, pc, pg); // dx over g: each element is read before it is written
      heap.copyOutF32(pg, n, dx);
      const dw = new Float32Array(C), db = new Float32Array(C);
      for (let c = 0; c < C; c++) { dw[c] = sums[C + c] * (1 / Math.sqrt(variance[c] + eps)); db[c] = sums[c]; }
      return [dw, db];
    } finally {
      heap.free(at);
    }
  };
}
