// The CPU device's WebAssembly instance and its linear memory. The kernels (runtime/wasm/*.ts,
// built by scripts/build-wasm.mjs) allocate nothing: this file hands out 64-byte-aligned blocks
// of the memory (first fit over a free list that merges neighbours, growing the memory when no
// block fits). Feature detection picks relaxed SIMD, else SIMD128, over a shared memory where
// the engine can share one with worker threads (threads.ts), else a private one; where
// WebAssembly or SIMD is missing `wasmKernels()` is null and callers keep the JavaScript kernels.
// Invariant: a typed-array view of the memory is only used until the next alloc (growing the
// memory detaches the old buffer): take `f32()` after allocating.

import * as binaries from './binaries.generated.js';
import { CONTROL_BYTES, ThreadPool, threadHost } from './threads.js';

/** The kernels' exports (see runtime/wasm/gemm.ts and conv.ts for their contracts). */
export interface KernelExports {
  packedSize(K: number, N: number): number;
  packB(K: number, N: number, b: number, sbk: number, sbj: number, dst: number): void;
  gemmPacked(m0: number, m1: number, p0: number, p1: number, N: number, K: number, a: number, lda: number, bp: number, c: number, ldc: number, accumulate: number): void;
  packIm2col(C: number, H: number, W: number, kh: number, kw: number, sh: number, sw: number, pt: number, pl: number, dh: number, dw: number, OH: number, OW: number, x: number, dst: number): void;
  addBias(C: number, P: number, out: number, bias: number): void;
  padPlanes(C: number, H: number, W: number, pt: number, pl: number, Hp: number, Wp: number, x: number, dst: number): void;
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
  // runtime/wasm/qlinear.ts (caller: runtime/src/wasm/qlinear.ts)
  packedWeightBytes(N: number, K: number): number;
  packWeight(N: number, K: number, w: number, dst: number): void;
  rangeF32(n: number, x: number, out: number): void;
  quantizeRows(M: number, K: number, K16: number, x: number, inv: number, zp: number, dst: number): void;
  qlinear(M: number, N: number, K16: number, xq: number, wp: number, xScale: number, ws: number, perChannel: number, bias: number, out: number): void;
}

const ALIGN = 64;
const PAGE = 65536;
/** Below this many multiply-adds (~0.5 ms of one thread's work) a product runs on one thread: waking
 * and joining workers costs more (measured: digits training, 2 threads, 6.6 s at 2^20 → 5.9 s at 2^24). */
const PARALLEL_WORK = 1 << 24;

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

export class WasmHeap {
  /** Free blocks, sorted by address, never adjacent (merged on free). */
  private readonly freeList: { at: number; size: number }[] = [];
  private readonly sizes = new Map<number, number>();
  private top: number;
  private view = new Float32Array(0);
  private readonly pool: ThreadPool | null;

  constructor(readonly memory: WebAssembly.Memory, base: number, readonly variant: 'simd' | 'relaxed', readonly k: KernelExports, module: WebAssembly.Module, shared: boolean) {
    this.top = base;
    this.pool = shared ? new ThreadPool(module, memory, this.alloc(CONTROL_BYTES), k) : null;
  }

  /** Whether products can be split over worker threads here. */
  get threaded(): boolean { return this.pool?.available ?? false; }

  /** How many products ran split over worker threads so far. */
  get splitProducts(): number { return this.pool?.splits ?? 0; }

  /** Whether a product of this many multiply-adds would be split over worker threads (see gemm). */
  wouldSplit(work: number): boolean {
    return !!this.pool?.available && getNumThreads() > 1 && work >= PARALLEL_WORK;
  }

  /** C (+)= A·packed B (gemmPacked over all of C), split over the threads when it is big enough. */
  gemm(M: number, N: number, K: number, a: number, lda: number, bp: number, c: number, ldc: number, accumulate: number): void {
    if (this.wouldSplit(M * N * K)) this.pool!.gemm(getNumThreads(), M, N, K, a, lda, bp, c, ldc, accumulate);
    else this.k.gemmPacked(0, M, 0, (N + 7) >> 3, N, K, a, lda, bp, c, ldc, accumulate);
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

  /** Returns a block from alloc(). */
  free(at: number): void {
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
