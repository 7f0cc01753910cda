// The vocabulary gradient rules are written in. It wraps an OpCaller so the same rule runs in
// eager autograd (values are Tensors, ops dispatch) and, later, in graph autodiff (values are
// IR values, ops append nodes). Invariant: every method here is built from registered ops.

import type { DType } from './dtype.js';
import type { Dim, TensorType } from './shape.js';

/** How a rule calls ops; implemented by eager autograd (and the graph builder). */
export interface OpCaller<T> {
  call(op: string, inputs: readonly (T | null)[], attrs?: Record<string, unknown>): T[];
  /** A 0-d constant. */
  scalar(value: number, dtype: DType): T;
  typeOf(value: T): TensorType;
}

export class GradBuilder<T> {
  constructor(readonly caller: OpCaller<T>) {}

  op(name: string, inputs: readonly (T | null)[], attrs: Record<string, unknown> = {}): T {
    return this.caller.call(name, inputs, attrs)[0];
  }
  shape(t: T): readonly Dim[] { return this.caller.typeOf(t).shape; }
  dtype(t: T): DType { return this.caller.typeOf(t).dtype; }
  scalar(v: number, dtype: DType = 'float32'): T { return this.caller.scalar(v, dtype); }

  add(a: T, b: T): T { return this.op('add', [a, b]); }
  sub(a: T, b: T): T { return this.op('sub', [a, b]); }
  mul(a: T, b: T): T { return this.op('mul', [a, b]); }
  div(a: T, b: T): T { return this.op('div', [a, b]); }
  neg(a: T): T { return this.op('neg', [a]); }
  mulScalar(a: T, s: number): T { return this.mul(a, this.scalar(s, this.dtype(a))); }
  addScalar(a: T, s: number): T { return this.add(a, this.scalar(s, this.dtype(a))); }
  unary(name: string, a: T): T { return this.op(name, [a]); }
  where(cond: T, a: T, b: T): T { return this.op('where', [cond, a, b]); }
  cast(a: T, dtype: DType): T { return this.dtype(a) === dtype ? a : this.op('cast', [a], { dtype }); }
  compare(name: 'eq' | 'ne' | 'lt' | 'le' | 'gt' | 'ge', a: T, b: T): T { return this.op(name, [a, b]); }
  zerosLike(a: T): T { return this.mulScalar(a, 0); }

  sum(a: T, dims: number[] | null, keepdim = false): T { return this.op('sum', [a], { dim: dims, keepdim }); }
  reshape(a: T, shape: readonly Dim[]): T { return this.op('reshape', [a], { shape: [...shape] }); }
  expand(a: T, shape: readonly Dim[]): T { return this.op('expand', [a], { shape: [...shape] }); }
  permute(a: T, dims: number[]): T { return this.op('permute', [a], { dims }); }
  transposeLast(a: T): T {
    const r = this.shape(a).length;
    const dims = Array.from({ length: r }, (_, i) => i);
    [dims[r - 2], dims[r - 1]] = [dims[r - 1], dims[r - 2]];
    return this.permute(a, dims);
  }
  matmul(a: T, b: T): T { return this.op('matmul', [a, b]); }

  /** Sums a broadcast gradient back to `shape` (leading dims, then size-1 dims). */
  sumToShape(g: T, shape: readonly Dim[]): T {
    const gs = this.shape(g);
    if (gs.length === shape.length && gs.every((d, i) => d === shape[i])) return g;
    const lead = gs.length - shape.length;
    const dims: number[] = [];
    for (let i = 0; i < gs.length; i++) {
      if (i < lead) dims.push(i);
      else if (shape[i - lead] === 1 && gs[i] !== 1) dims.push(i);
    }
    const s = dims.length ? this.sum(g, dims, true) : g;
    return this.reshape(s, shape);
  }
}
