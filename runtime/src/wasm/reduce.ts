// The WebAssembly sum and batch-norm primitives (kernels in runtime/wasm/reduce.ts) behind
// ir-spec's SumFn, batchNormStats and batchNormAffine. A float32 sum whose reduced dims, after
// dropping size-1 dims and merging neighbours, form the pattern [kept, reduced, kept, reduced]
// (each part possibly empty) runs in WebAssembly; other sums, int/bool sums and inputs below
// MIN_ELEMENTS run ir-spec's loops, as do batch norms below MIN_ELEMENTS.
// Invariant: float64 accumulation as in the reference; batchNormAffine is bit-identical to it.

import { REFERENCE_PRIMITIVES, type CpuPrimitives, type SumFn } from '@kiln/ir-spec';
import type { WasmHeap } from './heap.js';
import { KernelIO } from './io.js';
import { MIN_ELEMENTS } from './elementwise.js';

/** [K0, R1, K1, R2] for a sum of `shape` over `dims`, or null when the reduced dims form another pattern. */
export function sumPattern(shape: readonly number[], dims: readonly number[]): [number, number, number, number] | null {
  // Runs of kept (false) / reduced (true) dims, size-1 dims dropped.
  const runs: { red: boolean; size: number }[] = [];
  shape.forEach((size, d) => {
    if (size === 1) return;
    const red = dims.includes(d), last = runs[runs.length - 1];
    if (last && last.red === red) last.size *= size;
    else runs.push({ red, size });
  });
  if (runs.length > 0 && runs[0].red) runs.unshift({ red: false, size: 1 });
  while (runs.length < 4) runs.push({ red: runs.length % 2 === 1, size: 1 });
  return runs.length === 4 ? [runs[0].size, runs[1].size, runs[2].size, runs[3].size] : null;
}

export function wasmSum(heap: WasmHeap): SumFn {
  return (src, shape, dims, out) => {
    const p = src instanceof Float32Array && src.length >= MIN_ELEMENTS ? sumPattern(shape, dims) : null;
    if (!p) { REFERENCE_PRIMITIVES.sum(src, shape, dims, out); return; }
    const io = new KernelIO(heap);
    try {
      const o32 = out instanceof Float32Array ? out : undefined;
      const px = io.in(src as Float32Array), po = io.out(out.length * 4, o32);
      heap.k.sumF32(p[0], p[1], p[2], p[3], px, po);
      if (o32) io.copyOut(po, o32);
      else out.set(heap.f32().subarray(po >> 2, (po >> 2) + out.length));
    } finally {
      io.free();
    }
  };
}

export function wasmBatchNormStats(heap: WasmHeap): CpuPrimitives['batchNormStats'] {
  return (x, N, C, inner) => {
    if (x.length < MIN_ELEMENTS) return REFERENCE_PRIMITIVES.batchNormStats(x, N, C, inner);
    const io = new KernelIO(heap);
    try {
      const px = io.in(x), pm = io.temp(C * 4), pv = io.temp(C * 4);
      heap.k.batchNormStats(N, C, inner, px, pm, pv);
      return [heap.copyOutF32(pm, C), heap.copyOutF32(pv, C)];
    } finally {
      io.free();
    }
  };
}

export function wasmBatchNormAffine(heap: WasmHeap): CpuPrimitives['batchNormAffine'] {
  return (x, N, C, inner, scale, shift, out) => {
    if (x.length < MIN_ELEMENTS) return REFERENCE_PRIMITIVES.batchNormAffine(x, N, C, inner, scale, shift, out);
    const io = new KernelIO(heap);
    try {
      const px = io.in(x), po = io.out(x.length * 4, out), ps = io.temp(C * 16);
      const f64 = new Float64Array(heap.memory.buffer, ps, 2 * C);
      f64.set(scale, 0);
      f64.set(shift, C);
      heap.k.batchNorm(N, C, inner, px, ps, ps + C * 8, po);
      return io.f32(po, x.length, out);
    } finally {
      io.free();
    }
  };
}
