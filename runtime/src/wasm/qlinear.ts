// The WebAssembly quantized linear (kernels in runtime/wasm/qlinear.ts) behind ir-spec's
// quantizedLinear primitive. An int8 weight is packed into the kernel memory once (4-row groups,
// 16-byte k-chunks) and kept while the array lives (Kiln never writes an int8 tensor: no op
// makes one, and quantized weights are buffers); per call the activations are copied in (read in
// place when they lie in the kernel memory: an arena slot), their
// range, quantization, the int32 sums and the float epilogue all run in the kernel memory, and
// the float32 result is copied out (written in place when offered there); the product (with its epilogue: scales, bias, relu) splits
// over the worker threads by blocks of weight rows when it is big enough (WasmHeap.qlinear).
// Invariant: bit-identical to ir-spec's reference, on any number of threads.

import { chooseQParams, REFERENCE_PRIMITIVES, type CpuPrimitives } from '@kiln/ir-spec';
import type { WasmHeap } from './heap.js';

/** Below this many multiply-adds the copies cost more than the loop: the reference runs. */
const MIN_WORK = 4096;

export function wasmQuantizedLinear(heap: WasmHeap): CpuPrimitives['quantizedLinear'] {
  const packed = new WeakMap<Int8Array, number>();
  const release = new FinalizationRegistry<number>((at) => heap.free(at));
  const packedAt = (w: Int8Array, N: number, K: number): number => {
    let at = packed.get(w);
    if (at === undefined) {
      const raw = heap.alloc(N * K);
      new Int8Array(heap.memory.buffer, raw, N * K).set(w.subarray(0, N * K));
      at = heap.alloc(heap.k.packedWeightBytes(N, K));
      heap.k.packWeight(N, K, raw, at);
      heap.free(raw);
      packed.set(w, at);
      release.register(w, at);
    }
    return at;
  };
  // One scratch block per call shape, kept and grown (batch-1 calls take microseconds: an
  // alloc/free pair per call would be a visible part of them).
  let scratch = 0, scratchBytes = 0;
  return (M, N, K, x, reduceRange, w, wScale, bias, out, relu = false) => {
    if (M * N * K < MIN_WORK) { REFERENCE_PRIMITIVES.quantizedLinear(M, N, K, x, reduceRange, w, wScale, bias, out, relu); return; }
    const wp = packedAt(w, N, K);
    const K16 = (K + 15) & ~15;
    const at = (bytes: number) => (bytes + 63) & ~63;
    const xAt = 0, qAt = at(M * K * 4), sAt = qAt + at(M * K16 * 2), bAt = sAt + at(wScale.length * 4);
    const oAt = bAt + at(N * 4), rAt = oAt + at(M * N * 4), need = rAt + 64;
    if (need > scratchBytes) {
      if (scratch) heap.free(scratch);
      scratch = heap.alloc(need);
      scratchBytes = need;
    }
    const base = scratch, f = heap.f32();
    // x read, and the result written, where they lie when they are in the kernel memory (an arena
    // slot): the result only reads the quantized copy of x, so the two may even overlap.
    const xIn = heap.addressOf(x), oIn = heap.addressOf(out);
    const xa = xIn ?? base + xAt, oa = oIn ?? base + oAt;
    if (xIn === undefined) f.set(x.subarray(0, M * K), xa >> 2);
    f.set(wScale, (base + sAt) >> 2);
    if (bias) f.set(bias.subarray(0, N), (base + bAt) >> 2);
    heap.k.rangeF32(M * K, xa, base + rAt);
    const params = chooseQParams(f[(base + rAt) >> 2], f[((base + rAt) >> 2) + 1], reduceRange);
    f[((base + rAt) >> 2) + 2] = params.scale;
    heap.k.quantizeRows(M, K, K16, xa, Math.fround(1 / params.scale), params.zeroPoint, base + qAt);
    heap.qlinear(M, N, K16, base + qAt, wp, base + rAt + 8, base + sAt, wScale.length === 1 ? 0 : 1, bias ? base + bAt : 0, relu ? 1 : 0, oa);
    if (oIn === undefined) out.set(heap.f32().subarray(oa >> 2, (oa >> 2) + M * N));
  };
}
