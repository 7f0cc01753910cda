// The WebAssembly depthwise conv2d (kernel in runtime/wasm/depthwise.ts) in front of the conv2d
// primitive: a conv2d whose groups equal its input channels (any channel multiplier, stride,
// padding, dilation) runs there with its epilogue (bias, relu) fused, a pinned weight copied into
// the kernel memory once; every other conv2d, and depthwise ones below MIN_WORK multiply-adds,
// go to `next` (the GEMM-based wasmConv2d, which leaves depthwise to JavaScript), and so do
// windows reading mostly padding (padsTooMuch). Under a run's deadline a big call runs a block of
// channels at a time, ticking the deadline between blocks.
// Invariant: same results as ir-spec's conv2dForward up to float32 rounding of the sums.

import { kernelDeadlineSet, kernelTick, padsTooMuch, type Conv2dFn } from '@kiln/ir-spec';
import type { WasmHeap } from './heap.js';
import { KernelIO } from './io.js';
import type { PinnedArrays } from './pinned.js';

/** Below this many multiply-adds copying in and out costs more than the JavaScript loop saves (see bench/kernels.mjs). */
export const MIN_DEPTHWISE_WORK = 1 << 13;
/** Under a run's deadline, a call of more multiply-adds runs a block of channels at a time (heap.ts's chunk size). */
const DEADLINE_CHUNK_WORK = 1 << 25;
/** Floats the kernel may read past an image plane (runtime/wasm/depthwise.ts DEPTHWISE_SLACK). */
const SLACK = 16;

export function wasmDepthwiseConv2d(heap: WasmHeap, pins: PinnedArrays | undefined, next: Conv2dFn): Conv2dFn {
  return (x, w, bias, d, epi) => {
    const { N, C, H, W, Cout, G, OH, OW, win } = d;
    // A plane past DEADLINE_CHUNK_WORK is one call here that nothing could stop: such giant
    // planes go to the GEMM conv, which packs and multiplies them a block of rows at a time.
    if (G !== C || G === 1 || N * Cout * OH * OW * win.kh * win.kw < MIN_DEPTHWISE_WORK || padsTooMuch(d, 1) || OH * OW * win.kh * win.kw > DEADLINE_CHUNK_WORK) return next(x, w, bias, d, epi);
    const k = heap.k, M = Cout / C, out = N * Cout * OH * OW;
    const Hp = (OH - 1) * win.sh + (win.kh - 1) * win.dh + 1, Wp = (OW - 1) * win.sw + (win.kw - 1) * win.dw + 1;
    const kept = pins?.copy(w);
    // x is copied (the kernel reads a few floats past a plane); the result lands in place when offered in the kernel memory.
    const io = new KernelIO(heap);
    try {
      const xa = io.in(x, SLACK), wa = kept ?? io.in(w), ba = bias ? io.in(bias) : 0;
      const oa = io.out(out * 4, epi?.out), sa = io.temp((Hp * Wp + SLACK) * 4);
      const work = N * Cout * OH * OW * win.kh * win.kw;
      if (work <= DEADLINE_CHUNK_WORK || !kernelDeadlineSet()) {
        k.depthwiseConv2d(N, C, H, W, M, win.kh, win.kw, win.sh, win.sw, win.pt, win.pl, win.dh, win.dw, OH, OW, xa, wa, ba, epi?.relu ? 1 : 0, sa, oa);
      } else {
        // Under a run's deadline: a call per image and block of channels (or per output plane,
        // when one channel's M planes are too much), ticking between them.
        const perPlane = OH * OW * win.kh * win.kw, perChannel = M * perPlane, cb = Math.max(1, Math.floor(DEADLINE_CHUNK_WORK / perChannel));
        const relu = epi?.relu ? 1 : 0, K = win.kh * win.kw;
        for (let n = 0; n < N; n++) {
          for (let c0 = 0; c0 < C; c0 += cb) {
            const cn = Math.min(cb, C - c0), xc = xa + (n * C + c0) * H * W * 4;
            if (perChannel <= DEADLINE_CHUNK_WORK) {
              k.depthwiseConv2d(1, cn, H, W, M, win.kh, win.kw, win.sh, win.sw, win.pt, win.pl, win.dh, win.dw, OH, OW,
                xc, wa + c0 * M * K * 4, bias ? ba + c0 * M * 4 : 0, relu, sa, oa + (n * Cout + c0 * M) * OH * OW * 4);
              kernelTick(cn * perChannel);
              continue;
            }
            for (let m = 0; m < M; m++) {
              const co = c0 * M + m;
              k.depthwiseConv2d(1, 1, H, W, 1, win.kh, win.kw, win.sh, win.sw, win.pt, win.pl, win.dh, win.dw, OH, OW,
                xc, wa + co * K * 4, bias ? ba + co * 4 : 0, relu, sa, oa + (n * Cout + co) * OH * OW * 4);
              kernelTick(perPlane);
            }
          }
        }
      }
      return io.f32(oa, out, epi?.out);
    } finally {
      io.free();
    }
  };
}
