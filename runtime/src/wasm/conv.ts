// The WebAssembly conv2d primitive (kernels in runtime/wasm/conv.ts and gemm.ts) behind
// ir-spec's `Conv2dFn`: per image and group, the patch matrix is packed straight from the image
// (packIm2col; a padded image is first copied into a zero-bordered one, padPlanes) and multiplied
// by the weights (gemmPacked), writing NCHW output — or, at unit column stride, the weights run
// over the (padded) images in place (convDirect: no patch matrix at all; one call over the whole
// batch, which heap.ts splits over the threads; the kernel chosen never depends on the thread
// count, so neither do the results); bias and relu are applied in one
// pass over the output while it is still in the kernel memory (convEpilogue), which is then copied
// once into the epilogue's destination (an arena slot) or a fresh array. Convolutions with
// fewer than 4 output channels per group or too little work stay in JavaScript (depthwise.ts
// takes depthwise ones of enough work first). The
// weight is the GEMM's A operand, read in place (OIHW rows are K-contiguous): a pinned weight (a
// graph constant, or a block of one) is copied into the kernel memory once and kept (pinned.ts),
// any other is copied per call. Invariant: same results as ir-spec's conv2dForward up to float32
// rounding of the sums. A pinned 3×3 stride-1 weight may run as Winograd F(4×4, 3×3) instead
// (winograd.ts decides where), any other as F(2×2, 3×3), as the reference does (winograd2.ts).

import { kernelDeadlineSet, kernelTick, padsTooMuch, REFERENCE_PRIMITIVES, type Conv2dFn } from '@kiln/ir-spec';
import type { WasmHeap } from './heap.js';
import type { PinnedArrays } from './pinned.js';
import { KernelIO } from './io.js';
import { wasmWinograd4, winograd4Applies } from './winograd.js';
import { wasmWinograd2, winograd2Applies } from './winograd2.js';

type ConvDims = Parameters<Conv2dFn>[3];

const MIN_WORK = 1 << 15;
/**
 * Most floats of a packed patch matrix (16 MiB): a bigger one (a large kernel over a large
 * output, which no tensor limit counts) is packed and multiplied a block of output rows at a
 * time, so one block's packing is a few ms between two deadline checks.
 */
const PACK_FLOATS = 1 << 22;
/** Under a run's deadline, a direct conv whose 4-channel unit of a plane passes this many multiply-adds runs a block of rows at a time (heap.ts's chunk). */
const DEADLINE_UNIT = 1 << 25;
/**
 * Largest contraction (C/G·kh·kw) the direct kernel takes: its 4 weight rows (18 KiB here) stay
 * in L1 across a row of output; longer ones pack and run the K-blocked GEMM.
 */
const DIRECT_MAX_K = 1152;
/** Byte offset of tap k = (c, ky, kx) from its window's corner in planes of `plane` floats, rows of `row`. */
function tapOffsets(Cg: number, win: ConvDims['win'], plane: number, row: number): Int32Array {
  const out = new Int32Array(Cg * win.kh * win.kw);
  let k = 0;
  for (let c = 0; c < Cg; c++) {
    for (let ky = 0; ky < win.kh; ky++) for (let kx = 0; kx < win.kw; kx++) out[k++] = (c * plane + ky * win.dh * row + kx * win.dw) * 4;
  }
  return out;
}

/**
 * The im2col path packs the patch matrix a band of output rows at a time, about BAND_BYTES
 * packed (ResNet-18's 224×224 stem: 1 MB a band instead of 7.4 MB at once, fewer fresh pages and
 * a packed band that stays in cache), but never a band of fewer than BAND_MIN_WORK
 * multiply-adds, so a product that split over the threads whole still splits (heap.ts
 * PARALLEL_WORK is half that). Every output column is the same sum whatever the band.
 */
const BAND_BYTES = 1 << 20, BAND_MIN_WORK = 1 << 24;

/** Floats left readable past an image the direct kernel reads (a row's last columns read 8). */
const SLACK = 8;

/**
 * `winograd4`: where a pinned weight runs as F(4×4, 3×3) (default: winograd.ts's measured rule);
 * `winograd2`: where any other runs as F(2×2, 3×3) (default: winograd2.ts's).
 */
export function wasmConv2d(heap: WasmHeap, pins?: PinnedArrays, winograd4 = winograd4Applies, winograd2 = winograd2Applies): Conv2dFn {
  // Tap-offset tables by geometry, computed once (a model has a few); each call copies its
  // table into the kernel memory with the operands.
  const taps = new Map<string, Int32Array>();
  const tapTable = (Cg: number, win: ConvDims['win'], plane: number, row: number): Int32Array => {
    const key = `${Cg},${win.kh},${win.kw},${win.dh},${win.dw},${plane},${row}`;
    let t = taps.get(key);
    if (t === undefined) taps.set(key, (t = tapOffsets(Cg, win, plane, row)));
    return t;
  };
  const fast3x3 = wasmWinograd4(heap, pins), fast2x2 = wasmWinograd2(heap);
  return (x, w, bias, d, epi) => {
    // A constant weight keeps its Winograd transform: F(4×4, 3×3) where it measured faster. The
    // call that starts the transform as a background job (worker threads exist) runs the direct
    // kernel below instead, so a model's first run never waits for transforms.
    if (pins?.owner(w) && winograd4(d) && !fast3x3.prepare(w, d)) return fast3x3(x, w, bias, d, epi);
    const { N, C, H, W, Cout, G, OH, OW, win } = d;
    const Cg = C / G, Coutg = Cout / G, P = OH * OW, K = Cg * win.kh * win.kw;
    if (Coutg < 4 || N * Cout * P * K < MIN_WORK) return REFERENCE_PRIMITIVES.conv2d(x, w, bias, d, epi);
    // A weight that is not a constant (training, eager): Winograd F(2×2, 3×3) where it applies.
    // (A constant one keeps the choice above: F(4×4), whose transform is kept, or the direct conv,
    // where a kept transform would cost more memory and first-run time than it saves.)
    if (!pins?.owner(w) && winograd2(d)) return fast2x2(x, w, bias, d, epi);
    // Windows reading mostly padding: the reference visits only the in-bounds taps, no padded copy.
    const direct = win.sw === 1 && K <= DIRECT_MAX_K;
    if (padsTooMuch(d, direct ? N * C : Cg)) return REFERENCE_PRIMITIVES.conv2d(x, w, bias, d, epi);
    const k = heap.k;
    // The rows and columns the windows reach from the top-left padding corner: a padded image
    // is first copied into a zero-bordered one (padPlanes), so packing needs no bounds tests.
    const Hp = (OH - 1) * win.sh + (win.kh - 1) * win.dh + 1, Wp = (OW - 1) * win.sw + (win.kw - 1) * win.dw + 1;
    const padded = win.pt > 0 || win.pl > 0 || Hp > H || Wp > W;
    // Unit column stride: the direct kernel reads the (padded) image in place, no packing. (The
    // choice never depends on the thread count: both kernels split, and results stay identical.)
    const kept = pins?.copy(w);
    const out = N * Cout * P;
    // Output rows packed at a time: bands of about BAND_BYTES (never under BAND_MIN_WORK
    // multiply-adds; the whole image when it is small), at most PACK_FLOATS of patch matrix; when
    // one row passes PACK_FLOATS, columns of a row at a time.
    const rowsPer = direct ? OH : Math.min(OH, Math.max(1, Math.floor(PACK_FLOATS / (K * OW))),
      Math.max(1, Math.floor(BAND_BYTES / 4 / (K * OW)), Math.ceil(BAND_MIN_WORK / (Coutg * K * OW))));
    const colsPer = direct || rowsPer > 1 || K * OW <= PACK_FLOATS ? OW : Math.max(1, Math.floor(PACK_FLOATS / K));
    // The padded copy: of every image and group for the direct kernel (one call over all of them,
    // split over the threads), of one image and group at a time for packing.
    const paddedFloats = (direct ? N * C : Cg) * Hp * Wp;
    // x in place where it lies in the kernel memory, but for the direct kernel reading an
    // unpadded image, which reads a few floats past it (a zeroed copy then).
    const io = new KernelIO(heap);
    try {
      const xa = io.in(x, direct && !padded ? SLACK : 0), wa = kept ?? io.in(w), ba = bias ? io.in(bias) : 0;
      const oa = io.out(out * 4, epi?.out);
      const pa = direct ? 0 : io.temp(k.packedSize(K, rowsPer * colsPer) * 4);
      const sa = padded ? io.temp((paddedFloats + SLACK) * 4) : 0, ta = direct ? io.temp(K * 4) : 0;
      const f = heap.f32();
      // The direct kernel's rows are Wp floats apart in the padded copy, W apart in x itself.
      const rowLen = padded ? Wp : W, plane = padded ? Hp * Wp : H * W;
      if (direct) new Int32Array(heap.memory.buffer, ta, K).set(tapTable(Cg, win, plane, rowLen));
      if (padded) f.fill(0, (sa >> 2) + paddedFloats, (sa >> 2) + paddedFloats + SLACK);
      if (direct) {
        // Image-and-group pairs lie Cg planes apart, in x as in the padded copy; outputs Coutg planes apart.
        const pairs = N * G, stride = Cg * plane * 4;
        if (padded) for (let i = 0; i < pairs; i++) k.padPlanes(Cg, H, W, win.pt, win.pl, Hp, Wp, xa + i * Cg * H * W * 4, sa + i * stride);
        const src = padded ? sa : xa;
        if (4 * K * P <= DEADLINE_UNIT || !kernelDeadlineSet()) {
          heap.convDirect(pairs, G, Coutg, K, wa, ta, src, stride, rowLen, win.sh, OH, OW, oa);
        } else {
          // Under a run's deadline, planes too big for one chunk (4 channels of a plane are the
          // direct kernel's unit): blocks of output rows into a scratch block, copied out. Each
          // element is computed as unsplit (whole rows, the same 4-channel blocks).
          const planes = pairs * Coutg, rows = Math.max(1, Math.min(Math.floor(PACK_FLOATS / (planes * OW)), Math.floor(DEADLINE_UNIT / (4 * K * OW))));
          const tmp = heap.alloc(planes * rows * OW * 4);
          try {
            for (let oy0 = 0; oy0 < OH; oy0 += rows) {
              const r = Math.min(rows, OH - oy0);
              heap.convDirect(pairs, G, Coutg, K, wa, ta, src + oy0 * win.sh * rowLen * 4, stride, rowLen, win.sh, r, OW, tmp);
              const f = heap.f32(), t = tmp >> 2, o = (oa >> 2) + oy0 * OW, n = r * OW;
              for (let q = 0; q < planes; q++) f.copyWithin(o + q * P, t + q * n, t + (q + 1) * n);
              kernelTick(planes * K * n);
            }
          } finally {
            heap.free(tmp);
          }
        }
      } else {
        for (let n = 0; n < N; n++) {
          for (let g = 0; g < G; g++) {
            let img = xa + ((n * C + g * Cg) * H * W) * 4;
            if (padded) {
              k.padPlanes(Cg, H, W, win.pt, win.pl, Hp, Wp, img, sa);
              img = sa;
            }
            // Output rows oy0.. (columns ox0..) are packed as rows (columns) 0.. of an image
            // shifted up by oy0·sh (left by ox0·sw): negative padding.
            for (let oy0 = 0; oy0 < OH; oy0 += rowsPer) {
              const rows = Math.min(rowsPer, OH - oy0);
              for (let ox0 = 0; ox0 < OW; ox0 += colsPer) {
                const cols = Math.min(colsPer, OW - ox0);
                k.packIm2col(Cg, padded ? Hp : H, rowLen, win.kh, win.kw, win.sh, win.sw, -oy0 * win.sh, -ox0 * win.sw, win.dh, win.dw, rows, cols, img, pa);
                heap.gemm(Coutg, rows * cols, K, wa + g * Coutg * K * 4, K, pa, oa + ((n * Cout + g * Coutg) * P + oy0 * OW + ox0) * 4, P, 0);
                kernelTick(Coutg * rows * cols * K);
              }
            }
          }
        }
      }
      if (bias || epi?.relu) for (let n = 0; n < N; n++) k.convEpilogue(Cout, P, oa + n * Cout * P * 4, ba, epi?.relu ? 1 : 0);
      return io.f32(oa, out, epi?.out);
    } finally {
      io.free();
    }
  };
}
