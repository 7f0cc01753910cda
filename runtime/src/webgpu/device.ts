/// <reference types="@webgpu/types" />
// The WebGPU device (runtime/src/device.ts's contract). Invariants: dispatch only records work
// — every kernel of a run goes into one command encoder (one compute pass between reads), which
// is submitted when the host needs data (read) or writes a buffer (write); pipelines come only
// from the cache filled by addKernels, which compiles every kernel asynchronously up front, so a
// run never compiles (one exception: the main kernel of a record with a packed variant compiles
// at its first use, when a weight the variant cannot take arrives); a kernel's dims reach it through a uniform "meta" block (kernel.ts), so
// one pipeline serves every shape (a data-dependent dim, such as masked_select's count, arrives
// as `dataDims` and sizes only the output). Bool tensors live as one u32 per element on the GPU.
// A kernel record's `packed` variant reads one input in a packed layout: the device computes it
// with that layout's packer (packers.ts) once per pinned constant, keeps it until the constant is
// freed, written or the device destroyed, and packs an unpinned input per dispatch.
// While a recording is open (record()), every dispatch and copy is also kept with its pipeline and
// bind groups, and buffers freed meanwhile stay with the recording instead of going back to the
// pool, so replay() can record the same commands on the same buffers again with no per-op work.
// A write during a recording is kept with its data and made again by a replay: within a run the
// runtime writes only what the inputs' shapes and scalar values fix (to_tensor of a host scalar),
// and a replay happens only when those are the recorded ones.

import { getOp, isFloating, isViewNode, numel, type Attrs, type DType, type KernelContext, type OpDef, type TypedArray } from '@kiln/ir-spec';
import type { Device, DeviceRecorder, DeviceTensor, DispatchTimer, RecordedWork } from '../device.js';
import { RuntimeError } from '../errors.js';
import { findGpu, requestAdapter } from './gpu.js';
import { gridSize, isKernelRecord, kernelKey, metaWords, splitGrid, type KernelRecord } from './kernel.js';
import { BufferPool, type PoolMemory } from './pool.js';
import { GpuProfiler, type KernelTime } from './profiler.js';
import { kernelStorageBuffers } from './bindings.js';
import { PACKERS } from './packers.js';
import { checksIndices, INDEX_ERROR_BYTES, indexCheckOf, indexError, type IndexCheck } from './index-errors.js';

export interface WebGpuDeviceOptions {
  /** The GPU object (default: navigator.gpu, or Dawn in Node). */
  readonly gpu?: GPU;
  /** Kernels to compile now (more can be added with addKernels). */
  readonly kernels?: readonly unknown[];
  /**
   * Time every dispatch on the GPU with timestamp queries (see profile(); a profiled run's nodes
   * then carry GPU times): `true` needs the adapter's `timestamp-query` feature (a BACKEND
   * RuntimeError without it); `'if-available'` times only where the adapter has it.
   */
  readonly profile?: boolean | 'if-available';
  /**
   * How addKernels builds pipelines: `parallel` (default) starts createComputePipelineAsync for
   * every kernel at once and awaits them together, so the GPU driver compiles them concurrently
   * and no run compiles a shader; `serial` builds them one after another with the synchronous
   * createComputePipeline (the reference for tests and for timing what parallel saves).
   */
  readonly compile?: 'parallel' | 'serial';
}

/** How long one pipeline took to compile (WebGpuStats.compileTimes). */
export interface KernelCompileTime {
  /** The record's name, with `.few_rows` or `.<layout>` for a variant, `pack_<layout>` for a packer. */
  readonly name: string;
  /** The kernel record's key (the packer's layout for a packer). */
  readonly key: string;
  /**
   * Milliseconds from the start of its compilation to the pipeline being ready. Under
   * `compile: 'parallel'` the kernels of one addKernels call compile concurrently, so these
   * overlap and their sum exceeds the call's wall time (WebGpuStats.compileMs).
   */
  readonly ms: number;
  /** `load`: compiled by addKernels; `first-use`: a deferred kernel compiled by the dispatch that needed it. */
  readonly when: 'load' | 'first-use';
}

/** Counters of a WebGPU device, for benchmarks and tests. */
export interface WebGpuStats {
  /** Compute dispatches recorded since the device was created. */
  dispatches: number;
  /** Pipelines compiled. */
  kernelsCreated: number;
  /** Command buffers submitted. */
  submits: number;
  /** Milliseconds spent compiling pipelines (wall time of the addKernels calls and first-use compiles). */
  compileMs: number;
  /** Every pipeline compiled, with its time, in the order they became ready. */
  compileTimes: KernelCompileTime[];
  /**
   * GPU buffers the pool has created (a reuse does not count): once a graph has run at a shape,
   * running it again at that shape creates none — the pool then serves every intermediate from
   * the buffers of the previous run, as a static memory plan's slots would.
   */
  buffersCreated: number;
  /** Host arrays copied in by upload() (each through a transient staging buffer, recorded, no submit). */
  uploads: number;
  /** Buffers mapped for reading (each read maps one staging buffer and waits for the GPU). */
  maps: number;
  /** Packer dispatches (packers.ts): one per pinned constant and layout, plus one per dispatch of an unpinned packed input. */
  packs: number;
  /** Bytes of the packed forms the device keeps for pinned constants. */
  packedBytes: number;
}

export interface WebGpuDevice extends Device<GPUBuffer> {
  readonly backend: 'webgpu';
  readonly gpu: GPUDevice;
  readonly stats: WebGpuStats;
  /** Compiles kernel records (a `.tsgraph`'s `kernels`) into the pipeline cache, all at once. */
  addKernels(records: readonly unknown[]): Promise<void>;
  /** Whether a pipeline for this key is cached. */
  hasKernel(key: string): boolean;
  /**
   * Compiles one kernel record now, synchronously (eager mode meets a new op signature in the
   * middle of a step and cannot await). Its packed variant is dropped: eager tensors are never
   * pinned, so the main kernel serves every call.
   */
  addKernelNow(record: KernelRecord): void;
  /**
   * Copies host data into `t` AFTER the kernels recorded so far, without submitting them: the
   * data goes into a fresh mapped staging buffer now, and a recorded copy moves it (write()
   * instead submits the pending kernels first and writes through the queue).
   */
  upload(t: DeviceTensor<GPUBuffer>, data: TypedArray): void;
  /** A buffer from the pool (Device.alloc); `fresh`: a new one even when one is cached (long-lived tensors, BufferPool.take). */
  alloc(dtype: DType, shape: readonly number[], opts?: { fresh?: boolean }): DeviceTensor<GPUBuffer>;
  /** Records a copy of `bytes` bytes from `src` to `dst` after the kernels recorded so far. */
  copy(src: GPUBuffer, dst: GPUBuffer, bytes: number): void;
  /**
   * Records one dispatch of a hand-written kernel (an optimizer's fused step): compiled once per
   * `kernel.key`; binding 0 is a uniform holding `params`, bindings 1.. are `buffers` in order;
   * `items` work items, 64 per workgroup.
   */
  runKernel(kernel: { readonly key: string; readonly wgsl: string }, buffers: readonly GPUBuffer[], params: ArrayBuffer, items: number): void;
  /** Submits the recorded commands and resolves when the GPU has finished them. */
  synchronize(): Promise<void>;
  /** The buffer pool's bytes: allocated (handed out), reserved (created, not destroyed), peak. */
  memory(): PoolMemory;
  /** Starts the pool's peak over from what is allocated now. */
  resetPeakMemory(): void;
  /** Destroys the pool's cached (unused) buffers; buffers in use are kept. */
  emptyCache(): void;
  /**
   * GPU time per kernel since the device was created or the profile was reset (createWebGpuDevice
   * with `profile: true`; otherwise a BACKEND RuntimeError).
   */
  profile(opts?: { reset?: boolean }): Promise<KernelTime[]>;
  /** Releases pooled buffers and the GPU device. */
  destroy(): void;
}


interface CachedKernel {
  readonly record: KernelRecord;
  /** Null until first needed for a record with a packed variant (see addKernels). */
  pipeline: GPUComputePipeline | null;
  /** The record's fewRows alternative, compiled. */
  readonly fewRows: GPUComputePipeline | null;
  /** The record's packed alternative, compiled. */
  readonly packed: GPUComputePipeline | null;
  /** The kernel indexes with data and reports bad indices through an index-error buffer (index-errors.ts). */
  readonly checksIndices: boolean;
}

/** The WGSL line an error points at, for the message. */
function wgslLine(wgsl: string, line: number): string {
  return wgsl.split('\n')[line - 1]?.trim() ?? '';
}

/** A pipeline compiled with createComputePipelineAsync, its time appended to `times` when ready. */
async function compile(gpu: GPUDevice, r: KernelRecord, times: KernelCompileTime[], serial = false): Promise<GPUComputePipeline> {
  const t0 = performance.now();
  const pipeline = await (serial ? compileSerial : compileAsync)(gpu, r);
  times.push({ name: r.name, key: r.key, ms: performance.now() - t0, when: 'load' });
  return pipeline;
}

/** The synchronous path: createComputePipeline, errors read from an error scope. */
async function compileSerial(gpu: GPUDevice, r: KernelRecord): Promise<GPUComputePipeline> {
  gpu.pushErrorScope('validation');
  const module = gpu.createShaderModule({ code: r.wgsl, label: r.name });
  const pipeline = gpu.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' }, label: r.name });
  const err = await gpu.popErrorScope();
  if (err) await compileAsync(gpu, r); // names the WGSL line when the shader itself is wrong
  if (err) throw new RuntimeError('GRAPH', `WGSL kernel '${r.name}' (key ${r.key}) could not become a pipeline: ${err.message}`);
  return pipeline;
}

async function compileAsync(gpu: GPUDevice, r: KernelRecord): Promise<GPUComputePipeline> {
  const module = gpu.createShaderModule({ code: r.wgsl, label: r.name });
  const info = await module.getCompilationInfo();
  const errors = info.messages.filter((m) => m.type === 'error');
  if (errors.length) {
    const m = errors[0];
    throw new RuntimeError('GRAPH', `WGSL kernel '${r.name}' (key ${r.key}) does not compile: line ${m.lineNum}:${m.linePos}: ${m.message}\n  ${m.lineNum}| ${wgslLine(r.wgsl, m.lineNum)}`);
  }
  gpu.pushErrorScope('validation');
  let pipeline: GPUComputePipeline;
  try {
    pipeline = await gpu.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: 'main' }, label: r.name });
  } catch (e) {
    await gpu.popErrorScope();
    throw new RuntimeError('GRAPH', `WGSL kernel '${r.name}' (key ${r.key}) could not become a pipeline: ${e instanceof Error ? e.message : String(e)}`, undefined, { cause: e });
  }
  const err = await gpu.popErrorScope();
  if (err) throw new RuntimeError('GRAPH', `WGSL kernel '${r.name}' (key ${r.key}) could not become a pipeline: ${err.message}`);
  return pipeline;
}

/**
 * Creates a WebGPU device and compiles the given kernels.
 *
 * @example
 * ```ts
 * const device = await createWebGpuDevice({ kernels: header.kernels });
 * const model = createModel(graph, { device });
 * const [y] = await model.run([x]);
 * ```
 */
export async function createWebGpuDevice(opts: WebGpuDeviceOptions = {}): Promise<WebGpuDevice> {
  const platform = opts.gpu ?? await findGpu();
  const adapter = await requestAdapter(platform);
  if (opts.profile === true && !adapter.features.has('timestamp-query')) {
    throw new RuntimeError('BACKEND', "profile: true needs the WebGPU adapter feature 'timestamp-query', which this adapter lacks (in Chrome it may need --enable-dawn-features=allow_unsafe_apis)");
  }
  const timed = !!opts.profile && adapter.features.has('timestamp-query');
  const gpu = await adapter.requestDevice({
    requiredFeatures: timed ? ['timestamp-query'] : [],
    requiredLimits: {
      maxStorageBuffersPerShaderStage: adapter.limits.maxStorageBuffersPerShaderStage,
      maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
      maxBufferSize: adapter.limits.maxBufferSize,
    },
  });
  const features = new Set<string>((platform as { wgslLanguageFeatures?: Iterable<string> }).wgslLanguageFeatures ?? []);
  const device = new GpuDevice(gpu, timed ? new GpuProfiler(gpu) : null, opts.compile ?? 'parallel', features);
  if (opts.kernels) await device.addKernels(opts.kernels);
  return device;
}

/** A dispatch (pipeline, bind groups, workgroups), a buffer copy or a host step, as a recording keeps it. */
type RecordedCommand =
  | { readonly pipeline: GPUComputePipeline; readonly group: GPUBindGroup; readonly x: number; readonly y: number; readonly check: IndexCheck | undefined }
  | { readonly src: GPUBuffer; readonly dst: GPUBuffer; readonly bytes: number }
  /** Host work that is part of the run (a random op's draw and upload, a write). */
  | { readonly host: () => void };

interface Recording {
  readonly commands: RecordedCommand[];
  /** Buffers freed while recording: the commands may name them, so they stay out of the pool until release(). */
  readonly kept: GPUBuffer[];
  refused: string | undefined;
}

const BYTES_PER_ELEMENT = 4; // f32, i32, and bool as u32 (int8: four per u32, so at most this)

class GpuDevice implements WebGpuDevice {
  readonly backend = 'webgpu' as const;
  /** Above any GPU's float32 rate (an H100 does about 3·10^13 multiply-adds a second), with room for fast algorithms. */
  readonly peakWorkRate = 4e14;
  readonly stats: WebGpuStats = { dispatches: 0, kernelsCreated: 0, submits: 0, compileMs: 0, compileTimes: [], buffersCreated: 0, uploads: 0, maps: 0, packs: 0, packedBytes: 0 };
  private readonly pool: BufferPool;
  private readonly kernels = new Map<string, CachedKernel>();
  private readonly metas = new Map<string, GPUBuffer>();
  /** Buffers of pinned tensors (graph constants): never written while pinned. */
  private readonly pinned = new Set<GPUBuffer>();
  /** Packed forms of pinned buffers, by layout and shape (a view may show one buffer under two shapes). */
  private readonly packedForms = new Map<GPUBuffer, Map<string, GPUBuffer>>();
  /** Packer pipelines, by layout (compiled by addKernels when a record needs one). */
  private readonly packers = new Map<string, GPUComputePipeline>();
  /** Index-error buffers bound since the last read, in dispatch order, and cleared ones to reuse. */
  private readonly indexChecks: { readonly buffer: GPUBuffer; readonly check: IndexCheck }[] = [];
  private readonly freeIndexBuffers: GPUBuffer[] = [];
  private encoder: GPUCommandEncoder | null = null;
  /** Hand-written kernels (runKernel), by key. */
  private readonly custom = new Map<string, GPUComputePipeline>();
  /** Per-call uniforms of recorded runKernel dispatches, destroyed when the encoder is submitted. */
  private readonly retired: GPUBuffer[] = [];
  private pass: GPUComputePassEncoder | null = null;
  /** The open recording (record()), if any. */
  private recording: Recording | null = null;
  private readonly maxPerDim: number;
  private readonly maxBinding: number;

  constructor(readonly gpu: GPUDevice, private readonly profiler: GpuProfiler | null, private readonly compileMode: 'parallel' | 'serial',
    /** The platform's WGSL language features (GPU.wgslLanguageFeatures), for variants that need one. */
    private readonly languageFeatures: ReadonlySet<string> = new Set()) {
    this.pool = new BufferPool(gpu);
    this.maxPerDim = gpu.limits.maxComputeWorkgroupsPerDimension;
    this.maxBinding = gpu.limits.maxStorageBufferBindingSize;
    const p = profiler;
    this.dispatchTimer = p ? {
      mark: () => p.dispatches(),
      hold: () => {
        p.keepStamps++;
        let held = true;
        return () => { if (held) { held = false; p.keepStamps--; } };
      },
      take: (from, to) => { this.flush(); return p.takeStamps(from, to); },
    } : undefined;
  }

  readonly dispatchTimer: DispatchTimer | undefined;

  async addKernels(records: readonly unknown[]): Promise<void> {
    const t0 = performance.now();
    const fresh: KernelRecord[] = [];
    const limit = this.gpu.limits.maxStorageBuffersPerShaderStage;
    records.forEach((r, i) => {
      if (!isKernelRecord(r)) throw new RuntimeError('GRAPH', `kernels[${i}] is not a WGSL kernel record ({key, name, wgsl, grid}); save the file again with kiln's generateWgsl kernels`);
      const n = kernelStorageBuffers(r);
      if (n > limit) {
        throw new RuntimeError('GRAPH', `WGSL kernel '${r.name}' (key ${r.key}) binds ${n} storage buffers, but this WebGPU adapter allows ${limit} per shader stage (maxStorageBuffersPerShaderStage); ` +
          `compile the model again for this limit (jit.optimizeForInference(m, { maxStorageBuffers: ${limit} }), whose fusion splits wider kernels) or use backend 'cpu'`);
      }
      if (r.packed && !PACKERS.has(r.packed.layout)) {
        throw new RuntimeError('GRAPH', `WGSL kernel '${r.name}' (key ${r.key}) reads input ${r.packed.input} in layout '${r.packed.layout}', which this runtime cannot pack (it packs ${[...PACKERS.keys()].join(', ')}); update @kiln/runtime or compile the model again with this version`);
      }
      if (!this.kernels.has(r.key) && !fresh.some((f) => f.key === r.key)) fresh.push(r);
    });
    const layouts = [...new Set(fresh.flatMap((r) => (r.packed && !this.packers.has(r.packed.layout) && (!PACKERS.get(r.packed.layout)!.requires || this.languageFeatures.has(PACKERS.get(r.packed.layout)!.requires!)) ? [r.packed.layout] : [])))];
    // A record with a packed variant runs that variant for the weights it was made for (a key
    // serves several nodes, so the main kernel stays as the fallback for other shapes): its main
    // kernel compiles at its first use instead, so loading pays for one conv kernel, not two.
    // A variant whose layout needs a WGSL language feature this platform lacks is never compiled:
    // its main kernel runs instead (compiled at first use, as below).
    const usable = (layout: string) => { const f = PACKERS.get(layout)!.requires; return !f || this.languageFeatures.has(f); };
    const jobs: (KernelRecord | null)[] = fresh.flatMap((r) => [
      r.packed && usable(r.packed.layout) ? null : r,
      r.fewRows ? { ...r, name: `${r.name}.few_rows`, wgsl: r.fewRows.wgsl, grid: r.fewRows.grid } : null,
      r.packed && usable(r.packed.layout) ? { ...r, name: `${r.name}.${r.packed.layout}`, wgsl: r.packed.wgsl, grid: r.packed.grid } : null,
    ]);
    jobs.push(...layouts.map((l) => ({ key: `pack ${l}`, name: `pack_${l}`, wgsl: PACKERS.get(l)!.wgsl, grid: { tile: [], per: 64 } })));
    const built = await this.compileAll(jobs);
    const pipelines = built.slice(0, 3 * fresh.length), packers = built.slice(3 * fresh.length) as GPUComputePipeline[];
    layouts.forEach((l, i) => this.packers.set(l, packers[i]));
    fresh.forEach((r, i) => {
      this.kernels.set(r.key, { record: r, pipeline: pipelines[3 * i], fewRows: pipelines[3 * i + 1], packed: pipelines[3 * i + 2], checksIndices: checksIndices(r.wgsl) });
    });
    this.stats.kernelsCreated += pipelines.filter((p) => p).length + packers.length;
    this.stats.compileMs += performance.now() - t0;
  }

  /**
   * Pipelines for `jobs` (null stays null), in order: under `parallel` every compile starts at
   * once and they are awaited together; under `serial` one after another.
   */
  private async compileAll(jobs: readonly (KernelRecord | null)[]): Promise<(GPUComputePipeline | null)[]> {
    const times = this.stats.compileTimes;
    if (this.compileMode === 'parallel') return Promise.all(jobs.map((r) => (r ? compile(this.gpu, r, times) : null)));
    const out: (GPUComputePipeline | null)[] = [];
    for (const r of jobs) out.push(r ? await compile(this.gpu, r, times, true) : null);
    return out;
  }

  hasKernel(key: string): boolean { return this.kernels.has(key); }

  addKernelNow(record: KernelRecord): void {
    if (this.kernels.has(record.key)) return;
    const { packed: _packed, ...r } = record;
    const pipeline = this.compileNow(r);
    const fewRows = r.fewRows ? this.compileNow({ ...r, name: `${r.name}.few_rows`, wgsl: r.fewRows.wgsl, grid: r.fewRows.grid }) : null;
    this.kernels.set(r.key, { record: r, pipeline, fewRows, packed: null, checksIndices: checksIndices(r.wgsl) });
  }

  upload(t: DeviceTensor<GPUBuffer>, data: TypedArray): void {
    const n = numel(t.shape);
    if (data.length !== n) throw new Error(`upload: ${data.length} elements into a tensor of ${n}`);
    if (n === 0) return;
    this.refuseRecording('a host array was uploaded');
    const bytes = n * BYTES_PER_ELEMENT;
    const staging = this.gpu.createBuffer({ size: Math.ceil(bytes / 4) * 4, usage: GPUBufferUsage.COPY_SRC, mappedAtCreation: true });
    const words = t.dtype === 'bool' ? Uint32Array.from(data as Uint8Array) : data;
    new Uint8Array(staging.getMappedRange()).set(new Uint8Array(words.buffer, words.byteOffset, bytes));
    staging.unmap();
    this.retired.push(staging);
    this.stats.uploads++;
    this.copy(staging, t.buffer, bytes);
  }

  copy(src: GPUBuffer, dst: GPUBuffer, bytes: number): void {
    if (bytes <= 0) return;
    this.endPass();
    this.commands().copyBufferToBuffer(src, 0, dst, 0, bytes);
    this.recording?.commands.push({ src, dst, bytes });
  }

  runKernel(kernel: { readonly key: string; readonly wgsl: string }, buffers: readonly GPUBuffer[], params: ArrayBuffer, items: number): void {
    let pipeline = this.custom.get(kernel.key);
    if (!pipeline) {
      pipeline = this.compileNow({ key: kernel.key, name: kernel.key, wgsl: kernel.wgsl, grid: { tile: [], per: 64 } });
      this.custom.set(kernel.key, pipeline);
    }
    if (items === 0) return;
    this.refuseRecording(`hand-written kernel ${kernel.key} takes fresh parameters each call`);
    // Parameters change every call (Adam's bias corrections): a fresh uniform, destroyed once submitted.
    const uniform = this.gpu.createBuffer({ size: Math.max(16, Math.ceil(params.byteLength / 16) * 16), usage: GPUBufferUsage.UNIFORM, mappedAtCreation: true });
    new Uint8Array(uniform.getMappedRange()).set(new Uint8Array(params));
    uniform.unmap();
    this.retired.push(uniform);
    const entries: GPUBindGroupEntry[] = [{ binding: 0, resource: { buffer: uniform } }, ...buffers.map((b, i) => ({ binding: i + 1, resource: { buffer: b } }))];
    const [x, y] = splitGrid(Math.ceil(items / 64), this.maxPerDim);
    this.encode(pipeline, this.gpu.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries }), x, y);
    this.stats.dispatches++;
  }

  async synchronize(): Promise<void> {
    this.flush();
    await this.gpu.queue.onSubmittedWorkDone();
  }

  memory(): PoolMemory { return this.pool.memory(); }
  resetPeakMemory(): void { this.pool.resetPeak(); }
  emptyCache(): void { this.flush(); this.pool.trim(); } // recorded commands may still use pooled buffers: submit them before destroying

  alloc(dtype: DType, shape: readonly number[], opts: { fresh?: boolean } = {}): DeviceTensor<GPUBuffer> {
    const bytes = numel(shape) * BYTES_PER_ELEMENT;
    if (bytes > this.maxBinding) {
      throw new RuntimeError('TOO_LARGE', `a ${dtype} tensor of shape [${shape.join(',')}] needs ${bytes} bytes, over this WebGPU device's maxStorageBufferBindingSize of ${this.maxBinding}; use a smaller batch or backend: 'cpu'`);
    }
    const buffer = this.pool.take(bytes, opts.fresh);
    this.stats.buffersCreated = this.pool.created;
    return { buffer, shape: [...shape], dtype };
  }

  write(t: DeviceTensor<GPUBuffer>, data: TypedArray): void {
    const n = numel(t.shape);
    if (data.length !== n) throw new Error(`write: ${data.length} elements into a tensor of ${n}`);
    if (this.recording) { const copy = data.slice() as TypedArray; this.hostStep(() => this.write(t, copy)); return; }
    this.flush(); // pending kernels may still read this (pooled) buffer's old contents
    this.dropPacked(t.buffer); // packed from the old contents
    if (t.dtype === 'int8') {
      // Four int8 per u32 word, element i in byte i % 4 of word i / 4 (little-endian), zero padded.
      const bytes = new Uint8Array(Math.ceil(n / 4) * 4);
      bytes.set(new Uint8Array(data.buffer, data.byteOffset, n));
      if (n > 0) this.gpu.queue.writeBuffer(t.buffer, 0, bytes.buffer, 0, bytes.length);
      return;
    }
    const words = t.dtype === 'bool' ? Uint32Array.from(data as Uint8Array) : data;
    if (n > 0) this.gpu.queue.writeBuffer(t.buffer, 0, words.buffer, words.byteOffset, n * BYTES_PER_ELEMENT);
  }

  async read(t: DeviceTensor<GPUBuffer>): Promise<TypedArray> {
    const n = numel(t.shape);
    const bytes = Math.max(4, n * BYTES_PER_ELEMENT);
    // The index-error buffers of the kernels since the last read come back in the same copy.
    const checks = this.indexChecks.splice(0);
    const at = Math.ceil(bytes / 8) * 8;
    const staging = this.gpu.createBuffer({ size: at + checks.length * INDEX_ERROR_BYTES, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    this.endPass();
    this.commands().copyBufferToBuffer(t.buffer, 0, staging, 0, bytes);
    checks.forEach((c, k) => this.commands().copyBufferToBuffer(c.buffer, 0, staging, at + k * INDEX_ERROR_BYTES, INDEX_ERROR_BYTES));
    this.flush();
    this.stats.maps++;
    await staging.mapAsync(GPUMapMode.READ);
    const mapped = staging.getMappedRange();
    const raw = mapped.slice(0, n * BYTES_PER_ELEMENT);
    const flags = new Int32Array(mapped.slice(at, at + checks.length * INDEX_ERROR_BYTES));
    staging.unmap();
    staging.destroy();
    if (checks.length) {
      const zero = new Uint32Array(2);
      for (const c of checks) { this.gpu.queue.writeBuffer(c.buffer, 0, zero); this.freeIndexBuffers.push(c.buffer); }
      const bad = checks.findIndex((_, k) => flags[2 * k] !== 0);
      if (bad >= 0) throw indexError(checks[bad].check, flags[2 * bad + 1]);
    }
    if (isFloating(t.dtype)) return new Float32Array(raw);
    if (t.dtype === 'int32') return new Int32Array(raw);
    if (t.dtype === 'int8') return new Int8Array(raw, 0, n);
    return Uint8Array.from(new Uint32Array(raw), (v) => (v !== 0 ? 1 : 0));
  }

  /** A cleared index-error buffer for a dispatch of `op`, read back (and cleared again) at the next read. */
  private indexErrorBuffer(check: IndexCheck): GPUBuffer {
    const buffer = this.freeIndexBuffers.pop()
      ?? this.gpu.createBuffer({ size: INDEX_ERROR_BYTES, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST, label: 'index errors' });
    this.indexChecks.push({ buffer, check });
    return buffer;
  }

  dispatch(op: string, inputs: readonly (DeviceTensor<GPUBuffer> | null)[], attrs: Attrs, dataDims: Readonly<Record<string, number>> = {}, kernel?: KernelContext): DeviceTensor<GPUBuffer>[] {
    const def = getOp(op);
    const types = def.infer(inputs.map((t) => (t ? { dtype: t.dtype, shape: t.shape } : null)), attrs);
    const shapes = types.map((t, i) => t.shape.map((d) => {
      if (typeof d === 'number') return d;
      const n = Object.hasOwn(dataDims, d) ? dataDims[d] : undefined;
      if (n === undefined) throw new Error(`result ${i} of ${op} has the data-dependent dim '${d}', which this dispatch was not given; run it through the executor (which reads it first) or use backend: 'cpu'`);
      return n;
    }));
    // A view (the op entry's `view`): the result is the input's buffer under a new shape.
    if (isViewNode(op, attrs)) return [{ buffer: inputs[0]!.buffer, shape: shapes[0], dtype: types[0].dtype }];
    if (def.random) return this.drawOnHost(def, inputs, attrs, types.map((t, i) => this.alloc(t.dtype, shapes[i])), kernel);
    const key = kernelKey(op, inputs.map((t) => (t ? { dtype: t.dtype, rank: t.shape.length } : null)), attrs, kernel?.regions);
    const k = this.kernels.get(key);
    if (!k) throw new Error(`no WGSL kernel with key ${key} was compiled for this device; save the graph with its WGSL kernels (kiln's generateWgsl, stored in the .tsgraph) or use backend: 'cpu'`);
    const outs = types.map((t, i) => this.alloc(t.dtype, shapes[i]));
    const out0 = shapes[0];
    const rows = out0.length ? numel(out0) / Math.max(out0[out0.length - 1], 1) : 1;
    const pk = k.record.packed, packedInput = pk ? inputs[pk.input] : null;
    const packed = k.packed && pk && packedInput && PACKERS.get(pk.layout)!.accepts(packedInput.shape) ? { pipeline: k.packed, grid: pk.grid } : null;
    const few = !packed && k.fewRows && k.record.fewRows && rows <= k.record.fewRows.maxRows ? { pipeline: k.fewRows, grid: k.record.fewRows.grid } : null;
    const variant = packed ?? few;
    const pipeline = variant ? variant.pipeline : (k.pipeline ??= this.compileNow(k.record));
    const total = gridSize(variant ? variant.grid : k.record.grid, out0);
    if (total === 0) return outs;
    const [x, y] = splitGrid(total, this.maxPerDim);
    // The packed variant binds the packed form in place of its input; the dims block keeps the input's dims.
    const temp = packed && packedInput && !this.pinned.has(packedInput.buffer);
    const swap = packed && packedInput ? { to: this.packedBuffer(packedInput, pk!.layout) } : null;
    const entries: GPUBindGroupEntry[] = [{ binding: 0, resource: { buffer: this.meta(metaWords(total, inputs, outs)) } }];
    inputs.forEach((t, i) => { if (t) entries.push({ binding: entries.length, resource: { buffer: swap && i === pk!.input ? swap.to : t.buffer } }); });
    for (const t of outs) entries.push({ binding: entries.length, resource: { buffer: t.buffer } });
    const group = this.gpu.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries });
    this.encode(pipeline, group, x, y, k.record.name, k.checksIndices && !variant ? indexCheckOf(op, attrs, inputs[0]!.shape) : undefined);
    this.stats.dispatches++;
    // Commands run in order, so a later dispatch may take the temporary buffer back from the pool.
    if (temp && swap) this.release(swap.to);
    return outs;
  }

  /**
   * A random op: drawn on the host from the run's generator (the stream CPU tensors use, so a seed
   * gives the same numbers on every device) and uploaded into `outs`. A recording keeps the draw
   * itself, so each replay draws afresh, in the same order as a run would.
   */
  private drawOnHost(def: OpDef, inputs: readonly (DeviceTensor<GPUBuffer> | null)[], attrs: Attrs, outs: DeviceTensor<GPUBuffer>[], kernel?: KernelContext): DeviceTensor<GPUBuffer>[] {
    const stubs = inputs.map((t) => t && { data: new Float32Array(0), shape: t.shape, dtype: t.dtype });
    this.hostStep(() => def.cpu(stubs, attrs, kernel ?? {}).forEach((o, i) => this.upload(outs[i], o.data)));
    return outs;
  }

  /**
   * Runs host work (a draw and its upload, a write) now; an open recording keeps the work itself
   * (its own uploads and writes are not commands of their own), so a replay does it again, in order.
   */
  private hostStep(step: () => void): void {
    const rec = this.recording;
    this.recording = null;
    try { step(); } finally { this.recording = rec; }
    rec?.commands.push({ host: step });
  }

  /** A record's main kernel compiled now, synchronously (the deferred fallback of a packed variant). */
  private compileNow(r: KernelRecord): GPUComputePipeline {
    const t0 = performance.now();
    const module = this.gpu.createShaderModule({ code: r.wgsl, label: r.name });
    const pipeline = this.gpu.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' }, label: r.name });
    const ms = performance.now() - t0;
    this.stats.kernelsCreated++;
    this.stats.compileMs += ms;
    this.stats.compileTimes.push({ name: r.name, key: r.key, ms, when: 'first-use' });
    return pipeline;
  }

  pin(t: DeviceTensor<GPUBuffer>): void {
    this.pinned.add(t.buffer);
  }

  /**
   * `t` packed in `layout`: the kept form of a pinned buffer (made at its first use), else a
   * fresh pooled buffer the caller gives back after recording its dispatch.
   */
  private packedBuffer(t: DeviceTensor<GPUBuffer>, layout: string): GPUBuffer {
    const keep = this.pinned.has(t.buffer), form = `${layout} ${t.shape.join(',')}`;
    const hit = keep ? this.packedForms.get(t.buffer)?.get(form) : undefined;
    if (hit) return hit;
    const p = PACKERS.get(layout)!;
    const bytes = numel(p.shape(t.shape)) * BYTES_PER_ELEMENT;
    const dst = keep ? this.gpu.createBuffer({ size: Math.max(16, bytes), usage: GPUBufferUsage.STORAGE, label: `packed ${layout}` }) : this.pool.take(bytes);
    const items = p.items(t.shape), groups = Math.ceil(items / 64);
    const [gx, gy] = splitGrid(Math.max(groups, 1), this.maxPerDim);
    const [z, w] = p.params(t.shape);
    const pipeline = this.packers.get(layout)!;
    const bindGroup = this.gpu.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: [{ binding: 0, resource: { buffer: this.meta(new Uint32Array([items, gx, z, w])) } }, { binding: 1, resource: { buffer: t.buffer } }, { binding: 2, resource: { buffer: dst } }],
    });
    this.encode(pipeline, bindGroup, gx, gy, `pack_${layout}`);
    this.stats.packs++;
    if (keep) {
      let forms = this.packedForms.get(t.buffer);
      if (!forms) this.packedForms.set(t.buffer, forms = new Map());
      forms.set(form, dst);
      this.stats.packedBytes += dst.size;
    }
    return dst;
  }

  /** Destroys the packed forms kept for `buffer` (its contents change or it is freed). */
  private dropPacked(buffer: GPUBuffer): void {
    const forms = this.packedForms.get(buffer);
    if (!forms) return;
    this.flush(); // recorded kernels may still read them
    for (const b of forms.values()) { this.stats.packedBytes -= b.size; b.destroy(); }
    this.packedForms.delete(buffer);
  }

  async profile(opts: { reset?: boolean } = {}): Promise<KernelTime[]> {
    if (!this.profiler) throw new RuntimeError('BACKEND', 'this device does not profile; create it with createWebGpuDevice({ profile: true })');
    this.flush();
    await this.profiler.settle();
    const times = this.profiler.times();
    if (opts.reset) this.profiler.reset();
    return times;
  }

  free(buffer: GPUBuffer): void {
    this.dropPacked(buffer);
    this.pinned.delete(buffer);
    this.release(buffer);
  }

  record(): DeviceRecorder {
    if (this.recording) throw new Error('record(): a recording is open already');
    const rec: Recording = { commands: [], kept: [], refused: this.profiler ? 'the device is profiling' : undefined };
    this.recording = rec;
    return {
      finish: (): RecordedWork | string => {
        if (this.recording === rec) this.recording = null;
        if (rec.refused) { for (const b of rec.kept) this.pool.give(b); return rec.refused; }
        const commands = rec.commands;
        return {
          commands: commands.length,
          replay: () => {
            if (this.recording) throw new Error('replay(): a recording is open');
            for (const c of commands) {
              if ('host' in c) { c.host(); continue; }
              if ('src' in c) { this.copy(c.src, c.dst, c.bytes); continue; }
              this.encode(c.pipeline, c.group, c.x, c.y, '', c.check);
              this.stats.dispatches++;
            }
          },
          release: () => { for (const b of rec.kept.splice(0)) this.pool.give(b); },
        };
      },
    };
  }

  /** Gives `buffer` back to the pool, or to the open recording, whose commands may name it. */
  private release(buffer: GPUBuffer): void {
    if (this.recording) this.recording.kept.push(buffer);
    else this.pool.give(buffer);
  }

  /** Marks the open recording as not replayable, saying why (the first reason is kept). */
  private refuseRecording(why: string): void {
    if (this.recording && !this.recording.refused) this.recording.refused = why;
  }

  /**
   * One dispatch into the compute pass (profiled: a pass of its own, timed), kept by an open
   * recording. A kernel that checks its indices (`check`) gets an index-error buffer armed for
   * this dispatch as group 1 (read back at the next read), on a replay too.
   */
  private encode(pipeline: GPUComputePipeline, group: GPUBindGroup, x: number, y: number, name = '', check?: IndexCheck): void {
    if (this.profiler) this.endPass();
    const pass = this.computePass(this.profiler?.next(name));
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, group);
    if (check) {
      const errors = this.indexErrorBuffer(check);
      pass.setBindGroup(1, this.gpu.createBindGroup({ layout: pipeline.getBindGroupLayout(1), entries: [{ binding: 0, resource: { buffer: errors } }] }));
    }
    pass.dispatchWorkgroups(x, y);
    if (this.profiler) this.endPass();
    this.recording?.commands.push({ pipeline, group, x, y, check });
  }

  byteLength(buffer: GPUBuffer): number { return buffer.size; }

  destroy(): void {
    this.flush();
    for (const c of this.indexChecks.splice(0)) c.buffer.destroy();
    for (const b of this.freeIndexBuffers.splice(0)) b.destroy();
    this.pool.trim();
    for (const b of this.metas.values()) b.destroy();
    this.metas.clear();
    for (const forms of this.packedForms.values()) for (const b of forms.values()) b.destroy();
    this.packedForms.clear();
    this.stats.packedBytes = 0;
    this.profiler?.destroy();
    this.gpu.destroy();
  }

  /** A uniform buffer holding `words`, shared by every dispatch with the same dims (never changes). */
  private meta(words: Uint32Array): GPUBuffer {
    const id = words.join(',');
    let b = this.metas.get(id);
    if (!b) {
      b = this.gpu.createBuffer({ size: words.byteLength, usage: GPUBufferUsage.UNIFORM, mappedAtCreation: true });
      new Uint32Array(b.getMappedRange()).set(words);
      b.unmap();
      this.metas.set(id, b);
    }
    return b;
  }

  private commands(): GPUCommandEncoder {
    this.encoder ??= this.gpu.createCommandEncoder();
    return this.encoder;
  }

  private computePass(timestampWrites?: GPUComputePassTimestampWrites): GPUComputePassEncoder {
    this.pass ??= this.commands().beginComputePass(timestampWrites ? { timestampWrites } : {});
    return this.pass;
  }

  private endPass(): void {
    if (this.pass) { this.pass.end(); this.pass = null; }
  }

  /** Submits the recorded commands, if any. */
  private flush(): void {
    this.endPass();
    if (!this.encoder) return;
    const afterSubmit = this.profiler?.resolve(this.encoder);
    this.gpu.queue.submit([this.encoder.finish()]);
    afterSubmit?.();
    this.encoder = null;
    for (const b of this.retired.splice(0)) b.destroy(); // freed by the driver once the submitted work is done
    this.stats.submits++;
  }
}
