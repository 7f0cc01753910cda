// The WebAssembly max pool primitive (kernel in runtime/wasm/pool.ts) behind ir-spec's maxPool:
// the common 2×2, stride-2, unpadded, undilated pool on inputs of at least MIN_ELEMENTS; every
// other window and smaller input runs ir-spec's loops.
// Invariant: values and winner offsets equal the reference's exactly.

import { REFERENCE_PRIMITIVES, type CpuPrimitives } from '@kiln/ir-spec';
import type { WasmHeap } from './heap.js';
import { KernelIO } from './io.js';
import { MIN_ELEMENTS } from './elementwise.js';

export function wasmMaxPool(heap: WasmHeap): CpuPrimitives['maxPool'] {
  return (x, planes, H, W, g, OH, OW, val, idx) => {
    const plain = g.kh === 2 && g.kw === 2 && g.sh === 2 && g.sw === 2 && g.ph === 0 && g.pw === 0 && g.dh === 1 && g.dw === 1;
    if (!plain || 2 * OH > H || 2 * OW > W || x.length < MIN_ELEMENTS) { REFERENCE_PRIMITIVES.maxPool(x, planes, H, W, g, OH, OW, val, idx); return; }
    const n = planes * OH * OW, io = new KernelIO(heap);
    try {
      const px = io.in(x), pv = io.out(n * 4, val), pi = io.out(n * 4, idx);
      heap.k.maxPool2x2(planes, H, W, OH, OW, px, pv, pi);
      io.copyOut(pv, val);
      io.copyOut(pi, idx);
    } finally {
      io.free();
    }
  };
}
