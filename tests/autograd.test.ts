// Autograd engine behaviour (PyTorch semantics): graph release and retainGraph, accumulation,
// higher-order gradients, grad modes, detach/requiresGrad_, hooks, retainGrad and the
// version-counter check on in-place ops. Expected numbers are derived by hand in comments.

import { describe, it, expect } from 'vitest';
import { autograd, enableGrad, inferenceMode, noGrad, ones, tensor, type Tensor } from '@kiln/core';

const arr = (t: Tensor | null) => [...t!.toArray()];
const near = (got: number[], want: number[], tol = 1e-5) => {
  expect(got.length).toBe(want.length);
  got.forEach((g, i) => expect(Math.abs(g - want[i])).toBeLessThanOrEqual(tol * (1 + Math.abs(want[i]))));
};

describe('backward and the graph lifetime', () => {
  it('a second backward without retainGraph errors and names the node', () => {
    const x = tensor([1, 2], { requiresGrad: true });
    const y = x.exp().sum();
    y.backward();
    expect(() => y.backward()).toThrow(/backward through the graph a second time \(through sumBackward\).*retainGraph: true/);
  });

  it('retainGraph allows it, and the gradients accumulate', () => {
    // d/dx sum(x²) = 2x → [2, 4]; twice → [4, 8].
    const x = tensor([1, 2], { requiresGrad: true });
    const y = x.mul(x).sum();
    y.backward({ retainGraph: true });
    near(arr(x.grad), [2, 4]);
    y.backward();
    near(arr(x.grad), [4, 8]);
  });

  it('gradients of separate graphs accumulate into .grad until zeroed', () => {
    // d/dx 3x = 3, d/dx x² = 2x = 4 at x = 2.
    const x = tensor([2], { requiresGrad: true });
    x.mul(3).sum().backward();
    x.mul(x).sum().backward();
    near(arr(x.grad), [7]);
    x.zeroGrad();
    expect(x.grad).toBeNull();
  });

  it('requires an explicit gradient for a non-scalar output', () => {
    const x = tensor([1, 2], { requiresGrad: true });
    expect(() => x.mul(2).backward()).toThrow(/grad can be implicitly created only for scalar outputs/);
    x.mul(2).backward({ gradient: tensor([1, 10]) });
    near(arr(x.grad), [2, 20]);
  });

  it('backward on a tensor outside any graph says why', () => {
    expect(() => tensor([1]).backward()).toThrow(/does not require grad/);
  });
});

describe('autograd.grad', () => {
  it('computes third derivatives with createGraph', () => {
    // y = x³: y' = 3x² = 12, y'' = 6x = 12, y''' = 6 at x = 2.
    const x = tensor([2], { requiresGrad: true });
    const y = x.pow(3).sum();
    const [d1] = autograd.grad(y, x, { createGraph: true });
    near(arr(d1), [12]);
    const [d2] = autograd.grad(d1!.sum(), x, { createGraph: true });
    near(arr(d2), [12]);
    const [d3] = autograd.grad(d2!.sum(), x);
    near(arr(d3), [6]);
    expect(x.grad).toBeNull();         // grad() returns gradients without touching .grad
  });

  it('rejects unused inputs unless allowUnused', () => {
    const x = tensor([1], { requiresGrad: true }), z = tensor([1], { requiresGrad: true });
    const y = x.mul(2).sum();
    expect(() => autograd.grad(y, [x, z], { retainGraph: true })).toThrow(/input 1 .* was not used/);
    const [gx, gz] = autograd.grad(y, [x, z], { allowUnused: true });
    near(arr(gx), [2]);
    expect(gz).toBeNull();
  });

  it('takes gradients with respect to non-leaf tensors', () => {
    // y = 3·h with h = x²: dy/dh = 3.
    const x = tensor([1, 2], { requiresGrad: true });
    const h = x.mul(x);
    const [gh] = autograd.grad(h.mul(3).sum(), h);
    near(arr(gh), [3, 3]);
  });
});

describe('grad modes', () => {
  it('noGrad records nothing and returns the callback result; enableGrad re-enables inside', () => {
    const x = tensor([1], { requiresGrad: true });
    const [a, b] = noGrad(() => [x.mul(2), enableGrad(() => x.mul(2))]);
    expect(a.requiresGrad).toBe(false);
    expect(a.gradFn).toBeNull();
    expect(b.requiresGrad).toBe(true);
  });

  it('restores the mode when the callback throws', () => {
    expect(() => noGrad(() => { throw new Error('boom'); })).toThrow('boom');
    const x = tensor([1], { requiresGrad: true });
    expect(x.mul(2).requiresGrad).toBe(true);
  });

  it('inference tensors cannot be saved for backward or require grad', () => {
    const t = inferenceMode(() => ones([2]).mul(3));
    expect(t.isInference).toBe(true);
    expect(t.requiresGrad).toBe(false);
    const w = tensor([1, 2], { requiresGrad: true });
    expect(() => w.mul(t)).toThrow(/Inference tensors cannot be saved for backward/);
    expect(() => t.requiresGrad_()).toThrow(/inference tensor/);
    // An op that saves nothing of it is fine (add's gradient needs no inputs).
    expect(w.add(t).requiresGrad).toBe(true);
  });
});

describe('detach and requiresGrad_', () => {
  it('detach shares the data but blocks the gradient', () => {
    // y = x·detach(x): dy/dx = detach(x) = [3].
    const x = tensor([3], { requiresGrad: true });
    const d = x.detach();
    expect(d.requiresGrad).toBe(false);
    expect(d.data).toBe(x.data);
    x.mul(d).sum().backward();
    near(arr(x.grad), [3]);
  });

  it('requiresGrad_ turns a leaf on, refuses non-float tensors and turning a non-leaf off', () => {
    const x = tensor([1, 2]);
    expect(x.requiresGrad_()).toBe(x);
    expect(x.requiresGrad).toBe(true);
    expect(() => tensor([1], { dtype: 'int32' }).requiresGrad_()).toThrow(/only floating-point tensors \(float32, float16, bfloat16\) can require gradients/);
    expect(() => x.mul(2).requiresGrad_(false)).toThrow(/non-leaf.*detach\(\)/);
  });
});

describe('hooks and retainGrad', () => {
  it('a leaf hook sees the gradient and may replace it; remove() detaches it', () => {
    const x = tensor([1, 2], { requiresGrad: true });
    const seen: number[][] = [];
    const h = x.registerHook((g) => { seen.push(arr(g)); return g.mul(10); });
    x.mul(3).sum().backward();
    expect(seen).toEqual([[3, 3]]);
    near(arr(x.grad), [30, 30]);
    h.remove();
    x.zeroGrad();
    x.mul(3).sum().backward();
    near(arr(x.grad), [3, 3]);
  });

  it('a non-leaf hook replaces the gradient that flows on to the leaves', () => {
    // y = sum(2·h), h = x²: the hook doubles dy/dh = 2 → 4, so dy/dx = 4·2x = [8, 16].
    const x = tensor([1, 2], { requiresGrad: true });
    const h = x.mul(x);
    h.registerHook((g) => g.mul(2));
    h.mul(2).sum().backward();
    near(arr(x.grad), [8, 16]);
  });

  it('retainGrad fills .grad of a non-leaf', () => {
    const x = tensor([1, 2], { requiresGrad: true });
    const h = x.mul(x).retainGrad();
    h.mul(5).sum().backward();
    near(arr(h.grad), [5, 5]);
    near(arr(x.grad), [10, 20]);
  });
});

describe('in-place operations', () => {
  it('modifying a tensor that a node saved errors in backward and names the op', () => {
    const x = tensor([1, 2], { requiresGrad: true });
    const y = x.exp();                 // exp saves its output
    y.add_(1);
    expect(() => y.sum().backward()).toThrow(/modified by an in-place operation: output 0 of exp .*version 1; expected version 0/);
  });

  it('in-place on a non-leaf whose old value no rule needs is fine', () => {
    // z = 2·sin(x) after sin's node (which saved x, not z): dz/dx = 2cos(x).
    const x = tensor([0.5], { requiresGrad: true });
    const z = x.sin();
    z.mul_(2);
    z.sum().backward();
    near(arr(x.grad), [2 * Math.cos(0.5)]);
  });

  it('in-place on a leaf that requires grad is refused while recording', () => {
    const x = tensor([1], { requiresGrad: true });
    expect(() => x.add_(1)).toThrow(/leaf tensor that requires grad is used in an in-place operation/);
    noGrad(() => x.add_(1));
    expect(arr(x)).toEqual([2]);
  });
});
