// Winograd F(2×2, 3×3) for 3×3, unit-stride, undilated, ungrouped convolutions: each 2×2 output
// tile is Aᵀ[(G g Gᵀ) ⊙ (Bᵀ d B)]A over a 4×4 input tile d, so the channel contraction becomes 16
// independent GEMMs with 2.25× fewer multiplications than the direct form. The weight gradient
// uses the adjoint transforms: dg = Gᵀ[Σ_tiles (A dY Aᵀ) ⊙ (Bᵀ d B)]G. Transforms only add and
// halve, so results stay within a few float32 ulps of the direct convolution.
// Layouts: V [16][T][C] (transformed input tiles), U [16][Cout][C] (transformed weights),
// M [16][Cout][T] (products); T = N·TH·TW tiles, t = (n·TH + ty)·TW + tx.

import { gemm } from './gemm.js';
import type { ConvDims } from './conv.js';

/**
 * Distance between the 16 ξ slabs of V, M and dM: their size plus one 128-byte pad, so the 16
 * write streams of a tile transform do not all map to the same cache sets (with power-of-two
 * slab sizes they would, and the transforms ran 3× slower).
 */
export const slab = (n: number): number => n + 32;

/** Whether a convolution can run (and gains from running) as Winograd F(2×2, 3×3). */
export function winogradApplies(d: ConvDims): boolean {
  const w = d.win;
  // With fewer than 8 input channels the 16 GEMMs are too thin to beat the direct form.
  return w.kh === 3 && w.kw === 3 && w.sh === 1 && w.sw === 1 && w.dh === 1 && w.dw === 1 && d.G === 1 && d.C >= 8 && d.Cout >= 4;
}

/**
 * V[ξ][t][c] = (Bᵀ d B)[ξ] for every 4×4 input tile d. Each image is first copied into a
 * zero-bordered buffer covering every tile, so the tiles are read without bounds tests.
 */
function transformInput(x: Float32Array, d: ConvDims, TH: number, TW: number): Float32Array {
  const { N, C, H, W, win } = d;
  const T = N * TH * TW, TC = slab(T * C), V = new Float32Array(16 * TC);
  const Hp = 2 * TH + 2, Wp = 2 * TW + 2, plane = Hp * Wp;
  const pad = new Float32Array(C * plane);
  // Image rows/cols that land inside the buffer (the rest is never read by any tile).
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
          const p = c * plane + 2 * ty * Wp + 2 * tx, q = p + Wp, r = q + Wp, u = r + Wp;
          // Bᵀ d over the rows: (d0 − d2, d1 + d2, d2 − d1, d1 − d3), one column j at a time.
          const a0 = pad[p] - pad[r], a1 = pad[p + 1] - pad[r + 1], a2 = pad[p + 2] - pad[r + 2], a3 = pad[p + 3] - pad[r + 3];
          const b0 = pad[q] + pad[r], b1 = pad[q + 1] + pad[r + 1], b2 = pad[q + 2] + pad[r + 2], b3 = pad[q + 3] + pad[r + 3];
          const c0 = pad[r] - pad[q], c1 = pad[r + 1] - pad[q + 1], c2 = pad[r + 2] - pad[q + 2], c3 = pad[r + 3] - pad[q + 3];
          const e0 = pad[q] - pad[u], e1 = pad[q + 1] - pad[u + 1], e2 = pad[q + 2] - pad[u + 2], e3 = pad[q + 3] - pad[u + 3];
          // … then the same combination along each row: V[4i + j].
          const o = ((n * TH + ty) * TW + tx) * C + c;
          V[o] = a0 - a2; V[o + TC] = a1 + a2; V[o + 2 * TC] = a2 - a1; V[o + 3 * TC] = a1 - a3;
          V[o + 4 * TC] = b0 - b2; V[o + 5 * TC] = b1 + b2; V[o + 6 * TC] = b2 - b1; V[o + 7 * TC] = b1 - b3;
          V[o + 8 * TC] = c0 - c2; V[o + 9 * TC] = c1 + c2; V[o + 10 * TC] = c2 - c1; V[o + 11 * TC] = c1 - c3;
          V[o + 12 * TC] = e0 - e2; V[o + 13 * TC] = e1 + e2; V[o + 14 * TC] = e2 - e1; V[o + 15 * TC] = e1 - e3;
        }
      }
    }
  }
  return V;
}

/** U[ξ][co][c] = (G g Gᵀ)[ξ] for every 3×3 filter g = w[co, c]. */
function transformWeights(w: Float32Array, Cout: number, C: number): Float32Array {
  const U = new Float32Array(16 * Cout * C), S = Cout * C;
  const gg = new Float64Array(12);
  for (let f = 0; f < S; f++) {
    const g = f * 9;
    // G g: rows (g0, (g0 + g1 + g2)/2, (g0 − g1 + g2)/2, g2), a 4×3 block.
    for (let j = 0; j < 3; j++) {
      const g0 = w[g + j], g1 = w[g + 3 + j], g2 = w[g + 6 + j];
      gg[j] = g0; gg[3 + j] = 0.5 * (g0 + g1 + g2); gg[6 + j] = 0.5 * (g0 - g1 + g2); gg[9 + j] = g2;
    }
    for (let i = 0; i < 4; i++) {
      const r0 = gg[i * 3], r1 = gg[i * 3 + 1], r2 = gg[i * 3 + 2], b = i * 4 * S + f;
      U[b] = r0; U[b + S] = 0.5 * (r0 + r1 + r2); U[b + 2 * S] = 0.5 * (r0 - r1 + r2); U[b + 3 * S] = r2;
    }
  }
  return U;
}

/** conv2d (3×3, stride 1) via Winograd: y[n, co] = Aᵀ(Σ_c U ⊙ V)A per tile, plus bias. */
export function winogradConv2d(x: Float32Array, w: Float32Array, bias: Float32Array | null, d: ConvDims): Float32Array {
  const { N, C, Cout, OH, OW } = d;
  const TH = Math.ceil(OH / 2), TW = Math.ceil(OW / 2), T = N * TH * TW;
  const V = transformInput(x, d, TH, TW), U = transformWeights(w, Cout, C);
  const CT = slab(Cout * T), TC = slab(T * C), M = new Float32Array(16 * CT);
  for (let xi = 0; xi < 16; xi++) gemm(Cout, T, C, U, xi * Cout * C, C, 1, V, xi * TC, 1, C, M, xi * CT, T);
  const out = new Float32Array(N * Cout * OH * OW);
  for (let n = 0; n < N; n++) {
    for (let co = 0; co < Cout; co++) {
      const plane = (n * Cout + co) * OH * OW, bv = bias ? bias[co] : 0;
      for (let ty = 0; ty < TH; ty++) {
        for (let tx = 0; tx < TW; tx++) {
          const s0 = co * T + (n * TH + ty) * TW + tx, s4 = s0 + 4 * CT, s8 = s4 + 4 * CT, s12 = s8 + 4 * CT;
          // Aᵀ m A with Aᵀ = [[1, 1, 1, 0], [0, 1, −1, −1]]: first over the rows of m …
          const m4 = M[s4], m5 = M[s4 + CT], m6 = M[s4 + 2 * CT], m7 = M[s4 + 3 * CT];
          const m8 = M[s8], m9 = M[s8 + CT], m10 = M[s8 + 2 * CT], m11 = M[s8 + 3 * CT];
          const a0 = M[s0] + m4 + m8, a1 = M[s0 + CT] + m5 + m9, a2 = M[s0 + 2 * CT] + m6 + m10, a3 = M[s0 + 3 * CT] + m7 + m11;
          const b0 = m4 - m8 - M[s12], b1 = m5 - m9 - M[s12 + CT], b2 = m6 - m10 - M[s12 + 2 * CT], b3 = m7 - m11 - M[s12 + 3 * CT];
          // … then along each row, writing the part of the 2×2 tile inside the output.
          const oy = 2 * ty, ox = 2 * tx, o = plane + oy * OW + ox;
          const right = ox + 1 < OW, down = oy + 1 < OH;
          out[o] = a0 + a1 + a2 + bv;
          if (right) out[o + 1] = a1 - a2 - a3 + bv;
          if (down) {
            out[o + OW] = b0 + b1 + b2 + bv;
            if (right) out[o + OW + 1] = b1 - b2 - b3 + bv;
          }
        }
      }
    }
  }
  return out;
}

/** conv2d's weight gradient via the adjoint transforms: dW[co, c] = Gᵀ(Σ_t dM ⊙ V)G. */
export function winogradWeightGrad(x: Float32Array, gy: Float32Array, d: ConvDims, gemmFn: typeof gemm = gemm): Float32Array {
  const { N, C, Cout, OH, OW } = d;
  const TH = Math.ceil(OH / 2), TW = Math.ceil(OW / 2), T = N * TH * TW;
  const V = transformInput(x, d, TH, TW);
  // dM[ξ][co][t] = (A dY Aᵀ)[ξ] for each 2×2 output-gradient tile (zero past the edge).
  const CT = slab(Cout * T), dM = new Float32Array(16 * CT);
  for (let n = 0; n < N; n++) {
    for (let co = 0; co < Cout; co++) {
      const plane = (n * Cout + co) * OH * OW;
      for (let ty = 0; ty < TH; ty++) {
        for (let tx = 0; tx < TW; tx++) {
          const oy = 2 * ty, ox = 2 * tx, o = plane + oy * OW + ox;
          const right = ox + 1 < OW, down = oy + 1 < OH;
          const y00 = gy[o], y01 = right ? gy[o + 1] : 0, y10 = down ? gy[o + OW] : 0, y11 = right && down ? gy[o + OW + 1] : 0;
          // A dY Aᵀ with A = [[1, 0], [1, 1], [1, −1], [0, −1]]: rows (y0, y0 + y1, y0 − y1, −y1)
          // of the tile, each expanded the same way along its columns into dM[4i + j].
          const o0 = co * T + (n * TH + ty) * TW + tx;
          const p0 = y00 + y10, p1 = y01 + y11, q0 = y00 - y10, q1 = y01 - y11;
          dM[o0] = y00; dM[o0 + CT] = y00 + y01; dM[o0 + 2 * CT] = y00 - y01; dM[o0 + 3 * CT] = -y01;
          dM[o0 + 4 * CT] = p0; dM[o0 + 5 * CT] = p0 + p1; dM[o0 + 6 * CT] = p0 - p1; dM[o0 + 7 * CT] = -p1;
          dM[o0 + 8 * CT] = q0; dM[o0 + 9 * CT] = q0 + q1; dM[o0 + 10 * CT] = q0 - q1; dM[o0 + 11 * CT] = -q1;
          dM[o0 + 12 * CT] = -y10; dM[o0 + 13 * CT] = -y10 - y11; dM[o0 + 14 * CT] = y11 - y10; dM[o0 + 15 * CT] = y11;
        }
      }
    }
  }
  const S = Cout * C, dU = new Float32Array(16 * S);
  const TC = slab(T * C);
  for (let xi = 0; xi < 16; xi++) gemmFn(Cout, C, T, dM, xi * CT, T, 1, V, xi * TC, C, 1, dU, xi * S, C);
  return winogradFilterGrad(dU, S);
}

/** dW [S filters, 3, 3] = Gᵀ dU G from the 16 slabs of dU [16][S] (S = Cout·C). */
export function winogradFilterGrad(dU: Float32Array, S: number): Float32Array {
  // Gᵀ = [[1, ½, ½, 0], [0, ½, −½, 0], [0, ½, ½, 1]].
  const out = new Float32Array(S * 9), h = new Float64Array(12);
  for (let f = 0; f < S; f++) {
    for (let j = 0; j < 4; j++) {
      const u0 = dU[j * S + f], u1 = dU[(4 + j) * S + f], u2 = dU[(8 + j) * S + f], u3 = dU[(12 + j) * S + f];
      h[j] = u0 + 0.5 * (u1 + u2); h[4 + j] = 0.5 * (u1 - u2); h[8 + j] = 0.5 * (u1 + u2) + u3;
    }
    for (let i = 0; i < 3; i++) {
      const r0 = h[i * 4], r1 = h[i * 4 + 1], r2 = h[i * 4 + 2], r3 = h[i * 4 + 3], o = f * 9 + i * 3;
      out[o] = r0 + 0.5 * (r1 + r2); out[o + 1] = 0.5 * (r1 - r2); out[o + 2] = 0.5 * (r1 + r2) + r3;
    }
  }
  return out;
}
