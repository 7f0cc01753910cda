// jit.compile training: a compiled backward graph's gradients go to `.grad` without a copy only
// when their buffer is their own. A gradient that could share memory with the incoming gradient
// (a reshape of it, whether or not the runtime copies such a view) must not be aliased by
// `.grad`: writing the incoming gradient afterwards, or accumulating a second backward, must not
// change `.grad` behind the user's back.
import { describe, expect, it } from 'vitest';
import { jit, ones, randn, tensor, type Tensor } from 'kiln';

describe('jit.compile gradients in .grad', () => {
  it('a gradient that is a view of the incoming gradient is copied into .grad', () => {
    const w = randn([2, 3]).requiresGrad_();
    const f = jit.compile((a: Tensor) => a.reshape([6]));
    const g = ones([6]);
    f(w).backward({ gradient: g });
    expect(w.grad!.tolist()).toEqual([[1, 1, 1], [1, 1, 1]]);
    g.add_(5); // the incoming gradient changes afterwards
    expect(w.grad!.tolist()).toEqual([[1, 1, 1], [1, 1, 1]]);
  });

  it('fresh gradients are taken, accumulate over two backwards and match eager', () => {
    const w = tensor([[1, -2], [3, 0.5]]).requiresGrad_();
    const b = tensor([0.25, -1]).requiresGrad_();
    const f = jit.compile((x: Tensor, a: Tensor, c: Tensor) => x.matmul(a).add(c).relu().sum());
    const x = tensor([[1, 2], [-1, 0.5], [2, 2]]);
    f(x, w, b).backward();
    const first = [w.grad!.tolist(), b.grad!.tolist()];
    f(x, w, b).backward();
    const we = tensor([[1, -2], [3, 0.5]]).requiresGrad_(), be = tensor([0.25, -1]).requiresGrad_();
    x.matmul(we).add(be).relu().sum().backward();
    expect(first).toEqual([we.grad!.tolist(), be.grad!.tolist()]);
    x.matmul(we).add(be).relu().sum().backward();
    expect([w.grad!.tolist(), b.grad!.tolist()]).toEqual([we.grad!.tolist(), be.grad!.tolist()]);
    expect(w.grad!.requiresGrad).toBe(false);
  });
});
