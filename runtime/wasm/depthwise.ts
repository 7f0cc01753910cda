// AssemblyScript source: depthwise conv2d (groups == input channels, each channel convolved with
// its own M filters, M the channel multiplier) for the CPU primitive conv2d (JavaScript side:
// runtime/src/wasm/depthwise.ts). Per plane the image is read in place, or, when a window reaches
// padding, from a zero-bordered copy (padPlanes' layout); eight output columns of a row are two
// vectors, at column stride 1 loaded straight, at stride 2 de-interleaved from four loads, at
// larger strides gathered lane by lane. The bias starts the sums and relu ends them (the conv
// epilogue), so each output is written once.
// Invariant: out[n, c·M + m, oy, ox] = bias + Σ_{ky,kx} w[c·M + m, ky, kx]·xpad[n, c, oy·sh + ky·dh,
// ox·sw + kx·dw], summed in tap order starting from the bias, rounded per tap in float32 (fused where
// the relaxed variant has FMA): equal to ir-spec's float64 sums up to float32 rounding.

import { fma } from './lib/simd';

/** Floats the plane reads may reach past its last row (the caller leaves them readable). */
export const DEPTHWISE_SLACK: i32 = 16;

/** Eight taps' worth of a row at column stride sw from p (bytes), as lo/hi lanes. */
@inline function loadLo(p: usize, sw: i32): v128 {
  if (sw == 1) return v128.load(p);
  if (sw == 2) return v128.shuffle<f32>(v128.load(p), v128.load(p, 16), 0, 2, 4, 6);
  const s = <usize>sw << 2;
  let v = f32x4.splat(load<f32>(p));
  v = f32x4.replace_lane(v, 1, load<f32>(p + s));
  v = f32x4.replace_lane(v, 2, load<f32>(p + 2 * s));
  return f32x4.replace_lane(v, 3, load<f32>(p + 3 * s));
}

/** One output plane [OH, OW] of filter w (kh·kw floats) over img (rows of R floats). */
function plane(img: usize, R: i32, kh: i32, kw: i32, sh: i32, sw: i32, dh: i32, dw: i32, OH: i32, OW: i32, w: usize, b: f32, relu: bool, out: usize): void {
  const bv = f32x4.splat(b), zero = f32x4.splat(0);
  const step8 = <usize>(4 * sw) << 2;
  for (let oy = 0; oy < OH; oy++) {
    const row = img + (<usize>(oy * sh * R) << 2);
    const o = out + (<usize>(oy * OW) << 2);
    let ox = 0;
    for (; ox + 8 <= OW; ox += 8) {
      let lo = bv, hi = bv;
      let t = w;
      for (let ky = 0; ky < kh; ky++) {
        let p = row + (<usize>(ky * dh * R + ox * sw) << 2);
        for (let kx = 0; kx < kw; kx++, t += 4, p += <usize>dw << 2) {
          const wv = v128.load32_splat(t);
          lo = fma(wv, loadLo(p, sw), lo);
          hi = fma(wv, loadLo(p + step8, sw), hi);
        }
      }
      if (relu) { lo = f32x4.max(lo, zero); hi = f32x4.max(hi, zero); }
      v128.store(o + (<usize>ox << 2), lo);
      v128.store(o + (<usize>ox << 2), hi, 16);
    }
    for (; ox < OW; ox++) {
      let s = b;
      let t = w;
      for (let ky = 0; ky < kh; ky++) {
        let p = row + (<usize>(ky * dh * R + ox * sw) << 2);
        for (let kx = 0; kx < kw; kx++, t += 4, p += <usize>dw << 2) s += load<f32>(t) * load<f32>(p);
      }
      if (relu) s = s > 0 ? s : (s == s ? <f32>0 : s);
      store<f32>(o + (<usize>ox << 2), s);
    }
  }
}

/**
 * Depthwise conv2d of x [N, C, H, W] with w [C·M, 1, kh, kw] and bias [C·M] (0: none) into
 * out [N, C·M, OH, OW]; relu != 0 applies max(·, 0) (NaN kept). scratch holds Hp·Wp +
 * DEPTHWISE_SLACK floats (used only when a window reaches padding or past the image).
 */
export function depthwiseConv2d(
  N: i32, C: i32, H: i32, W: i32, M: i32, kh: i32, kw: i32, sh: i32, sw: i32, pt: i32, pl: i32, dh: i32, dw: i32,
  OH: i32, OW: i32, x: usize, w: usize, bias: usize, relu: i32, scratch: usize, out: usize,
): void {
  const Hp = (OH - 1) * sh + (kh - 1) * dh + 1, Wp = (OW - 1) * sw + (kw - 1) * dw + 1;
  const padded = pt > 0 || pl > 0 || Hp > H || Wp > W;
  const rows = min(H, Hp - pt), cols = min(W, Wp - pl);
  const K = kh * kw, P = OH * OW;
  if (padded) memory.fill(scratch, 0, <usize>(Hp * Wp + DEPTHWISE_SLACK) << 2);
  for (let n = 0; n < N; n++) {
    for (let c = 0; c < C; c++) {
      let img = x + (<usize>((n * C + c) * H * W) << 2);
      let R = W;
      if (padded) {
        // Only the interior is rewritten: the border stays zero from the fill above.
        for (let y = 0; y < rows; y++) {
          memory.copy(scratch + (<usize>((y + pt) * Wp + pl) << 2), img + (<usize>(y * W) << 2), <usize>cols << 2);
        }
        img = scratch;
        R = Wp;
      }
      for (let m = 0; m < M; m++) {
        const co = c * M + m;
        const b: f32 = bias != 0 ? load<f32>(bias + (<usize>co << 2)) : 0;
        plane(img, R, kh, kw, sh, sw, dh, dw, OH, OW, w + (<usize>(co * K) << 2), b, relu != 0, out + (<usize>((n * C * M + co) * P) << 2));
      }
    }
  }
}
