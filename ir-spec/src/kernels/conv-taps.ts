// Convolutions that visit only the kernel taps landing inside the input: the path for windows
// that read mostly padding (a 243×243 kernel over one pixel padded by 242, a stride or dilation
// far larger than the image), where the GEMM paths would first build a zero-padded copy of the
// image bigger than any tensor (no limit counts it) and then multiply all those zeros. Here the
// cost is the real work (in-bounds taps) plus the output, and nothing is allocated but the
// output. Sums run in float64 over (channel, ky, kx) in order, rounded once per element, so
// results equal the GEMM paths' up to float32 rounding. Ticks the run's deadline once per
// result element (kernels/deadline.ts): one element may sum a whole kernel's taps.

import type { ConvDims } from './conv.js';
import { kernelTick } from './deadline.js';

/** Floats of a zero-padded copy below which a convolution keeps the GEMM paths whatever its padding. */
const SMALL_PADDED_FLOATS = 1 << 16;

/**
 * Whether the zero-padded copy of `planes` image planes the GEMM paths would make for `d` is
 * mostly padding: over 4× the planes it copies (a real layer's padding adds a border of a few
 * pixels, well under that) and not small. Such a copy costs memory no tensor limit counts, and
 * the GEMM multiplies all its zeros; the taps inside the image are a fraction of that work.
 */
export function padsTooMuch(d: ConvDims, planes: number): boolean {
  const { H, W, OH, OW, win } = d;
  const Hp = (OH - 1) * win.sh + (win.kh - 1) * win.dh + 1, Wp = (OW - 1) * win.sw + (win.kw - 1) * win.dw + 1;
  return planes * Hp * Wp > Math.max(SMALL_PADDED_FLOATS, 4 * planes * H * W);
}

/** The taps k of a window starting at `start` (k taps `step` apart) that land in [0, size): [lo, hi). */
function tapRange(start: number, k: number, step: number, size: number): [number, number] {
  const lo = start >= 0 ? 0 : Math.ceil(-start / step);
  const hi = start >= size ? 0 : Math.min(k, Math.floor((size - 1 - start) / step) + 1);
  return [Math.min(lo, k), Math.max(hi, Math.min(lo, k))];
}

/** Per output column ox: the first and end kx whose input column is in bounds. */
function columnTaps(d: ConvDims): { lo: Int32Array; hi: Int32Array; taps: number } {
  const { W, OW, win } = d, lo = new Int32Array(OW), hi = new Int32Array(OW);
  let taps = 0;
  for (let ox = 0; ox < OW; ox++) {
    [lo[ox], hi[ox]] = tapRange(ox * win.sw - win.pl, win.kw, win.dw, W);
    taps += hi[ox] - lo[ox];
  }
  return { lo, hi, taps };
}

/** conv2d over in-bounds taps only: out[n, co, oy, ox] = bias[co] + Σ w[co, ci, ky, kx]·x[n, g·Cg + ci, iy, ix]. */
export function conv2dValidTaps(x: Float32Array, w: Float32Array, bias: Float32Array | null, d: ConvDims): Float32Array {
  const { N, C, H, W, Cout, G, OH, OW, win } = d;
  const Cg = C / G, Coutg = Cout / G, khw = win.kh * win.kw;
  const out = new Float32Array(N * Cout * OH * OW), cols = columnTaps(d);
  let o = 0;
  for (let n = 0; n < N; n++) {
    for (let co = 0; co < Cout; co++) {
      const xg = (n * C + Math.floor(co / Coutg) * Cg) * H * W, wc = co * Cg * khw, b = bias ? bias[co] : 0;
      for (let oy = 0; oy < OH; oy++) {
        const iy0 = oy * win.sh - win.pt, [ky0, ky1] = tapRange(iy0, win.kh, win.dh, H);
        for (let ox = 0; ox < OW; ox++, o++) {
          const ix0 = ox * win.sw - win.pl, kx0 = cols.lo[ox], kx1 = cols.hi[ox];
          kernelTick(1 + Cg * (ky1 - ky0) * (1 + kx1 - kx0));
          let s = 0;
          for (let ci = 0; ci < Cg; ci++) {
            for (let ky = ky0; ky < ky1; ky++) {
              const xr = xg + (ci * H + iy0 + ky * win.dh) * W + ix0, wr = wc + (ci * win.kh + ky) * win.kw;
              for (let kx = kx0; kx < kx1; kx++) s += w[wr + kx] * x[xr + kx * win.dw];
            }
          }
          out[o] = s + b;
        }
      }
    }
  }
  return out;
}

/** conv2d's weight gradient over in-bounds taps only: dW[co, ci, ky, kx] = Σ_n,oy,ox gy[n, co, oy, ox]·x[n, g·Cg + ci, iy, ix]. */
export function conv2dWeightGradValidTaps(x: Float32Array, gy: Float32Array, d: ConvDims): Float32Array {
  const { N, C, H, W, Cout, G, OH, OW, win } = d;
  const Cg = C / G, Coutg = Cout / G, P = OH * OW;
  const out = new Float32Array(Cout * Cg * win.kh * win.kw);
  // Per tap ky (kx): the output rows (columns) whose input row (column) is in bounds.
  const rows = Array.from({ length: win.kh }, (_, ky) => tapRange(ky * win.dh - win.pt, OH, win.sh, H));
  const colsOf = Array.from({ length: win.kw }, (_, kx) => tapRange(kx * win.dw - win.pl, OW, win.sw, W));
  let o = 0;
  for (let co = 0; co < Cout; co++) {
    const g = Math.floor(co / Coutg);
    for (let ci = 0; ci < Cg; ci++) {
      for (let ky = 0; ky < win.kh; ky++) {
        const [oy0, oy1] = rows[ky];
        for (let kx = 0; kx < win.kw; kx++, o++) {
          const [ox0, ox1] = colsOf[kx];
          kernelTick(N * (1 + (oy1 - oy0) * (1 + ox1 - ox0)));
          let s = 0;
          for (let n = 0; n < N; n++) {
            const xp = (n * C + g * Cg + ci) * H * W, gp = (n * Cout + co) * P;
            for (let oy = oy0; oy < oy1; oy++) {
              const xr = xp + (oy * win.sh - win.pt + ky * win.dh) * W + kx * win.dw - win.pl, gr = gp + oy * OW;
              for (let ox = ox0; ox < ox1; ox++) s += gy[gr + ox] * x[xr + ox * win.sw];
            }
          }
          out[o] = s;
        }
      }
    }
  }
  return out;
}
