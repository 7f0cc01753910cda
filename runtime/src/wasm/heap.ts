// The CPU device's WebAssembly instance and its linear memory. The kernels (runtime/wasm/*.ts,
// built by scripts/build-wasm.mjs) allocate nothing: this file hands out 64-byte-aligned blocks
// of the memory (first fit over a free list that merges neighbours, growing the memory when no
// block fits). Feature detection picks relaxed SIMD, else SIMD128, over a shared memory where
// the engine can share one with worker threads (threads.ts), else a private one; where
// WebAssembly or SIMD is missing `wasmKernels()` is null and callers keep the JavaScript kernels.
// Invariant: a typed-array view of the memory is only used until the next alloc (growing the
// memory detaches the old buffer): take `f32()` after allocating.

import * as binaries from './binaries.generated.js';
import { kernelDeadlinePassed, kernelDeadlineSet, kernelInterrupted } from '@kiln/ir-spec';
import { CONTROL_BYTES, CONV_DIRECT, GEMM_PANELS, GEMM_ROWS, JOB_WINOGRAD4_WEIGHTS, QLINEAR, runChunksHere, ThreadPool, WINOGRAD4, WINOGRAD4_WEIGHTS, threadHost } from './threads.js';

/** The kernels' exports (see runtime/wasm/gemm.ts and conv.ts for their contracts). */
export interface KernelExports {
  packedSize(K: number, N: number): number;
  packB(K: number, N: number, b: number, sbk: number, sbj: number, dst: number): void;
  gemmPacked(m0: number, m1: number, p0: number, p1: number, N: number, K: number, a: number, lda: number, bp: number, c: number, ldc: number, accumulate: number): void;
  gemmEpilogue(M: number, N: number, c: number, ldc: number, bias: number, relu: number): void;
  packIm2col(C: number, H: number, W: number, kh: number, kw: number, sh: number, sw: number, pt: number, pl: number, dh: number, dw: number, OH: number, OW: number, x: number, dst: number): void;
  addBias(C: number, P: number, out: number, bias: number): void;
  padPlanes(C: number, H: number, W: number, pt: number, pl: number, Hp: number, Wp: number, x: number, dst: number): void;
  im2colRows(C: number, Hs: number, Ws: number, kh: number, kw: number, sh: number, sw: number, dh: number, dw: number, oy0: number, rows: number, OW: number, x: number, dst: number): void;
  convEpilogue(C: number, P: number, out: number, bias: number, relu: number): void;
  convDirect(M: number, K: number, a: number, taps: number, img: number, Wp: number, sh: number, OH: number, OW: number, c: number): void;
  heapBase(): number;
  // runtime/wasm/elementwise.ts, reduce.ts, pool.ts, optim.ts and winograd-grad.ts (callers: runtime/src/wasm/ files of the same names)
  binaryF32(op: number, d0: number, d1: number, d2: number, a: number, sa0: number, sa1: number, sa2: number, b: number, sb0: number, sb1: number, sb2: number, out: number): void;
  compareF32(op: number, d0: number, d1: number, d2: number, a: number, sa0: number, sa1: number, sa2: number, b: number, sb0: number, sb1: number, sb2: number, out: number): void;
  reluF32(n: number, x: number, out: number): void;
  fusedF32(n4: number, nOps: number, prog: number, regs: number): void;
  whereF32(n: number, c: number, sc: number, a: number, sa: number, b: number, sb: number, out: number): void;
  sumF32(K0: number, R1: number, K1: number, R2: number, x: number, out: number): void;
  batchNormStats(N: number, C: number, inner: number, x: number, mean: number, variance: number): void;
  batchNorm(N: number, C: number, inner: number, x: number, scale: number, shift: number, out: number): void;
  maxPool2x2(planes: number, H: number, W: number, OH: number, OW: number, x: number, val: number, idx: number): void;
  winogradInputTiles(N: number, C: number, H: number, W: number, pt: number, pl: number, TH: number, TW: number, TC: number, x: number, pad: number, V: number): void;
  winogradGradTiles(N: number, Cout: number, OH: number, OW: number, TH: number, TW: number, CT: number, gy: number, dM: number): void;
  adamStep(n: number, p: number, g: number, m: number, v: number, vmax: number, shrink: number, sign: number, l2: number, beta1: number, beta2: number, stepSize: number, bc2Sqrt: number, eps: number): void;
  // runtime/wasm/winograd2.ts (caller: runtime/src/wasm/winograd2.ts)
  winograd2OutputTiles(N: number, Cout: number, OH: number, OW: number, TH: number, TW: number, Cp: number, MS: number, M: number, out: number): void;
  winograd2Weights(S: number, w: number, U: number): void;
  // runtime/wasm/winograd.ts (caller: runtime/src/wasm/winograd.ts)
  winograd4Weights(S: number, f0: number, f1: number, w: number, U: number): void;
  winograd4Conv(c0: number, c1: number, N: number, C: number, Cout: number, OH: number, OW: number, TH: number, TWp: number, Tc: number, img: number, Hp: number, Wp: number, U: number, V: number, M: number, out: number, bias: number, relu: number, scratch: number): void;
  // runtime/wasm/checksum.ts (caller: runtime/src/wasm/checksum.ts)
  xxh32Stripes(p: number, stripes: number, acc: number): void;
  // runtime/wasm/math.ts (caller: runtime/src/wasm/math.ts)
  mathF32(fn: number, n: number, x: number, out: number): void;
  // runtime/wasm/norm-backward.ts (caller: runtime/src/wasm/norm-backward.ts)
  batchNormBackward(N: number, C: number, inner: number, g: number, x: number, mean: number, variance: number, weight: number, relu: number, eps: number, dx: number, dw: number, db: number): void;
  // runtime/wasm/extreme.ts (caller: runtime/src/wasm/extreme.ts)
  extremeF32(max: number, K0: number, R1: number, K1: number, R2: number, x: number, out: number): void;
  // runtime/wasm/depthwise.ts (caller: runtime/src/wasm/depthwise.ts)
  depthwiseConv2d(N: number, C: number, H: number, W: number, M: number, kh: number, kw: number, sh: number, sw: number, pt: number, pl: number, dh: number, dw: number, OH: number, OW: number, x: number, w: number, bias: number, relu: number, scratch: number, out: number): void;
  // runtime/wasm/qlinear.ts (caller: runtime/src/wasm/qlinear.ts)
  packedWeightBytes(N: number, K: number): number;
  packWeight(N: number, K: number, w: number, dst: number): void;
  rangeF32(n: number, x: number, out: number): void;
  quantizeRows(M: number, K: number, K16: number, x: number, inv: number, zp: number, dst: number): void;
  qlinear(g0: number, g1: number, M: number, N: number, K16: number, xq: number, wp: number, sx: number, ws: number, perChannel: number, bias: number, relu: number, out: number): void;
}

const ALIGN = 64;
/** Most bytes of residentArray arrays alive at once (see there). */
const RESIDENT_ARRAY_BYTES = 1 << 28;
const PAGE = 65536;
/**
 * Below this many multiply-adds (~0.5 ms of one thread's work) a kernel call runs on one thread:
 * a worker woken for it (a futex wake: tens of µs) would join when the caller is nearly done, and
 * on a loaded machine a worker preempted while it holds a chunk makes the caller wait for it.
 * Measured on the idle 2-core VM (`bench/peers/cpu.mjs --threads=2 --models=seed`, both builds in
 * one sitting): at 2^22 the seed CNN's batch-1 Winograd conv (4.7M) and first linear layer (4.2M,
 * its 16 MiB weight streamed from memory) split, and two threads were 0.80× one thread; at 2^23
 * nothing at batch 1 splits (1.09×) and batch 32 gained more (1.16× against 1.04×).
 */
const PARALLEL_WORK = 1 << 23;
/** A split call is cut into about this many chunks per thread (the threads claim them one at a time), */
const CHUNKS_PER_THREAD = 4;
/** and no chunk has fewer multiply-adds than this. */
const MIN_CHUNK_WORK = 1 << 18;
/**
 * Under a run's deadline, a call is cut into chunks of at most about this many multiply-adds
 * (a few ms of one thread at the kernels' rates), so it stops that soon after the deadline.
 */
const DEADLINE_CHUNK_WORK = 1 << 25;

/** Set by setNumThreads; undefined: the available cores. */
let threadCount: number | undefined;

/**
 * How many threads the CPU kernels use (the caller's included), like torch.set_num_threads;
 * default: the available cores. 1 never starts a worker.
 */
export function setNumThreads(n: number): void {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`setNumThreads: expected an integer ≥ 1, got ${n}`);
  threadCount = n;
}

/** The thread count the CPU kernels use (see setNumThreads). */
export function getNumThreads(): number {
  return threadCount ?? Math.max(1, threadHost()?.cores ?? 1);
}

/** Runs `fn` on a timer tick soon, never keeping a Node process alive for it. */
function idleSoon(fn: () => void): unknown {
  const t = setTimeout(fn, 0) as unknown as { unref?: () => void };
  t.unref?.();
  return t;
}

export class WasmHeap {
  /** Free blocks, sorted by address, never adjacent (merged on free). */
  private readonly freeList: { at: number; size: number }[] = [];
  private readonly sizes = new Map<number, number>();
  private top: number;
  private view = new Float32Array(0);
  private readonly pool: ThreadPool | null;
  /** The memory's buffers that resident blocks' views were made over (see residentBlock). */
  private readonly residentBuffers = new WeakSet<ArrayBufferLike>();
  /** Frees a resident block when the last array viewing it is garbage collected. */
  private readonly residentRelease = new FinalizationRegistry<{ at: number; left: number }>((b) => { if (--b.left === 0) this.free(b.at); });

  constructor(readonly memory: WebAssembly.Memory, base: number, readonly variant: 'simd' | 'relaxed', readonly k: KernelExports, module: WebAssembly.Module, shared: boolean) {
    this.top = base;
    this.pool = shared ? new ThreadPool(module, memory, this.alloc(CONTROL_BYTES), k) : null;
    this.shared = shared;
  }

  private readonly shared: boolean;

  /**
   * A block of `bytes` bytes as a byte view that stays valid however the memory grows (a shared
   * memory's buffer is never detached), for data read straight into the kernel memory (a loaded
   * file's weights): kernels then read arrays viewing it in place (addressOf), no copy. Undefined
   * on a private memory, whose buffer a grow detaches. Free it with free(), or hand its lifetime
   * to the arrays viewing it (freeWhenCollected). Undefined too when the memory cannot grow
   * to hold it (the kernel memory is 32-bit).
   */
  residentBlock(bytes: number): Uint8Array | undefined {
    if (!this.shared) return undefined;
    let at: number;
    try {
      at = this.alloc(bytes);
    } catch (e) {
      if (e instanceof RangeError) return undefined; // the memory cannot grow that far: the caller keeps an ordinary buffer
      throw e;
    }
    const view = new Uint8Array(this.memory.buffer, at, bytes);
    this.residentBuffers.add(view.buffer);
    return view;
  }

  /** The kernel-memory address of an array viewing a resident block, else undefined. */
  addressOf(v: ArrayBufferView): number | undefined {
    return this.residentBuffers.has(v.buffer) ? v.byteOffset : undefined;
  }

  /**
   * A typed array of n elements over a fresh resident block, freed when the array is garbage
   * collected; undefined on a private memory, or while such arrays not yet collected hold
   * RESIDENT_ARRAY_BYTES (the kernel memory is 32-bit and never shrinks: results a caller keeps
   * past that stay ordinary arrays). Model.recycle swaps the results handed back for these, so
   * the next run computes into the kernel memory.
   */
  residentArray<T extends Float32Array | Int32Array | Uint8Array | Int8Array>(of: new (b: ArrayBufferLike, at: number, n: number) => T, n: number): T | undefined {
    const bytes = n * (of as unknown as { BYTES_PER_ELEMENT: number }).BYTES_PER_ELEMENT;
    if (!this.shared || this.residentArrayBytes + bytes > RESIDENT_ARRAY_BYTES) return undefined;
    const block = this.residentBlock(bytes);
    if (!block) return undefined;
    const a = new of(block.buffer, block.byteOffset, n);
    this.residentArrayBytes += bytes;
    this.arrayRelease.register(a, { at: block.byteOffset, bytes });
    return a;
  }

  private residentArrayBytes = 0;
  private readonly arrayRelease = new FinalizationRegistry<{ at: number; bytes: number }>((b) => { this.residentArrayBytes -= b.bytes; this.free(b.at); });

  /** Frees resident block `at` once every one of `arrays` (views into it) is garbage collected. */
  freeWhenCollected(at: number, arrays: readonly object[]): void {
    if (!arrays.length) { this.free(at); return; }
    const held = { at, left: arrays.length };
    for (const a of arrays) this.residentRelease.register(a, held);
  }

  /**
   * Deferred Winograd weight transforms, by ticket (a negative number standing for the block U
   * will be): what to transform, then U once allocated (releaseJobs, or settle) and the job slot
   * while a worker may still be writing U.
   */
  private readonly deferred = new Map<number, { S: number; w: number; copy?: number; U?: number; slot?: number }>();
  private nextTicket = -1;

  /**
   * Whether background jobs can run here: worker threads can exist and the kernels use more than
   * one thread (setNumThreads(1) keeps all work on the calling thread).
   */
  get background(): boolean { return getNumThreads() > 1 && (this.pool?.available ?? false); }

  /**
   * Whether transforms can be deferred past a run at all: to a worker (background), else to idle
   * time on this thread (a timer between runs; every host with setTimeout).
   */
  get canDefer(): boolean { return this.background || typeof setTimeout === 'function'; }

  /** Tickets of deferred transforms left for idle time on this thread (no worker), oldest first. */
  private readonly idleQueue: number[] = [];
  private idleTimer: unknown;

  /**
   * Defers winograd4Weights of S filters at w: returns a ticket standing for the block U it will
   * write (settle(ticket) gives U, complete; free(ticket) drops it), or undefined where nothing
   * can be deferred (canDefer). Nothing is allocated until the run ends (releaseJobs: U is
   * allocated and the transform posted for an idle worker, or queued for idle time here), so U
   * does not take the pages the run's scratch reuses.
   * `copy`, when given, is a block holding w's copy, freed once U is complete or dropped.
   */
  winograd4WeightsLater(S: number, w: number, copy?: number): number | undefined {
    if (!this.canDefer) return undefined;
    const ticket = this.nextTicket--;
    this.deferred.set(ticket, copy === undefined ? { S, w } : { S, w, copy });
    return ticket;
  }

  /**
   * Allocates the deferred transforms' blocks and posts them for idle workers (the CPU device
   * calls it when a run ends); without workers (one thread), queues them for idle time here: one
   * transform per timer tick between runs, so a run's caller gets its results first. A later
   * call settles whatever is left.
   */
  releaseJobs(): void {
    for (const [ticket, d] of this.deferred) {
      if (d.U !== undefined || this.idleQueue.includes(ticket)) continue;
      if (!this.background) { this.idleQueue.push(ticket); continue; }
      d.U = this.alloc(36 * d.S * 4);
      const slot = this.pool!.post(JOB_WINOGRAD4_WEIGHTS, [d.S, d.w, d.U]);
      if (slot >= 0) d.slot = slot;
      else this.winograd4Weights(d.S, d.w, d.U); // no free job slot: made now
    }
    if (this.idleQueue.length && this.idleTimer === undefined) this.idleTimer = idleSoon(() => this.idleStep());
  }

  /** One idle tick: makes the oldest queued transform still deferred (a freed or settled one is skipped), then waits for the next tick. */
  private idleStep(): void {
    this.idleTimer = undefined;
    for (let ticket = this.idleQueue.shift(); ticket !== undefined; ticket = this.idleQueue.shift()) {
      const d = this.deferred.get(ticket);
      if (!d || d.U !== undefined) continue;
      d.U = this.alloc(36 * d.S * 4);
      this.winograd4Weights(d.S, d.w, d.U);
      this.madeIdle++;
      break;
    }
    if (this.idleQueue.length) this.idleTimer = idleSoon(() => this.idleStep());
  }

  /**
   * The block `at` stands for, complete: `at` itself for a block, else (a ticket) the deferred
   * transform's U, made here if it was not posted yet, else finished here if no worker took its
   * job, else waited for.
   */
  settle(at: number): number {
    if (at >= 0) return at;
    const d = this.deferred.get(at);
    if (!d) throw new Error(`WasmHeap.settle: ${at} is not a live ticket`);
    if (d.U === undefined) {
      d.U = this.alloc(36 * d.S * 4);
      this.winograd4Weights(d.S, d.w, d.U);
    } else if (d.slot !== undefined) {
      this.pool!.finish(d.slot);
      d.slot = undefined;
    }
    if (d.copy !== undefined) { this.free(d.copy); d.copy = undefined; }
    return d.U;
  }

  /** Background jobs posted so far, how many of them a worker took (the rest ran on the calling thread, or were dropped), and the transforms idle time made here. */
  get jobStats(): { posted: number; byWorkers: number; madeIdle: number } {
    return { posted: this.pool?.jobsPosted ?? 0, byWorkers: this.pool?.jobsByWorkers ?? 0, madeIdle: this.madeIdle };
  }

  /** Deferred transforms made in idle time on this thread so far (no worker). */
  private madeIdle = 0;

  /** Whether products can be split over worker threads here. */
  get threaded(): boolean { return this.pool?.available ?? false; }

  /** How many kernel calls ran split over worker threads so far. */
  get splitProducts(): number { return this.pool?.splits ?? 0; }

  /**
   * Starts the worker threads the kernels will use (getNumThreads() − 1) now instead of at the
   * first call big enough to split: load calls it before reading a big file, so they boot while
   * the read waits on the disk and page faults, and the first run's big layers already split.
   */
  startWorkers(): void {
    if (getNumThreads() > 1) this.pool?.start(getNumThreads() - 1);
  }

  /** How many worker threads were started so far (none before the first call big enough to split, or startWorkers). */
  get workersStarted(): number { return this.pool?.started ?? 0; }

  /** How many chunks of split calls the workers ran so far (the rest ran on the calling thread). */
  get workerChunks(): number { return this.pool?.workerChunks ?? 0; }

  /**
   * Chunks for a call of `work` multiply-adds over `units` indivisible parts: 1 runs it unsplit.
   * Under a run's deadline (`stoppable`) a call of more than DEADLINE_CHUNK_WORK is cut into
   * chunks of about that much even on one thread, so it can stop between them.
   */
  private chunksFor(work: number, units: number, stoppable = true): number {
    let n = 1;
    const t = getNumThreads();
    if (this.pool?.available && work >= PARALLEL_WORK && t >= 2) n = Math.max(1, Math.min(units, t * CHUNKS_PER_THREAD, Math.floor(work / MIN_CHUNK_WORK)));
    if (stoppable && work > DEADLINE_CHUNK_WORK && kernelDeadlineSet()) n = Math.max(n, Math.min(units, Math.ceil(work / DEADLINE_CHUNK_WORK)));
    return n;
  }

  /**
   * Runs a split call's chunks (threads.ts): over the pool's threads, or here alone without
   * shared memory; under a run's deadline, the caller asks the clock after each of its chunks,
   * and a round cut short throws KernelDeadline (after the chunks already claimed are done).
   */
  private round(kind: number, chunks: number, args: readonly number[]): void {
    const stop = kernelDeadlineSet() ? kernelDeadlinePassed : undefined;
    const done = this.pool ? this.pool.run(getNumThreads(), kind, chunks, args, stop) : runChunksHere(this.k, kind, chunks, args, stop);
    if (!done) kernelInterrupted();
  }

  /**
   * How many blocks of scratch a winograd4Conv of `work` multiply-adds over J tile chunks needs:
   * one per split chunk (1 when it runs unsplit).
   */
  winograd4Chunks(work: number, J: number): number { return this.chunksFor(work, J, false); }

  /**
   * winograd4Conv (runtime/wasm/winograd.ts) over tile chunks 0..J, split into n (from
   * winograd4Chunks) runs of whole tile chunks, run i in the V, M and scratch blocks at
   * base + i·stride bytes: every tile is computed as unsplit (chunks of Tc tiles either way).
   */
  winograd4Conv(n: number, J: number, a: readonly number[], V: number, vStride: number, M: number, mStride: number, out: number, bias: number, relu: number, scratch: number, sStride: number): void {
    if (n > 1) { this.round(WINOGRAD4, n, [J, ...a, V, vStride, M, mStride, out, bias, relu, scratch, sStride]); return; }
    const [N, C, Cout, OH, OW, TH, TWp, Tc, img, Hp, Wp, U] = a;
    // Under a run's deadline, one thread runs the tile chunks one by one in the same blocks
    // (strides 0), asking the clock between them.
    const work = 36 * Cout * C * Tc * J;
    if (J > 1 && work > DEADLINE_CHUNK_WORK && kernelDeadlineSet()) {
      const chunks = Math.min(J, Math.ceil(work / DEADLINE_CHUNK_WORK));
      if (!runChunksHere(this.k, WINOGRAD4, chunks, [J, ...a, V, 0, M, 0, out, bias, relu, scratch, 0], kernelDeadlinePassed)) kernelInterrupted();
      return;
    }
    this.k.winograd4Conv(0, J, N, C, Cout, OH, OW, TH, TWp, Tc, img, Hp, Wp, U, V, M, out, bias, relu, scratch);
  }

  /**
   * winograd4Weights (runtime/wasm/winograd.ts) of the S = Cout·C filters at w into U, split over
   * the threads by runs of whole groups of 4 filters when it is big enough (each filter's
   * transform is independent: U is the same either way). Work: 36·9 per filter, as multiply-adds.
   */
  winograd4Weights(S: number, w: number, U: number): void {
    const chunks = this.chunksFor(36 * 9 * S, (S + 3) >> 2);
    if (chunks > 1) this.round(WINOGRAD4_WEIGHTS, chunks, [S, w, U]);
    else this.k.winograd4Weights(S, 0, S, w, U);
  }

  /** C (+)= A·packed B (gemmPacked over all of C), split over the threads when it is big enough. */
  gemm(M: number, N: number, K: number, a: number, lda: number, bp: number, c: number, ldc: number, accumulate: number): void {
    // Along C's longer side: every chunk reads all of the other operand (by rows, all of B: a
    // linear layer's 16 MiB weight at batch 32, split by rows into 8 chunks, would be read 8
    // times), so that operand should be the one with fewer bytes per multiply-add.
    const panels = (N + 7) >> 3, byRows = M >= N;
    const chunks = this.chunksFor(M * N * K, byRows ? (M + 3) >> 2 : panels);
    if (chunks > 1) this.round(byRows ? GEMM_ROWS : GEMM_PANELS, chunks, [M, N, K, a, lda, bp, c, ldc, accumulate]);
    else this.k.gemmPacked(0, M, 0, panels, N, K, a, lda, bp, c, ldc, accumulate);
  }

  /**
   * qlinear (runtime/wasm/qlinear.ts) over all of out [M, N], split over the threads by blocks
   * of the packed weight's 4-row groups when it is big enough (each chunk reads its own rows of
   * the weight and all of the small quantized x).
   */
  qlinear(M: number, N: number, K16: number, xq: number, wp: number, sx: number, ws: number, perChannel: number, bias: number, relu: number, out: number): void {
    const groups = (N + 3) >> 2;
    const chunks = this.chunksFor(M * N * K16, groups);
    if (chunks > 1) this.round(QLINEAR, chunks, [groups, M, N, K16, xq, wp, sx, ws, perChannel, bias, relu, out]);
    else this.k.qlinear(0, groups, M, N, K16, xq, wp, sx, ws, perChannel, bias, relu, out);
  }

  /**
   * convDirect (runtime/wasm/conv.ts) over `pairs` image-and-group pairs: pair q reads its image
   * at img + q·imgStride bytes and the weights of group q mod G (M rows of K from `a`), and
   * writes M output planes at out + q·M·OH·OW floats. Split over the threads by blocks of 4
   * output channels of a pair when it is big enough.
   */
  convDirect(pairs: number, G: number, M: number, K: number, a: number, taps: number, img: number, imgStride: number, Wp: number, sh: number, OH: number, OW: number, out: number): void {
    const chunks = this.chunksFor(pairs * M * K * OH * OW, pairs * ((M + 3) >> 2));
    if (chunks > 1) { this.round(CONV_DIRECT, chunks, [pairs, G, M, K, a, taps, img, imgStride, Wp, sh, OH, OW, out]); return; }
    for (let q = 0; q < pairs; q++) this.k.convDirect(M, K, a + (q % G) * M * K * 4, taps, img + q * imgStride, Wp, sh, OH, OW, out + q * M * OH * OW * 4);
  }

  /** A block of at least `bytes` bytes, 64-byte aligned. */
  alloc(bytes: number): number {
    const size = Math.max(ALIGN, Math.ceil(bytes / ALIGN) * ALIGN);
    for (let i = 0; i < this.freeList.length; i++) {
      const b = this.freeList[i];
      if (b.size < size) continue;
      const at = b.at;
      if (b.size === size) this.freeList.splice(i, 1);
      else { b.at += size; b.size -= size; }
      this.sizes.set(at, size);
      return at;
    }
    const at = this.top;
    const end = at + size;
    const have = this.memory.buffer.byteLength;
    if (end > have) this.memory.grow(Math.ceil((end - have) / PAGE));
    this.top = end;
    this.sizes.set(at, size);
    return at;
  }

  /** Returns a block from alloc(), or drops a ticket from winograd4WeightsLater (a job writing its U is dropped or waited for first). */
  free(at: number): void {
    if (at < 0) {
      const d = this.deferred.get(at);
      if (!d) throw new Error(`WasmHeap.free: ${at} is not a live ticket`);
      this.deferred.delete(at);
      if (d.slot !== undefined) this.pool!.cancel(d.slot);
      if (d.U !== undefined) this.free(d.U);
      if (d.copy !== undefined) this.free(d.copy);
      return;
    }
    const size = this.sizes.get(at);
    if (size === undefined) throw new Error(`WasmHeap.free: ${at} is not an allocated block`);
    this.sizes.delete(at);
    let i = this.freeList.findIndex((b) => b.at > at);
    if (i < 0) i = this.freeList.length;
    this.freeList.splice(i, 0, { at, size });
    const next = this.freeList[i + 1];
    if (next && at + size === next.at) { this.freeList[i].size += next.size; this.freeList.splice(i + 1, 1); }
    const prev = this.freeList[i - 1];
    if (prev && prev.at + prev.size === at) { prev.size += this.freeList[i].size; this.freeList.splice(i, 1); }
    // A free block at the top gives its bytes back to the bump region.
    const last = this.freeList[this.freeList.length - 1];
    if (last && last.at + last.size === this.top) { this.top = last.at; this.freeList.pop(); }
  }

  /** A float32 view of the whole memory (valid until the next alloc). */
  f32(): Float32Array {
    if (this.view.buffer !== this.memory.buffer) this.view = new Float32Array(this.memory.buffer);
    return this.view;
  }

  /**
   * A fresh copy of n floats at byte address `at`, into `into` when given. (TypedArray.slice on a
   * view of the whole memory is far slower than a plain copy into a new array: measured 0.25 ms
   * against 0.003 ms for 16 Ki floats.)
   */
  copyOutF32(at: number, n: number, into?: Float32Array): Float32Array {
    const dst = into ?? new Float32Array(n);
    dst.set(this.f32().subarray(at >> 2, (at >> 2) + n));
    return dst;
  }

  /** Bytes in use by live blocks. */
  get liveBytes(): number {
    let n = 0;
    for (const s of this.sizes.values()) n += s;
    return n;
  }
}

function decode(b64: string): Uint8Array<ArrayBuffer> {
  const s = atob(b64);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

let heap: WasmHeap | null | undefined;

/**
 * The shared kernel instance, made on first use; null where this engine lacks WebAssembly
 * SIMD128, or when `KILN_WASM=0` is set in the environment (the JavaScript kernels then run).
 */
export function wasmKernels(): WasmHeap | null {
  if (heap !== undefined) return heap;
  heap = null;
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  if (typeof WebAssembly !== 'object' || env?.KILN_WASM === '0') return heap;
  const canShare = typeof SharedArrayBuffer === 'function' && (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated !== false;
  const variants = [
    ...(canShare ? [['relaxedShared', 'relaxed', true], ['simdShared', 'simd', true]] as const : []),
    ['relaxed', 'relaxed', false], ['simd', 'simd', false],
  ] as const;
  for (const [name, variant, shared] of variants) {
    const bytes = decode(binaries[name]);
    if (!WebAssembly.validate(bytes)) continue;
    let memory: WebAssembly.Memory;
    try {
      memory = new WebAssembly.Memory(shared ? { initial: 16, maximum: 65536, shared: true } : { initial: 16 });
    } catch {
      continue;
    }
    const module = new WebAssembly.Module(bytes);
    const instance = new WebAssembly.Instance(module, { env: { memory, abort: () => { throw new Error('wasm kernel abort'); } } });
    const k = instance.exports as unknown as KernelExports;
    heap = new WasmHeap(memory, k.heapBase(), variant, k, module, shared);
    break;
  }
  return heap;
}
