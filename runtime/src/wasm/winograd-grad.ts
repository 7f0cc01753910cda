// The WebAssembly conv2d weight gradient (kernels in runtime/wasm/winograd-grad.ts and gemm.ts)
// behind ir-spec's Conv2dWeightGradFn, for the convolutions ir-spec computes with Winograd
// F(2×2, 3×3) (3×3, stride 1, ungrouped; winogradApplies): the input and output-gradient tile
// transforms and the 16 products run in the kernel memory without copies between them; the
// small filter transform Gᵀ dU G stays ir-spec's. Other convolutions run the reference.
// Invariant: V and dM equal the reference's bit for bit; the products are gemm.ts's (float32 sums
// in k order), so dW agrees with the reference to float32 rounding of the sums.

import { REFERENCE_PRIMITIVES, winogradApplies, winogradFilterGrad, winogradSlab, type Conv2dWeightGradFn } from '@kiln/ir-spec';
import type { WasmHeap } from './heap.js';

export function wasmConv2dWeightGrad(heap: WasmHeap): Conv2dWeightGradFn {
  return (x, gy, d) => {
    if (!winogradApplies(d)) return REFERENCE_PRIMITIVES.conv2dWeightGrad(x, gy, d);
    const { N, C, H, W, Cout, OH, OW, win } = d;
    const TH = Math.ceil(OH / 2), TW = Math.ceil(OW / 2), T = N * TH * TW, S = Cout * C;
    const TC = winogradSlab(T * C), CT = winogradSlab(Cout * T);
    const k = heap.k, blocks: number[] = [];
    const take = (floats: number) => { const at = heap.alloc(floats * 4); blocks.push(at); return at; };
    try {
      const px = take(x.length), pg = take(gy.length), pad = take(C * (2 * TH + 2) * (2 * TW + 2) + 8);
      const pV = take(16 * TC), pM = take(16 * CT), pB = take(k.packedSize(T, C)), pU = take(16 * S);
      const f = heap.f32();
      f.set(x, px >> 2);
      f.set(gy, pg >> 2);
      k.winogradInputTiles(N, C, H, W, win.pt, win.pl, TH, TW, TC, px, pad, pV);
      k.winogradGradTiles(N, Cout, OH, OW, TH, TW, CT, pg, pM);
      // dU[ξ] [Cout, C] = dM[ξ] [Cout, T] · V[ξ] [T, C]
      for (let xi = 0; xi < 16; xi++) {
        k.packB(T, C, pV + xi * TC * 4, C, 1, pB);
        heap.gemm(Cout, C, T, pM + xi * CT * 4, T, pB, pU + xi * S * 4, C, 0);
      }
      return winogradFilterGrad(heap.copyOutF32(pU, 16 * S), S);
    } finally {
      for (const b of blocks) heap.free(b);
    }
  };
}
