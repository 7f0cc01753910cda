// Output arrays handed back to a model (Model.recycle) for later runs to compute results into,
// instead of allocating fresh ones: jit.compile's training step returns the forward's saved
// values once the backward graph has read them, so a step's large activations reuse the arrays
// of the step before (no fresh, zero-filled pages to fault in, no garbage to collect).
// Where the device has memory its kernels use in place (the CPU device's resident arrays in the
// WebAssembly memory), an array handed back is swapped for such an array, made once: the next
// run computes into it without copying the result out, and the kernels that read the saved value
// in the backward graph read it where it lies.
// Invariant: an array is taken at most once per give, only for a result of its dtype and
// element count, and only arrays that view a whole buffer of their own, or that the pool made,
// enter it (a view of part of a buffer may share it with an array someone still holds).

import { numel, type DType, type TypedArray } from '@kiln/ir-spec';

/** An array of `dtype` and n elements in memory the device's kernels use in place (Device.residentArray), or undefined. */
export type ResidentArrays = (dtype: DType, n: number) => TypedArray | undefined;

export class RecycledArrays {
  private readonly free: { dtype: DType; n: number; data: TypedArray }[] = [];
  /** The arrays this pool made (resident ones), which may view part of a buffer. */
  private readonly made = new WeakSet<TypedArray>();

  /** `cap`: the most arrays kept (more are dropped for the collector). */
  constructor(private readonly cap: number, private readonly resident?: ResidentArrays) {}

  /** Arrays handed back that were swapped for resident ones (one swap each). */
  private readonly swapped = new WeakSet<TypedArray>();

  /** Keeps `data` (a result of `dtype`/`shape` nobody reads any more), or a resident array of its kind, for a later take. */
  give(dtype: DType, shape: readonly number[], data: TypedArray): void {
    const n = numel(shape);
    if (this.free.length >= this.cap || data.length !== n || this.swapped.has(data)) return;
    if (!this.made.has(data)) {
      const r = this.resident?.(dtype, n);
      if (r) {
        this.swapped.add(data);
        this.made.add(r);
        data = r;
      } else if (data.byteOffset !== 0 || data.byteLength !== data.buffer.byteLength || this.free.some((f) => f.data.buffer === data.buffer)) {
        return;
      }
    }
    if (this.free.some((f) => f.data === data)) return;
    this.free.push({ dtype, n, data });
  }

  /** An array for a result of `dtype` with `n` elements, removed from the pool, or undefined. */
  take(dtype: DType, n: number): TypedArray | undefined {
    for (let i = this.free.length - 1; i >= 0; i--) {
      const f = this.free[i];
      if (f.dtype !== dtype || f.n !== n) continue;
      this.free.splice(i, 1);
      return f.data;
    }
    return undefined;
  }
}
