// Live-buffer accounting of one run. Invariant: a buffer's count is the number of bindings
// (scope entries and loop-carried holders) that refer to it, so views sharing a buffer are
// counted once; when the count drops to zero the buffer is freed on the device and its bytes
// leave `live`. External buffers (inputs, params, constants) are neither counted nor freed.
// With a memory plan (value → slot, from the compiler's plan-memory pass), a buffer first bound
// to a planned value lives in that value's slot: a slot counts once, at the largest buffer it
// has held, while any buffer is in it — the bytes an arena laid out by the plan would hold, so
// in-place results and reused slots cost nothing extra.

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

  /** Slot of each live planned buffer. */
  private readonly bufferSlot = new Map<unknown, number>();
  /** Per slot: buffers in it now, and the most bytes it has held. */
  private readonly slotBuffers = new Map<number, number>();
  private readonly slotBytes = new Map<number, number>();

  constructor(
    private readonly device: Device,
    private readonly external: ReadonlySet<unknown>,
    /** The memory plan's slots, when the graph has one. */
    private readonly slots?: ReadonlyMap<Value, number>,
  ) {}

  /** Counts one more binding of `v` (bound to graph value `value`, when known). */
  retain(v: RtValue, value?: Value): void {
    if (isDeviceTensor(v)) {
      if (this.external.has(v.buffer)) return;
      const n = this.refs.get(v.buffer) ?? 0;
      this.refs.set(v.buffer, n + 1);
      if (n === 0) {
        const bytes = this.device.byteLength(v.buffer);
        this.total += bytes;
        const slot = value === undefined ? undefined : this.slots?.get(value);
        if (slot === undefined) this.live += bytes;
        else this.enterSlot(v.buffer, slot, bytes);
        if (this.live > this.peak) this.peak = this.live;
      }
    } else if (Array.isArray(v)) {
      for (const e of v) this.retain(e);
    }
  }

  private enterSlot(buffer: unknown, slot: number, bytes: number): void {
    this.bufferSlot.set(buffer, slot);
    const held = this.slotBuffers.get(slot) ?? 0, cap = this.slotBytes.get(slot) ?? 0;
    this.slotBuffers.set(slot, held + 1);
    const grown = Math.max(cap, bytes);
    this.slotBytes.set(slot, grown);
    // An idle slot becomes live at its capacity; a live one grows by the difference.
    this.live += held === 0 ? grown : grown - cap;
  }

  private leave(buffer: unknown, bytes: number): void {
    const slot = this.bufferSlot.get(buffer);
    if (slot === undefined) { this.live -= bytes; return; }
    this.bufferSlot.delete(buffer);
    const held = this.slotBuffers.get(slot)! - 1;
    this.slotBuffers.set(slot, held);
    if (held === 0) this.live -= this.slotBytes.get(slot)!;
  }

  release(v: RtValue): void {
    if (isDeviceTensor(v)) {
      if (this.external.has(v.buffer)) return;
      const n = this.refs.get(v.buffer);
      if (n === undefined) throw new Error('runtime: a buffer was released more often than retained (executor bug)');
      if (n > 1) { this.refs.set(v.buffer, n - 1); return; }
      this.refs.delete(v.buffer);
      this.leave(v.buffer, this.device.byteLength(v.buffer));
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
    this.mem.retain(rt, v);
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
