// conv2d as Winograd F(2×2, 3×3) in WebAssembly SIMD, the form ir-spec's reference takes for the
// same convolutions (winogradApplies: 3×3, unit stride, undilated, ungrouped, ≥ 8 input
// channels), with a weight that is not a constant (training, eager calls: F(4×4) is for pinned
// weights, whose transform is kept; conv.ts leaves constant weights to it or the direct conv):
// the input tiles V [16][T][C] (winogradInputTiles, shared with the weight gradient), the weight
// transform U = G g Gᵀ (as ir-spec's, made per call and packed as the GEMM's B operand), 16
// packed GEMMs Mt[ξ] [T, Cout] = V[ξ]·U[ξ]ᵀ, the output transform (runtime/wasm/winograd2.ts)
// and the bias/relu epilogue. 2.25× fewer multiply-adds than the direct conv.
// Invariant: results equal ir-spec's conv2dForward up to float32 rounding of the sums (the
// transforms add and halve; the reference runs the same tiles).

import { kernelTick, winogradApplies, winogradSlab, type Conv2dFn } from '@kiln/ir-spec';
import type { WasmHeap } from './heap.js';
import { KernelIO } from './io.js';

type ConvDims = Parameters<Conv2dFn>[3];

/**
 * Most bytes of tiles (V and Mt) one call holds; a bigger call runs the direct conv, which needs
 * no such scratch (F(2×2) holds 16 floats per tile and channel: 4× the activations).
 */
const TILE_BYTES = 1 << 25;

/**
 * Where F(2×2) runs instead of the direct conv (for a weight transformed per call): the
 * reference's shapes with at least MIN_TILES output tiles and MIN_FILTERS filters, tiles within
 * TILE_BYTES. Measured against the direct kernel (one process, outputs in the kernel memory,
 * medians): faster on the digits CNN's 16→32 and 32→16 at 8×8 ×32 (512 tiles: 1.2–1.3×), 64→128
 * at 16×16 ×32 (1.7×), 64→64 at 28×28 ×8 and 56×56 ×1, 128→128 at 14×14 ×4 (1.6–1.9×); slower
 * or even with few tiles over many filters, where the per-call weight transform dominates (64→64
 * at 8×8 ×1, 16 tiles: 0.35×; 64→128 at 16×16 ×1, 64 tiles: 1.0×), and with 16×16 filters
 * (16→16 at 32×32 ×1: 0.8×; at 16×16 ×32: 1.0–1.2×).
 */
export function winograd2Applies(d: ConvDims): boolean {
  if (!winogradApplies(d) || d.C * d.Cout < MIN_FILTERS) return false;
  const T = d.N * Math.ceil(d.OH / 2) * Math.ceil(d.OW / 2);
  return T >= MIN_TILES && 16 * T * (d.C + d.Cout + 4) * 4 <= TILE_BYTES;
}

const MIN_TILES = 128, MIN_FILTERS = 512;

export function wasmWinograd2(heap: WasmHeap): Conv2dFn {
  const k = heap.k;
  /** U's 16 slabs (winograd2Weights), each packed as B [C, Cout] (B[c][co] = U[ξ][co][c]), in one block of 16·ps floats at `at`. */
  const packU = (w: Float32Array, Cout: number, C: number, at: number): void => {
    const S = Cout * C, ps = k.packedSize(C, Cout);
    const io = new KernelIO(heap);
    try {
      const wa = io.in(w), U = io.temp(16 * S * 4);
      k.winograd2Weights(S, wa, U);
      for (let xi = 0; xi < 16; xi++) k.packB(C, Cout, U + xi * S * 4, 1, C, at + xi * ps * 4);
    } finally {
      io.free();
    }
  };
  return (x, w, bias, d, epi) => {
    const { N, C, H, W, Cout, OH, OW, win } = d;
    const TH = Math.ceil(OH / 2), TW = Math.ceil(OW / 2), T = N * TH * TW;
    const TC = winogradSlab(T * C), Cp = (Cout + 3) & ~3, MS = winogradSlab(T * Cp), ps = k.packedSize(C, Cout), P = OH * OW;
    const io = new KernelIO(heap);
    try {
      const Up = io.temp(16 * ps * 4);
      packU(w, Cout, C, Up);
      const xa = io.in(x), out = N * Cout * P;
      const pad = io.temp((C * (2 * TH + 2) * (2 * TW + 2) + 8) * 4), V = io.temp(16 * TC * 4), Mt = io.temp(16 * MS * 4);
      k.winogradInputTiles(N, C, H, W, win.pt, win.pl, TH, TW, TC, xa, pad, V);
      for (let xi = 0; xi < 16; xi++) {
        heap.gemm(T, Cout, C, V + xi * TC * 4, C, Up + xi * ps * 4, Mt + xi * MS * 4, Cp, 0);
        kernelTick(T * Cout * C);
      }
      const oa = io.out(out * 4, epi?.out);
      k.winograd2OutputTiles(N, Cout, OH, OW, TH, TW, Cp, MS, Mt, oa);
      if (bias || epi?.relu) {
        const ba = bias ? io.in(bias) : 0;
        for (let n = 0; n < N; n++) k.convEpilogue(Cout, P, oa + n * Cout * P * 4, ba, epi?.relu ? 1 : 0);
      }
      return io.f32(oa, out, epi?.out);
    } finally {
      io.free();
    }
  };
}
