// Patch gathering and scattering for convolutions over one [C, H, W] image plane stack.
// im2col lays out every output position's receptive field as one K-contiguous row
// (col[p, (c·kh + ky)·kw + kx]), so a convolution becomes the NT product W[Cout, K]·colᵀ.
// col2im is its adjoint (scatter-add), used by the transposed convolution.
// Invariant: positions that fall into the padding read as 0 (im2col) or are dropped (col2im).

/** Geometry of a 2-D convolution window over one plane stack. */
export interface ConvWindow {
  /** Kernel size. */
  kh: number; kw: number;
  /** Stride. */
  sh: number; sw: number;
  /** Padding before (top, left); padding after only shapes the output size. */
  pt: number; pl: number;
  /** Dilation. */
  dh: number; dw: number;
}

/**
 * col[p·K + (c·kh + ky)·kw + kx] = x[c, oy·sh − pt + ky·dh, ox·sw − pl + kx·dw] (0 outside),
 * for p = oy·OW + ox and K = C·kh·kw. `x` is C planes of H·W starting at `xOff`.
 */
export function im2col(
  x: Float32Array, xOff: number, C: number, H: number, W: number,
  g: ConvWindow, OH: number, OW: number, col: Float32Array,
): void {
  const { kh, kw, sh, sw, pt, pl, dh, dw } = g;
  const plane = H * W;
  let q = 0;
  for (let oy = 0; oy < OH; oy++) {
    const iy0 = oy * sh - pt;
    for (let ox = 0; ox < OW; ox++) {
      const ix0 = ox * sw - pl;
      // Whether the whole window row fits horizontally decides the fast inner loop.
      const inside = ix0 >= 0 && ix0 + (kw - 1) * dw < W;
      for (let c = 0; c < C; c++) {
        const xc = xOff + c * plane;
        for (let ky = 0; ky < kh; ky++) {
          const iy = iy0 + ky * dh;
          if (iy < 0 || iy >= H) {
            for (let kx = 0; kx < kw; kx++) col[q++] = 0;
            continue;
          }
          const row = xc + iy * W + ix0;
          if (inside) {
            for (let kx = 0; kx < kw; kx++) col[q++] = x[row + kx * dw];
          } else {
            for (let kx = 0; kx < kw; kx++) {
              const ix = ix0 + kx * dw;
              col[q++] = ix >= 0 && ix < W ? x[row + kx * dw] : 0;
            }
          }
        }
      }
    }
  }
}

/**
 * The adjoint of im2col in the transposed layout: for row r = (c·kh + ky)·kw + kx of
 * `cols` [C·kh·kw, H·W] (one column per input position iy·W + ix), adds cols[r, iy·W + ix] into
 * out[c, iy·sh − pt + ky·dh, ix·sw − pl + kx·dw] when that lies inside the OH×OW output.
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
