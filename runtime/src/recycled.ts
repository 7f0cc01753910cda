// Output arrays handed back to a model (Model.recycle) for later runs to compute results into,
// instead of allocating fresh ones: jit.compile's training step returns the forward's saved
// values once the backward graph has read them, so a step's large activations reuse the arrays
// of the step before (no fresh, zero-filled pages to fault in, no garbage to collect).
// Invariant: an array is taken at most once per give, only for a result of its dtype and
// element count, and only arrays that view a whole buffer of their own enter the pool (a view of
// part of a buffer may share it with an array someone still holds).

import { numel, type DType, type TypedArray } from '@kiln/ir-spec';

export class RecycledArrays {
  private readonly free: { dtype: DType; n: number; data: TypedArray }[] = [];

  /** `cap`: the most arrays kept (more are dropped for the collector). */
  constructor(private readonly cap: number) {}

  /** Keeps `data` (a result of `dtype`/`shape` nobody reads any more) for a later take. */
  give(dtype: DType, shape: readonly number[], data: TypedArray): void {
    if (this.free.length >= this.cap || data.byteOffset !== 0 || data.byteLength !== data.buffer.byteLength) return;
    const n = numel(shape);
    if (data.length !== n || this.free.some((f) => f.data.buffer === data.buffer)) return;
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
