// Scattering patch columns back into an image (col2im), for strided transposed convolutions:
// the product W_gᵀ·x_g gives, per input position, the contribution of every kernel tap, which is
// added into the output position that tap reaches. Taps that land in the padding are dropped.

import type { ConvWindow } from './conv.js';

/**
 * For each row r = (c·kh + ky)·kw + kx of `cols` [C·kh·kw, H·W] (one column per input position
 * iy·W + ix), adds cols[r, iy·W + ix] into out[c, iy·sh − pt + ky·dh, ix·sw − pl + kx·dw] when
 * that lies inside the OH×OW output.
 */
export function col2im(
  cols: Float32Array, C: number, H: number, W: number,
  g: ConvWindow, OH: number, OW: number, out: Float32Array, outOff: number,
): void {
  const { kh, kw, sh, sw, pt, pl, dh, dw } = g;
  const P = H * W, oplane = OH * OW;
  for (let c = 0; c < C; c++) {
    const oc = outOff + c * oplane;
    for (let ky = 0; ky < kh; ky++) {
      for (let kx = 0; kx < kw; kx++) {
        const r = ((c * kh + ky) * kw + kx) * P;
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
  }
}

