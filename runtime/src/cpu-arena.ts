// The CPU device's arena: one ArrayBuffer per memory-plan slot, kept by a model run after run,
// so a planned intermediate costs no allocation once the slots have grown to the run's sizes.
// Invariant: a slot only grows (to the largest tensor it was asked for), and `bytes` is exactly
// what its ArrayBuffers hold; which value may take a slot, and when, memory.ts decides.

import { ELEMENT_BYTES, numel, type DType, type TypedArray } from '@kiln/ir-spec';
import type { Arena, DeviceTensor } from './device.js';


function view(buffer: ArrayBuffer, dtype: DType, n: number): TypedArray {
  switch (dtype) {
    case 'float32': case 'float16': case 'bfloat16': return new Float32Array(buffer, 0, n);
    case 'int32': return new Int32Array(buffer, 0, n);
    case 'bool': return new Uint8Array(buffer, 0, n);
    case 'int8': return new Int8Array(buffer, 0, n);
  }
}

/** An arena whose slots are ArrayBuffers; take() views one as the tensor asked for. */
export function createCpuArena(): Arena<TypedArray> {
  const slots: ArrayBuffer[] = [];
  let bytes = 0;
  return {
    take(slot: number, dtype: DType, shape: readonly number[]): DeviceTensor<TypedArray> {
      const n = numel(shape), need = n * ELEMENT_BYTES[dtype];
      const have = slots[slot]?.byteLength ?? 0;
      if (have < need) {
        // Rounded up to 4 bytes so every dtype's view of the slot is aligned.
        const size = Math.ceil(need / 4) * 4;
        slots[slot] = new ArrayBuffer(size);
        bytes += size - have;
      }
      return { buffer: view(slots[slot], dtype, n), shape: [...shape], dtype };
    },
    get bytes() { return bytes; },
  };
}
