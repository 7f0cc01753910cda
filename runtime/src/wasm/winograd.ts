// conv2d as Winograd F(4×4, 3×3) in WebAssembly SIMD (kernels in runtime/wasm/winograd.ts) for
// the runtime's 3×3, unit-stride, undilated, ungrouped convolutions with a constant (pinned)
// weight: the weight's transform U = G g Gᵀ is made once per constant and view and kept in the
// kernel memory (pinned.ts frees it with the constant), so the .tsgraph stays target-neutral; per
// call the image is copied into a zero border covering every 4×4 tile (padPlanes), then chunks of
// tiles run input transform → 36 packed GEMMs → output transform with the epilogue (bias, relu;
// folded BatchNorm arrives folded into the weight and bias). `winograd4Applies` is the measured
// choice (bench/winograd.mjs): F(4×4) only where it ran faster than the direct/im2col conv. A
// big one is split over the threads by runs of whole tile chunks (WasmHeap.winograd4Conv). A kept
// transform is made outside the run that first meets the weight: that call defers it (allocated
// when the run ends and posted as a job for an idle worker, or, with no worker — one thread —
// made on this thread in idle time, one transform per timer tick between runs) and runs the
// direct conv itself (`prepare`, called by conv.ts), so a model's first run never waits for
// transforms; a later call settles it (finishing it here if no worker or tick has) before it
// reads U, so no call reads a half-written transform. (The first run's results are the direct conv's,
// later ones F(4×4)'s: equal up to the rounding bound below.)
// Invariant: results equal ir-spec's conv2dForward up to the transforms' float32 rounding
// (F(4×4) loses ~1–2 more digits than the direct sum: tests/winograd*.test.ts bound it).

import type { Conv2dFn } from '@kiln/ir-spec';
import type { WasmHeap } from './heap.js';
import type { PinnedArrays } from './pinned.js';
import { KernelIO } from './io.js';

type ConvDims = Parameters<Conv2dFn>[3];
type ConvEpilogue = Parameters<Conv2dFn>[4];

/** Bytes of the transforms' scratch block (runtime/wasm/winograd.ts WINOGRAD4_SCRATCH). */
const SCRATCH = 48 * 16;
/**
 * Bytes of chunk scratch (V and M) to aim for, so they stay in L2 between the transforms and the
 * GEMMs (measured on the seed CNN's conv2 and a 16-channel block: 2^18–2^19 alike, larger slower).
 */
const CHUNK_BYTES = 1 << 18;

/** The shape conditions F(4×4, 3×3) needs at all. */
export function winograd4Fits(d: ConvDims): boolean {
  const w = d.win;
  return w.kh === 3 && w.kw === 3 && w.sh === 1 && w.sw === 1 && w.dh === 1 && w.dw === 1 && d.G === 1;
}

/**
 * Where F(4×4, 3×3) is chosen over the direct/im2col conv, from bench/winograd.mjs (one thread,
 * CPU time, side by side): with fewer than 16 input or output channels the transforms cost more
 * than the 4× fewer multiplications save (3→64 at 32×32: 0.8×; 8→8: ~1×); on narrow outputs
 * (OW < 12) half of each row of 4 tiles is border (32→32 at 8×8: 0.77×; 64→64 at 8×8: 1.3×, but
 * such layers hold a deep net's largest weights — ResNet-18's 7×7 stage is 3/4 of its 3×3
 * weights — and their transforms, 4× the weight's size, cost more memory and first-run time
 * than they gain: ResNet-18 at batch 1 ran equally fast without them, its first run 1.1 s → 0.4 s
 * and peak RSS 301 → 189 MB). Everywhere else measured 1.2–3× faster.
 */
export function winograd4Applies(d: ConvDims): boolean {
  return winograd4Fits(d) && d.C >= 16 && d.Cout >= 16 && d.OW >= 12;
}

/** Tile geometry: TH tile rows, TWp tiles per row (a multiple of 4), the padded plane Hp×Wp. */
export function winograd4Tiles(d: ConvDims): { TH: number; TWp: number; Hp: number; Wp: number } {
  const TH = Math.ceil(d.OH / 4), TWp = Math.ceil(d.OW / 16) * 4;
  return { TH, TWp, Hp: 4 * TH + 2, Wp: 4 * TWp + 4 };
}

/**
 * The F(4×4, 3×3) conv2d over the kernel memory: `(x, w, bias, d, epi)` as Conv2dFn, for shapes
 * with winograd4Fits. A weight the device pinned keeps its transform; any other is transformed
 * per call.
 */
export function wasmWinograd4(heap: WasmHeap, pins?: PinnedArrays): Conv2dFn & { prepare(w: Float32Array, d: ConvDims): boolean } {
  // A weight in the kernel memory already (a file read there) is transformed in place of a copy.
  const transform = (w: Float32Array, Cout: number, C: number): number => {
    const U = heap.alloc(36 * Cout * C * 4);
    const inPlace = heap.addressOf(w), src = inPlace ?? heap.alloc(w.length * 4);
    if (inPlace === undefined) heap.f32().set(w, src >> 2);
    heap.winograd4Weights(Cout * C, src, U);
    if (inPlace === undefined) heap.free(src);
    return U;
  };
  const key = (Cout: number, C: number) => `winograd4 ${Cout},${C}`;
  const conv = (x: Float32Array, w: Float32Array, bias: Float32Array | null, d: ConvDims, epi?: ConvEpilogue): Float32Array => {
    if (!winograd4Fits(d)) throw new Error(`wasmWinograd4: needs a 3×3, stride-1, undilated, ungrouped conv (got ${JSON.stringify(d.win)}, groups ${d.G}); use conv2d`);
    const { N, C, H, W, Cout, OH, OW, win } = d;
    const k = heap.k;
    const { TH, TWp, Hp, Wp } = winograd4Tiles(d);
    const T = N * TH * TWp;
    const Tc = Math.min(Math.ceil(T / 8) * 8, Math.max(8, Math.floor(CHUNK_BYTES / (36 * 4 * (C + Cout)) / 8) * 8));
    const kept = pins?.form(w, key(Cout, C), () => transform(w, Cout, C));
    // A kept transform prepare() deferred is a ticket: settle gives its block, complete.
    const U = kept !== undefined ? heap.settle(kept) : transform(w, Cout, C);
    const out = N * Cout * OH * OW;
    // Split over the threads by runs of whole tile chunks, each run with its own V, M and scratch.
    const J = Math.ceil(T / Tc), n = heap.winograd4Chunks(36 * Cout * C * T, J);
    const vBytes = 36 * k.packedSize(C, Tc) * 4, mBytes = 36 * Cout * Tc * 4;
    const io = new KernelIO(heap);
    try {
      const xa = io.in(x), ba = bias ? io.in(bias) : 0, oa = io.out(out * 4, epi?.out);
      const img = io.temp(N * C * Hp * Wp * 4), V = io.temp(n * vBytes), M = io.temp(n * mBytes), scratch = io.temp(n * SCRATCH);
      k.padPlanes(N * C, H, W, win.pt, win.pl, Hp, Wp, xa, img);
      heap.winograd4Conv(n, J, [N, C, Cout, OH, OW, TH, TWp, Tc, img, Hp, Wp, U], V, vBytes, M, mBytes, oa, ba, epi?.relu ? 1 : 0, scratch, SCRATCH);
      return io.f32(oa, out, epi?.out);
    } finally {
      io.free();
      if (kept === undefined) heap.free(U);
    }
  };
  /**
   * Before a call with pinned weight `w` and dims `d`: when `w` has no kept transform yet, defers
   * it (heap.winograd4WeightsLater: posted for an idle worker when the run ends, or made in idle
   * time on this thread where no worker runs) and returns true: this call should take another kernel (the direct conv),
   * and a later one settles the transform (finishing it here if no worker has). False: call the
   * conv as usual.
   */
  const prepare = (w: Float32Array, d: ConvDims): boolean => {
    if (!pins || !heap.canDefer || !winograd4Fits(d)) return false;
    let started = false;
    pins.form(w, key(d.Cout, d.C), () => {
      const inPlace = heap.addressOf(w), src = inPlace ?? heap.alloc(w.length * 4);
      if (inPlace === undefined) heap.f32().set(w, src >> 2);
      const ticket = heap.winograd4WeightsLater(d.Cout * d.C, src, inPlace === undefined ? src : undefined)!;
      started = true;
      return ticket;
    });
    return started;
  };
  return Object.assign(conv, { prepare });
}
