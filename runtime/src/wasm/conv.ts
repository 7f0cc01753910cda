// The WebAssembly conv2d primitive (kernels in runtime/wasm/conv.ts and gemm.ts) behind
// ir-spec's `Conv2dFn`: per image and group, the patch matrix is packed straight from the image
// (packIm2col; a padded image is first copied into a zero-bordered one, padPlanes) and multiplied
// by the weights (gemmPacked), writing NCHW output; bias and relu are applied in one
// pass over the output while it is still in the kernel memory (convEpilogue), which is then copied
// once into the epilogue's destination (an arena slot) or a fresh array. Convolutions with
// fewer than 4 output channels per group (depthwise) or too little work stay in JavaScript. The
// weight is the GEMM's A operand, read in place (OIHW rows are K-contiguous): a pinned weight (a
// graph constant, or a block of one) is copied into the kernel memory once and kept (pinned.ts),
// any other is copied per call. Invariant: same results as ir-spec's conv2dForward up to float32
// rounding of the sums.

import { applyConvEpilogue, REFERENCE_PRIMITIVES, type Conv2dFn } from '@kiln/ir-spec';
import type { WasmHeap } from './heap.js';
import type { PinnedArrays } from './pinned.js';

const MIN_WORK = 1 << 15;

export function wasmConv2d(heap: WasmHeap, pins?: PinnedArrays): Conv2dFn {
  return (x, w, bias, d, epi) => {
    const { N, C, H, W, Cout, G, OH, OW, win } = d;
    const Cg = C / G, Coutg = Cout / G, P = OH * OW, K = Cg * win.kh * win.kw;
    if (Coutg < 4 || N * Cout * P * K < MIN_WORK) return REFERENCE_PRIMITIVES.conv2d(x, w, bias, d, epi);
    const k = heap.k;
    // The rows and columns the windows reach from the top-left padding corner: a padded image
    // is first copied into a zero-bordered one (padPlanes), so packing needs no bounds tests.
    const Hp = (OH - 1) * win.sh + (win.kh - 1) * win.dh + 1, Wp = (OW - 1) * win.sw + (win.kw - 1) * win.dw + 1;
    const padded = win.pt > 0 || win.pl > 0 || Hp > H || Wp > W;
    const kept = pins?.copy(w);
    const out = N * Cout * P;
    const xa = heap.alloc(x.length * 4), wa = kept ?? heap.alloc(w.length * 4), oa = heap.alloc(out * 4);
    const pa = heap.alloc(k.packedSize(K, P) * 4), ba = bias ? heap.alloc(Cout * 4) : 0;
    const sa = padded ? heap.alloc(Cg * Hp * Wp * 4) : 0;
    try {
      const f = heap.f32();
      f.set(x, xa >> 2);
      if (kept === undefined) f.set(w, wa >> 2);
      if (bias) f.set(bias, ba >> 2);
      for (let n = 0; n < N; n++) {
        for (let g = 0; g < G; g++) {
          const img = xa + ((n * C + g * Cg) * H * W) * 4;
          if (padded) {
            k.padPlanes(Cg, H, W, win.pt, win.pl, Hp, Wp, img, sa);
            k.packIm2col(Cg, Hp, Wp, win.kh, win.kw, win.sh, win.sw, 0, 0, win.dh, win.dw, OH, OW, sa, pa);
          } else {
            k.packIm2col(Cg, H, W, win.kh, win.kw, win.sh, win.sw, 0, 0, win.dh, win.dw, OH, OW, img, pa);
          }
          heap.gemm(Coutg, P, K, wa + g * Coutg * K * 4, K, pa, oa + (n * Cout + g * Coutg) * P * 4, P, 0);
        }
        const at = n * Cout * P * 4;
        if (bias || epi?.relu) k.convEpilogue(Cout, P, oa + at, ba, epi?.relu ? 1 : 0);
      }
      return heap.copyOutF32(oa, out, epi?.out);
    } finally {
      heap.free(xa); heap.free(oa); heap.free(pa);
      if (kept === undefined) heap.free(wa);
      if (bias) heap.free(ba);
      if (sa) heap.free(sa);
    }
  };
}
