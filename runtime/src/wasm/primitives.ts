// The CPU primitives the CPU device (and eager mode) hands to op kernels: WebAssembly SIMD where
// the engine has it (runtime/src/wasm/heap.ts decides), ir-spec's JavaScript loops otherwise.
// Invariant: one instance per process, so every model and eager op share one kernel memory.

import { REFERENCE_PRIMITIVES, type Conv2dFn, type CpuPrimitives } from '@kiln/ir-spec';
import { wasmKernels } from './heap.js';

export { getNumThreads, setNumThreads } from './heap.js';
import { WasmGemm } from './gemm.js';
import { wasmConv2d } from './conv.js';
import { wasmWinograd4 } from './winograd.js';
import { wasmWinograd2 } from './winograd2.js';
import { wasmDepthwiseConv2d } from './depthwise.js';
import { wasmOps } from './ops.js';
import { wasmElementBody } from './fused.js';
import { PinnedArrays } from './pinned.js';

export interface FastPrimitives extends CpuPrimitives {
  /** Which kernels run: 'relaxed-simd', 'simd' or 'js'. */
  readonly kind: 'relaxed-simd' | 'simd' | 'js';
  /** Marks an array as a constant (never written again): packed forms of it may be kept. */
  pin(data: object): void;
  /**
   * Worker-thread counters so far: kernel calls split over workers, chunks of them the workers
   * ran (the rest ran on the calling thread) and workers started (all 0 where nothing splits).
   */
  threadStats(): { splitCalls: number; workerChunks: number; workersStarted: number };
  /**
   * The kernels conv2d chooses between for a 3×3 stride-1 weight (absent with the JavaScript
   * kernels), callable apart for benchmarks: `winograd4Applies(d)` is the choice for a pinned
   * weight, `winograd2Applies(d)` for any other.
   */
  readonly conv3x3?: { readonly direct: Conv2dFn; readonly winograd4: Conv2dFn; readonly winograd2: Conv2dFn };
  /** Lets the background work deferred so far start on idle worker threads (the CPU device calls it when a run ends). */
  afterRun?(): void;
  /** Background jobs posted so far and how many of them worker threads ran. */
  jobStats?(): { posted: number; byWorkers: number };
}

let chosen: FastPrimitives | undefined;

export function fastPrimitives(): FastPrimitives {
  if (chosen) return chosen;
  const heap = wasmKernels();
  if (!heap) {
    chosen = { ...REFERENCE_PRIMITIVES, kind: 'js', pin() {}, threadStats: () => ({ splitCalls: 0, workerChunks: 0, workersStarted: 0 }) };
  } else {
    const pins = new PinnedArrays(heap);
    const g = new WasmGemm(heap, pins);
    // KILN_WINOGRAD=0 keeps 3×3 convs on the direct/im2col conv (benchmarks compare the two).
    const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
    const direct = wasmConv2d(heap, pins, () => false, () => false), conv2d = wasmDepthwiseConv2d(heap, pins, env?.KILN_WINOGRAD === '0' ? direct : wasmConv2d(heap, pins));
    chosen = { ...wasmOps(heap), gemm: g.gemm, conv2d, conv3x3: { direct, winograd4: wasmWinograd4(heap, pins), winograd2: wasmWinograd2(heap) }, elementBody: wasmElementBody(heap), kind: heap.variant === 'relaxed' ? 'relaxed-simd' : 'simd', pin: (d) => pins.pin(d),
      threadStats: () => ({ splitCalls: heap.splitProducts, workerChunks: heap.workerChunks, workersStarted: heap.workersStarted }), jobStats: () => heap.jobStats, afterRun: () => heap.releaseJobs() };
  }
  return chosen;
}
