// Runs on tensors that already live on the model's device (Model.runDevice: jit.compile's graphs
// on WebGPU), and their recording for replay (mode 'reduce-overhead'). Invariant: a replay
// computes what a fresh run on the same inputs would: it happens only when the inputs have the
// recorded dtypes, shapes and scalar values and the inputs read in place are the same buffers,
// the commands are the recorded ones on buffers only the record holds (its copies of the other
// inputs, its intermediates and results), and each result comes back as a fresh copy.

import { dataDimsOf, hasOp, walkNodes, type Graph, type Node } from '@kiln/ir-spec';
import type { Device, DeviceTensor, RecordedWork } from './device.js';
import type { Scalar } from './scalar.js';

/** An input of Model.runDevice: a tensor of the model's device, or a scalar. */
export type DeviceInput = DeviceTensor | number | boolean;

/**
 * The first node that reads a value back to the host on a device other than the CPU (`.item()`,
 * an `if` on a tensor, a host call, a size set by data), which a run that never waits cannot do.
 */
export function readsBack(g: Graph): Node | undefined {
  for (const n of walkNodes(g.body)) {
    if (n.op === 'item' || n.op === 'host_call') return n;
    if (n.op === 'if' && n.inputs[0]?.type.kind === 'tensor') return n;
    if (hasOp(n.op) && dataDimsOf(n.op)) return n;
  }
  return undefined;
}

/** How a recorded run took one input: copied into a buffer of the record's, read in place, or a scalar value. */
export type RecordedInput =
  | { readonly kind: 'copied'; readonly tensor: DeviceTensor }
  | { readonly kind: 'in place'; readonly tensor: DeviceTensor }
  | { readonly kind: 'scalar'; readonly value: Scalar };

export class DeviceRunRecord {
  constructor(
    private readonly device: Device,
    private readonly inputs: readonly RecordedInput[],
    private readonly work: RecordedWork,
    /** The run's results (the record's buffers, or inputs' and constants'): copied out on each replay. */
    private readonly results: readonly DeviceTensor[],
    /** Buffers the record allocated (input copies, results), freed by release(). */
    private readonly owned: readonly unknown[],
  ) {}

  get commands(): number { return this.work.commands; }

  /** The results of a run on `given`, replayed; undefined when `given` does not match the record. */
  replay(given: readonly (DeviceTensor | Scalar)[]): DeviceTensor[] | undefined {
    if (this.released || given.length !== this.inputs.length) return undefined;
    for (let k = 0; k < given.length; k++) {
      const r = this.inputs[k], g = given[k];
      if (r.kind === 'scalar') { if (!Object.is(g, r.value)) return undefined; continue; }
      if (typeof g !== 'object' || g.dtype !== r.tensor.dtype || !sameShape(g.shape, r.tensor.shape)) return undefined;
      if (r.kind === 'in place' && g.buffer !== r.tensor.buffer) return undefined;
    }
    this.inputs.forEach((r, k) => { if (r.kind === 'copied') copyInto(this.device, given[k] as DeviceTensor, r.tensor); });
    this.work.replay();
    return this.results.map((t) => freshCopy(this.device, t));
  }

  /** Frees the record's buffers (once; it is not replayed after). */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.work.release();
    for (const b of this.owned) this.device.free(b);
  }
  private released = false;
}

/** A new buffer of the device holding `t`'s elements (recorded after the work so far). */
export function freshCopy(device: Device, t: DeviceTensor): DeviceTensor {
  const out = device.alloc(t.dtype, t.shape);
  copyInto(device, t, out);
  return out;
}

function copyInto(device: Device, src: DeviceTensor, dst: DeviceTensor): void {
  device.copy!(src.buffer, dst.buffer, Math.min(device.byteLength(src.buffer), device.byteLength(dst.buffer)));
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}
