// The WebAssembly conv2d weight gradient (kernels in runtime/wasm/winograd-grad.ts, conv.ts and
// gemm.ts) behind ir-spec's Conv2dWeightGradFn. For the convolutions ir-spec computes with
// Winograd F(2×2, 3×3) (3×3, stride 1, ungrouped; winogradApplies): the input and output-gradient
// tile transforms and the 16 products run in the kernel memory without copies between them; the
// small filter transform Gᵀ dU G stays ir-spec's. Any other (a first layer's one input channel,
// strides, 1×1, groups, dilation): per image group and band of output rows, the patch matrix is
// written row-major (im2colRows, from a zero-bordered copy when padded) and dW_g += gy_g·patchesᵀ
// runs as the packed GEMM, accumulating. Small ones, one output row's patches over 16 MiB, and
// windows reading mostly padding run the reference. Invariant: V and dM equal the reference's bit for bit; the products are gemm.ts's
// (float32 sums in k order), so dW agrees with the reference to float32 rounding of the sums.

import { kernelTick, padsTooMuch, REFERENCE_PRIMITIVES, winogradApplies, winogradFilterGrad, winogradSlab, type Conv2dWeightGradFn } from '@kiln/ir-spec';
import type { WasmHeap } from './heap.js';
import { KernelIO } from './io.js';

type ConvDims = Parameters<Conv2dWeightGradFn>[2];

/** Below this many multiply-adds the reference is as fast as copying into the kernel memory. */
const MIN_WORK = 1 << 15;
/** Floats of patch matrix written at a time (a band of output rows, at least one row): 1 MB. */
const BAND_FLOATS = 1 << 18;
/** Most floats of one output row's patch matrix (16 MiB, as conv.ts packs): a longer row runs the reference, which makes none. */
const ROW_FLOATS = 1 << 22;

/** dW [Cout, C/G·kh·kw] = Σ_n gy_n·patches_nᵀ per group, as im2colRows + packed GEMMs (see the header). */
function im2colWeightGrad(heap: WasmHeap, x: Float32Array, gy: Float32Array, d: ConvDims): Float32Array {
  const { N, C, H, W, Cout, G, OH, OW, win } = d;
  const Cg = C / G, Coutg = Cout / G, P = OH * OW, K = Cg * win.kh * win.kw;
  // The rows and columns the windows reach from the top-left padding corner (as conv.ts).
  const Hp = (OH - 1) * win.sh + (win.kh - 1) * win.dh + 1, Wp = (OW - 1) * win.sw + (win.kw - 1) * win.dw + 1;
  const padded = win.pt > 0 || win.pl > 0 || Hp > H || Wp > W;
  const rowsPer = Math.max(1, Math.min(OH, Math.floor(BAND_FLOATS / (K * OW))));
  const k = heap.k, io = new KernelIO(heap);
  const take = (floats: number) => io.temp(floats * 4);
  try {
    const px = io.in(x), pg = io.in(gy), pw = take(Cout * K);
    const sa = padded ? take(Cg * Hp * Wp) : 0, pr = take(K * rowsPer * OW), pb = take(k.packedSize(rowsPer * OW, K));
    for (let g = 0; g < G; g++) {
      for (let n = 0; n < N; n++) {
        let img = px + (n * C + g * Cg) * H * W * 4;
        if (padded) { k.padPlanes(Cg, H, W, win.pt, win.pl, Hp, Wp, img, sa); img = sa; }
        for (let oy0 = 0; oy0 < OH; oy0 += rowsPer) {
          const rows = Math.min(rowsPer, OH - oy0), cols = rows * OW;
          k.im2colRows(Cg, padded ? Hp : H, padded ? Wp : W, win.kh, win.kw, win.sh, win.sw, win.dh, win.dw, oy0, rows, OW, img, pr);
          // B [cols, K]: B[p, k] = patches[k, p], so column k lies `cols` floats after column k − 1.
          k.packB(cols, K, pr, 1, cols, pb);
          heap.gemm(Coutg, K, cols, pg + ((n * Cout + g * Coutg) * P + oy0 * OW) * 4, P, pb, pw + g * Coutg * K * 4, K, n > 0 || oy0 > 0 ? 1 : 0);
          kernelTick(Coutg * K * cols);
        }
      }
    }
    return heap.copyOutF32(pw, Cout * K);
  } finally {
    io.free();
  }
}

export function wasmConv2dWeightGrad(heap: WasmHeap): Conv2dWeightGradFn {
  return (x, gy, d) => {
    if (!winogradApplies(d)) {
      const K = (d.C / d.G) * d.win.kh * d.win.kw;
      if (d.N * d.Cout * d.OH * d.OW * K < MIN_WORK || K * d.OW > ROW_FLOATS || padsTooMuch(d, d.C / d.G)) return REFERENCE_PRIMITIVES.conv2dWeightGrad(x, gy, d);
      return im2colWeightGrad(heap, x, gy, d);
    }
    const { N, C, H, W, Cout, OH, OW, win } = d;
    const TH = Math.ceil(OH / 2), TW = Math.ceil(OW / 2), T = N * TH * TW, S = Cout * C;
    const TC = winogradSlab(T * C), CT = winogradSlab(Cout * T);
    const k = heap.k, io = new KernelIO(heap);
    const take = (floats: number) => io.temp(floats * 4);
    try {
      const px = io.in(x), pg = io.in(gy), pad = take(C * (2 * TH + 2) * (2 * TW + 2) + 8);
      const pV = take(16 * TC), pM = take(16 * CT), pB = take(k.packedSize(T, C)), pU = take(16 * S);
      k.winogradInputTiles(N, C, H, W, win.pt, win.pl, TH, TW, TC, px, pad, pV);
      k.winogradGradTiles(N, Cout, OH, OW, TH, TW, CT, pg, pM);
      // dU[ξ] [Cout, C] = dM[ξ] [Cout, T] · V[ξ] [T, C]
      for (let xi = 0; xi < 16; xi++) {
        k.packB(T, C, pV + xi * TC * 4, C, 1, pB);
        heap.gemm(Cout, C, T, pM + xi * CT * 4, T, pB, pU + xi * S * 4, C, 0);
      }
      return winogradFilterGrad(heap.copyOutF32(pU, 16 * S), S);
    } finally {
      io.free();
    }
  };
}
