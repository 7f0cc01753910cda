// AssemblyScript source: the convolution's patch matrix packed straight into gemm.ts's B layout
// (im2col and packing in one pass), so conv2d is packIm2col + gemmPacked with the weights as A
// ([Cout, C·kh·kw], already K-contiguous) and the output [Cout, OH·OW] already NCHW.
// Invariant: the packed matrix equals packB of the explicit im2col matrix (zeros where a window
// reads padding, zero columns past OH·OW), so the products are gemm.ts's.

import { KC } from './gemm';
import { fma, storeRow } from './lib/simd';

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

/**
 * Direct convolution at unit column stride, no packing: for rows [0, M) of the weights a
 * ([M, K], K-contiguous), C[co, oy·OW + ox] = Σ_k a[co, k]·img[taps[k] + oy·sh·Wp + ox], where img
 * is a zero-bordered image (padPlanes, or an unpadded one whose windows stay inside) with rows of
 * Wp floats and taps[k] the byte offset of tap k = (c, ky, kx) from a window's corner. Eight
 * consecutive output columns of one row read eight consecutive floats at every tap, so they
 * stand in for a packed panel of B; a row's last columns (fewer than 8) read past the row into
 * memory whose lanes are not stored, so the caller leaves 8 floats readable past img's end.
 * Same sums in the same k order as packIm2col + gemmPacked with K ≤ KC.
 */
export function convDirect(M: i32, K: i32, a: usize, taps: usize, img: usize, Wp: i32, sh: i32, OH: i32, OW: i32, c: usize): void {
  const P = OH * OW;
  for (let oy = 0; oy < OH; oy++) {
    const row = img + (<usize>(oy * sh * Wp) << 2);
    for (let ox = 0; ox < OW; ox += 8) {
      const w = min(8, OW - ox);
      const b = row + (<usize>ox << 2);
      const out = c + (<usize>(oy * OW + ox) << 2);
      let i = 0;
      for (; i + 4 <= M; i += 4) direct4x8(K, a + (<usize>(i * K) << 2), K, taps, b, out + (<usize>(i * P) << 2), P, w);
      for (; i < M; i++) direct1x8(K, a + (<usize>(i * K) << 2), taps, b, out + (<usize>(i * P) << 2), w);
    }
  }
}

function direct4x8(K: i32, a: usize, lda: i32, taps: usize, b: usize, c: usize, ldc: i32, w: i32): void {
  let c00 = f32x4.splat(0), c01 = f32x4.splat(0);
  let c10 = f32x4.splat(0), c11 = f32x4.splat(0);
  let c20 = f32x4.splat(0), c21 = f32x4.splat(0);
  let c30 = f32x4.splat(0), c31 = f32x4.splat(0);
  const s = <usize>lda << 2;
  let a0 = a, a1 = a + s, a2 = a + 2 * s, a3 = a + 3 * s;
  let t = taps;
  for (let k = 0; k < K; k++) {
    const at = b + <usize>load<i32>(t);
    const b0 = v128.load(at), b1 = v128.load(at, 16);
    let x = v128.load32_splat(a0);
    c00 = fma(x, b0, c00); c01 = fma(x, b1, c01);
    x = v128.load32_splat(a1);
    c10 = fma(x, b0, c10); c11 = fma(x, b1, c11);
    x = v128.load32_splat(a2);
    c20 = fma(x, b0, c20); c21 = fma(x, b1, c21);
    x = v128.load32_splat(a3);
    c30 = fma(x, b0, c30); c31 = fma(x, b1, c31);
    a0 += 4; a1 += 4; a2 += 4; a3 += 4; t += 4;
  }
  const sc = <usize>ldc << 2;
  storeRow(c, c00, c01, w, false);
  storeRow(c + sc, c10, c11, w, false);
  storeRow(c + 2 * sc, c20, c21, w, false);
  storeRow(c + 3 * sc, c30, c31, w, false);
}

function direct1x8(K: i32, a: usize, taps: usize, b: usize, c: usize, w: i32): void {
  let c0 = f32x4.splat(0), c1 = f32x4.splat(0);
  for (let k = 0; k < K; k++) {
    const at = b + <usize>load<i32>(taps + (<usize>k << 2));
    const x = v128.load32_splat(a + (<usize>k << 2));
    c0 = fma(x, v128.load(at), c0);
    c1 = fma(x, v128.load(at, 16), c1);
  }
  storeRow(c, c0, c1, w, false);
}

/**
 * The patch matrix of output rows oy0..oy0+rows of one image group, row-major: dst[k, p] for
 * k = (c, ky, kx) of C·kh·kw rows and p = (oy − oy0)·OW + ox of rows·OW columns, read from x (C
 * planes of Hs×Ws floats) where every window lies in bounds (a padded image: padPlanes). For
 * conv2d's weight gradient, dW += gy·dstᵀ (the GEMM packs dstᵀ with packB).
 */
export function im2colRows(C: i32, Hs: i32, Ws: i32, kh: i32, kw: i32, sh: i32, sw: i32, dh: i32, dw: i32, oy0: i32, rows: i32, OW: i32, x: usize, dst: usize): void {
  let out = dst;
  for (let c = 0; c < C; c++) {
    const plane = x + (<usize>(c * Hs * Ws) << 2);
    for (let ky = 0; ky < kh; ky++) {
      for (let kx = 0; kx < kw; kx++) {
        for (let r = 0; r < rows; r++) {
          let src = plane + (<usize>(((oy0 + r) * sh + ky * dh) * Ws + kx * dw) << 2);
          if (sw == 1) {
            let ox = 0;
            for (; ox + 4 <= OW; ox += 4, src += 16, out += 16) v128.store(out, v128.load(src));
            for (; ox < OW; ox++, src += 4, out += 4) store<f32>(out, load<f32>(src));
          } else {
            const step = <usize>sw << 2;
            for (let ox = 0; ox < OW; ox++, src += step, out += 4) store<f32>(out, load<f32>(src));
          }
        }
      }
    }
  }
}
