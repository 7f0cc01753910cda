// Winograd F(4×4, 3×3) for 3×3, unit-stride, undilated, ungrouped convolutions whose weights
// were transformed ahead of time (the compiler's `prepack-weights` pass calls
// `winograd4Weights` once on the frozen weight): each 4×4 output tile is
// Aᵀ[U ⊙ (Bᵀ d B)]A over a 6×6 input tile d, so the channel contraction becomes 36 GEMMs with
// 4× fewer multiplications than the direct form (1.8× fewer than F(2×2, 3×3)). Interpolation
// points 0, ±1, ±2, ∞ (Lavin & Gray). These transforms amplify rounding errors (entries up to
// 5 and 8): an all-float32 F(4×4) lands ~5e-6 of the output's RMS off an exact conv, 15× the
// direct form. So the packed weights U hold each double-precision entry as a float32 hi + lo
// pair, and the input tiles V and products M stay doubles: the result is then ~1e-7 of the RMS
// off, as close as the direct form (tests/passes-perf.test.ts checks it against a float64 conv).
// The price is a weight 8× the OIHW one and ~10% of the product time.
// Layouts: U [Cout][36][2][C] (hi/lo pairs; a block of output channels is one contiguous slice),
// V [36][T4][C] (transformed input tiles, T rounded up to T4, a multiple of 4), M [Cout][36][T4]
// (products; one output channel's block stays in cache for the output transform); T = N·TH·TW,
// t = (n·TH + ty)·TW + tx.

import type { ConvDims } from './conv.js';

/** Number of transformed positions ξ per tile (6×6). */
export const WINOGRAD4_TILE = 36;

/** Distance between the ξ slabs of V: their size plus a 128-byte pad (see winograd.ts). */
const slab = (n: number): number => n + 16;

/** Whether a convolution's geometry is one F(4×4, 3×3) computes (any padding, any size). */
export function winograd4Applies(d: Pick<ConvDims, 'G' | 'win'>): boolean {
  const w = d.win;
  return w.kh === 3 && w.kw === 3 && w.sh === 1 && w.sw === 1 && w.dh === 1 && w.dw === 1 && d.G === 1;
}

/**
 * U[co][ξ][h][c]: (G g Gᵀ)[ξ] for every 3×3 filter g = w[co, c] of an OIHW weight
 * [Cout, C, 3, 3], computed in double and stored as a float32 pair (h = 0 the rounded value,
 * h = 1 the remainder): the packed weight [Cout, 36, 2, C] fused_conv2d {layout="winograd4x4"}
 * reads.
 *
 * @example
 * const U = winograd4Weights(w, 128, 64); // Float32Array of 128·36·2·64
 */
export function winograd4Weights(w: Float32Array, Cout: number, C: number): Float32Array {
  const U = new Float32Array(Cout * 72 * C), gg = new Float64Array(18), u = new Float64Array(36);
  for (let co = 0; co < Cout; co++) {
    for (let c = 0; c < C; c++) {
      const g = (co * C + c) * 9;
      // G g: G's six rows applied down each of the three columns, a 6×3 block.
      for (let j = 0; j < 3; j++) {
        const g0 = w[g + j], g1 = w[g + 3 + j], g2 = w[g + 6 + j];
        gg[j] = g0 / 4; gg[3 + j] = -(g0 + g1 + g2) / 6; gg[6 + j] = -(g0 - g1 + g2) / 6;
        gg[9 + j] = g0 / 24 + g1 / 12 + g2 / 6; gg[12 + j] = g0 / 24 - g1 / 12 + g2 / 6; gg[15 + j] = g2;
      }
      // … then (G g) Gᵀ along each row.
      for (let i = 0; i < 6; i++) {
        const r0 = gg[i * 3], r1 = gg[i * 3 + 1], r2 = gg[i * 3 + 2], b = i * 6;
        u[b] = r0 / 4; u[b + 1] = -(r0 + r1 + r2) / 6; u[b + 2] = -(r0 - r1 + r2) / 6;
        u[b + 3] = r0 / 24 + r1 / 12 + r2 / 6; u[b + 4] = r0 / 24 - r1 / 12 + r2 / 6; u[b + 5] = r2;
      }
      // Each entry as float32 hi + lo, which together hold ~48 bits of the double.
      for (let xi = 0; xi < 36; xi++) {
        const o = ((co * 36 + xi) * 2) * C + c, hi = Math.fround(u[xi]);
        U[o] = hi; U[o + C] = u[xi] - hi;
      }
    }
  }
  return U;
}

/**
 * Reused work buffers (kernels run one at a time, as in gemm.ts): V and M are only read where
 * they were written in the same call; the padded image's zero border is cleared on every call.
 */
let bufV = new Float64Array(0), bufM = new Float64Array(0), bufPad = new Float32Array(0);
function scratchV(n: number): Float64Array { if (bufV.length < n) bufV = new Float64Array(n); return bufV; }
function scratchM(n: number): Float64Array { if (bufM.length < n) bufM = new Float64Array(n); return bufM; }
function scratchPad(n: number): Float32Array {
  if (bufPad.length < n) bufPad = new Float32Array(n); else bufPad.fill(0, 0, n);
  return bufPad;
}

/**
 * V[ξ][t][c] = (Bᵀ d B)[ξ] for every 6×6 input tile d (tiles 4 apart). Each image is first copied
 * into a zero-bordered buffer covering every tile, so tiles are read without bounds tests.
 */
function transformInput(x: Float32Array, d: ConvDims, TH: number, TW: number, T4: number): { V: Float64Array; TC: number } {
  const { N, C, H, W, win } = d;
  const TC = slab(T4 * C), V = scratchV(36 * TC);
  const Hp = 4 * TH + 2, Wp = 4 * TW + 2, plane = Hp * Wp;
  const pad = scratchPad(C * plane), s = new Float64Array(36);
  const yHi = Math.min(H, Hp - win.pt), xHi = Math.min(W, Wp - win.pl);
  for (let n = 0; n < N; n++) {
    for (let c = 0; c < C; c++) {
      for (let iy = 0; iy < yHi; iy++) {
        const src = ((n * C + c) * H + iy) * W, dst = c * plane + (iy + win.pt) * Wp + win.pl;
        for (let ix = 0; ix < xHi; ix++) pad[dst + ix] = x[src + ix];
      }
    }
    for (let c = 0; c < C; c++) {
      for (let ty = 0; ty < TH; ty++) {
        for (let tx = 0; tx < TW; tx++) {
          const p = c * plane + 4 * ty * Wp + 4 * tx;
          // Bᵀ d: Bᵀ's rows combine the tile's six rows, one column j at a time.
          for (let j = 0; j < 6; j++) {
            const d0 = pad[p + j], d1 = pad[p + Wp + j], d2 = pad[p + 2 * Wp + j];
            const d3 = pad[p + 3 * Wp + j], d4 = pad[p + 4 * Wp + j], d5 = pad[p + 5 * Wp + j];
            s[j] = 4 * d0 - 5 * d2 + d4;
            s[6 + j] = -4 * (d1 + d2) + d3 + d4;
            s[12 + j] = 4 * (d1 - d2) - d3 + d4;
            s[18 + j] = 2 * (d3 - d1) - d2 + d4;
            s[24 + j] = 2 * (d1 - d3) - d2 + d4;
            s[30 + j] = 4 * d1 - 5 * d3 + d5;
          }
          // … then (Bᵀ d) B: the same combination along each row i, into V[6i + j].
          const o = ((n * TH + ty) * TW + tx) * C + c;
          for (let i = 0; i < 6; i++) {
            const e0 = s[i * 6], e1 = s[i * 6 + 1], e2 = s[i * 6 + 2], e3 = s[i * 6 + 3], e4 = s[i * 6 + 4], e5 = s[i * 6 + 5];
            const q = o + 6 * i * TC;
            V[q] = 4 * e0 - 5 * e2 + e4;
            V[q + TC] = -4 * (e1 + e2) + e3 + e4;
            V[q + 2 * TC] = 4 * (e1 - e2) - e3 + e4;
            V[q + 3 * TC] = 2 * (e3 - e1) - e2 + e4;
            V[q + 4 * TC] = 2 * (e1 - e3) - e2 + e4;
            V[q + 5 * TC] = 4 * e1 - 5 * e3 + e5;
          }
        }
      }
    }
  }
  return { V, TC };
}

/**
 * conv2d (3×3, stride 1, any padding) from prepacked weights U = winograd4Weights(w):
 * y[n, co] = Aᵀ(Σ_c U ⊙ V)A per 4×4 tile, plus bias. `d.Cout` is U's channel count. With
 * `pool2`, the result is the 2×2, stride-2, floor-mode max pool of that: each 4×4 tile holds
 * whole pool windows, so they are taken straight from the tile (the full-size conv output is
 * never written). max(y) + b = max(y + b) and float32 rounding is monotone, so both orders give
 * the same floats; a NaN in a window wins, as in max_pool2d.
 *
 * @example
 * const y = winograd4Conv2d(x, winograd4Weights(w, Cout, C), bias, dims);
 */
export function winograd4Conv2d(x: Float32Array, U: Float32Array, bias: Float32Array | null, d: ConvDims, pool2 = false): Float32Array {
  const { N, C, Cout, OH, OW } = d;
  const TH = Math.ceil(OH / 4), TW = Math.ceil(OW / 4), T = N * TH * TW, T4 = Math.ceil(T / 4) * 4;
  const { V, TC } = transformInput(x, d, TH, TW, T4);
  const M = scratchM(36 * Cout * T4);
  products(U, V, M, Cout, C, T4, TC);
  const PH = pool2 ? Math.floor(OH / 2) : OH, PW = pool2 ? Math.floor(OW / 2) : OW;
  const out = new Float32Array(N * Cout * PH * PW), a = new Float64Array(24), y = new Float64Array(16);
  for (let n = 0; n < N; n++) {
    for (let co = 0; co < Cout; co++) {
      const plane = (n * Cout + co) * PH * PW, bv = bias ? bias[co] : 0;
      for (let ty = 0; ty < TH; ty++) {
        for (let tx = 0; tx < TW; tx++) {
          const t0 = co * 36 * T4 + (n * TH + ty) * TW + tx;
          // Aᵀ m over the rows of the 6×6 product tile, one column j at a time: a[4r + …][j] …
          for (let j = 0; j < 6; j++) {
            const q = t0 + j * T4;
            const m0 = M[q], m1 = M[q + 6 * T4], m2 = M[q + 12 * T4], m3 = M[q + 18 * T4], m4 = M[q + 24 * T4], m5 = M[q + 30 * T4];
            const s12 = m1 + m2, d12 = m1 - m2, s34 = m3 + m4, d34 = m3 - m4;
            a[j] = m0 + s12 + s34; a[6 + j] = d12 + 2 * d34; a[12 + j] = s12 + 4 * s34; a[18 + j] = d12 + 8 * d34 + m5;
          }
          // … then (Aᵀ m) A along each row r: y is the 4×4 output tile (before bias).
          for (let r = 0; r < 4; r++) {
            const e = r * 6, m0 = a[e], m5 = a[e + 5];
            const s12 = a[e + 1] + a[e + 2], d12 = a[e + 1] - a[e + 2], s34 = a[e + 3] + a[e + 4], d34 = a[e + 3] - a[e + 4];
            y[4 * r] = m0 + s12 + s34; y[4 * r + 1] = d12 + 2 * d34; y[4 * r + 2] = s12 + 4 * s34; y[4 * r + 3] = d12 + 8 * d34 + m5;
          }
          if (pool2) {
            // Pool windows (2ty + i, 2tx + j) that lie inside the pooled output.
            const rows = Math.min(2, PH - 2 * ty), cols = Math.min(2, PW - 2 * tx);
            for (let i = 0; i < rows; i++) {
              for (let j = 0; j < cols; j++) {
                const k = 8 * i + 2 * j;
                let m = y[k];
                const t1 = y[k + 1], t2 = y[k + 4], t3 = y[k + 5];
                if (t1 > m || t1 !== t1) m = t1;
                if (t2 > m || t2 !== t2) m = t2;
                if (t3 > m || t3 !== t3) m = t3;
                out[plane + (2 * ty + i) * PW + 2 * tx + j] = m + bv;
              }
            }
            continue;
          }
          // The part of the 4×4 tile inside the output.
          const oy = 4 * ty, ox = 4 * tx, rows = Math.min(4, OH - oy), cols = Math.min(4, OW - ox);
          for (let r = 0; r < rows; r++) {
            const o = plane + (oy + r) * OW + ox;
            for (let q = 0; q < cols; q++) out[o + q] = y[4 * r + q] + bv;
          }
        }
      }
    }
  }
  return out;
}

/**
 * M[co][ξ][t] = Σ_c U[co][ξ][c]·V[ξ][t][c] for the 36 ξ: both operands are read along c with unit
 * stride, in 4×4 register tiles (T4 is a multiple of 4; the last Cout % 4 rows go one at a time).
 */
function products(U: Float32Array, V: Float64Array, M: Float64Array, Cout: number, C: number, T4: number, TC: number): void {
  const ldu = 72 * C, strip = new Float64Array(4 * C);
  for (let xi = 0; xi < 36; xi++) {
    const vb = xi * TC, ldm = 36 * T4;
    let i = 0;
    for (; i + 4 <= Cout; i += 4) {
      // The strip's four weight rows as doubles (hi + lo), interleaved: one stream for the tiles.
      const a0 = i * ldu + 2 * xi * C;
      for (let r = 0; r < 4; r++) {
        const a = a0 + r * ldu;
        for (let k = 0; k < C; k++) strip[4 * k + r] = U[a + k] + U[a + C + k];
      }
      const r0 = i * ldm + xi * T4, r1 = r0 + ldm, r2 = r1 + ldm, r3 = r2 + ldm;
      for (let j = 0; j < T4; j += 4) {
        const b0 = vb + j * C, b1 = b0 + C, b2 = b1 + C, b3 = b2 + C;
        let c00 = 0, c01 = 0, c02 = 0, c03 = 0, c10 = 0, c11 = 0, c12 = 0, c13 = 0;
        let c20 = 0, c21 = 0, c22 = 0, c23 = 0, c30 = 0, c31 = 0, c32 = 0, c33 = 0;
        for (let k = 0; k < C; k++) {
          const x0 = strip[4 * k], x1 = strip[4 * k + 1], x2 = strip[4 * k + 2], x3 = strip[4 * k + 3];
          const y0 = V[b0 + k], y1 = V[b1 + k], y2 = V[b2 + k], y3 = V[b3 + k];
          c00 += x0 * y0; c01 += x0 * y1; c02 += x0 * y2; c03 += x0 * y3;
          c10 += x1 * y0; c11 += x1 * y1; c12 += x1 * y2; c13 += x1 * y3;
          c20 += x2 * y0; c21 += x2 * y1; c22 += x2 * y2; c23 += x2 * y3;
          c30 += x3 * y0; c31 += x3 * y1; c32 += x3 * y2; c33 += x3 * y3;
        }
        M[r0 + j] = c00; M[r0 + j + 1] = c01; M[r0 + j + 2] = c02; M[r0 + j + 3] = c03;
        M[r1 + j] = c10; M[r1 + j + 1] = c11; M[r1 + j + 2] = c12; M[r1 + j + 3] = c13;
        M[r2 + j] = c20; M[r2 + j + 1] = c21; M[r2 + j + 2] = c22; M[r2 + j + 3] = c23;
        M[r3 + j] = c30; M[r3 + j + 1] = c31; M[r3 + j + 2] = c32; M[r3 + j + 3] = c33;
      }
    }
    for (; i < Cout; i++) {
      const a = i * ldu + 2 * xi * C, r = i * ldm + xi * T4;
      for (let j = 0; j < T4; j += 4) {
        const b0 = vb + j * C, b1 = b0 + C, b2 = b1 + C, b3 = b2 + C;
        let c0 = 0, c1 = 0, c2 = 0, c3 = 0;
        for (let k = 0; k < C; k++) {
          const u = U[a + k] + U[a + C + k];
          c0 += u * V[b0 + k]; c1 += u * V[b1 + k]; c2 += u * V[b2 + k]; c3 += u * V[b3 + k];
        }
        M[r + j] = c0; M[r + j + 1] = c1; M[r + j + 2] = c2; M[r + j + 3] = c3;
      }
    }
  }
}
