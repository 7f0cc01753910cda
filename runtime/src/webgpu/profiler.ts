/// <reference types="@webgpu/types" />
// GPU time per kernel from timestamp queries (the `timestamp-query` feature). Invariant: while
// profiling, every dispatch runs in its own compute pass whose begin/end timestamps land in the
// next free pair of the query set; pairs are resolved and read back at each submit, then the
// set starts over; passes beyond the set's capacity before a submit are dispatched untimed
// (counted in `untimed`), never dropped. Every dispatch (timed or not) takes the next sequence
// number (`dispatches()`); while a profiled run holds keepStamps, each timed dispatch's begin/end
// nanoseconds are kept by sequence number until takeStamps() hands them over.

/** GPU time spent in one kernel, summed over its dispatches. */
export interface KernelTime {
  readonly name: string;
  readonly calls: number;
  readonly ms: number;
}

const CAPACITY = 512; // passes per submit

export class GpuProfiler {
  private readonly querySet: GPUQuerySet;
  private readonly resolved: GPUBuffer;
  private names: { name: string; seq: number }[] = [];
  private seq = 0;
  private readonly stamps = new Map<number, readonly [bigint, bigint]>();
  /** Profiled runs in progress: while above 0, each timed dispatch's stamps are kept for takeStamps(). */
  keepStamps = 0;
  private readonly totals = new Map<string, { calls: number; ns: number }>();
  private readonly pending: Promise<void>[] = [];
  /** Dispatches that ran without timestamps (over capacity, or read back after destroy). */
  untimed = 0;

  constructor(private readonly gpu: GPUDevice) {
    this.querySet = gpu.createQuerySet({ type: 'timestamp', count: 2 * CAPACITY });
    this.resolved = gpu.createBuffer({ size: 16 * CAPACITY, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
  }

  /** Timestamp writes for the pass of the next dispatch of kernel `name` (undefined when full). */
  next(name: string): GPUComputePassTimestampWrites | undefined {
    const seq = this.seq++;
    if (this.names.length >= CAPACITY) { this.untimed++; return undefined; }
    const k = this.names.length;
    this.names.push({ name, seq });
    return { querySet: this.querySet, beginningOfPassWriteIndex: 2 * k, endOfPassWriteIndex: 2 * k + 1 };
  }

  /** Records the resolve into `encoder` (before it is finished); call `afterSubmit` once it is submitted. */
  resolve(encoder: GPUCommandEncoder): (() => void) | null {
    const names = this.names;
    if (!names.length) return null;
    this.names = [];
    const bytes = 16 * names.length;
    const staging = this.gpu.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    encoder.resolveQuerySet(this.querySet, 0, 2 * names.length, this.resolved, 0);
    encoder.copyBufferToBuffer(this.resolved, 0, staging, 0, bytes);
    return () => {
      this.pending.push(staging.mapAsync(GPUMapMode.READ).then(() => {
        const t = new BigUint64Array(staging.getMappedRange());
        names.forEach(({ name, seq }, k) => {
          const e = this.totals.get(name) ?? { calls: 0, ns: 0 };
          const [b, end] = [t[2 * k], t[2 * k + 1] > t[2 * k] ? t[2 * k + 1] : t[2 * k]];
          e.calls++;
          e.ns += Number(end - b);
          this.totals.set(name, e);
          if (this.keepStamps > 0) this.stamps.set(seq, [b, end]);
        });
        staging.unmap();
        staging.destroy();
      }, () => { this.untimed += names.length; })); // the device went away before the readback
    };
  }

  /** Waits for every submitted readback. */
  async settle(): Promise<void> {
    await Promise.all(this.pending.splice(0));
  }

  /** Dispatches recorded so far (timed or not): a mark for takeStamps(). */
  dispatches(): number { return this.seq; }

  /**
   * Waits for every submitted readback, then hands over (and forgets) the kept stamps of
   * dispatches `from` ..< `to`, by sequence number (a dispatch that ran untimed has none).
   */
  async takeStamps(from: number, to: number): Promise<Map<number, readonly [bigint, bigint]>> {
    await this.settle();
    const out = new Map<number, readonly [bigint, bigint]>();
    for (const [seq, st] of this.stamps) {
      if (seq >= from && seq < to) out.set(seq, st);
      if (seq < to) this.stamps.delete(seq);
    }
    return out;
  }

  /** Per-kernel totals so far, slowest first. */
  times(): KernelTime[] {
    return [...this.totals].map(([name, e]) => ({ name, calls: e.calls, ms: e.ns / 1e6 })).sort((a, b) => b.ms - a.ms || a.name.localeCompare(b.name));
  }

  reset(): void { this.totals.clear(); this.untimed = 0; }

  destroy(): void {
    this.querySet.destroy();
    this.resolved.destroy();
  }
}
