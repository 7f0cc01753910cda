// The Winograd F(4×4, 3×3) weight transform U = G g Gᵀ (interpolation points 0, ±1, ±2, ∞;
// Lavin & Gray) for 3×3, unit-stride, undilated, ungrouped convolutions: each 4×4 output tile
// is Aᵀ[U ⊙ (Bᵀ d B)]A over a 6×6 input tile d. Files keep weights in plain OIHW; a device that
// runs a Winograd kernel packs U at load time from the pinned constant (the WebGPU device's
// packer, runtime/src/webgpu/packers.ts, computes the same U on the GPU). This file holds the
// host-side reference of that packed layout, U [Cout][36][C] (`winograd4Weights`, the oracle of
// the packer's test), and the inverse of the hi/lo layout that files written before issue 14
// stored (`winograd4Unpack`, so such files still load). Invariant: winograd4Unpack(hi/lo U of g)
// is g up to float32 rounding of g's 36 → 9 recombination (the pairs hold U to ~48 bits, so the
// result rounds back to g's float32 values).

import type { ConvDims } from './conv.js';

/** Number of transformed positions ξ per tile (6×6). */
export const WINOGRAD4_TILE = 36;

/** Whether a convolution's geometry is one F(4×4, 3×3) computes (any padding, any size). */
export function winograd4Applies(d: Pick<ConvDims, 'G' | 'win'>): boolean {
  const w = d.win;
  return w.kh === 3 && w.kw === 3 && w.sh === 1 && w.sw === 1 && w.dh === 1 && w.dw === 1 && d.G === 1;
}

/** G applied to three values (a column or row of g): the six rows of G, in double. */
function g6(g0: number, g1: number, g2: number, out: Float64Array, o: number, step: number): void {
  out[o] = g0 / 4;
  out[o + step] = -(g0 + g1 + g2) / 6;
  out[o + 2 * step] = -(g0 - g1 + g2) / 6;
  out[o + 3 * step] = g0 / 24 + g1 / 12 + g2 / 6;
  out[o + 4 * step] = g0 / 24 - g1 / 12 + g2 / 6;
  out[o + 5 * step] = g2;
}

/**
 * U[co][ξ][c] = (G g Gᵀ)[ξ] for every 3×3 filter g = w[co, c] of an OIHW weight [Cout, C, 3, 3],
 * computed in double and rounded once to float32: the packed weight a Winograd F(4×4, 3×3)
 * kernel reads (one output channel's 36 slabs of C words are contiguous).
 *
 * @example
 * const U = winograd4Weights(w, 128, 64); // Float32Array of 128·36·64
 */
export function winograd4Weights(w: Float32Array, Cout: number, C: number): Float32Array {
  const U = new Float32Array(Cout * WINOGRAD4_TILE * C), gg = new Float64Array(18), u = new Float64Array(36);
  for (let co = 0; co < Cout; co++) {
    for (let c = 0; c < C; c++) {
      const g = (co * C + c) * 9;
      // G g down each of the three columns (a 6×3 block), then (G g) Gᵀ along each row.
      for (let j = 0; j < 3; j++) g6(w[g + j], w[g + 3 + j], w[g + 6 + j], gg, j, 3);
      for (let i = 0; i < 6; i++) g6(gg[i * 3], gg[i * 3 + 1], gg[i * 3 + 2], u, i * 6, 1);
      for (let xi = 0; xi < 36; xi++) U[(co * 36 + xi) * C + c] = u[xi];
    }
  }
  return U;
}

/**
 * The OIHW weight [Cout, C, 3, 3] behind a hi/lo packed weight [Cout, 36, 2, C] (the layout of
 * fused_conv2d {layout="winograd4x4"} in files written before issue 14: each U entry as a float32
 * hi + lo pair). G's rows 0, 1 and 5 determine g: g0 = 4·r0, g2 = r5, g1 = −6·r1 − g0 − g2,
 * applied to the rows of U and then to the columns.
 *
 * @example
 * const w = winograd4Unpack(legacy, 128, 64); // Float32Array of 128·64·9
 */
export function winograd4Unpack(U: Float32Array, Cout: number, C: number): Float32Array {
  const w = new Float32Array(Cout * C * 9), r = new Float64Array(18);
  const u = (co: number, xi: number, c: number) => U[((co * 36 + xi) * 2) * C + c] + U[((co * 36 + xi) * 2 + 1) * C + c];
  for (let co = 0; co < Cout; co++) {
    for (let c = 0; c < C; c++) {
      // Undo Gᵀ along each of U's six rows i (columns 0, 1, 5 suffice): r[i][j], a 6×3 block = G g.
      for (let i = 0; i < 6; i++) {
        const a0 = 4 * u(co, i * 6, c), a2 = u(co, i * 6 + 5, c);
        r[i * 3] = a0; r[i * 3 + 2] = a2; r[i * 3 + 1] = -6 * u(co, i * 6 + 1, c) - a0 - a2;
      }
      // … then G down each column j (rows 0, 1, 5 of the block).
      const g = (co * C + c) * 9;
      for (let j = 0; j < 3; j++) {
        const g0 = 4 * r[j], g2 = r[15 + j];
        w[g + j] = g0; w[g + 6 + j] = g2; w[g + 3 + j] = -6 * r[3 + j] - g0 - g2;
      }
    }
  }
  return w;
}
