// Worker threads for the WebAssembly kernels: every worker instantiates the same module over the
// one shared memory, so a GEMM is split by writing its arguments into a control block and waking
// the first `helpers` workers, each through its own slot word (a slice of the rows or of the
// column panels of C each); the calling thread runs slice 0 and waits until every slice is done.
// Workers are numbered in the order they became ready, so the helpers are always running ones. Workers are Node
// worker_threads (unref'd: they never keep the process alive) or Web Workers (only in a
// cross-origin-isolated page); they start in the background and join once ready, so nothing
// ever waits for a worker to start. No worker exists until a product is big enough to split.
// Invariant: a split product equals the single-threaded one bit for bit (slices partition C,
// and every element is summed by one thread in the same order).

import type { KernelExports } from './heap.js';

/** Control block (Int32): pending slices, ready workers, helpers this round, the task, then one wake slot per worker. */
const PENDING = 0, READY = 1, ACTIVE = 2, TASK = 3, SLOT = 16;
export const MAX_WORKERS = 48;
export const CONTROL_BYTES = (SLOT + MAX_WORKERS) * 4;

/**
 * Runs slice `s` of `T` of the GEMM described at `c[TASK..]`. Self-contained: its source is also
 * the workers' (Function.prototype.toString), so it may use only its arguments.
 */
function runSlice(k: KernelExports, c: Int32Array, s: number, T: number): void {
  const o = 3;
  const M = c[o], N = c[o + 1], K = c[o + 2], a = c[o + 3], lda = c[o + 4], bp = c[o + 5], C = c[o + 6], ldc = c[o + 7], acc = c[o + 8], byRows = c[o + 9];
  const panels = (N + 7) >> 3;
  if (byRows) {
    const units = (M + 3) >> 2;
    const lo = Math.floor((units * s) / T) * 4, hi = Math.min(M, Math.floor((units * (s + 1)) / T) * 4);
    if (lo < hi) k.gemmPacked(lo, hi, 0, panels, N, K, a, lda, bp, C, ldc, acc);
  } else {
    const lo = Math.floor((panels * s) / T), hi = Math.floor((panels * (s + 1)) / T);
    if (lo < hi) k.gemmPacked(0, M, lo, hi, N, K, a, lda, bp, C, ldc, acc);
  }
}

/** The worker's program: instantiate, take the next worker number, then serve its slot forever. */
function workerMain(data: { module: WebAssembly.Module; memory: WebAssembly.Memory; control: number }, slice: typeof runSlice): void {
  const inst = new WebAssembly.Instance(data.module, { env: { memory: data.memory, abort: () => { throw new Error('wasm kernel abort'); } } });
  const k = inst.exports as unknown as KernelExports;
  const c = new Int32Array(data.memory.buffer, data.control, 64);
  // Slots start at 0 and the caller bumps slot `me` only after this worker counted itself ready,
  // so 0 is the value to wait on first (a bump that comes early then wakes it at once).
  const me = Atomics.add(c, 1, 1), slot = 16 + me;
  let seen = 0;
  for (;;) {
    Atomics.wait(c, slot, seen);
    seen = Atomics.load(c, slot);
    slice(k, c, me + 1, c[2] + 1);
    if (Atomics.sub(c, 0, 1) === 1) Atomics.notify(c, 0);
  }
}

/** The program a worker runs, as source text: `start(data)` begins serving. */
export const WORKER_PROGRAM = `(data) => (${workerMain.toString()})(data, ${runSlice.toString()})`;

/** What a worker is given: the kernel module, the shared memory and the control block's address. */
export interface WorkerData { module: WebAssembly.Module; memory: WebAssembly.Memory; control: number }

/** How an environment starts workers running WORKER_PROGRAM, and how many cores it has. */
export interface ThreadHost {
  spawn(data: WorkerData): void;
  readonly cores: number;
}

let host: ThreadHost | null | undefined;

/** Installs how workers start here (the Node entry point does; null: never start workers). */
export function setThreadHost(h: ThreadHost | null): void {
  host = h;
}

/** Web Workers, in a cross-origin-isolated page (where memory can be shared with them). */
function webHost(): ThreadHost | null {
  const g = globalThis as {
    Worker?: new (url: string) => { postMessage(d: unknown): void };
    crossOriginIsolated?: boolean; Blob?: typeof Blob; URL?: typeof URL;
    navigator?: { hardwareConcurrency?: number };
  };
  if (!g.Worker || !g.crossOriginIsolated || !g.Blob || !g.URL) return null;
  const url = g.URL.createObjectURL(new g.Blob([`self.onmessage = (e) => (${WORKER_PROGRAM})(e.data);`], { type: 'text/javascript' }));
  return { spawn: (data) => new g.Worker!(url).postMessage(data), cores: g.navigator?.hardwareConcurrency ?? 1 };
}

/** The installed host, else Web Workers where possible, else null. */
export function threadHost(): ThreadHost | null {
  if (host === undefined) host = webHost();
  return host;
}

/** The workers of one shared-memory kernel instance. */
export class ThreadPool {
  private readonly c: Int32Array;
  private started = 0;
  /** Atomics.wait is not allowed on a browser's main thread: spin there instead. */
  private readonly canBlock: boolean;

  constructor(private readonly module: WebAssembly.Module, private readonly memory: WebAssembly.Memory, private readonly control: number, private readonly k: KernelExports) {
    this.c = new Int32Array(memory.buffer, control, SLOT + MAX_WORKERS);
    this.canBlock = !!(globalThis as { process?: unknown }).process || typeof (globalThis as { document?: unknown }).document === 'undefined';
  }

  /** Products split over at least one worker so far (for tests and stats). */
  splits = 0;

  /** Whether workers can exist here at all (shared memory and a way to start them). */
  get available(): boolean { return threadHost() !== null; }

  /**
   * C (+)= A·packed B over `threads` threads (the caller included); workers are started on first
   * use, and only those already running take part.
   */
  gemm(threads: number, M: number, N: number, K: number, a: number, lda: number, bp: number, cAt: number, ldc: number, acc: number): void {
    const c = this.c, panels = (N + 7) >> 3;
    const byRows = M >= 8 * threads ? 1 : 0;
    const want = Math.min(threads - 1, MAX_WORKERS, byRows ? ((M + 3) >> 2) - 1 : panels - 1);
    const host = threadHost();
    while (host && this.started < want) {
      host.spawn({ module: this.module, memory: this.memory, control: this.control });
      this.started++;
    }
    const helpers = Math.min(want, Atomics.load(c, READY));
    c.set([M, N, K, a, lda, bp, cAt, ldc, acc, byRows], TASK);
    if (helpers <= 0) {
      runSlice(this.k, c, 0, 1);
      return;
    }
    this.splits++;
    Atomics.store(c, ACTIVE, helpers);
    Atomics.store(c, PENDING, helpers);
    for (let w = 0; w < helpers; w++) {
      Atomics.add(c, SLOT + w, 1);
      Atomics.notify(c, SLOT + w);
    }
    runSlice(this.k, c, 0, helpers + 1);
    for (let v = Atomics.load(c, PENDING); v !== 0; v = Atomics.load(c, PENDING)) {
      if (this.canBlock) Atomics.wait(c, PENDING, v);
    }
  }
}
