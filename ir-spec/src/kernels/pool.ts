// Pooling loops over a stack of H×W planes (N·C planes of an NCHW tensor). Windows follow
// PyTorch exactly: fixed windows with stride/padding/dilation (padding reads as -inf for max and
// as 0 for avg), and adaptive bins [floor(i·H/o), ceil((i+1)·H/o)). Max records the flat h·W + w
// offset of the winner within its plane (first maximum in scan order; a NaN always wins).

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
  let o = 0;
  for (let p = 0; p < planes; p++) {
    const base = p * H * W;
    for (let oy = 0; oy < OH; oy++) {
      const y0 = oy * sh - ph;
      for (let ox = 0; ox < OW; ox++) {
        const x0 = ox * sw - pw;
        let best = -Infinity, bi = -1;
        for (let ky = 0; ky < kh; ky++) {
          const iy = y0 + ky * dh;
          if (iy < 0 || iy >= H) continue;
          for (let kx = 0; kx < kw; kx++) {
            const ix = x0 + kx * dw;
            if (ix < 0 || ix >= W) continue;
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

/** Start, end and divisor of one avg-pool window along a dim (PyTorch's avg_pool2d rules). */
function avgDivisor(
  hs: number, ws: number, H: number, W: number, g: PoolWindow, countIncludePad: boolean, divisorOverride: number | null,
): number {
  // The window clipped to the padded extent sets the count_include_pad divisor.
  const he = Math.min(hs + g.kh, H + g.ph), we = Math.min(ws + g.kw, W + g.pw);
  if (divisorOverride !== null) return divisorOverride;
  if (countIncludePad) return (he - hs) * (we - ws);
  return (Math.min(he, H) - Math.max(hs, 0)) * (Math.min(we, W) - Math.max(ws, 0));
}

/** Mean over each window (avg_pool2d forward). */
export function avgPool(
  x: Float32Array, planes: number, H: number, W: number, g: PoolWindow, OH: number, OW: number,
  countIncludePad: boolean, divisorOverride: number | null, out: Float32Array,
): void {
  let o = 0;
  for (let p = 0; p < planes; p++) {
    const base = p * H * W;
    for (let oy = 0; oy < OH; oy++) {
      const hs = oy * g.sh - g.ph, y0 = Math.max(hs, 0), y1 = Math.min(hs + g.kh, H);
      for (let ox = 0; ox < OW; ox++) {
        const ws = ox * g.sw - g.pw, x0 = Math.max(ws, 0), x1 = Math.min(ws + g.kw, W);
        let s = 0;
        for (let iy = y0; iy < y1; iy++) {
          const r = base + iy * W;
          for (let ix = x0; ix < x1; ix++) s += x[r + ix];
        }
        const div = avgDivisor(hs, ws, H, W, g, countIncludePad, divisorOverride);
        out[o++] = y0 < y1 && x0 < x1 ? s / div : 0;
      }
    }
  }
}

/** The adjoint of avgPool: each output gradient spread evenly over its window (accumulating). */
export function avgPoolBackward(
  gy: Float32Array, planes: number, H: number, W: number, g: PoolWindow, OH: number, OW: number,
  countIncludePad: boolean, divisorOverride: number | null, gx: Float32Array,
): void {
  let o = 0;
  for (let p = 0; p < planes; p++) {
    const base = p * H * W;
    for (let oy = 0; oy < OH; oy++) {
      const hs = oy * g.sh - g.ph, y0 = Math.max(hs, 0), y1 = Math.min(hs + g.kh, H);
      for (let ox = 0; ox < OW; ox++) {
        const ws = ox * g.sw - g.pw, x0 = Math.max(ws, 0), x1 = Math.min(ws + g.kw, W);
        const v = gy[o++] / avgDivisor(hs, ws, H, W, g, countIncludePad, divisorOverride);
        for (let iy = y0; iy < y1; iy++) {
          const r = base + iy * W;
          for (let ix = x0; ix < x1; ix++) gx[r + ix] += v;
        }
      }
    }
  }
}

/** Bin i of an adaptive pool from `size` to `out` covers [binStart(i), binEnd(i)). */
export const binStart = (i: number, size: number, out: number): number => Math.floor((i * size) / out);
export const binEnd = (i: number, size: number, out: number): number => Math.ceil(((i + 1) * size) / out);

/** Mean over each adaptive bin. */
export function adaptiveAvgPool(x: Float32Array, planes: number, H: number, W: number, OH: number, OW: number, out: Float32Array): void {
  let o = 0;
  for (let p = 0; p < planes; p++) {
    const base = p * H * W;
    for (let oy = 0; oy < OH; oy++) {
      const y0 = binStart(oy, H, OH), y1 = binEnd(oy, H, OH);
      for (let ox = 0; ox < OW; ox++) {
        const x0 = binStart(ox, W, OW), x1 = binEnd(ox, W, OW);
        let s = 0;
        for (let iy = y0; iy < y1; iy++) for (let ix = x0; ix < x1; ix++) s += x[base + iy * W + ix];
        out[o++] = s / ((y1 - y0) * (x1 - x0));
      }
    }
  }
}

/** The adjoint of adaptiveAvgPool (accumulating into gx). */
export function adaptiveAvgPoolBackward(gy: Float32Array, planes: number, H: number, W: number, OH: number, OW: number, gx: Float32Array): void {
  let o = 0;
  for (let p = 0; p < planes; p++) {
    const base = p * H * W;
    for (let oy = 0; oy < OH; oy++) {
      const y0 = binStart(oy, H, OH), y1 = binEnd(oy, H, OH);
      for (let ox = 0; ox < OW; ox++) {
        const x0 = binStart(ox, W, OW), x1 = binEnd(ox, W, OW);
        const v = gy[o++] / ((y1 - y0) * (x1 - x0));
        for (let iy = y0; iy < y1; iy++) for (let ix = x0; ix < x1; ix++) gx[base + iy * W + ix] += v;
      }
    }
  }
}

/** Max over each adaptive bin, with the plane offset of the winner. */
export function adaptiveMaxPool(
  x: Float32Array, planes: number, H: number, W: number, OH: number, OW: number, val: Float32Array, idx: Int32Array,
): void {
  let o = 0;
  for (let p = 0; p < planes; p++) {
    const base = p * H * W;
    for (let oy = 0; oy < OH; oy++) {
      const y0 = binStart(oy, H, OH), y1 = binEnd(oy, H, OH);
      for (let ox = 0; ox < OW; ox++) {
        const x0 = binStart(ox, W, OW), x1 = binEnd(ox, W, OW);
        let best = -Infinity, bi = -1;
        for (let iy = y0; iy < y1; iy++) {
          for (let ix = x0; ix < x1; ix++) {
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
