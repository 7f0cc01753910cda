// The WebAssembly depthwise conv2d (kernel in runtime/wasm/depthwise.ts) in front of the conv2d
// primitive: a conv2d whose groups equal its input channels (any channel multiplier, stride,
// padding, dilation) runs there with its epilogue (bias, relu) fused, a pinned weight copied into
// the kernel memory once; every other conv2d, and depthwise ones below MIN_WORK multiply-adds,
// go to `next` (the GEMM-based wasmConv2d, which leaves depthwise to JavaScript).
// Invariant: same results as ir-spec's conv2dForward up to float32 rounding of the sums.

import type { Conv2dFn } from '@kiln/ir-spec';
import type { WasmHeap } from './heap.js';
import type { PinnedArrays } from './pinned.js';
import { copyConvOperands } from './conv.js';

/** Below this many multiply-adds copying in and out costs more than the JavaScript loop saves (see bench/kernels.mjs). */
export const MIN_DEPTHWISE_WORK = 1 << 13;
/** Floats the kernel may read past an image plane (runtime/wasm/depthwise.ts DEPTHWISE_SLACK). */
const SLACK = 16;

export function wasmDepthwiseConv2d(heap: WasmHeap, pins: PinnedArrays | undefined, next: Conv2dFn): Conv2dFn {
  return (x, w, bias, d, epi) => {
    const { N, C, H, W, Cout, G, OH, OW, win } = d;
    if (G !== C || G === 1 || N * Cout * OH * OW * win.kh * win.kw < MIN_DEPTHWISE_WORK) return next(x, w, bias, d, epi);
    const k = heap.k, M = Cout / C, out = N * Cout * OH * OW;
    const Hp = (OH - 1) * win.sh + (win.kh - 1) * win.dh + 1, Wp = (OW - 1) * win.sw + (win.kw - 1) * win.dw + 1;
    const kept = pins?.copy(w);
    const xa = heap.alloc((x.length + SLACK) * 4), wa = kept ?? heap.alloc(w.length * 4), oa = heap.alloc(out * 4);
    const ba = bias ? heap.alloc(Cout * 4) : 0, sa = heap.alloc((Hp * Wp + SLACK) * 4);
    try {
      copyConvOperands(heap, x, xa, SLACK, w, wa, kept !== undefined, bias, ba);
      k.depthwiseConv2d(N, C, H, W, M, win.kh, win.kw, win.sh, win.sw, win.pt, win.pl, win.dh, win.dw, OH, OW, xa, wa, ba, epi?.relu ? 1 : 0, sa, oa);
      return heap.copyOutF32(oa, out, epi?.out);
    } finally {
      heap.free(xa); heap.free(oa); heap.free(sa);
      if (kept === undefined) heap.free(wa);
      if (bias) heap.free(ba);
    }
  };
}
