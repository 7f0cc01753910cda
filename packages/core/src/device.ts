/// <reference types="@webgpu/types" />
// Where eager tensors live: 'cpu' (a typed array in the Storage) or 'webgpu' (a buffer of the
// runtime's WebGPU device, from its caching pool). Invariants: a GPU op only records work into
// the device's command encoder — nothing here waits for the GPU except the async reads
// (toArrayAsync, synchronize); a GPU storage's buffer goes back to the pool when JavaScript
// collects the storage (FinalizationRegistry), and the pool hands it to the next tensor of its
// size class, so a steady loop stops creating buffers; every op of a kernel signature is
// compiled once (pipelines cached by the runtime under the kernel key).

import { allocate, isReducedFloat, isViewNode, numel, type DType, type KernelContext, type OpDef, type TensorType, type TypedArray } from '@kiln/ir-spec';
import { createWebGpuDevice, kernelKey, type DeviceTensor, type KernelRecord, type PoolMemory, type WebGpuDevice, type WebGpuDeviceOptions } from '@kiln/runtime';
import type { Storage, Tensor } from './tensor.js';
import { disposedError, DisposedError } from './lifetime.js';
import { roundReducedGpu } from './amp/round-gpu.js';

export type DeviceName = 'cpu' | 'webgpu';

/** A device misuse: a tensor on the wrong device, WebGPU not initialized, a sync read of a GPU tensor. */
export class DeviceError extends Error {
  override readonly name = 'DeviceError';
}

type KernelFor = (op: string, ins: readonly ({ dtype: DType; rank: number } | null)[], outs: readonly { dtype: DType; rank: number }[], attrs: Record<string, unknown>, name?: string) => KernelRecord | { op: string; reason: string };

let gpu: WebGpuDevice | null = null;
let kernelFor: KernelFor | null = null;
let defaultDevice: DeviceName = 'cpu';

/** Storage whose buffer lives on the WebGPU device. */
export interface GpuStorage extends Storage { readonly gpu: GPUBuffer }

const released = new FinalizationRegistry<{ device: WebGpuDevice; buffer: GPUBuffer }>(({ device, buffer }) => {
  if (device === gpu) device.free(buffer);
});

/**
 * Starts the WebGPU device eager tensors use (an adapter request is asynchronous, so this is
 * the one await before `tensor.to('webgpu')`). Calling it again returns the same device.
 * @example await initWebGpu(); const x = randn([2, 3]).to('webgpu');
 */
export async function initWebGpu(opts: Pick<WebGpuDeviceOptions, 'gpu' | 'profile'> = {}): Promise<WebGpuDevice> {
  if (gpu) return gpu;
  // The WGSL generators come with the compiler; loaded here, so CPU-only programs never load it.
  const compiler = await import('@kiln/compiler');
  kernelFor = compiler.kernelFor as KernelFor;
  gpu = await createWebGpuDevice(opts);
  return gpu;
}

/** The WebGPU device of eager tensors; throws when initWebGpu() was not awaited. */
export function webGpuDevice(): WebGpuDevice {
  if (!gpu) throw new DeviceError("the WebGPU device is not started: call `await initWebGpu()` once before putting tensors on 'webgpu'");
  return gpu;
}

/** Releases the WebGPU device (its buffers and pipelines); tensors still on it become unusable. */
export function destroyWebGpu(): void {
  gpu?.destroy();
  gpu = null;
  scalars.clear();
}

/**
 * Sets the device that factories (tensor, zeros, ones, full, randn, rand, arange, …) put new
 * tensors on when their options name none; `device()` returns it.
 * @example await initWebGpu(); device('webgpu'); const x = randn([2, 3]); // on webgpu
 */
export function device(name?: DeviceName): DeviceName {
  if (name !== undefined) {
    checkDeviceName(name, 'device()');
    if (name === 'webgpu') webGpuDevice();
    defaultDevice = name;
  }
  return defaultDevice;
}

export function checkDeviceName(name: unknown, where: string): asserts name is DeviceName {
  if (name !== 'cpu' && name !== 'webgpu') throw new DeviceError(`${where}: unknown device ${JSON.stringify(name)}; use 'cpu' or 'webgpu'`);
}

/** The device a factory places on: its own option, else the default. */
export function placeOf(opt: DeviceName | undefined): DeviceName {
  if (opt !== undefined) checkDeviceName(opt, 'device option');
  return opt ?? defaultDevice;
}

/**
 * A storage over a GPU buffer, which goes back to the pool when its last tensor is disposed
 * (`free`) or else when the storage is collected (unless `owned` is false: a buffer of the scalar
 * cache, kept for the device's life).
 */
export function gpuStorage(buffer: GPUBuffer, owned = true): GpuStorage {
  const dev = webGpuDevice();
  const s: GpuStorage = {
    gpu: buffer,
    version: 0,
    get data(): TypedArray {
      throw new DeviceError("this tensor lives on 'webgpu': read it with `await t.toArrayAsync()` / `await t.itemAsync()`, or move it with `await t.toAsync('cpu')`");
    },
  };
  if (!owned) return s;
  released.register(s, { device: dev, buffer }, s);
  s.free = () => {
    released.unregister(s);
    // The buffer now serves other tensors: this storage must never reach a kernel again.
    Object.defineProperty(s, 'gpu', { get: () => { throw new DisposedError('a disposed WebGPU tensor was used (its buffer went back to the pool)'); } });
    if (dev === gpu) dev.free(buffer);
  };
  return s;
}

/** The device tensor of a GPU tensor. */
export function deviceTensor(t: Tensor): DeviceTensor<GPUBuffer> {
  return { buffer: (t._storage as GpuStorage).gpu, shape: t.shape, dtype: t.dtype };
}

/** @internal jit.compile on WebGPU: a 'webgpu' tensor that takes over a runtime result's buffer. */
export function gpuTensorOf(t: DeviceTensor<GPUBuffer>): Tensor {
  return new TensorClass!(gpuStorage(t.buffer), [...t.shape], t.dtype);
}

/** @internal jit.compile on WebGPU: records a copy of runtime result `src` into `dst`'s buffer (a module buffer's new value), then frees `src`. */
export function writeGpu(dst: Tensor, src: DeviceTensor<GPUBuffer>): void {
  const dev = webGpuDevice();
  const to = (dst._storage as GpuStorage).gpu;
  dev.copy(src.buffer, to, Math.min(src.buffer.size, to.size));
  dev.free(src.buffer);
}

/** A fresh GPU buffer holding `data` (recorded after the pending kernels; nothing is submitted). */
export function uploadArray(data: TypedArray, shape: readonly number[], dtype: DType): GpuStorage {
  const dev = webGpuDevice();
  const dt = dev.alloc(dtype, shape);
  dev.upload(dt, data.length === numel(shape) ? data : data.subarray(0, numel(shape)) as TypedArray);
  return gpuStorage(dt.buffer);
}

/** Records a copy of `src`'s elements into `dst`'s buffer (same element count). */
export function copyGpu(src: Tensor, dst: Tensor): void {
  webGpuDevice().copy((src._storage as GpuStorage).gpu, (dst._storage as GpuStorage).gpu, numel(dst.shape) * 4);
}

/** A new buffer with a copy of `t`'s elements. */
export function cloneGpu(t: Tensor): GpuStorage {
  const dev = webGpuDevice();
  const dt = dev.alloc(t.dtype, t.shape);
  dev.copy((t._storage as GpuStorage).gpu, dt.buffer, numel(t.shape) * 4);
  return gpuStorage(dt.buffer);
}

/** `t`'s elements on the host (waits for the kernels that produce them). */
export async function readGpu(t: Tensor): Promise<TypedArray> {
  return webGpuDevice().read(deviceTensor(t));
}

// 0-d CPU constants (the `2` of x.mul(2), autograd's scalars) used with GPU tensors, as PyTorch
// allows CPU scalars in CUDA ops: uploaded once per dtype and value, then kept.
const MAX_SCALARS = 4096;
const scalars = new Map<string, DeviceTensor<GPUBuffer>>();

function scalarOnGpu(t: Tensor): { dt: DeviceTensor<GPUBuffer>; temp: boolean } {
  return cachedScalar(t.data[0], t.dtype, t.data.subarray(0, 1) as TypedArray);
}

/**
 * A 0-d 'webgpu' constant over the scalar cache (autograd rules' constants on the GPU). Never
 * written in place: the buffer is shared by every use of the value.
 */
export function scalarTensorGpu(v: number, dtype: DType): Tensor {
  const data = allocate(dtype, 1);
  data[0] = dtype === 'bool' ? (v ? 1 : 0) : v;
  const { dt } = cachedScalar(data[0], dtype, data, false);
  return new TensorClass!(gpuStorage(dt.buffer, false), [], dtype);
}

let TensorClass: (new (s: Storage, shape: readonly number[], dtype: DType) => Tensor) | null = null;
/** @internal tensor.ts hands its class over (device.ts cannot import it: tensor.ts imports this file). */
export function registerTensorClass(c: new (s: Storage, shape: readonly number[], dtype: DType) => Tensor): void { TensorClass = c; }

function cachedScalar(v: number, dtype: DType, data: TypedArray, allowTemp = true): { dt: DeviceTensor<GPUBuffer>; temp: boolean } {
  const t = { dtype, data };
  const key = `${t.dtype}:${Object.is(v, -0) ? '-0' : String(v)}`;
  const hit = scalars.get(key);
  if (hit) return { dt: hit, temp: false };
  const dev = webGpuDevice();
  const dt = dev.alloc(t.dtype, []);
  dev.upload(dt, t.data.subarray(0, 1) as TypedArray);
  if (scalars.size >= MAX_SCALARS && allowTemp) return { dt, temp: true };
  scalars.set(key, dt);
  return { dt, temp: false };
}

/**
 * The device an op on `inputs` runs on: where its tensors live. 0-d CPU tensors that need no
 * gradient go along with GPU tensors; any other mix is a DeviceError naming both devices.
 */
export function deviceOfOp(op: string, inputs: readonly (Tensor | null)[]): DeviceName {
  let gpuAt = -1, cpuAt = -1;
  inputs.forEach((t, i) => {
    if (!t) return;
    if (t._disposed) throw disposedError(t, `op ${op}: input ${i}`);
    if ((t._storage as Partial<GpuStorage>).gpu) { if (gpuAt < 0) gpuAt = i; } else if (cpuAt < 0 && !(t.ndim === 0 && !t.requiresGrad)) cpuAt = i;
  });
  if (gpuAt < 0) return 'cpu';
  if (cpuAt >= 0) {
    throw new DeviceError(`op ${op}: input ${gpuAt} is on 'webgpu' but input ${cpuAt} (shape [${inputs[cpuAt]!.shape.join(',')}]) is on 'cpu'; ` +
      "an op's tensors must live on one device: move them with .to('webgpu') (or .to('cpu'))");
  }
  return 'webgpu';
}

/**
 * Runs op `def` on the WebGPU device: records its generated WGSL kernel (compiled at the first
 * call of its signature) and returns the outputs' storages; a view shares its input's storage.
 * Random ops draw on the CPU (the same stream as CPU tensors, so a seed gives the same numbers
 * on both devices) and upload the sample.
 */
export function dispatchGpu(def: OpDef, inputs: readonly (Tensor | null)[], attrs: Record<string, unknown>, outTypes: readonly TensorType[], kctx: KernelContext): (GpuStorage | { view: Tensor })[] {
  const dev = webGpuDevice();
  const symbolic = outTypes.flatMap((t) => t.shape.filter((d) => typeof d === 'string'));
  if (symbolic.length) {
    throw new DeviceError(`op ${def.name} cannot run on 'webgpu': its output size (${symbolic.join(', ')}) depends on the data, which the GPU would have to be waited for; run it on the CPU (await t.toAsync('cpu'))`);
  }
  const temps: DeviceTensor<GPUBuffer>[] = [];
  const dts = inputs.map((t) => {
    if (!t) return null;
    if ((t._storage as Partial<GpuStorage>).gpu) return deviceTensor(t);
    const { dt, temp } = scalarOnGpu(t);
    if (temp) temps.push(dt);
    return dt;
  });
  // The kernel key leaves out expand's target shape (kernel.ts), so a rank-changing expand would
  // share a key with one of another output rank: pad the input with leading 1s (a view) instead.
  const outRank = outTypes[0]?.shape.length ?? 0;
  if (def.name === 'expand' && dts[0] && dts[0].shape.length < outRank) {
    dts[0] = { ...dts[0], shape: [...new Array<number>(outRank - dts[0].shape.length).fill(1), ...dts[0].shape] };
  }
  const view = isViewNode(def.name, attrs as never);
  if (!view && !def.random) ensureKernel(def.name, dts, outTypes, attrs); // random ops draw on the host (the device uploads the sample)
  let outs: DeviceTensor<GPUBuffer>[];
  try {
    outs = dev.dispatch(def.name, dts, attrs as never, {}, kctx);
  } catch (e) {
    throw new DeviceError(`op ${def.name} on 'webgpu': ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  // float16/bfloat16 results: computed in f32, rounded to 16 bits as the CPU dispatch rounds them.
  if (!view) for (const o of outs) if (isReducedFloat(o.dtype)) roundReducedGpu(dev, o.buffer, o.dtype, numel(o.shape));
  // Commands run in order, so the pool may hand a temporary scalar to a later op at once.
  for (const dt of temps) dev.free(dt.buffer);
  return outs.map((o) => {
    const src = inputs.findIndex((t, i) => t && dts[i]!.buffer === o.buffer);
    return src >= 0 ? { view: inputs[src]! } : gpuStorage(o.buffer);
  });
}

function ensureKernel(op: string, dts: readonly (DeviceTensor<GPUBuffer> | null)[], outTypes: readonly TensorType[], attrs: Record<string, unknown>): void {
  const dev = webGpuDevice();
  const sigs = dts.map((t) => (t ? { dtype: t.dtype, rank: t.shape.length } : null));
  const key = kernelKey(op, sigs, attrs as never);
  if (dev.hasKernel(key)) return;
  const rec = kernelFor!(op, sigs, outTypes.map((t) => ({ dtype: t.dtype, rank: t.shape.length })), attrs, op);
  if (!('key' in rec)) {
    throw new DeviceError(`op ${op} cannot run on 'webgpu': ${rec.reason}; move its inputs to the CPU (await t.toAsync('cpu')) for this op`);
  }
  dev.addKernelNow(rec);
}

/** Waits until every GPU op recorded so far has finished (torch.cuda.synchronize). */
export async function synchronize(): Promise<void> {
  if (gpu) await gpu.synchronize();
}

export interface GpuMemoryStats extends PoolMemory {
  /** Command buffers submitted, buffers mapped for reading, host arrays uploaded, kernels recorded. */
  readonly submits: number;
  readonly maps: number;
  readonly uploads: number;
  readonly dispatches: number;
}

/**
 * @internal the caching allocator of the WebGPU device (memory.stats('webgpu')): bytes allocated
 * to live tensors, reserved by the pool (live + cached), the peak, and the device queue's counters.
 */
export function gpuMemoryStats(): GpuMemoryStats {
  const dev = webGpuDevice();
  const s = dev.stats;
  return { ...dev.memory(), submits: s.submits, maps: s.maps, uploads: s.uploads, dispatches: s.dispatches };
}

/** @internal destroys the cached buffers no tensor holds (memory.emptyCache). */
export function gpuEmptyCache(): void { gpu?.emptyCache(); }

/** @internal starts the WebGPU peak over (memory.resetPeakStats). */
export function gpuResetPeak(): void { gpu?.resetPeakMemory(); }
