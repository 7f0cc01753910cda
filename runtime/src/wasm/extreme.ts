// The WebAssembly amax/amin reduction (kernel in runtime/wasm/extreme.ts) behind ir-spec's
// ExtremeFn: float32 inputs of at least MIN_ELEMENTS whose reduced dims form sumF32's
// [kept, reduced, kept, reduced] pattern (reduce.ts sumPattern: the last dim, a middle dim, the
// first dims); other patterns, dtypes and small inputs run ir-spec's loop. With it softmax and
// logSoftmax (amax, sub, exp, sum, div/log: packages/core's composition) run in WebAssembly
// end to end. Invariant: NaN propagates as in the reference; values equal it (see the kernel).

import { REFERENCE_PRIMITIVES, type ExtremeFn } from '@kiln/ir-spec';
import type { WasmHeap } from './heap.js';
import { MIN_ELEMENTS } from './elementwise.js';
import { sumPattern } from './reduce.js';

export function wasmExtreme(heap: WasmHeap): ExtremeFn {
  return (src, shape, dims, out, max) => {
    const p = src instanceof Float32Array && src.length >= MIN_ELEMENTS ? sumPattern(shape, dims) : null;
    if (!p) { REFERENCE_PRIMITIVES.extreme(src, shape, dims, out, max); return; }
    const px = heap.alloc(src.length * 4), po = heap.alloc(out.length * 4);
    try {
      heap.f32().set(src, px >> 2);
      heap.k.extremeF32(max ? 1 : 0, p[0], p[1], p[2], p[3], px, po);
      heap.copyOutF32(po, out.length, out as Float32Array);
    } finally {
      heap.free(px); heap.free(po);
    }
  };
}
