/// <reference types="@webgpu/types" />
// A caching allocator for storage buffers. Invariant: a buffer handed out is not in the pool,
// and a buffer returned to the pool is reused only for a request of the same size class. Reuse
// within one command encoder is safe because WebGPU runs a queue's commands in order; the
// device flushes its encoder before any queue.writeBuffer, so a host write never overtakes a
// pending kernel that still reads the buffer's old contents.

/** Bytes of the size class holding `bytes` (multiples of 256 up to 64 KiB, then powers of two / 8). */
export function sizeClass(bytes: number): number {
  const b = Math.max(16, bytes);
  if (b <= 65536) return Math.ceil(b / 256) * 256;
  const step = 2 ** Math.floor(Math.log2(b)) / 8;
  return Math.ceil(b / step) * step;
}

/** What the pool holds, in bytes (torch.cuda.memory_allocated / memory_reserved / max_memory_allocated). */
export interface PoolMemory {
  /** Bytes of the buffers handed out and not yet given back. */
  readonly allocated: number;
  /** Bytes of every buffer the pool created and has not destroyed (handed out + cached). */
  readonly reserved: number;
  /** The highest `allocated` since the pool was created or the peak was reset. */
  readonly peak: number;
  /** Buffers created over the pool's life (a reuse does not count). */
  readonly buffersCreated: number;
}

export class BufferPool {
  private readonly free = new Map<number, GPUBuffer[]>();
  /** Buffers created over the pool's life (a reuse does not count). */
  created = 0;
  /** Bytes held by all buffers the pool created and has not destroyed. */
  bytes = 0;
  /** Bytes of the buffers handed out (not in the free lists). */
  private inUse = 0;
  private peak = 0;

  constructor(private readonly device: GPUDevice) {}

  /**
   * A STORAGE | COPY_SRC | COPY_DST buffer of at least `bytes`. `fresh`: a new buffer even when one
   * is cached — for long-lived tensors (optimizer state) made in the middle of a loop, which would
   * otherwise take the buffers the loop's temporaries need at the next iteration.
   */
  take(bytes: number, fresh = false): GPUBuffer {
    const size = sizeClass(bytes);
    this.inUse += size;
    this.peak = Math.max(this.peak, this.inUse);
    const reuse = fresh ? undefined : this.free.get(size)?.pop();
    if (reuse) return reuse;
    this.created++;
    this.bytes += size;
    return this.device.createBuffer({ size, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
  }

  give(buffer: GPUBuffer): void {
    this.inUse -= buffer.size;
    const list = this.free.get(buffer.size);
    if (list) list.push(buffer);
    else this.free.set(buffer.size, [buffer]);
  }

  memory(): PoolMemory {
    return { allocated: this.inUse, reserved: this.bytes, peak: this.peak, buffersCreated: this.created };
  }

  /** Starts the peak over from what is allocated now. */
  resetPeak(): void { this.peak = this.inUse; }

  /** Destroys the pooled (unused) buffers. */
  trim(): void {
    for (const list of this.free.values()) for (const b of list) { this.bytes -= b.size; b.destroy(); }
    this.free.clear();
  }
}
