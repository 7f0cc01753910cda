// The CPU device's arena: one buffer per memory-plan slot, kept by a model run after run, so a
// planned intermediate costs no allocation once the slots have grown to the run's sizes. Where
// the WebAssembly kernels run over a shared memory, the slots are blocks of that memory
// (WasmHeap.residentBlock; up to KERNEL_MEMORY_SLOT_BYTES in all), so the kernels read and write
// planned intermediates where they lie instead of copying them in and out (wasm/io.ts);
// elsewhere they are ArrayBuffers.
// Invariant: a slot only grows (to the largest tensor it was asked for), and `bytes` is exactly
// what its buffers hold; which value may take a slot, and when, memory.ts decides. A slot's old
// block is freed when it grows: arena tensors are only used within the run that took them (the
// executor copies outputs out of the arena; a run that grew the arena is never recorded for
// replay, and a later run on the normal path drops the record).

import { ELEMENT_BYTES, numel, type DType, type TypedArray } from '@kiln/ir-spec';
import type { Arena, DeviceTensor } from './device.js';
import type { WasmHeap } from './wasm/heap.js';

function view(buffer: ArrayBufferLike, at: number, dtype: DType, n: number): TypedArray {
  switch (dtype) {
    case 'float32': case 'float16': case 'bfloat16': return new Float32Array(buffer, at, n);
    case 'int32': return new Int32Array(buffer, at, n);
    case 'bool': return new Uint8Array(buffer, at, n);
    case 'int8': return new Int8Array(buffer, at, n);
  }
}

/**
 * Most bytes of slots in the kernel memory, all arenas together: the memory is 32-bit and the
 * kernels need room for their own blocks, so slots past this are ArrayBuffers.
 */
const KERNEL_MEMORY_SLOT_BYTES = 1 << 30;
let slotBytesInKernelMemory = 0;

function freeBlock(heap: WasmHeap, b: Uint8Array): void {
  heap.free(b.byteOffset);
  slotBytesInKernelMemory -= b.byteLength;
}

/** Frees an arena's kernel-memory slots when the arena is garbage collected (with its model). */
const arenaRelease = new FinalizationRegistry<{ heap: WasmHeap; slots: (ArrayBuffer | Uint8Array)[] }>(({ heap, slots }) => {
  for (const s of slots) if (s instanceof Uint8Array) freeBlock(heap, s);
});

/** An arena whose slots are ArrayBuffers, or blocks of the kernel memory when `heap` can give resident ones; take() views one as the tensor asked for. */
export function createCpuArena(heap?: WasmHeap | null): Arena<TypedArray> {
  /** Per slot: an ArrayBuffer, or a block of the kernel memory (a byte view of it). */
  const slots: (ArrayBuffer | Uint8Array)[] = [];
  let bytes = 0;
  const arena: Arena<TypedArray> = {
    take(slot: number, dtype: DType, shape: readonly number[]): DeviceTensor<TypedArray> {
      const n = numel(shape), need = n * ELEMENT_BYTES[dtype];
      const have = slots[slot]?.byteLength ?? 0;
      if (have < need) {
        // Rounded up to 4 bytes so every dtype's view of the slot is aligned.
        const size = Math.ceil(need / 4) * 4;
        const block = slotBytesInKernelMemory + size <= KERNEL_MEMORY_SLOT_BYTES ? heap?.residentBlock(size) : undefined;
        const old = slots[slot];
        if (old instanceof Uint8Array) freeBlock(heap!, old);
        if (block) slotBytesInKernelMemory += size;
        slots[slot] = block ?? new ArrayBuffer(size);
        bytes += size - have;
      }
      const s = slots[slot];
      const buffer = s instanceof Uint8Array ? view(s.buffer, s.byteOffset, dtype, n) : view(s, 0, dtype, n);
      return { buffer, shape: [...shape], dtype };
    },
    get bytes() { return bytes; },
  };
  if (heap) arenaRelease.register(arena, { heap, slots });
  return arena;
}
