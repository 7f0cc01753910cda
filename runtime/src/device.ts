// The device contract (DESIGN.md mechanism 5, STYLE.md principle 11): everything the executor
// asks of a backend. Invariant: the executor never touches a buffer's contents or picks a
// kernel itself — it calls these methods only, so a WebGPU device (or a WASM/worker CPU device)
// slots in without changing the executor.

import type { Attrs, DType, KernelContext, TypedArray } from '@kiln/ir-spec';

/** A tensor living on a device: an opaque buffer plus its dense row-major shape. */
export interface DeviceTensor<B = unknown> {
  readonly buffer: B;
  readonly shape: readonly number[];
  readonly dtype: DType;
}

export type BackendName = 'cpu' | 'webgpu';

/**
 * GPU timestamps of each dispatch (a WebGPU device created with `profile: true`), for per-node
 * profiles. A profiled run holds the timer (hold() .. the returned release), marks the dispatch
 * count around each node, and takes the stamps once its outputs are read.
 */
export interface DispatchTimer {
  /** Dispatches recorded so far (timed or not): a mark between two nodes' dispatches. */
  mark(): number;
  /** Keeps each dispatch's stamps until taken; call the returned function when done. */
  hold(): () => void;
  /**
   * Submits the recorded work, waits for its timestamps and hands over (forgetting them) the GPU
   * begin/end nanoseconds of dispatches `from` ..< `to` by mark (an untimed dispatch has none).
   */
  take(from: number, to: number): Promise<ReadonlyMap<number, readonly [bigint, bigint]>>;
}

export interface Device<B = unknown> {
  readonly backend: BackendName;
  /**
   * Multiply-adds per second (OpDef.work) this device cannot beat, fast algorithms included: a run
   * with a time limit refuses a node whose work would take longer than the time left even at this
   * rate, before it starts (TIME_LIMIT). Absent: nodes are not checked before they start.
   */
  readonly peakWorkRate?: number;
  /** Present when the device times each dispatch on the GPU (see DispatchTimer). */
  readonly dispatchTimer?: DispatchTimer;
  /** A buffer for `shape` of `dtype` (contents unspecified until written). */
  alloc(dtype: DType, shape: readonly number[]): DeviceTensor<B>;
  /** Copies host data (exactly the tensor's element count) into the tensor's buffer. */
  write(t: DeviceTensor<B>, data: TypedArray): void;
  /**
   * The tensor's elements on the host, in a fresh array the caller owns. A synchronous device
   * (the CPU) returns the array itself; an asynchronous one (WebGPU) a promise.
   */
  read(t: DeviceTensor<B>): TypedArray | Promise<TypedArray>;
  /**
   * Runs registry op `op` on `inputs` (null: an omitted optional input) with concrete attrs.
   * An output may share an input's buffer (a reshape is a view); it never changes an input.
   * `dataDims` gives the sizes of the data-dependent dims the op's shape rule names (e.g.
   * masked_select's `nnz`), which the executor reads before dispatching on a non-CPU device.
   * `kernel` carries the run's generator, which random ops (`uniform`, `normal`) draw from.
   * `out[i]`, when given, is an arena tensor of exactly result i's type: the device returns it
   * as result i with the result written there (an in-place plan may make it the buffer of an
   * input of the same size that dies at this node; elementwise ops only).
   */
  dispatch(op: string, inputs: readonly (DeviceTensor<B> | null)[], attrs: Attrs, dataDims?: Readonly<Record<string, number>>, kernel?: KernelContext,
    out?: readonly (DeviceTensor<B> | undefined)[]): DeviceTensor<B>[];
  /**
   * A memory arena for one model, whose slots (the memory plan's) hold its intermediates run
   * after run. Optional: a device without one allocates every intermediate.
   */
  createArena?(): Arena<B>;
  /**
   * Marks a written tensor as a graph constant: never written or freed while the model lives, so
   * the device may keep derived forms of it (packed weights). Optional.
   */
  pin?(t: DeviceTensor<B>): void;
  /**
   * A device tensor that IS `data` (no copy) for a graph constant the caller never writes
   * again; the device never writes it either. Optional: a device whose memory is not the host's
   * (WebGPU) uploads instead. Keeps a model's weights in memory once.
   */
  adopt?(dtype: DType, shape: readonly number[], data: TypedArray): DeviceTensor<B>;
  /**
   * An array of `dtype` and n elements in memory this device's kernels read and write in place
   * (the CPU device: its WebAssembly memory), freed when garbage collected; undefined where there
   * is none or enough are alive. Model.recycle keeps such arrays for results. Optional.
   */
  residentArray?(dtype: DType, n: number): TypedArray | undefined;
  /**
   * Called when a run ends (completed or failed): the CPU device lets the background work the
   * run deferred (Winograd weight transforms) start on idle worker threads. Optional.
   */
  afterRun?(): void;
  /**
   * Records a copy of `bytes` bytes from `src` to `dst` after the work recorded so far (both on
   * this device). Optional: WebGPU has it; Model.runDevice needs it.
   */
  copy?(src: B, dst: B, bytes: number): void;
  /**
   * Starts keeping what the device is asked to do (dispatches, copies) until the returned
   * recorder's finish(), for Model.runDevice to replay (mode 'reduce-overhead'). Buffers freed
   * meanwhile stay with the recording, since its commands name them. Optional (WebGPU).
   */
  record?(): DeviceRecorder;
  /** Returns a buffer no value refers to any more (the executor calls it once per buffer). */
  free(buffer: B): void;
  /** Size of a buffer in bytes, for memory accounting. */
  byteLength(buffer: B): number;
}

/** Buffer slots reused across runs (runtime/src/memory.ts decides which value takes which). */
export interface Arena<B = unknown> {
  /** A tensor of `dtype`/`shape` over slot `slot`, which grows to hold it (contents unspecified). */
  take(slot: number, dtype: DType, shape: readonly number[]): DeviceTensor<B>;
  /** Bytes the slots hold now, all together. */
  readonly bytes: number;
}

/** A recording in progress (Device.record). */
export interface DeviceRecorder {
  /**
   * Stops recording: the work to replay, or why it cannot be replayed (an upload outside a
   * random op's draw, a hand-written kernel, profiling); then the kept buffers are already freed.
   */
  finish(): RecordedWork | string;
}

/** Recorded device work: replay() records the same commands on the same buffers again. */
export interface RecordedWork {
  /** Commands recorded (dispatches and copies). */
  readonly commands: number;
  replay(): void;
  /** Frees the buffers the recording kept; replay() must not be called after. */
  release(): void;
}
