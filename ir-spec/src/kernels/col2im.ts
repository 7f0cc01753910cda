// Scattering patch columns back into an image (col2im), for strided transposed convolutions:
// the product W_gᵀ·x_g gives, per input position, the contribution of every kernel tap, which is
// added into the output position that tap reaches. Taps that land in the padding are dropped.

import type { ConvWindow } from './conv.js';

/**
 * For each row r = (c·kh + ky)·kw + kx of `cols` [C·kh·kw, H·W] (one column per input position
 * iy·W + ix), adds cols[r, iy·W + ix] into out[c, iy·sh − pt + ky·dh, ix·sw − pl + kx·dw] when
 * that lies inside the OH×OW output. With `r0`/`r1`, `cols` holds only rows r0 ..< r1 (a block
 * of them, in order).
 */
export function col2im(
  cols: Float32Array, C: number, H: number, W: number,
  g: ConvWindow, OH: number, OW: number, out: Float32Array, outOff: number,
  r0 = 0, r1 = C * g.kh * g.kw,
): void {
  const { kh, kw, sh, sw, pt, pl, dh, dw } = g;
  const P = H * W, oplane = OH * OW, khw = kh * kw;
  for (let rr = r0; rr < r1; rr++) {
    const c = Math.floor(rr / khw), ky = Math.floor((rr - c * khw) / kw), kx = rr - c * khw - ky * kw;
    const oc = outOff + c * oplane, r = (rr - r0) * P;
    const shift = kx * dw - pl;
    // The input columns ix whose target ox = ix·sw + shift lies in [0, OW).
    const ixLo = Math.max(0, Math.ceil(-shift / sw));
    const ixHi = Math.min(W, Math.floor((OW - 1 - shift) / sw) + 1);
    for (let iy = 0; iy < H; iy++) {
      const oy = iy * sh - pt + ky * dh;
      if (oy < 0 || oy >= OH) continue;
      const orow = oc + oy * OW + shift, crow = r + iy * W;
      for (let ix = ixLo; ix < ixHi; ix++) out[orow + ix * sw] += cols[crow + ix];
    }
  }
}
