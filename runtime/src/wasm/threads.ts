// Worker threads for the WebAssembly kernels: every worker instantiates the same module over the
// one shared memory. A split kernel call (a "round") is cut into chunks — blocks of rows or of
// column panels of a GEMM's C, blocks of output channels of a direct convolution — that the
// calling thread and the woken workers claim one at a time from a shared counter until none is
// left; the caller then waits only for chunks a worker claimed and has not finished. So a worker
// that wakes late (a loaded machine, a cold thread) never holds the caller up: the caller runs
// the chunks itself, and a round is never slower than running it alone by more than one chunk.
// Workers spin briefly after a round before they sleep, so back-to-back rounds (the layers of
// one model run) skip the wake-up. Workers are Node worker_threads (unref'd: they never keep the
// process alive) or Web Workers (only in a cross-origin-isolated page); they start in the
// background and join once ready, so nothing ever waits for a worker to start. No worker exists
// until a kernel call is big enough to split, or a background job is posted.
// Background jobs (the Winograd weight transforms a run deferred): the calling thread posts a job
// into a slot of the control block and goes on; an idle worker claims it (one atomic
// compare-exchange), runs it whole and marks it done, helping any round that begins first. The
// caller that needs the result finishes the job: it runs it itself when no worker has claimed it,
// else waits for the worker that has (a job is short). So a job's result is read only once it is
// complete, and a job never waits for a worker to start.
// Invariant: a split call equals the single-threaded one bit for bit (chunks partition the
// output, and every element is computed by one thread in the same order as without a split);
// a job computes the same whichever thread runs it. A round under a run's deadline stops claiming
// chunks once the deadline passes (run's `stop`), so it ends within one chunk per thread of it.

import type { KernelExports } from './heap.js';

/**
 * Control block (Int32): the wake counter workers sleep on, the next chunk to claim (CLOSED
 * between rounds), chunks finished this round, workers ready, background jobs workers ran, then
 * the round's task: its kind, its chunk count and its arguments.
 */
const WAKE = 0, CLAIM = 1, DONE = 2, READY = 3, JOBS_RUN = 4, TASK = 8, TASK_WORDS = 32;
/** CLAIM's value between rounds: above any chunk index, so a claim then gets nothing. */
const CLOSED = 1 << 30;
/**
 * Background job slots after the task (JOB_WORDS words each: state, kind, arguments); a slot's
 * state goes FREE → POSTED (the caller) → RUNNING (whoever claims it) → JOB_DONE → FREE (the caller).
 */
const JOBS = TASK + TASK_WORDS, JOB_SLOTS = 32, JOB_WORDS = 8;
const FREE = 0, POSTED = 1, RUNNING = 2, JOB_DONE = 3;
const CONTROL_WORDS = JOBS + JOB_SLOTS * JOB_WORDS;
export const CONTROL_BYTES = CONTROL_WORDS * 4;
/** Background job kinds: winograd4Weights over all S filters (S, w, U). */
export const JOB_WINOGRAD4_WEIGHTS = 0;
// runJob and takeJob spell these numbers out (their source is also the workers'): keep them equal.
if (JOBS !== 40 || JOB_SLOTS !== 32 || JOB_WORDS !== 8 || CONTROL_WORDS !== 296 || JOBS_RUN !== 4) throw new Error('threads.ts: job layout changed without runJob/takeJob');
export const MAX_WORKERS = 48;

/**
 * Task kinds: a GEMM split by blocks of 4 rows, by 8-column panels, direct convolutions by blocks
 * of 4 output channels of an image, Winograd F(4×4) convolutions by runs of its tile chunks, and
 * its weight transforms by runs of groups of 4 filters, and the int8 quantized linear by runs of
 * its weight's 4-row groups.
 */
export const GEMM_ROWS = 0, GEMM_PANELS = 1, CONV_DIRECT = 2, WINOGRAD4 = 3, WINOGRAD4_WEIGHTS = 4, QLINEAR = 5;

/**
 * Runs chunk `i` of the round's task at `c[TASK..]` (kind, chunks, then the kernel's
 * arguments); chunk i of n covers units ⌊i·U/n⌋ to ⌊(i+1)·U/n⌋. Self-contained: its source is
 * also the workers' (Function.prototype.toString), so it may use only its arguments.
 */
function runChunk(k: KernelExports, c: Int32Array, i: number): void {
  const t = 8, kind = c[t], n = c[t + 1];
  if (kind === 4) {
    // winograd4Weights over S filters (see WasmHeap.winograd4Weights), units: groups of 4 filters.
    const S = c[t + 2], units = (S + 3) >> 2;
    const lo = Math.floor((units * i) / n) * 4, hi = Math.min(S, Math.floor((units * (i + 1)) / n) * 4);
    if (lo < hi) k.winograd4Weights(S, lo, hi, c[t + 3], c[t + 4]);
    return;
  }
  if (kind === 5) {
    // qlinear over G weight groups (see WasmHeap.qlinear): chunk i runs groups ⌊i·G/n⌋ to ⌊(i+1)·G/n⌋.
    const G = c[t + 2], lo = Math.floor((G * i) / n), hi = Math.floor((G * (i + 1)) / n);
    if (lo < hi) k.qlinear(lo, hi, c[t + 3], c[t + 4], c[t + 5], c[t + 6], c[t + 7], c[t + 8], c[t + 9], c[t + 10], c[t + 11], c[t + 12], c[t + 13]);
    return;
  }
  if (kind === 3) {
    // winograd4Conv over J chunks of tiles (see WasmHeap.winograd4Conv); split chunk i runs tile
    // chunks ⌊i·J/n⌋ to ⌊(i+1)·J/n⌋ in its own V, M and scratch blocks (base + i·stride).
    const J = c[t + 2], lo = Math.floor((J * i) / n), hi = Math.floor((J * (i + 1)) / n);
    if (lo < hi) {
      k.winograd4Conv(lo, hi, c[t + 3], c[t + 4], c[t + 5], c[t + 6], c[t + 7], c[t + 8], c[t + 9], c[t + 10], c[t + 11], c[t + 12], c[t + 13], c[t + 14],
        c[t + 15] + i * c[t + 16], c[t + 17] + i * c[t + 18], c[t + 19], c[t + 20], c[t + 21], c[t + 22] + i * c[t + 23]);
    }
    return;
  }
  if (kind === 2) {
    // convDirect over image-and-group pairs (see WasmHeap.convDirect), units: a pair's blocks of
    // 4 output channels; a chunk runs its units as one call per pair.
    const pairs = c[t + 2], G = c[t + 3], M = c[t + 4], K = c[t + 5], P = c[t + 12] * c[t + 13], blocks = (M + 3) >> 2, units = pairs * blocks;
    const hi = Math.floor((units * (i + 1)) / n);
    for (let u = Math.floor((units * i) / n); u < hi;) {
      const q = Math.floor(u / blocks), b0 = u - q * blocks, b1 = Math.min(blocks, b0 + hi - u);
      const m0 = b0 * 4, m1 = Math.min(M, b1 * 4);
      k.convDirect(m1 - m0, K, c[t + 6] + ((q % G) * M + m0) * K * 4, c[t + 7], c[t + 8] + q * c[t + 9], c[t + 10], c[t + 11], c[t + 12], c[t + 13], c[t + 14] + (q * M + m0) * P * 4);
      u += b1 - b0;
    }
    return;
  }
  // gemmPacked over M, N, K, a, lda, bp, C, ldc, accumulate.
  const M = c[t + 2], N = c[t + 3], K = c[t + 4], panels = (N + 7) >> 3;
  if (kind === 0) {
    const units = (M + 3) >> 2;
    const lo = Math.floor((units * i) / n) * 4, hi = Math.min(M, Math.floor((units * (i + 1)) / n) * 4);
    if (lo < hi) k.gemmPacked(lo, hi, 0, panels, N, K, c[t + 5], c[t + 6], c[t + 7], c[t + 8], c[t + 9], c[t + 10]);
  } else {
    const lo = Math.floor((panels * i) / n), hi = Math.floor((panels * (i + 1)) / n);
    if (lo < hi) k.gemmPacked(0, M, lo, hi, N, K, c[t + 5], c[t + 6], c[t + 7], c[t + 8], c[t + 9], c[t + 10]);
  }
}

/**
 * Claims and runs chunks until none is left (caller and workers alike). A claim is one atomic
 * add on CLAIM: an index below the round's chunk count is this thread's alone, and the round
 * cannot end (nor its task change) before that chunk is counted DONE, so the count and the
 * arguments are read after the claim. Self-contained, like runChunk.
 */
function drain(k: KernelExports, c: Int32Array, chunk: typeof runChunk): void {
  for (;;) {
    const i = Atomics.add(c, 1, 1);
    if (i >= 1 << 30) return;
    const n = c[9];
    if (i >= n) return;
    chunk(k, c, i);
    if (Atomics.add(c, 2, 1) + 1 === n) Atomics.notify(c, 2);
  }
}

/**
 * Runs background job slot `j` (its state already RUNNING, claimed by this thread), then marks
 * it done and wakes a caller waiting for it. Self-contained, like runChunk.
 */
function runJob(k: KernelExports, c: Int32Array, j: number): void {
  const at = 40 + j * 8; // JOBS + j·JOB_WORDS
  if (c[at + 1] === 0) k.winograd4Weights(c[at + 2], 0, c[at + 2], c[at + 3], c[at + 4]);
  Atomics.store(c, at, 3); // JOB_DONE
  Atomics.notify(c, at);
}

/** Claims and runs one posted background job, if any; false when none was left. Self-contained. */
function takeJob(k: KernelExports, c: Int32Array, run: typeof runJob): boolean {
  for (let j = 0; j < 32; j++) { // JOB_SLOTS
    if (Atomics.load(c, 40 + j * 8) === 1 && Atomics.compareExchange(c, 40 + j * 8, 1, 2) === 1) { // POSTED → RUNNING
      Atomics.add(c, 4, 1); // JOBS_RUN
      run(k, c, j);
      return true;
    }
  }
  return false;
}

/** The worker's program: instantiate, count itself ready, then help with every round, and run background jobs between rounds. */
function workerMain(data: WorkerData, spin: number, help: typeof drain, chunk: typeof runChunk, take: typeof takeJob, job: typeof runJob): void {
  const inst = new WebAssembly.Instance(data.module, { env: { memory: data.memory, abort: () => { throw new Error('wasm kernel abort'); } } });
  const k = inst.exports as unknown as KernelExports;
  const c = new Int32Array(data.memory.buffer, data.control, 296); // CONTROL_WORDS
  let seen = Atomics.load(c, 0);
  Atomics.add(c, 3, 1);
  for (;;) {
    // A round that began since the last one is helped at once; else spin a while, then sleep.
    let w = Atomics.load(c, 0);
    for (let s = 0; w === seen && s < spin; s++) w = Atomics.load(c, 0);
    if (w === seen) {
      Atomics.wait(c, 0, seen);
      w = Atomics.load(c, 0);
    }
    seen = w;
    help(k, c, chunk);
    // Jobs one at a time; a round that begins meanwhile (WAKE moves) is helped first.
    while (Atomics.load(c, 0) === seen && take(k, c, job));
  }
}

/**
 * Loads of the wake counter a worker spins for after a round before it sleeps (an Atomics.load
 * costs ~10–20 ns in Node 20: ~50 µs, so the rounds of one layer after another find it awake).
 */
const WORKER_SPIN = 4000;
/** Loads of DONE the caller spins for before it sleeps until the workers' chunks are done. */
const CALLER_SPIN = 2000;

/** The program a worker runs, as source text: `start(data)` begins serving. */
export const WORKER_PROGRAM = `(data) => (${workerMain.toString()})(data, ${WORKER_SPIN}, ${drain.toString()}, ${runChunk.toString()}, ${takeJob.toString()}, ${runJob.toString()})`;

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

/**
 * Runs `chunks` chunks of a task on this thread alone, for an instance without shared memory (no
 * pool), asking `stop` before each: false when it stopped early (see ThreadPool.run).
 */
export function runChunksHere(k: KernelExports, kind: number, chunks: number, args: readonly number[], stop?: () => boolean): boolean {
  const c = new Int32Array(TASK + TASK_WORDS);
  c[TASK] = kind;
  c[TASK + 1] = chunks;
  c.set(args, TASK + 2);
  for (let i = 0; i < chunks; i++) {
    if (stop?.()) return false;
    runChunk(k, c, i);
  }
  return true;
}

/** The workers of one shared-memory kernel instance. */
export class ThreadPool {
  private readonly c: Int32Array;
  /** Workers spawned so far (they start on the first split call). */
  started = 0;
  /** Atomics.wait is not allowed on a browser's main thread: spin there instead. */
  private readonly canBlock: boolean;

  constructor(private readonly module: WebAssembly.Module, private readonly memory: WebAssembly.Memory, private readonly control: number, private readonly k: KernelExports) {
    this.c = new Int32Array(memory.buffer, control, CONTROL_WORDS);
    this.c.fill(0);
    Atomics.store(this.c, CLAIM, CLOSED);
    this.canBlock = !!(globalThis as { process?: unknown }).process || typeof (globalThis as { document?: unknown }).document === 'undefined';
  }

  /** Kernel calls split over at least one worker so far (for tests and stats). */
  splits = 0;
  /** Chunks of split calls that workers ran, so far (the rest ran on the calling thread). */
  get workerChunks(): number { return this.helped; }
  private helped = 0;

  /** Whether workers can exist here at all (shared memory and a way to start them). */
  get available(): boolean { return threadHost() !== null; }

  /**
   * Runs `chunks` chunks of a task (`kind`, `args` as runChunk reads them) over `threads`
   * threads, the caller included. Workers are started on first use, and only those already
   * running are woken; with none, the caller runs every chunk (the same results). `stop`, asked
   * by the caller after each chunk it runs (a run's deadline): once it says true no chunk is
   * claimed any more, the round ends when the chunks already claimed are done, and run returns
   * false (the output is then incomplete); true when every chunk ran.
   */
  run(threads: number, kind: number, chunks: number, args: readonly number[], stop?: () => boolean): boolean {
    const c = this.c;
    const want = Math.min(threads - 1, MAX_WORKERS, chunks - 1);
    this.start(want);
    const helpers = Math.min(want, Atomics.load(c, READY));
    // CLAIM is CLOSED here, so no worker reads the task while it is written.
    c[TASK] = kind;
    c[TASK + 1] = chunks;
    c.set(args, TASK + 2);
    if (helpers <= 0) {
      for (let i = 0; i < chunks; i++) {
        if (stop?.()) return false;
        runChunk(this.k, c, i);
      }
      return true;
    }
    this.splits++;
    Atomics.store(c, DONE, 0);
    Atomics.store(c, CLAIM, 0);
    Atomics.add(c, WAKE, 1);
    Atomics.notify(c, WAKE, helpers);
    let mine = 0, stopped = false;
    for (let i = Atomics.add(c, CLAIM, 1); i < chunks; i = Atomics.add(c, CLAIM, 1), mine++) {
      runChunk(this.k, c, i);
      Atomics.add(c, DONE, 1);
      if (stop?.()) { stopped = true; break; }
    }
    if (stopped) {
      // Past the deadline: no chunk is claimed any more; wait (polling: the last chunk's notify
      // may never come) for the chunks already claimed, which no one else waits for.
      const claimed = Math.min(chunks, Atomics.exchange(c, CLAIM, CLOSED));
      for (let d = Atomics.load(c, DONE); d < claimed; d = Atomics.load(c, DONE)) if (this.canBlock) Atomics.wait(c, DONE, d, 1);
      return false;
    }
    // Every chunk is claimed: wait for those the workers still run.
    let spins = 0;
    for (let d = Atomics.load(c, DONE); d !== chunks; d = Atomics.load(c, DONE)) {
      if (this.canBlock && ++spins > CALLER_SPIN) Atomics.wait(c, DONE, d);
    }
    Atomics.store(c, CLAIM, CLOSED);
    this.helped += chunks - mine;
    return true;
  }

  /** Starts workers until `n` exist (they join in the background: nothing waits for them). */
  start(n: number): void {
    const host = threadHost();
    while (host && this.started < Math.min(n, MAX_WORKERS)) {
      host.spawn({ module: this.module, memory: this.memory, control: this.control });
      this.started++;
    }
  }

  /** Background jobs posted so far (for tests and stats), and how many a worker took. */
  jobsPosted = 0;
  get jobsByWorkers(): number { return Atomics.load(this.c, JOBS_RUN); }

  /**
   * Posts background job `kind` (args as runJob reads them) for an idle worker, starting one if
   * none exists; returns its slot, or -1 when no slot is free or no worker can exist (the caller
   * then does the work itself). Call finish(slot) or cancel(slot) exactly once afterwards.
   */
  post(kind: number, args: readonly number[]): number {
    if (!this.available) return -1;
    const c = this.c;
    let j = 0;
    while (j < JOB_SLOTS && Atomics.load(c, JOBS + j * JOB_WORDS) !== FREE) j++;
    if (j === JOB_SLOTS) return -1;
    this.start(1);
    const at = JOBS + j * JOB_WORDS;
    c[at + 1] = kind;
    c.set(args, at + 2);
    this.jobsPosted++;
    Atomics.store(c, at, POSTED);
    Atomics.add(c, WAKE, 1);
    Atomics.notify(c, WAKE, 1);
    return j;
  }

  /** Whether job `slot` is complete (finish() then returns at once). */
  done(slot: number): boolean { return Atomics.load(this.c, JOBS + slot * JOB_WORDS) === JOB_DONE; }

  /**
   * Makes job `slot` complete and frees its slot: runs it here when no worker has claimed it,
   * else waits for the worker running it.
   */
  finish(slot: number): void {
    const c = this.c, at = JOBS + slot * JOB_WORDS;
    if (Atomics.compareExchange(c, at, POSTED, RUNNING) === POSTED) runJob(this.k, c, slot);
    for (let s = Atomics.load(c, at), spins = 0; s !== JOB_DONE; s = Atomics.load(c, at)) {
      if (this.canBlock && ++spins > CALLER_SPIN) Atomics.wait(c, at, s);
    }
    Atomics.store(c, at, FREE);
  }

  /** Drops job `slot`: unrun if no worker has claimed it, else waits for the worker running it; frees the slot. */
  cancel(slot: number): void {
    const c = this.c, at = JOBS + slot * JOB_WORDS;
    if (Atomics.compareExchange(c, at, POSTED, FREE) === POSTED) return;
    this.finish(slot);
  }
}
