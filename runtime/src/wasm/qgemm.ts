// The WebAssembly int8 product (kernel in runtime/wasm/qgemm.ts) behind ir-spec's qgemm, the
// inner loop of quantized_linear. An int8 weight is copied into the kernel memory once and kept
// while the array lives (Kiln never writes an int8 tensor: no op makes one, and quantized weights
// are buffers); the activations and sums are copied per call.
// Invariant: bit-identical to ir-spec's qgemm (exact int32 sums).

import { REFERENCE_PRIMITIVES, type CpuPrimitives } from '@kiln/ir-spec';
import type { WasmHeap } from './heap.js';

/** Below this many multiply-adds the copies cost more than the loop: the reference runs. */
const MIN_WORK = 4096;

export function wasmQgemm(heap: WasmHeap): CpuPrimitives['qgemm'] {
  const weights = new WeakMap<Int8Array, number>();
  const release = new FinalizationRegistry<number>((at) => heap.free(at));
  const weightAt = (w: Int8Array): number => {
    let at = weights.get(w);
    if (at === undefined) {
      at = heap.alloc(w.length + 16);
      new Int8Array(heap.memory.buffer, at, w.length).set(w);
      weights.set(w, at);
      release.register(w, at);
    }
    return at;
  };
  // One scratch block for the activations and sums, kept and grown (batch-1 calls are a few
  // microseconds: an alloc/free pair per call would be a visible part of them).
  let scratch = 0, scratchBytes = 0;
  return (M, N, K, xq, zp, w, acc) => {
    if (M * N * K < MIN_WORK) { REFERENCE_PRIMITIVES.qgemm(M, N, K, xq, zp, w, acc); return; }
    const pw = weightAt(w);
    const xBytes = (M * K + 63) & ~63, need = xBytes + M * N * 4;
    if (need > scratchBytes) {
      if (scratch) heap.free(scratch);
      scratch = heap.alloc(need);
      scratchBytes = need;
    }
    const buf = heap.memory.buffer;
    new Uint8Array(buf, scratch, M * K).set(xq.subarray(0, M * K));
    heap.k.qgemm(M, N, K, scratch, zp, pw, scratch + xBytes);
    acc.set(new Int32Array(heap.memory.buffer, scratch + xBytes, M * N));
  };
}
