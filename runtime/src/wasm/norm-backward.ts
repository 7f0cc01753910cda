// The WebAssembly batch_norm backward (kernel in runtime/wasm/norm-backward.ts) behind ir-spec's
// batchNormBackward primitive: batch norm's training gradient and layer norm's (batch_norm over
// [1, rows, D]). Inputs below MIN_ELEMENTS run ir-spec's loop.
// Invariant: float64 sums and per-element float64 arithmetic in the reference's order, so dx, dw
// and db equal the reference but for rare last-bit ties of the reordered sums.

import { REFERENCE_PRIMITIVES, type CpuPrimitives } from '@kiln/ir-spec';
import type { WasmHeap } from './heap.js';
import { KernelIO } from './io.js';
import { MIN_ELEMENTS } from './elementwise.js';

export function wasmBatchNormBackward(heap: WasmHeap): CpuPrimitives['batchNormBackward'] {
  return (G, X, M, V, Wd, R, N, C, inner, eps, dx) => {
    if (X.length < MIN_ELEMENTS) return REFERENCE_PRIMITIVES.batchNormBackward(G, X, M, V, Wd, R, N, C, inner, eps, dx);
    const n = X.length, io = new KernelIO(heap);
    try {
      const pg = io.in(G), px = io.in(X), pr = R ? io.in(R) : 0, po = io.out(n * 4, dx);
      const pc = io.temp(C * 4 * 5); // mean, var, weight, dw, db
      const f = heap.f32(), c0 = pc >> 2;
      f.set(M, c0);
      f.set(V, c0 + C);
      if (Wd) f.set(Wd, c0 + 2 * C);
      heap.k.batchNormBackward(N, C, inner, pg, px, pc, pc + 4 * C, Wd ? pc + 8 * C : 0, pr, eps, po, pc + 12 * C, pc + 16 * C);
      io.f32(po, n, dx);
      return [heap.copyOutF32(pc + 12 * C, C), heap.copyOutF32(pc + 16 * C, C)];
    } finally {
      io.free();
    }
  };
}
