// The CPU device: buffers are the typed arrays the ir-spec kernels use, and dispatch calls the
// op's reference `cpu` kernel from the registry. Invariant: kernels never mutate their inputs,
// so sharing a buffer between a tensor and its reshape (a view) is safe. Kernel selection
// lives here, not in the executor: a faster CPU path (generated WASM SIMD, worker threads) is
// another Device.

import { allocate, getOp, numel, type Attrs, type CpuTensor, type DType, type TypedArray } from '@kiln/ir-spec';
import type { Device, DeviceTensor } from './device.js';

export type CpuTensorOnDevice = DeviceTensor<TypedArray>;

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
  return {
    backend: 'cpu',
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
    dispatch(op, inputs, attrs: Attrs, _dims, kernel) {
      const ins: (CpuTensor | null)[] = inputs.map((t) => (t ? { data: t.buffer, shape: t.shape, dtype: t.dtype } : null));
      return getOp(op).cpu(ins, attrs, kernel).map((o) => ({ buffer: o.data, shape: o.shape, dtype: o.dtype }));
    },
    free() {
      // Garbage collected: dropping the last reference is the free. A pool would recycle here.
    },
    byteLength(buffer) {
      return buffer.byteLength;
    },
  };
}
