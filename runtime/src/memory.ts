// Live-buffer accounting of one run, and the run's use of the model's arena. Invariant: a
// buffer's count is the number of bindings (scope entries and loop-carried holders) that refer
// to it, so views sharing a buffer are counted once; when the count drops to zero the buffer is
// freed on the device and its bytes leave `live`. External buffers (inputs, params, constants)
// are neither counted nor freed.
// With a memory plan (value → slot, from the compiler's plan-memory pass) and a device arena,
// `offer` hands a planned result its slot's tensor — only while no live buffer is in that slot,
// or, for a result the plan writes in place, while every buffer there is an input of the node of
// the result's element count and width that dies at it — so two live values never share memory,
// nor does a result overwrite input elements not yet read, even under a stale plan. Arena buffers are never freed; the
// arena's bytes count as live from the moment they exist, so `peak` is what the run really held:
// the arena plus the unplanned buffers alive at once.
// With a plan but no arena (WebGPU), a slot counts once, at the largest buffer it has held, while
// any buffer is in it: the bytes an arena laid out by the plan would hold.
// Values in `escaping` (the graph outputs a synchronous CPU run hands to its caller without a
// copy) are never offered an arena slot: the next run would overwrite what the caller holds. A
// planned one is offered an array its caller handed back (`recycled`, Model.recycle) of its
// dtype and size instead, when there is one: a fresh buffer as far as this run is concerned.

import { ELEMENT_BYTES, numel, type DType, type TensorType, type Value } from '@kiln/ir-spec';
import type { Arena, Device, DeviceTensor } from './device.js';
import type { SlotPlan } from './plan.js';
import type { RecycledArrays } from './recycled.js';
import { isDeviceTensor, type RtValue } from './values.js';


export class LiveBuffers {
  private readonly refs = new Map<unknown, number>();
  /** Bytes of unplanned intermediate buffers (and, without an arena, of occupied slots) alive now. */
  private unplanned = 0;
  /** The most bytes of intermediates held at once during the run (arena included). */
  peak = 0;
  /** Bytes of every intermediate buffer the run created (arena tensors included). */
  total = 0;
  /** Bytes of the intermediate buffers outside the arena alive now, as the device sized them (no plan estimate). */
  private buffersLive = 0;
  /** Measured: the most bytes the arena and the other intermediate buffers held at once. */
  measuredPeak = 0;

  /** Slot of each live buffer that sits in a slot. */
  private readonly bufferSlot = new Map<unknown, number>();
  /** Per slot: the live buffers in it. */
  private readonly occupants = new Map<number, Set<unknown>>();
  /** Without an arena: the most bytes each slot has held. */
  private readonly slotBytes = new Map<number, number>();
  /** Arena tensors offered to the node being run, by buffer, with their slot. */
  private offered = new Map<unknown, number>();

  constructor(
    private readonly device: Device,
    private readonly external: ReadonlySet<unknown>,
    /** The memory plan's slots, when the graph has one. */
    private readonly plan?: SlotPlan,
    /** The model's arena, when this run may use it. */
    private readonly arena?: Arena,
    /** Values whose results leave the run as they are (never placed in the arena). */
    private readonly escaping?: ReadonlySet<Value>,
    /** Arrays the caller handed back, for escaping results to be computed into. */
    private readonly recycled?: RecycledArrays,
  ) {}

  /** Whether `buffer` is a live buffer in a plan slot (an arena tensor, when there is an arena). */
  inSlot(buffer: unknown): boolean { return this.bufferSlot.has(buffer); }

  /** Bytes of intermediates held now (the arena's slots included). */
  get live(): number { return this.unplanned + (this.arena?.bytes ?? 0); }

  private notePeak(): void {
    if (this.live > this.peak) this.peak = this.live;
    const measured = this.buffersLive + (this.arena?.bytes ?? 0);
    if (measured > this.measuredPeak) this.measuredPeak = measured;
  }

  /**
   * Arena tensors for a node's planned results (undefined where a result is not planned, has a
   * data-dependent size, or its slot is still in use), or undefined when there are none.
   * `dying` holds the values released right after this node.
   */
  offer(outputs: readonly Value[], types: readonly TensorType[], inputs: readonly (DeviceTensor | null)[], dying: readonly (RtValue | undefined)[]): (DeviceTensor | undefined)[] | undefined {
    if (!this.arena || !this.plan) return undefined;
    if (this.offered.size) this.offered = new Map();
    let out: (DeviceTensor | undefined)[] | undefined;
    for (let i = 0; i < outputs.length; i++) {
      const slot = this.plan.slots.get(outputs[i]), t = types[i];
      if (slot === undefined || !t || !t.shape.every((d): d is number => typeof d === 'number')) continue;
      if (this.escaping?.has(outputs[i])) {
        const data = this.recycled?.take(t.dtype, numel(t.shape as readonly number[]));
        if (data) (out ??= [])[i] = { buffer: data, shape: [...(t.shape as readonly number[])], dtype: t.dtype };
        continue;
      }
      if (this.offered.size && [...this.offered.values()].includes(slot)) continue;
      const held = this.occupants.get(slot);
      const shape = t.shape as readonly number[];
      if (held?.size && !(this.plan.inPlace.has(outputs[i]) && this.allOverwritable(held, dying, inputs, t.dtype, numel(shape)))) continue;
      const tensor = this.arena.take(slot, t.dtype, shape);
      this.offered.set(tensor.buffer, slot);
      (out ??= [])[i] = tensor;
    }
    this.notePeak();
    return out;
  }

  /**
   * Whether a result of `dtype`/`shape` may be written over `buffer` in place: it is an input of
   * the node with as many elements of the same width, so element k of the result lands exactly on
   * element k of the input (an elementwise kernel reads that before writing it). A broadcast
   * input, or a different element width, would be overwritten before it was read.
   */
  private overwritable(buffer: unknown, inputs: readonly (DeviceTensor | null)[], dtype: DType, n: number): boolean {
    for (const t of inputs) if (t !== null && t.buffer === buffer && numel(t.shape) === n && ELEMENT_BYTES[t.dtype] === ELEMENT_BYTES[dtype]) return true;
    return false;
  }

  /** Whether every buffer `held` in a slot dies at this node and may be overwritten by its result of n elements. */
  private allOverwritable(held: ReadonlySet<unknown>, dying: readonly (RtValue | undefined)[], inputs: readonly (DeviceTensor | null)[], dtype: DType, n: number): boolean {
    for (const b of held) if (!this.diesWith(b, dying) || !this.overwritable(b, inputs, dtype, n)) return false;
    return true;
  }

  /** Whether every binding of `buffer` is among `dying`. */
  private diesWith(buffer: unknown, dying: readonly (RtValue | undefined)[]): boolean {
    let n = 0;
    for (const v of dying) if (v !== undefined && isDeviceTensor(v) && v.buffer === buffer) n++;
    return n === this.refs.get(buffer);
  }

  /** Counts one more binding of `v` (bound to graph value `value`, when known). */
  retain(v: RtValue, value?: Value): void {
    if (isDeviceTensor(v)) {
      if (this.external.has(v.buffer)) return;
      const n = this.refs.get(v.buffer) ?? 0;
      this.refs.set(v.buffer, n + 1);
      if (n > 0) return;
      const bytes = this.device.byteLength(v.buffer);
      this.total += bytes;
      const inArena = this.offered.get(v.buffer);
      if (inArena !== undefined) {
        this.offered.delete(v.buffer);
        this.enterSlot(v.buffer, inArena);
        return;
      }
      this.buffersLive += bytes;
      const slot = this.arena || value === undefined ? undefined : this.plan?.slots.get(value);
      if (slot === undefined) this.unplanned += bytes;
      else this.enterEstimate(v.buffer, slot, bytes);
      this.notePeak();
    } else if (Array.isArray(v)) {
      for (const e of v) this.retain(e);
    }
  }

  private enterSlot(buffer: unknown, slot: number): void {
    this.bufferSlot.set(buffer, slot);
    let held = this.occupants.get(slot);
    if (!held) this.occupants.set(slot, (held = new Set()));
    held.add(buffer);
  }

  /** Without an arena: an idle slot becomes live at its capacity; a live one grows by the difference. */
  private enterEstimate(buffer: unknown, slot: number, bytes: number): void {
    const busy = (this.occupants.get(slot)?.size ?? 0) > 0, cap = this.slotBytes.get(slot) ?? 0;
    this.enterSlot(buffer, slot);
    const grown = Math.max(cap, bytes);
    this.slotBytes.set(slot, grown);
    this.unplanned += busy ? grown - cap : grown;
  }

  /** Drops one binding of `v`; at the last, frees the buffer (an arena buffer stays in the arena). */
  release(v: RtValue): void {
    if (isDeviceTensor(v)) {
      if (this.external.has(v.buffer)) return;
      const n = this.refs.get(v.buffer);
      if (n === undefined) throw new Error('runtime: a buffer was released more often than retained (executor bug)');
      if (n > 1) { this.refs.set(v.buffer, n - 1); return; }
      this.refs.delete(v.buffer);
      const slot = this.bufferSlot.get(v.buffer);
      if (slot === undefined) {
        const bytes = this.device.byteLength(v.buffer);
        this.unplanned -= bytes;
        this.buffersLive -= bytes;
        this.device.free(v.buffer);
        return;
      }
      this.bufferSlot.delete(v.buffer);
      const held = this.occupants.get(slot)!;
      held.delete(v.buffer);
      if (this.arena) return;
      this.buffersLive -= this.device.byteLength(v.buffer);
      if (held.size === 0) this.unplanned -= this.slotBytes.get(slot)!;
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
