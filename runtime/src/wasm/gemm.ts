// The WebAssembly GEMM primitive (kernels in runtime/wasm/gemm.ts) behind ir-spec's `GemmFn`
// signature, so an op's one CPU kernel runs its products in SIMD when the CPU device passes it.
// Operands are copied into the kernel memory (A made K-contiguous, B packed into 8-column
// panels) and C copied back, except A and C rows that lie there already (used in place: io.ts);
// a B the device pinned as a graph constant is packed once and kept until the constant is
// garbage collected (pinned.ts). linear's epilogue (bias, relu) runs in the
// kernel memory before the copy back (gemmEpilogue). Small products stay in JavaScript, where the copies
// would cost more than they save. Invariant: same results as the reference gemm up to float32
// rounding of the sums (the kernel sums in float32, the reference in float64 per K block).

import { REFERENCE_PRIMITIVES, type GemmFn } from '@kiln/ir-spec';
import type { WasmHeap } from './heap.js';
import { PinnedArrays } from './pinned.js';
import { KernelIO } from './io.js';

/** Below this many multiply-adds the JavaScript kernel is as fast as copying into the memory. */
const MIN_WORK = 4096;

/** A kept form of a pinned view, found again without building its key; holds the pinned array, so the form outlives no use. */
interface KeptForm { readonly at: number; readonly owner: Float32Array }

export class WasmGemm {
  /** The last packed form and bias copy per view (a model passes the same views run after run). */
  private readonly lastPacked = new WeakMap<Float32Array, KeptForm & { readonly bOff: number; readonly sbk: number; readonly sbj: number; readonly K: number; readonly N: number }>();
  private readonly lastBias = new WeakMap<Float32Array, KeptForm>();

  constructor(private readonly heap: WasmHeap, private readonly pins = new PinnedArrays(heap)) {}

  /** Marks an array as a constant: never written again, so its packed form can be kept. */
  pin(data: object): void {
    this.pins.pin(data);
  }

  readonly gemm: GemmFn = (M, N, K, A, aOff, sai, sak, B, bOff, sbk, sbj, C, cOff, ldc, accumulate = false, epilogue) => {
    if (M === 0 || N === 0 || K === 0 || M * N * K < MIN_WORK) {
      REFERENCE_PRIMITIVES.gemm(M, N, K, A, aOff, sai, sak, B, bOff, sbk, sbj, C, cOff, ldc, accumulate, epilogue);
      return;
    }
    const h = this.heap;
    const last = this.lastPacked.get(B);
    const kept = last && last.bOff === bOff && last.sbk === sbk && last.sbj === sbj && last.K === K && last.N === N ? last.at : undefined;
    const constant = kept !== undefined || this.pins.owner(B) !== undefined;
    // A small M with a B that must be packed on every call: packing costs as much as the product.
    if (!constant && M < 4) {
      REFERENCE_PRIMITIVES.gemm(M, N, K, A, aOff, sai, sak, B, bOff, sbk, sbj, C, cOff, ldc, accumulate, epilogue);
      return;
    }
    const io = new KernelIO(h);
    const take = (floats: number) => io.temp(floats * 4);
    try {
      const bp = kept ?? (constant ? this.packedConstant(B, bOff, sbk, sbj, K, N) : this.packTemp(B, bOff, sbk, sbj, K, N, take));
      // A and C as contiguous rows are placed by io.ts (where they lie in the kernel memory: an
      // arena slot, a recycled result; else copies); strided ones are gathered and scattered here.
      const rowsA = sak === 1 && sai === K, cRows = ldc === N ? C.subarray(cOff, cOff + M * N) : undefined;
      const a = rowsA ? io.in(A.subarray(aOff, aOff + M * K)) : take(M * K);
      const c = io.out(M * N * 4, cRows), cInPlace = cRows !== undefined && h.addressOf(cRows) === c;
      const f = h.f32();
      if (!rowsA) copyRows(A, aOff, sai, sak, M, K, f, a >> 2);
      if (accumulate && !cInPlace) for (let i = 0; i < M; i++) f.set(C.subarray(cOff + i * ldc, cOff + i * ldc + N), (c >> 2) + i * N);
      h.gemm(M, N, K, a, K, bp, c, N, accumulate ? 1 : 0);
      if (epilogue) h.k.gemmEpilogue(M, N, c, N, epilogue.bias ? this.biasIn(epilogue.bias, take) : 0, epilogue.relu ? 1 : 0);
      if (cRows) io.copyOut(c, cRows);
      else for (let i = 0; i < M; i++) C.set(h.f32().subarray((c >> 2) + i * N, (c >> 2) + (i + 1) * N), cOff + i * ldc);
    } finally {
      io.free();
    }
  };

  /** The bias in the kernel memory: copied once when it is a pinned constant, else per call (into a block from `take`). */
  private biasIn(bias: Float32Array, take: (n: number) => number): number {
    const last = this.lastBias.get(bias);
    if (last) return last.at;
    const kept = this.pins.copy(bias);
    if (kept !== undefined) {
      this.lastBias.set(bias, { at: kept, owner: this.pins.owner(bias)! });
      return kept;
    }
    const at = take(bias.length);
    this.heap.f32().set(bias, at >> 2);
    return at;
  }

  /** Packs the span of B the strides address (copied into the memory first unless it lies there), blocks from `take`. */
  private packTemp(B: Float32Array, bOff: number, sbk: number, sbj: number, K: number, N: number, take: (n: number) => number): number {
    const span = (K - 1) * sbk + (N - 1) * sbj + 1;
    // A B in the kernel memory (an arena slot, a recycled result) is packed from where it lies.
    const inPlace = this.heap.addressOf(B);
    const src = inPlace !== undefined ? inPlace + bOff * 4 : take(span);
    const dst = take(this.heap.k.packedSize(K, N));
    if (inPlace === undefined) this.heap.f32().set(B.subarray(bOff, bOff + span), src >> 2);
    this.heap.k.packB(K, N, src, sbk, sbj, dst);
    return dst;
  }


  /** B's panels, packed once per pinned constant and view (pinned.ts keeps and frees them). */
  private packedConstant(B: Float32Array, bOff: number, sbk: number, sbj: number, K: number, N: number): number {
    const at = this.pins.form(B, `packB ${bOff},${sbk},${sbj},${K},${N}`, () => {
      const h = this.heap;
      const span = (K - 1) * sbk + (N - 1) * sbj + 1;
      // A B in the kernel memory already (a loaded file's weight) is packed from where it lies.
      const inPlace = h.addressOf(B);
      const src = inPlace !== undefined ? inPlace + bOff * 4 : h.alloc(span * 4);
      const dst = h.alloc(h.k.packedSize(K, N) * 4);
      if (inPlace === undefined) h.f32().set(B.subarray(bOff, bOff + span), src >> 2);
      h.k.packB(K, N, src, sbk, sbj, dst);
      if (inPlace === undefined) h.free(src);
      return dst;
    })!;
    this.lastPacked.set(B, { at, owner: this.pins.owner(B)!, bOff, sbk, sbj, K, N });
    return at;
  }
}

/** dst[off + i*K + k] = A[aOff + i*sai + k*sak]: strided rows of A made K-contiguous. */
function copyRows(A: Float32Array, aOff: number, sai: number, sak: number, M: number, K: number, dst: Float32Array, off: number): void {
  for (let i = 0; i < M; i++) {
    const s = aOff + i * sai, d = off + i * K;
    if (sak === 1) dst.set(A.subarray(s, s + K), d);
    else for (let k = 0; k < K; k++) dst[d + k] = A[s + k * sak];
  }
}
