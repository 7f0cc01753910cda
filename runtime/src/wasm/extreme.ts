// The WebAssembly amax/amin reduction (kernel in runtime/wasm/extreme.ts) behind ir-spec's
// ExtremeFn: float32 inputs of at least MIN_ELEMENTS whose reduced dims form sumF32's
// [kept, reduced, kept, reduced] pattern (reduce.ts sumPattern: the last dim, a middle dim, the
// first dims); other patterns, dtypes and small inputs run ir-spec's loop. With it softmax and
// logSoftmax (amax, sub, exp, sum, div/log: packages/core's composition) run in WebAssembly
// end to end. Invariant: NaN propagates as in the reference; values equal it (see the kernel).

import { REFERENCE_PRIMITIVES, type ExtremeFn } from '@kiln/ir-spec';
import type { WasmHeap } from './heap.js';
import { KernelIO } from './io.js';
import { MIN_ELEMENTS } from './elementwise.js';
import { sumPattern } from './reduce.js';

export function wasmExtreme(heap: WasmHeap): ExtremeFn {
  return (src, shape, dims, out, max) => {
    const p = src instanceof Float32Array && src.length >= MIN_ELEMENTS ? sumPattern(shape, dims) : null;
    if (!p) { REFERENCE_PRIMITIVES.extreme(src, shape, dims, out, max); return; }
    const io = new KernelIO(heap);
    try {
      const px = io.in(src as Float32Array), po = io.out(out.length * 4, out as Float32Array);
      heap.k.extremeF32(max ? 1 : 0, p[0], p[1], p[2], p[3], px, po);
      io.copyOut(po, out as Float32Array);
    } finally {
      io.free();
    }
  };
}
