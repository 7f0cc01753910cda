// Live-buffer accounting of one run. Invariant: a buffer's count is the number of bindings
// (scope entries and loop-carried holders) that refer to it, so views sharing a buffer are
// counted once; when the count drops to zero the buffer is freed on the device and its bytes
// leave `live`. External buffers (inputs, params, constants) are neither counted nor freed.

import type { Value } from '@kiln/ir-spec';
import type { Device } from './device.js';
import { isDeviceTensor, type RtValue } from './values.js';

export class LiveBuffers {
  private readonly refs = new Map<unknown, number>();
  /** Bytes of intermediate buffers alive now. */
  live = 0;
  /** The most `live` has been during the run. */
  peak = 0;
  /** Bytes of every intermediate buffer the run created. */
  total = 0;

  constructor(private readonly device: Device, private readonly external: ReadonlySet<unknown>) {}

  retain(v: RtValue): void {
    if (isDeviceTensor(v)) {
      if (this.external.has(v.buffer)) return;
      const n = this.refs.get(v.buffer) ?? 0;
      this.refs.set(v.buffer, n + 1);
      if (n === 0) {
        const bytes = this.device.byteLength(v.buffer);
        this.live += bytes;
        this.total += bytes;
        if (this.live > this.peak) this.peak = this.live;
      }
    } else if (Array.isArray(v)) {
      for (const e of v) this.retain(e);
    }
  }

  release(v: RtValue): void {
    if (isDeviceTensor(v)) {
      if (this.external.has(v.buffer)) return;
      const n = this.refs.get(v.buffer);
      if (n === undefined) throw new Error('runtime: a buffer was released more often than retained (executor bug)');
      if (n > 1) { this.refs.set(v.buffer, n - 1); return; }
      this.refs.delete(v.buffer);
      this.live -= this.device.byteLength(v.buffer);
      this.device.free(v.buffer);
    } else if (Array.isArray(v)) {
      for (const e of v) this.release(e);
    }
  }
}

/** Bindings of the values of one block activation; a lookup falls back to the enclosing scope. */
export class Scope {
  private readonly values = new Map<Value, RtValue>();

  constructor(readonly mem: LiveBuffers, private readonly parent?: Scope) {}

  child(): Scope { return new Scope(this.mem, this); }

  bind(v: Value, rt: RtValue): void {
    this.mem.retain(rt);
    this.values.set(v, rt);
  }

  get(v: Value): RtValue | undefined {
    return this.values.get(v) ?? this.parent?.get(v);
  }

  /** Drops one binding of this scope (a value past its last use). */
  release(v: Value): void {
    const rt = this.values.get(v);
    if (rt === undefined) return;
    this.values.delete(v);
    this.mem.release(rt);
  }

  /** Drops every binding left (the end of a block activation). */
  releaseAll(): void {
    for (const rt of this.values.values()) this.mem.release(rt);
    this.values.clear();
  }
}
