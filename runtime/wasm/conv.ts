// AssemblyScript source: the convolution's patch matrix packed straight into gemm.ts's B layout
// (im2col and packing in one pass), so conv2d is packIm2col + gemmPacked with the weights as A
// ([Cout, C·kh·kw], already K-contiguous) and the output [Cout, OH·OW] already NCHW.
// Invariant: the packed matrix equals packB of the explicit im2col matrix (zeros where a window
// reads padding, zero columns past OH·OW), so the products are gemm.ts's.

import { KC } from './gemm';

/**
 * Packs the [C·kh·kw, OH·OW] patch matrix of one image group x (C planes of H×W floats) into dst
 * (packedSize(C·kh·kw, OH·OW) floats). Row k = (c, ky, kx); column p = (oy, ox).
 */
export function packIm2col(
  C: i32, H: i32, W: i32, kh: i32, kw: i32, sh: i32, sw: i32, pt: i32, pl: i32, dh: i32, dw: i32,
  OH: i32, OW: i32, x: usize, dst: usize,
): void {
  const K = C * kh * kw, P = OH * OW;
  const panels = (P + 7) >> 3;
  for (let k0 = 0; k0 < K; k0 += KC) {
    const kb = min(KC, K - k0);
    const block = dst + (<usize>(k0 * panels * 8) << 2);
    const panelStride = <usize>(kb * 8) << 2;
    for (let kk = 0; kk < kb; kk++) {
      const k = k0 + kk;
      const c = k / (kh * kw), r = k % (kh * kw), ky = r / kw, kx = r % kw;
      const plane = x + (<usize>(c * H * W) << 2);
      const rowBase = block + (<usize>(kk * 8) << 2);
      let p = 0;
      for (let oy = 0; oy < OH; oy++) {
        const iy = oy * sh - pt + ky * dh;
        const rowOk = iy >= 0 && iy < H;
        const src = plane + (<usize>(iy * W) << 2);
        for (let ox = 0; ox < OW; ox++, p++) {
          const ix = ox * sw - pl + kx * dw;
          const v: f32 = rowOk && ix >= 0 && ix < W ? load<f32>(src + (<usize>ix << 2)) : 0;
          store<f32>(rowBase + <usize>(p >> 3) * panelStride + (<usize>(p & 7) << 2), v);
        }
      }
      for (; p < panels * 8; p++) store<f32>(rowBase + <usize>(p >> 3) * panelStride + (<usize>(p & 7) << 2), 0);
    }
  }
}

/** out[c, p] += bias[c] for C rows of P floats. */
export function addBias(C: i32, P: i32, out: usize, bias: usize): void {
  for (let c = 0; c < C; c++) {
    const b = f32x4.splat(load<f32>(bias + (<usize>c << 2)));
    let o = out + (<usize>(c * P) << 2);
    let p = 0;
    for (; p + 4 <= P; p += 4, o += 16) v128.store(o, f32x4.add(v128.load(o), b));
    for (; p < P; p++, o += 4) store<f32>(o, load<f32>(o) + f32x4.extract_lane(b, 0));
  }
}
