// The CPU device: buffers are the typed arrays the ir-spec kernels use, and dispatch calls the
// op's `cpu` kernel from the registry with this device's primitives (WebAssembly SIMD products
// where the engine has them, runtime/src/wasm). Invariant: kernels never mutate their inputs,
// so sharing a buffer between a tensor and its reshape (a view) is safe, and a pinned constant
// is never written. Kernel selection lives here, not in the executor. A result the executor
// offers an arena tensor for (dispatch's `out`) lands there: the kernel writes it in place when
// it takes `ctx.out`, else its fresh array is copied in, so planned values live in the arena.

import { allocate, getOp, numel, type Attrs, type CpuTensor, type DType, type KernelContext, type TypedArray } from '@kiln/ir-spec';
import { createCpuArena } from './cpu-arena.js';
import type { Device, DeviceTensor } from './device.js';
import { fastPrimitives } from './wasm/primitives.js';
import { getNumThreads, wasmKernels } from './wasm/heap.js';

export type CpuTensorOnDevice = DeviceTensor<TypedArray>;

/**
 * Multiply-adds per second no thread of the CPU kernels can beat: 128-bit SIMD (4 floats), two
 * fused multiply-adds a cycle at 4 GHz, times 4 for Winograd's saving on 3×3 convolutions.
 */
const CPU_PEAK_PER_THREAD = 4 * 2 * 4e9 * 4;

/**
 * Creates the CPU device.
 *
 * @example
 * ```ts
 * const cpu = createCpuDevice();
 * const t = cpu.alloc('float32', [2]);
 * cpu.write(t, new Float32Array([1, 2]));
 * ```
 */
export function createCpuDevice(): Device<TypedArray> {
  const prims = fastPrimitives();
  return {
    backend: 'cpu',
    get peakWorkRate() { return getNumThreads() * CPU_PEAK_PER_THREAD; },
    alloc(dtype: DType, shape: readonly number[]) {
      return { buffer: allocate(dtype, numel(shape)), shape: [...shape], dtype };
    },
    write(t, data) {
      if (data.length !== t.buffer.length) throw new Error(`write: ${data.length} elements into a buffer of ${t.buffer.length}`);
      t.buffer.set(data);
    },
    read(t) {
      return t.buffer.slice();
    },
    dispatch(op, inputs, attrs: Attrs, _dims, kernel, out) {
      const ins: (CpuTensor | null)[] = inputs.map((t) => (t ? { data: t.buffer, shape: t.shape, dtype: t.dtype } : null));
      // Plain objects, no spread of an absent `kernel`: this runs once per node of every run.
      const offered = out?.map((t) => t?.buffer);
      const ctx: KernelContext = kernel ? { ...kernel, prims, out: offered } : { prims, out: offered };
      return getOp(op).cpu(ins, attrs, ctx).map((o, i) => {
        const slot = out?.[i];
        if (!slot || slot.buffer === o.data) return slot ?? { buffer: o.data, shape: o.shape, dtype: o.dtype };
        if (slot.dtype !== o.dtype || slot.buffer.length !== o.data.length) return { buffer: o.data, shape: o.shape, dtype: o.dtype };
        slot.buffer.set(o.data);
        return slot;
      });
    },
    adopt(dtype, shape, data) {
      return { buffer: data, shape: [...shape], dtype };
    },
    createArena: () => createCpuArena(wasmKernels()),
    residentArray(dtype, n) {
      const heap = wasmKernels();
      if (!heap) return undefined;
      switch (dtype) {
        case 'float32': return heap.residentArray(Float32Array, n);
        case 'int32': return heap.residentArray(Int32Array, n);
        case 'bool': return heap.residentArray(Uint8Array, n);
        default: return undefined;
      }
    },
    pin(t) {
      prims.pin(t.buffer);
    },
    afterRun() {
      prims.afterRun?.();
    },
    free() {
      // Garbage collected: dropping the last reference is the free. A pool would recycle here.
    },
    byteLength(buffer) {
      return buffer.byteLength;
    },
  };
}
