// The CPU primitives the CPU device (and eager mode) hands to op kernels: WebAssembly SIMD where
// the engine has it (runtime/src/wasm/heap.ts decides), ir-spec's JavaScript loops otherwise.
// Invariant: one instance per process, so every model and eager op share one kernel memory.

import { REFERENCE_PRIMITIVES, type CpuPrimitives } from '@kiln/ir-spec';
import { wasmKernels } from './heap.js';

export { getNumThreads, setNumThreads } from './heap.js';
import { WasmGemm } from './gemm.js';
import { wasmConv2d } from './conv.js';
import { wasmDepthwiseConv2d } from './depthwise.js';
import { wasmOps } from './ops.js';
import { wasmElementBody } from './fused.js';
import { PinnedArrays } from './pinned.js';

export interface FastPrimitives extends CpuPrimitives {
  /** Which kernels run: 'relaxed-simd', 'simd' or 'js'. */
  readonly kind: 'relaxed-simd' | 'simd' | 'js';
  /** Marks an array as a constant (never written again): packed forms of it may be kept. */
  pin(data: object): void;
}

let chosen: FastPrimitives | undefined;

export function fastPrimitives(): FastPrimitives {
  if (chosen) return chosen;
  const heap = wasmKernels();
  if (!heap) {
    chosen = { ...REFERENCE_PRIMITIVES, kind: 'js', pin() {} };
  } else {
    const pins = new PinnedArrays(heap);
    const g = new WasmGemm(heap, pins);
    chosen = { ...wasmOps(heap), gemm: g.gemm, conv2d: wasmDepthwiseConv2d(heap, pins, wasmConv2d(heap, pins)), elementBody: wasmElementBody(heap), kind: heap.variant === 'relaxed' ? 'relaxed-simd' : 'simd', pin: (d) => pins.pin(d) };
  }
  return chosen;
}
