// The bulk of the `.tsgraph` checksum (XXH32's stripe loop, ir-spec tsgraph/checksum.ts) in
// WebAssembly SIMD, for bytes a load read into the kernel memory (heap.residentBlock): one pass,
// no copy, several times the JavaScript loop's speed on a cold start. Invariant: gives exactly
// the JavaScript loop's accumulators (tests compare both), and falls back to it for bytes
// outside the kernel memory.

import { XXH32_LANES0, xxh32StripesJs, type Xxh32Stripes } from '@kiln/ir-spec';
import type { WasmHeap } from './heap.js';

/**
 * Stripes per kernel call (256 KiB): V8 runs a WebAssembly function in its baseline tier until
 * the optimized code is ready and switches only between calls, so one call over a whole 46 MB
 * blob stays slow (measured on ResNet-18's file: ~65 ms in one call, ~25 ms in 256 KiB calls,
 * ~150 ms for the JavaScript loop, all cold).
 */
const CHUNK = 1 << 14;

export function wasmXxh32Stripes(heap: WasmHeap): Xxh32Stripes {
  return (bytes, stripes) => {
    const at = heap.addressOf(bytes);
    if (at === undefined) return xxh32StripesJs(bytes, stripes);
    const acc = heap.alloc(16);
    try {
      new Int32Array(heap.memory.buffer, acc, 4).set(XXH32_LANES0);
      for (let s = 0; s < stripes; s += CHUNK) heap.k.xxh32Stripes(at + s * 16, Math.min(CHUNK, stripes - s), acc);
      const v = new Int32Array(heap.memory.buffer, acc, 4);
      return [v[0], v[1], v[2], v[3]];
    } finally {
      heap.free(acc);
    }
  };
}
