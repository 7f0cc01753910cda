// The operands of one kernel call in the kernel memory. An array that views the kernel memory
// already (a resident block: a loaded file's weights, an arena slot, a recycled result — see
// WasmHeap.residentBlock) is read, or written, where it lies; any other input is copied into a
// temporary block, and any other result is computed in one and copied out. So a chain of
// kernels whose intermediates live in the kernel memory runs without copies between them.
// Invariants: a result is computed in place only when its bytes overlap none of the call's
// inputs read in place, so no kernel reads what it already wrote (an in-place plan's result,
// which overlaps its input, goes through a temporary); free() returns every temporary block.

import type { WasmHeap } from './heap.js';

type Elements = Float32Array | Int32Array | Uint8Array | Int8Array;

export class KernelIO {
  private readonly temps: number[] = [];
  /** Byte ranges [at, end) of the inputs read in place. */
  private readonly reads: number[] = [];

  constructor(private readonly heap: WasmHeap) {}

  /**
   * The kernel-memory address of x's elements: where x lies when it is resident, else a
   * temporary copy. `slack` zero floats after the last element (a kernel that reads a few past
   * it) force the copy.
   */
  in(x: Elements, slack = 0): number {
    const at = slack ? undefined : this.heap.addressOf(x);
    if (at !== undefined) {
      this.reads.push(at, at + x.byteLength);
      return at;
    }
    const t = this.temp(x.byteLength + slack * 4);
    new (x.constructor as new (b: ArrayBufferLike, o: number, n: number) => Elements)(this.heap.memory.buffer, t, x.length).set(x);
    if (slack) this.heap.f32().fill(0, (t + x.byteLength) >> 2, ((t + x.byteLength) >> 2) + slack);
    return t;
  }

  /** An address for a result of `bytes` bytes: `into`'s own when it is resident and overlaps no in-place input, else a temporary. */
  out(bytes: number, into?: Elements): number {
    const at = into && into.byteLength === bytes ? this.heap.addressOf(into) : undefined;
    if (at !== undefined && !this.overlapsRead(at, at + bytes)) return at;
    return this.temp(bytes);
  }

  /** The float32 result of n elements at `at`: `into` itself when it was computed there, else copied into `into` or a fresh array. */
  f32(at: number, n: number, into?: Float32Array): Float32Array {
    if (into && this.heap.addressOf(into) === at) return into;
    return this.heap.copyOutF32(at, n, into);
  }

  /** Copies the result at `at` into `into` unless it was computed there. */
  copyOut(at: number, into: Elements): void {
    if (this.heap.addressOf(into) === at) return;
    into.set(new (into.constructor as new (b: ArrayBufferLike, o: number, n: number) => Elements)(this.heap.memory.buffer, at, into.length) as never);
  }

  /** A temporary block of `bytes` bytes, freed by free(). */
  temp(bytes: number): number {
    const at = this.heap.alloc(bytes);
    this.temps.push(at);
    return at;
  }

  free(): void {
    for (const t of this.temps) this.heap.free(t);
    this.temps.length = 0;
    this.reads.length = 0;
  }

  private overlapsRead(at: number, end: number): boolean {
    for (let i = 0; i < this.reads.length; i += 2) if (at < this.reads[i + 1] && this.reads[i] < end) return true;
    return false;
  }
}
