// Pooling loops over a stack of H×W planes (N·C planes of an NCHW tensor). Windows follow
// PyTorch exactly: fixed windows with stride/padding/dilation (padding reads as -inf for max and
// as 0 for avg), and adaptive bins [floor(i·H/o), ceil((i+1)·H/o)). Max records the flat h·W + w
// offset of the winner within its plane (first maximum in scan order; a NaN always wins).
// Every pool is one of two loops (max; mean and its adjoint) over per-dim bins computed once
// per call, plus a bounds-test-free fast path for the common 2×2 max pool. The window loops tick
// the run's deadline (kernels/deadline.ts) once per output row, with the row's taps as its work
// (once per window in a row of more than ROW_WORK taps).

import { kernelTick } from './deadline.js';

/** A fixed pooling window (symmetric padding). */
export interface PoolWindow {
  kh: number; kw: number;
  sh: number; sw: number;
  ph: number; pw: number;
  dh: number; dw: number;
}

/** Output size along one dim; ceil mode drops a last window that would start in the padding. */
export function poolOutSize(size: number, k: number, stride: number, pad: number, dilation: number, ceil: boolean): number {
  const span = size + 2 * pad - dilation * (k - 1) - 1;
  let out = (ceil ? Math.ceil(span / stride) : Math.floor(span / stride)) + 1;
  if (ceil && (out - 1) * stride >= size + pad) out--;
  return out;
}

/**
 * The windows along one dim: output i reads the in-bounds input positions lo[i],
 * lo[i] + step, … below hi[i] (none when lo[i] >= hi[i]), and an average divides by
 * div[i] times the other dim's div.
 */
interface Bins { lo: Int32Array; hi: Int32Array; step: number; div: Float64Array }

/**
 * Fixed windows along a dim of `size`: window i starts at i·stride − pad and has k taps `dilation`
 * apart; taps in the padding are dropped. `div` is the number of taps kept, or with
 * `countIncludePad` the window's extent clipped to the padded input (avg_pool2d, dilation 1).
 */
function fixedBins(size: number, out: number, k: number, stride: number, pad: number, dilation: number, countIncludePad: boolean): Bins {
  const lo = new Int32Array(out), hi = new Int32Array(out), div = new Float64Array(out);
  for (let i = 0; i < out; i++) {
    const start = i * stride - pad;
    const first = start >= 0 ? start : start + Math.ceil(-start / dilation) * dilation;
    const end = Math.min(start + (k - 1) * dilation + 1, size);
    lo[i] = first;
    hi[i] = end;
    div[i] = countIncludePad ? Math.min(start + k, size + pad) - start : first < end ? Math.floor((end - 1 - first) / dilation) + 1 : 0;
  }
  return { lo, hi, step: dilation, div };
}

/** Bin i of an adaptive pool from `size` to `out` covers [binStart(i), binEnd(i)). */
export const binStart = (i: number, size: number, out: number): number => Math.floor((i * size) / out);
export const binEnd = (i: number, size: number, out: number): number => Math.ceil(((i + 1) * size) / out);

/** Adaptive bins along a dim: never empty, each divided by its own length. */
function adaptiveBins(size: number, out: number): Bins {
  const lo = new Int32Array(out), hi = new Int32Array(out), div = new Float64Array(out);
  for (let i = 0; i < out; i++) {
    lo[i] = binStart(i, size, out);
    hi[i] = binEnd(i, size, out);
    div[i] = hi[i] - lo[i];
  }
  return { lo, hi, step: 1, div };
}

/** The [rows, cols] bins of avg_pool2d; a divisor override replaces the product of the counts. */
function avgBins(H: number, W: number, g: PoolWindow, OH: number, OW: number, countIncludePad: boolean, divisorOverride: number | null): [Bins, Bins] {
  const ys = fixedBins(H, OH, g.kh, g.sh, g.ph, 1, countIncludePad), xs = fixedBins(W, OW, g.kw, g.sw, g.pw, 1, countIncludePad);
  if (divisorOverride !== null) { ys.div.fill(divisorOverride); xs.div.fill(1); }
  return [ys, xs];
}

/** Max over each window; `val`/`idx` get planes·OH·OW entries. */
export function maxPool(
  x: Float32Array, planes: number, H: number, W: number, g: PoolWindow, OH: number, OW: number,
  val: Float32Array, idx: Int32Array,
): void {
  const { kh, kw, sh, sw, ph, pw, dh, dw } = g;
  if (kh === 2 && kw === 2 && sh === 2 && sw === 2 && ph === 0 && pw === 0 && 2 * OH <= H && 2 * OW <= W) {
    maxPool2x2(x, planes, H, W, OH, OW, val, idx);
    return;
  }
  maxOver(x, planes, H, W, fixedBins(H, OH, kh, sh, ph, dh, false), fixedBins(W, OW, kw, sw, pw, dw, false), val, idx);
}

/** The common 2×2, stride-2 pool whose windows all lie inside the plane: no bounds tests. */
function maxPool2x2(x: Float32Array, planes: number, H: number, W: number, OH: number, OW: number, val: Float32Array, idx: Int32Array): void {
  let o = 0;
  for (let p = 0; p < planes; p++) {
    const base = p * H * W;
    for (let oy = 0; oy < OH; oy++) {
      const r0 = 2 * oy * W, r1 = r0 + W;
      for (let ox = 0; ox < OW; ox++) {
        const i0 = r0 + 2 * ox, i2 = r1 + 2 * ox;
        let best = x[base + i0], bi = i0;
        const v1 = x[base + i0 + 1], v2 = x[base + i2], v3 = x[base + i2 + 1];
        if (v1 > best || v1 !== v1) { best = v1; bi = i0 + 1; }
        if (v2 > best || v2 !== v2) { best = v2; bi = i2; }
        if (v3 > best || v3 !== v3) { best = v3; bi = i2 + 1; }
        val[o] = best;
        idx[o++] = bi;
      }
    }
  }
}

/** Taps past which a row of windows ticks the deadline once per window instead of once per row. */
const ROW_WORK = 1 << 20;

/** Taps of a window lo..hi by step (at least 1: an empty window still costs its visit). */
const span = (lo: number, hi: number, step: number): number => (lo < hi ? Math.floor((hi - 1 - lo) / step) + 1 : 1);

/** Taps of all the windows of a dim's bins together. */
function tapsOf(b: Bins): number {
  let n = 0;
  for (let i = 0; i < b.lo.length; i++) n += span(b.lo[i], b.hi[i], b.step);
  return n;
}

/** Max and winner offset over each window of the bins (-inf and -1 for an empty window). */
function maxOver(x: Float32Array, planes: number, H: number, W: number, ys: Bins, xs: Bins, val: Float32Array, idx: Int32Array): void {
  const OH = ys.lo.length, OW = xs.lo.length, sy = ys.step, sx = xs.step, rowTaps = tapsOf(xs) + OW;
  let o = 0;
  for (let p = 0; p < planes; p++) {
    const base = p * H * W;
    for (let oy = 0; oy < OH; oy++) {
      const y0 = ys.lo[oy], y1 = ys.hi[oy], rows = span(y0, y1, sy), each = rows * rowTaps > ROW_WORK;
      if (!each) kernelTick(rows * rowTaps);
      for (let ox = 0; ox < OW; ox++) {
        const x0 = xs.lo[ox], x1 = xs.hi[ox];
        if (each) kernelTick(rows * span(x0, x1, sx) + 1);
        let best = -Infinity, bi = -1;
        for (let iy = y0; iy < y1; iy += sy) {
          for (let ix = x0; ix < x1; ix += sx) {
            const v = x[base + iy * W + ix];
            if (v > best || v !== v || bi < 0) { best = v; bi = iy * W + ix; }
          }
        }
        val[o] = best;
        idx[o++] = bi;
      }
    }
  }
}

/**
 * Mean over each window of the bins (0 for an empty window); with `adjoint`, its transpose: each
 * entry of `src` (one per window) spread evenly over its window, accumulating into `dst`. One
 * loop for both, so a pool and its gradient can never disagree about a window.
 */
function meanOver(src: Float32Array, planes: number, H: number, W: number, ys: Bins, xs: Bins, dst: Float32Array, adjoint: boolean): void {
  const OH = ys.lo.length, OW = xs.lo.length, sy = ys.step, sx = xs.step, rowTaps = tapsOf(xs) + OW;
  let o = 0;
  for (let p = 0; p < planes; p++) {
    const base = p * H * W;
    for (let oy = 0; oy < OH; oy++) {
      const y0 = ys.lo[oy], y1 = ys.hi[oy], dy = ys.div[oy], rows = span(y0, y1, sy), each = rows * rowTaps > ROW_WORK;
      if (!each) kernelTick(rows * rowTaps);
      for (let ox = 0; ox < OW; ox++) {
        const x0 = xs.lo[ox], x1 = xs.hi[ox], div = dy * xs.div[ox];
        if (each) kernelTick(rows * span(x0, x1, sx) + 1);
        if (adjoint) {
          const v = src[o++] / div;
          for (let iy = y0; iy < y1; iy += sy) {
            const r = base + iy * W;
            for (let ix = x0; ix < x1; ix += sx) dst[r + ix] += v;
          }
        } else {
          let s = 0;
          for (let iy = y0; iy < y1; iy += sy) {
            const r = base + iy * W;
            for (let ix = x0; ix < x1; ix += sx) s += src[r + ix];
          }
          dst[o++] = y0 < y1 && x0 < x1 ? s / div : 0;
        }
      }
    }
  }
}

/** Mean over each window (avg_pool2d forward). */
export function avgPool(
  x: Float32Array, planes: number, H: number, W: number, g: PoolWindow, OH: number, OW: number,
  countIncludePad: boolean, divisorOverride: number | null, out: Float32Array,
): void {
  const [ys, xs] = avgBins(H, W, g, OH, OW, countIncludePad, divisorOverride);
  meanOver(x, planes, H, W, ys, xs, out, false);
}

/** The adjoint of avgPool: each output gradient spread evenly over its window (accumulating). */
export function avgPoolBackward(
  gy: Float32Array, planes: number, H: number, W: number, g: PoolWindow, OH: number, OW: number,
  countIncludePad: boolean, divisorOverride: number | null, gx: Float32Array,
): void {
  const [ys, xs] = avgBins(H, W, g, OH, OW, countIncludePad, divisorOverride);
  meanOver(gy, planes, H, W, ys, xs, gx, true);
}

/** Mean over each adaptive bin. */
export function adaptiveAvgPool(x: Float32Array, planes: number, H: number, W: number, OH: number, OW: number, out: Float32Array): void {
  meanOver(x, planes, H, W, adaptiveBins(H, OH), adaptiveBins(W, OW), out, false);
}

/** The adjoint of adaptiveAvgPool (accumulating into gx). */
export function adaptiveAvgPoolBackward(gy: Float32Array, planes: number, H: number, W: number, OH: number, OW: number, gx: Float32Array): void {
  meanOver(gy, planes, H, W, adaptiveBins(H, OH), adaptiveBins(W, OW), gx, true);
}

/** Max over each adaptive bin, with the plane offset of the winner. */
export function adaptiveMaxPool(
  x: Float32Array, planes: number, H: number, W: number, OH: number, OW: number, val: Float32Array, idx: Int32Array,
): void {
  maxOver(x, planes, H, W, adaptiveBins(H, OH), adaptiveBins(W, OW), val, idx);
}
