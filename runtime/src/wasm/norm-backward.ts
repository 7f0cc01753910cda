// The WebAssembly batch_norm backward (kernel in runtime/wasm/norm-backward.ts) behind ir-spec's
// batchNormBackward primitive: batch norm's training gradient and layer norm's (batch_norm over
// [1, rows, D]). Inputs below MIN_ELEMENTS run ir-spec's loop.
// Invariant: float64 sums and per-element float64 arithmetic in the reference's order, so dx, dw
// and db equal the reference but for rare last-bit ties of the reordered sums.

import { REFERENCE_PRIMITIVES, type CpuPrimitives } from '@kiln/ir-spec';
import type { WasmHeap } from './heap.js';
import { MIN_ELEMENTS } from './elementwise.js';

export function wasmBatchNormBackward(heap: WasmHeap): CpuPrimitives['batchNormBackward'] {
  return (G, X, M, V, Wd, R, N, C, inner, eps, dx) => {
    if (X.length < MIN_ELEMENTS) return REFERENCE_PRIMITIVES.batchNormBackward(G, X, M, V, Wd, R, N, C, inner, eps, dx);
    const n = X.length;
    const pg = heap.alloc(n * 4), px = heap.alloc(n * 4), pr = R ? heap.alloc(n * 4) : 0, po = heap.alloc(n * 4);
    const pc = heap.alloc(C * 4 * 5); // mean, var, weight, dw, db
    try {
      const f = heap.f32();
      f.set(G, pg >> 2);
      f.set(X, px >> 2);
      if (R) f.set(R, pr >> 2);
      const c0 = pc >> 2;
      f.set(M, c0);
      f.set(V, c0 + C);
      if (Wd) f.set(Wd, c0 + 2 * C);
      heap.k.batchNormBackward(N, C, inner, pg, px, pc, pc + 4 * C, Wd ? pc + 8 * C : 0, pr, eps, po, pc + 12 * C, pc + 16 * C);
      heap.copyOutF32(po, n, dx);
      return [heap.copyOutF32(pc + 12 * C, C), heap.copyOutF32(pc + 16 * C, C)];
    } finally {
      heap.free(pg); heap.free(px); heap.free(po); heap.free(pc);
      if (pr) heap.free(pr);
    }
  };
}
