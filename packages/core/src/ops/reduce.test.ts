// Unit tests of the reductions beyond the PyTorch golden cases: ties (amax shares the gradient,
// max(dim) gives it to the first index), NaN rules, prod's gradient at zeros, zero-norm and
// zero-std gradients, stability of logsumexp/softmax at extreme values, double backward, and
// finite-difference checks. Expected values are hand-derived (worked out in the comments).

import { describe, it, expect } from 'vitest';
import { autograd, tensor, F, type Tensor } from '../index.js';

/** |got - want| <= atol + rtol·|want| for every element (NaN matches NaN). */
function expectClose(got: Tensor, want: readonly number[], rtol = 1e-6, atol = 1e-6): void {
  const g = got.toArray();
  expect(g.length).toBe(want.length);
  for (let i = 0; i < want.length; i++) {
    const ok = Math.abs(g[i] - want[i]) <= atol + rtol * Math.abs(want[i]) || (Number.isNaN(g[i]) && Number.isNaN(want[i])) || g[i] === want[i];
    if (!ok) throw new Error(`element ${i}: got ${g[i]}, want ${want[i]}`);
  }
}

/** d(sum f(x))/dx through autograd. */
function gradOf(x: Tensor, f: (x: Tensor) => Tensor): Tensor {
  const [g] = autograd.grad(f(x).sum(), x);
  return g!;
}

/** Autograd's gradient of sum(f(x) * w) against central differences (float32, eps 1e-2). */
function checkGrad(xs: number[], shape: number[], f: (x: Tensor) => Tensor, tol = 2e-2): void {
  const x = tensor(xs, { shape, requiresGrad: true });
  const y = f(x);
  const w = tensor(Array.from({ length: y.numel() }, (_, i) => 0.5 + ((i * 7) % 5) / 4), { shape: [...y.shape] });
  const [g] = autograd.grad(y.mul(w).sum(), x);
  const loss = (v: number[]) => f(tensor(v, { shape })).mul(w).sum().item();
  const eps = 1e-2;
  xs.forEach((_, i) => {
    const up = [...xs], dn = [...xs];
    up[i] += eps; dn[i] -= eps;
    const want = (loss(up) - loss(dn)) / (2 * eps);
    const got = g!.toArray()[i];
    if (Math.abs(got - want) > tol * (1 + Math.abs(want))) throw new Error(`grad element ${i}: autograd ${got}, finite difference ${want}`);
  });
}

describe('amax/amin and max/min', () => {
  it('amax shares the gradient evenly among ties; max(dim) gives it to the first maximum', () => {
    const x = tensor([[1, 3, 3, 2]], { requiresGrad: true });
    // Two elements equal the max 3: each gets 1/2.
    expectClose(gradOf(x, (t) => t.amax(1)), [0, 0.5, 0.5, 0]);
    // torch.max() without dim distributes evenly too.
    expectClose(gradOf(x, (t) => t.max()), [0, 0.5, 0.5, 0]);
    const [v, i] = x.max(1);
    expectClose(v, [3]);
    expect([...i.toArray()]).toEqual([1]);
    expect(i.dtype).toBe('int32');
    expectClose(gradOf(x, (t) => t.max(1)[0]), [0, 1, 0, 0]);
  });

  it('min(dim, keepdim) keeps the dim on values and indices', () => {
    const [v, i] = tensor([[4, 1], [0, 0]]).min(1, { keepdim: true });
    expect(v.shape).toEqual([2, 1]);
    expect(i.shape).toEqual([2, 1]);
    expectClose(v, [1, 0]);
    expect([...i.toArray()]).toEqual([1, 0]);
  });

  it('propagates NaN in amax and treats NaN as the extreme in argmax/argmin (first NaN)', () => {
    const x = tensor([1, NaN, 5, NaN]);
    expectClose(x.amax(), [NaN]);
    expectClose(x.amin(), [NaN]);
    expect(x.argmax().item()).toBe(1);
    expect(x.argmin().item()).toBe(1);
  });

  it('argmax without dim indexes the flattened tensor; keepdim gives all-ones dims', () => {
    const x = tensor([[1, 9, 2], [9, 0, 0]]);
    expect(x.argmax().item()).toBe(1);
    expect(x.argmax(null, { keepdim: true }).shape).toEqual([1, 1]);
    expect([...x.argmax(0).toArray()]).toEqual([1, 0, 0]);
    expect([...x.argmin(-1).toArray()]).toEqual([0, 1]);
  });

  it('reduces over several dims and rejects empty reductions', () => {
    const x = tensor([[[1, 8], [3, 4]], [[5, 2], [7, 0]]]);
    expectClose(x.amax([0, 2]), [8, 7]);
    expectClose(x.amin([0, 2], { keepdim: true }), [1, 0]);
    expect(() => tensor([], { shape: [2, 0] }).amax(1)).toThrow(/amax: cannot reduce an empty dimension of shape \[2,0\]/);
  });
});

describe('prod', () => {
  it('has gradient prod/x_i away from zeros and the product of the others at a lone zero', () => {
    // [2,3,4]: [3·4, 2·4, 2·3]
    expectClose(gradOf(tensor([2, 3, 4], { requiresGrad: true }), (t) => t.prod()), [12, 8, 6]);
    // [2,0,4]: only the zero's gradient survives: 2·4 = 8.
    expectClose(gradOf(tensor([2, 0, 4], { requiresGrad: true }), (t) => t.prod()), [0, 8, 0]);
    // Two zeros: every product of "the others" contains a zero.
    expectClose(gradOf(tensor([0, 3, 0], { requiresGrad: true }), (t) => t.prod()), [0, 0, 0]);
  });

  it('supports double backward', () => {
    // g = [x1x2, x0x2, x0x1]; d(sum g)/dx = [x1+x2, x0+x2, x0+x1] = [7, 6, 5] at [2,3,4].
    const x = tensor([2, 3, 4], { requiresGrad: true });
    const [g] = autograd.grad(x.prod(), x, { createGraph: true });
    const [gg] = autograd.grad(g!.sum(), x);
    expectClose(gg!, [7, 6, 5]);
  });

  it('keeps dims, gives int32 for ints and matches finite differences', () => {
    const p = tensor([[1, 2], [3, 4]], { dtype: 'int32' }).prod(0, { keepdim: true });
    expect(p.dtype).toBe('int32');
    expect(p.shape).toEqual([1, 2]);
    expect([...p.toArray()]).toEqual([3, 8]);
    checkGrad([0.5, -1.5, 2, 0.25, 1, -0.75], [2, 3], (t) => t.prod(1));
  });
});

describe('cumsum', () => {
  it('has the suffix sum as gradient and int32 results for ints', () => {
    const x = tensor([[1, 2, 3], [4, 5, 6]], { requiresGrad: true });
    expectClose(x.cumsum(1), [1, 3, 6, 4, 9, 15]);
    // Element j feeds outputs j..n-1: 3, 2, 1.
    expectClose(gradOf(x, (t) => t.cumsum(-1)), [3, 2, 1, 3, 2, 1]);
    expectClose(gradOf(x, (t) => t.cumsum(0)), [2, 2, 2, 1, 1, 1]);
    const c = tensor([true, false, true]).cumsum(0);
    expect(c.dtype).toBe('int32');
    expect([...c.toArray()]).toEqual([1, 1, 2]);
  });
});

describe('var, std, norm', () => {
  it('var is unbiased by default', () => {
    // mean 2.5; squared deviations 2.25+0.25+0.25+2.25 = 5; /3 unbiased, /4 biased.
    const x = tensor([1, 2, 3, 4]);
    expectClose(x.var(), [5 / 3]);
    expectClose(x.var(0, { unbiased: false }), [1.25]);
    expectClose(x.std(), [Math.sqrt(5 / 3)]);
  });

  it('gives a zero gradient (not NaN) for a zero std or norm, as PyTorch', () => {
    expectClose(gradOf(tensor([2, 2, 2], { requiresGrad: true }), (t) => t.std()), [0, 0, 0]);
    expectClose(gradOf(tensor([0, 0], { requiresGrad: true }), (t) => t.norm()), [0, 0]);
    expectClose(gradOf(tensor([0, 0], { requiresGrad: true }), (t) => t.norm(3)), [0, 0]);
  });

  it('computes p-norms', () => {
    const x = tensor([[3, -4], [1, 0]]);
    expectClose(x.norm(), [Math.sqrt(26)]);
    expectClose(x.norm(2, 1), [5, 1]);
    expectClose(x.norm(1, 1, { keepdim: true }), [7, 1]);
    expectClose(x.norm(3, 1), [Math.cbrt(27 + 64), 1], 1e-5);
    expectClose(x.norm(Infinity, 0), [3, 4]);
    expectClose(x.norm(0), [3]);
    expect(() => x.norm(-1)).toThrow(/norm: p must be positive/);
    // d||x||/dx = x/||x|| = [0.6, -0.8] for the first row.
    expectClose(gradOf(tensor([3, -4], { requiresGrad: true }), (t) => t.norm()), [0.6, -0.8]);
    checkGrad([0.5, -1.5, 2, 0.25, 1, -0.75], [2, 3], (t) => t.norm(3, 1));
  });
});

describe('logsumexp, softmax, logSoftmax', () => {
  it('logsumexp is stable and handles infinities like PyTorch', () => {
    // 1000 + log(2): exp(1000) alone would overflow.
    expectClose(tensor([1000, 1000]).logsumexp(0), [1000 + Math.log(2)]);
    expectClose(tensor([-Infinity, -Infinity]).logsumexp(0), [-Infinity]);
    expectClose(tensor([Infinity, 1]).logsumexp(0), [Infinity]);
    expect(tensor([[1, 2]]).logsumexp([0, 1], { keepdim: true }).shape).toEqual([1, 1]);
  });

  it('softmax and logSoftmax are stable at large values and differentiate correctly', () => {
    const s = F.softmax(tensor([[1000, 1000, -1000]]), -1);
    expectClose(s, [0.5, 0.5, 0]);
    expectClose(F.logSoftmax(tensor([[1000, 1000]]), 1), [-Math.log(2), -Math.log(2)]);
    // The gradient of sum(softmax) is zero: the outputs always add to 1.
    expectClose(gradOf(tensor([[1, 2, 3]], { requiresGrad: true }), (t) => F.softmax(t, 1)), [0, 0, 0], 0, 1e-6);
    checkGrad([0.5, -1.5, 2, 0.25, 1, -0.75], [2, 3], (t) => F.softmax(t, 1));
    checkGrad([0.5, -1.5, 2, 0.25, 1, -0.75], [2, 3], (t) => F.logSoftmax(t, 0));
    checkGrad([0.5, -1.5, 2, 0.25, 1, -0.75], [2, 3], (t) => t.logsumexp(1));
  });

  it('softmax supports double backward', () => {
    // For s = softmax([a, b]): s0 = sigmoid(a - b), ds0/da = s0(1 - s0), d²s0/da² = s0(1-s0)(1-2s0).
    const x = tensor([0.3, -0.2], { requiresGrad: true });
    const [g] = autograd.grad(F.softmax(x, 0).index(0), x, { createGraph: true });
    const [gg] = autograd.grad(g!.index(0), x);
    const s0 = 1 / (1 + Math.exp(-0.5));
    expectClose(gg!, [s0 * (1 - s0) * (1 - 2 * s0), -s0 * (1 - s0) * (1 - 2 * s0)], 1e-4, 1e-6);
  });

  it('rejects integer inputs with a hint', () => {
    expect(() => F.softmax(tensor([1, 2], { dtype: 'int32' }), 0)).toThrow(/softmax: input dtype should be floating point, got int32; call \.float\(\) first/);
  });
});
