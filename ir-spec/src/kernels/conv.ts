// CPU drivers of the convolution ops over NCHW float32 buffers. conv2d and its weight gradient
// run as Winograd F(2×2, 3×3) where it applies (kernels/winograd.ts), otherwise as implicit
// GEMMs (kernels/implicit-gemm.ts) that read patches straight from a zero-padded copy of each
// image (or from the input itself when no padding is read), per image and group; a unit-stride
// conv_transpose2d is a conv2d with the kernel flipped, a strided one a GEMM followed by col2im;
// windows that read mostly padding visit only their in-bounds taps (kernels/conv-taps.ts). Shapes were checked by the op's shape rule; these functions trust them.

import { gemm } from './gemm.js';
import type { CpuPrimitives } from './primitives.js';
import { gemmGather } from './implicit-gemm.js';
import { col2im } from './col2im.js';
import { kernelTick } from './deadline.js';
import { conv2dValidTaps, conv2dWeightGradValidTaps, padsTooMuch } from './conv-taps.js';
import { winogradApplies, winogradConv2d, winogradWeightGrad } from './winograd.js';

/** Geometry of a 2-D convolution window. */
export interface ConvWindow {
  /** Kernel size. */
  kh: number; kw: number;
  /** Stride. */
  sh: number; sw: number;
  /** Padding before (top, left); the padding after only shapes the output size. */
  pt: number; pl: number;
  /** Dilation. */
  dh: number; dw: number;
}

/** Sizes of one convolution: input [N, C, H, W], weight [Cout, C/G, kh, kw], output [N, Cout, OH, OW]. */
export interface ConvDims {
  N: number; C: number; H: number; W: number;
  Cout: number; G: number;
  OH: number; OW: number;
  win: ConvWindow;
}

/**
 * Where the implicit GEMM reads one image group: `load(xOff)` returns the offset of the group's
 * first plane in `buf`, whose planes are `plane` apart and rows `row` apart. Without padding in
 * reach, that is x itself; otherwise a zero-bordered copy (borders written once, reused).
 */
interface PatchSource { buf: Float32Array; plane: number; row: number; load(xOff: number): number }

function patchSource(x: Float32Array, d: ConvDims, Cg: number): PatchSource {
  const { H, W, OH, OW, win } = d;
  // The rows and columns the windows reach, counted from the top-left padding corner.
  const Hp = (OH - 1) * win.sh + (win.kh - 1) * win.dh + 1, Wp = (OW - 1) * win.sw + (win.kw - 1) * win.dw + 1;
  if (win.pt === 0 && win.pl === 0 && Hp <= H && Wp <= W) return { buf: x, plane: H * W, row: W, load: (xOff) => xOff };
  const plane = Hp * Wp, buf = new Float32Array(Cg * plane);
  const yHi = Math.min(H, Hp - win.pt), xHi = Math.min(W, Wp - win.pl);
  return {
    buf, plane, row: Wp,
    load(xOff) {
      for (let c = 0; c < Cg; c++) {
        for (let iy = 0; iy < yHi; iy++) {
          const s = xOff + (c * H + iy) * W, t = c * plane + (iy + win.pt) * Wp + win.pl;
          for (let ix = 0; ix < xHi; ix++) buf[t + ix] = x[s + ix];
        }
      }
      return 0;
    },
  };
}

/** Offset of kernel tap (c, ky, kx) relative to its window's corner. */
function tapOffsets(Cg: number, win: ConvWindow, plane: number, row: number): Int32Array {
  const out = new Int32Array(Cg * win.kh * win.kw);
  let k = 0;
  for (let c = 0; c < Cg; c++) {
    for (let ky = 0; ky < win.kh; ky++) for (let kx = 0; kx < win.kw; kx++) out[k++] = c * plane + ky * win.dh * row + kx * win.dw;
  }
  return out;
}

/** Offset of the window corner of output position (oy, ox). */
function positionOffsets(OH: number, OW: number, win: ConvWindow, row: number): Int32Array {
  const out = new Int32Array(OH * OW);
  let j = 0;
  for (let oy = 0; oy < OH; oy++) for (let ox = 0; ox < OW; ox++) out[j++] = oy * win.sh * row + ox * win.sw;
  return out;
}

/** out[n, c, ·] = bias[c], so the GEMMs can accumulate onto it. */
function fillBias(out: Float32Array, bias: Float32Array, N: number, C: number, P: number): void {
  for (let n = 0, o = 0; n < N; n++) {
    for (let c = 0; c < C; c++, o += P) out.fill(bias[c], o, o + P);
  }
}

/**
 * What a conv2d primitive applies to its sums before they are stored (fused_conv2d's epilogue):
 * y = relu?(conv + bias), written into `out` when given (its length is the output's).
 */
export interface ConvEpilogue {
  /** max(·, 0) after the bias (NaN passes through, as PyTorch's relu). */
  readonly relu?: boolean;
  /** Where the output goes (a fresh array when absent). */
  readonly out?: Float32Array;
}

/**
 * conv2d: out[n, g·Coutg + co, p] = Σ_k W_g[co, k]·patch_n(p)[k] (+ bias), then the epilogue
 * `epi` (relu, destination) if given.
 */
export function conv2dForward(x: Float32Array, w: Float32Array, bias: Float32Array | null, d: ConvDims, epi?: ConvEpilogue): Float32Array {
  const y = conv2dSums(x, w, bias, d);
  return epi ? applyConvEpilogue(y, epi) : y;
}

/** The epilogue on a computed conv2d output `y` (reference form: one pass, then a copy to `out`). */
export function applyConvEpilogue(y: Float32Array, epi: ConvEpilogue): Float32Array {
  if (epi.relu) for (let i = 0; i < y.length; i++) { const v = y[i]; if (!(v > 0) && v === v) y[i] = 0; } // -0 → 0, NaN kept
  if (epi.out && epi.out !== y) { epi.out.set(y); return epi.out; }
  return y;
}

function conv2dSums(x: Float32Array, w: Float32Array, bias: Float32Array | null, d: ConvDims): Float32Array {
  if (winogradApplies(d)) return winogradConv2d(x, w, bias, d);
  const { N, C, H, W, Cout, G, OH, OW, win } = d;
  const Cg = C / G, Coutg = Cout / G, P = OH * OW, K = Cg * win.kh * win.kw;
  if (padsTooMuch(d, Cg)) return conv2dValidTaps(x, w, bias, d);
  const out = new Float32Array(N * Cout * P);
  if (bias) fillBias(out, bias, N, Cout, P);
  const src = patchSource(x, d, Cg);
  const taps = tapOffsets(Cg, win, src.plane, src.row), pos = positionOffsets(OH, OW, win, src.row);
  for (let n = 0; n < N; n++) {
    for (let g = 0; g < G; g++) {
      const base = src.load((n * C + g * Cg) * H * W);
      gemmGather(Coutg, P, K, w, g * Coutg * K, K, src.buf, base, taps, pos, out, (n * Cout + g * Coutg) * P, P, bias !== null);
    }
  }
  return out;
}

/**
 * conv2d's weight gradient: dW_g[co, k] = Σ_n Σ_p gy[n, g·Coutg + co, p]·patch_n(p)[k], an
 * implicit GEMM per image (accumulating) whose contraction runs over the positions.
 */
export function conv2dWeightGrad(x: Float32Array, gy: Float32Array, d: ConvDims, gemmFn: CpuPrimitives['gemm'] = gemm): Float32Array {
  if (winogradApplies(d)) return winogradWeightGrad(x, gy, d, gemmFn);
  const { N, C, H, W, Cout, G, OH, OW, win } = d;
  const Cg = C / G, Coutg = Cout / G, P = OH * OW, K = Cg * win.kh * win.kw;
  if (padsTooMuch(d, Cg)) return conv2dWeightGradValidTaps(x, gy, d);
  const out = new Float32Array(Cout * K);
  const src = patchSource(x, d, Cg);
  const taps = tapOffsets(Cg, win, src.plane, src.row), pos = positionOffsets(OH, OW, win, src.row);
  for (let n = 0; n < N; n++) {
    for (let g = 0; g < G; g++) {
      const base = src.load((n * C + g * Cg) * H * W);
      gemmGather(Coutg, K, P, gy, (n * Cout + g * Coutg) * P, P, src.buf, base, pos, taps, out, g * Coutg * K, K, n > 0);
    }
  }
  return out;
}

/**
 * conv_transpose2d of x [N, Cin, H, W] with weight [Cin, Coutg, kh, kw] into [N, G·Coutg, OH, OW].
 * With unit stride it is a conv2d with the kernel flipped and its channel dims swapped, padded by
 * d·(k−1) − p; otherwise each image's W_gᵀ·x_g columns are scattered with col2im. `prims`: the
 * device's conv2d and gemm (the reference ones when omitted). `into`: where a unit-stride one
 * writes its result (the output's length; the col2im path, which accumulates, makes its own).
 */
export function convTranspose2dForward(x: Float32Array, w: Float32Array, bias: Float32Array | null, d: ConvDims, prims?: CpuPrimitives, into?: Float32Array): Float32Array {
  const { N, C, H, W, Cout, G, OH, OW, win } = d;
  const Cing = C / G, Coutg = Cout / G, khw = win.kh * win.kw;
  const ph = win.dh * (win.kh - 1), pw = win.dw * (win.kw - 1);
  if (win.sh === 1 && win.sw === 1 && win.pt <= ph && win.pl <= pw) {
    // flipped[g·Coutg + co, ci, ky, kx] = w[g·Cing + ci, co, kh−1−ky, kw−1−kx]
    const flipped = new Float32Array(w.length);
    for (let g = 0; g < G; g++) {
      for (let ci = 0; ci < Cing; ci++) {
        for (let co = 0; co < Coutg; co++) {
          const src = ((g * Cing + ci) * Coutg + co) * khw, dst = ((g * Coutg + co) * Cing + ci) * khw;
          for (let k = 0; k < khw; k++) flipped[dst + k] = w[src + khw - 1 - k];
        }
      }
    }
    return (prims?.conv2d ?? conv2dForward)(x, flipped, bias, { ...d, win: { ...win, pt: ph - win.pt, pl: pw - win.pl } }, into && { out: into });
  }
  const P = H * W, Kc = Coutg * khw;
  const out = new Float32Array(N * Cout * OH * OW);
  if (bias) fillBias(out, bias, N, Cout, OH * OW);
  // The columns in blocks of input rows and of kernel taps when all of them would pass
  // COLS_FLOATS (a big kernel: cols is Kc·H·W floats, which no tensor limit counts), scattered
  // block after block in order, so results never depend on the thread count.
  const R = Kc * P <= COLS_FLOATS ? H : Math.max(1, Math.min(H, Math.floor(COLS_FLOATS / W)));
  const KB = Kc * P <= COLS_FLOATS ? Kc : Math.max(1, Math.min(Kc, Math.floor(COLS_FLOATS / (R * W))));
  const cols = new Float32Array(KB * R * W);
  for (let n = 0; n < N; n++) {
    for (let g = 0; g < G; g++) {
      for (let y0 = 0; y0 < H; y0 += R) {
        const rows = Math.min(R, H - y0), Pb = rows * W, sub = y0 === 0 ? win : { ...win, pt: win.pt - y0 * win.sh };
        for (let r0 = 0; r0 < Kc; r0 += KB) {
          const kb = Math.min(KB, Kc - r0);
          // cols[kb, Pb] = W_gᵀ·x_g: A(i=kc, k=ci) = w[(g·Cing + ci)·Kc + r0 + kc], B(k=ci, j=p) = x[n, g·Cing + ci, y0·W + p].
          (prims?.gemm ?? gemm)(kb, Pb, Cing, w, g * Cing * Kc + r0, 1, Kc, x, (n * C + g * Cing) * P + y0 * W, P, 1, cols, 0, Pb);
          col2im(cols, Coutg, rows, W, sub, OH, OW, out, (n * Cout + g * Coutg) * OH * OW, r0, r0 + kb);
          kernelTick(kb * Pb * (Cing + 1));
        }
      }
    }
  }
  return out;
}

/** Most floats of conv_transpose2d's column buffer (16 MiB). */
const COLS_FLOATS = 1 << 22;
