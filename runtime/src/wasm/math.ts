// The WebAssembly e^x, sigmoid and tanh (kernel in runtime/wasm/math.ts, formulas in
// runtime/wasm/lib/expf.ts) in front of the mapUnary primitive: float32 exp/sigmoid/tanh of at
// least MIN_MATH_ELEMENTS elements run there (softmax's exponentials, the LSTM/GRU gates in
// eager mode); other ops, dtypes and sizes go to `next`.
// Invariant: within 2 ulp of ir-spec's float64 Math.exp/Math.tanh/sigmoid rounded to float32
// (not bit-identical: WebAssembly has no exp instruction); NaN, ±inf and ±0 map as they do there.

import type { MapUnaryFn } from '@kiln/ir-spec';
import type { WasmHeap } from './heap.js';
import { KernelIO } from './io.js';

/** Function codes (runtime/wasm/math.ts keeps the same table). */
export const MATH_CODES = new Map([['exp', 0], ['sigmoid', 1], ['tanh', 2]]);

/**
 * Below this many elements the JavaScript loop runs: Math.exp costs far more per element than an
 * add, so the kernel wins from a few hundred elements, copies included (bench/kernels.mjs).
 */
export const MIN_MATH_ELEMENTS = 256;

export function wasmMapMath(heap: WasmHeap, next: MapUnaryFn): MapUnaryFn {
  return (op, x, outDtype, f, loop, into) => {
    const fn = MATH_CODES.get(op);
    if (fn === undefined || x.dtype !== 'float32' || outDtype !== 'float32' || x.data.length < MIN_MATH_ELEMENTS) return next(op, x, outDtype, f, loop, into);
    const n = x.data.length, io = new KernelIO(heap), out = into instanceof Float32Array ? into : undefined;
    try {
      const px = io.in(x.data as Float32Array), po = io.out(n * 4, out);
      heap.k.mathF32(fn, n, px, po);
      return { data: io.f32(po, n, out), shape: x.shape, dtype: outDtype };
    } finally {
      io.free();
    }
  };
}
