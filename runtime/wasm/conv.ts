// AssemblyScript source: the convolution's patch matrix packed straight into gemm.ts's B layout
// (im2col and packing in one pass), so conv2d is packIm2col + gemmPacked with the weights as A
// ([Cout, C·kh·kw], already K-contiguous) and the output [Cout, OH·OW] already NCHW.
// Invariant: the packed matrix equals packB of the explicit im2col matrix (zeros where a window
// reads padding, zero columns past OH·OW), so the products are gemm.ts's.

import { KC } from './gemm';

/**
 * Packs the [C·kh·kw, OH·OW] patch matrix of one image group x (C planes of H×W floats) into dst
 * (packedSize(C·kh·kw, OH·OW) floats). Row k = (c, ky, kx); column p = (oy, ox). Panels are
 * filled one after another (dst is written in order); a panel's 8 columns that lie in one output
 * row and read 8 consecutive in-bounds pixels (unit column stride) are copied as two vectors,
 * any other column one float at a time with its padding test.
 */
export function packIm2col(
  C: i32, H: i32, W: i32, kh: i32, kw: i32, sh: i32, sw: i32, pt: i32, pl: i32, dh: i32, dw: i32,
  OH: i32, OW: i32, x: usize, dst: usize,
): void {
  const K = C * kh * kw, P = OH * OW;
  const panels = (P + 7) >> 3;
  let out = dst;
  for (let k0 = 0; k0 < K; k0 += KC) {
    const kb = min(KC, K - k0);
    for (let pn = 0; pn < panels; pn++) {
      const p0 = pn << 3;
      const oy0 = p0 / OW, ox0 = p0 - oy0 * OW;
      // The whole panel in one output row, at unit column stride: 8 consecutive source pixels.
      const oneRow = sw == 1 && ox0 + 8 <= OW;
      let c = k0 / (kh * kw), r = k0 - c * kh * kw, ky = r / kw, kx = r - ky * kw;
      for (let kk = 0; kk < kb; kk++) {
        const plane = x + (<usize>(c * H * W) << 2);
        const ix0 = ox0 * sw - pl + kx * dw;
        const iy = oy0 * sh - pt + ky * dh;
        if (oneRow && iy >= 0 && iy < H && ix0 >= 0 && ix0 + 8 <= W) {
          const src = plane + (<usize>(iy * W + ix0) << 2);
          v128.store(out, v128.load(src));
          v128.store(out, v128.load(src, 16), 16);
        } else {
          let oy = oy0, ox = ox0;
          for (let t = 0; t < 8; t++) {
            const p = p0 + t;
            let v: f32 = 0;
            if (p < P) {
              const y = oy * sh - pt + ky * dh, xx = ox * sw - pl + kx * dw;
              if (y >= 0 && y < H && xx >= 0 && xx < W) v = load<f32>(plane + (<usize>(y * W + xx) << 2));
            }
            store<f32>(out + (<usize>t << 2), v);
            if (++ox == OW) { ox = 0; oy++; }
          }
        }
        out += 32;
        if (++kx == kw) { kx = 0; if (++ky == kh) { ky = 0; c++; } }
      }
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

/**
 * Copies C planes of H×W floats at x into dst as C planes of Hp×Wp floats with pt zero rows
 * above and pl zero columns left of each image (zeros also right and below, up to Hp×Wp), so a
 * padded convolution can pack its patches with no bounds tests (packIm2col with no padding).
 */
export function padPlanes(C: i32, H: i32, W: i32, pt: i32, pl: i32, Hp: i32, Wp: i32, x: usize, dst: usize): void {
  memory.fill(dst, 0, <usize>(C * Hp * Wp) << 2);
  const rows = min(H, Hp - pt), cols = min(W, Wp - pl);
  if (rows <= 0 || cols <= 0) return;
  for (let c = 0; c < C; c++) {
    for (let y = 0; y < rows; y++) {
      memory.copy(dst + (<usize>((c * Hp + y + pt) * Wp + pl) << 2), x + (<usize>((c * H + y) * W) << 2), <usize>cols << 2);
    }
  }
}

/**
 * The convolution epilogue over C rows of P floats at out, in place: out[c, p] = act(out[c, p] +
 * bias[c]), where bias = 0 means no bias and relu != 0 makes act max(·, 0) with NaN kept (else
 * the identity).
 */
export function convEpilogue(C: i32, P: i32, out: usize, bias: usize, relu: i32): void {
  const zero = f32x4.splat(0);
  for (let c = 0; c < C; c++) {
    const bs: f32 = bias != 0 ? load<f32>(bias + (<usize>c << 2)) : 0;
    const b = f32x4.splat(bs);
    let o = out + (<usize>(c * P) << 2);
    let p = 0;
    for (; p + 4 <= P; p += 4, o += 16) {
      let v = f32x4.add(v128.load(o), b);
      if (relu != 0) v = f32x4.max(v, zero);
      v128.store(o, v);
    }
    for (; p < P; p++, o += 4) {
      let v: f32 = load<f32>(o) + bs;
      if (relu != 0) v = v > 0 ? v : (v == v ? <f32>0 : v);
      store<f32>(o, v);
    }
  }
}
