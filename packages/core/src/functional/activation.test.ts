// Unit tests of F's activations beyond the PyTorch golden cases: numerically hard regions
// (large |x|, where a discarded branch could overflow), PyTorch's gradient choices at kinks,
// prelu's weight shapes, double backward, and dropout in all its modes. Expected values are
// hand-derived from the formulas, evaluated in double precision.

import { describe, it, expect } from 'vitest';
import { autograd, dispatch1, manualSeed, noGrad, tensor, full, ones, F, type Tensor } from '../index.js';

function expectClose(got: Tensor, want: readonly number[], rtol = 1e-6, atol = 1e-7): void {
  const g = got.toArray();
  expect(g.length).toBe(want.length);
  for (let i = 0; i < want.length; i++) {
    const ok = Math.abs(g[i] - want[i]) <= atol + rtol * Math.abs(want[i]) || (Number.isNaN(g[i]) && Number.isNaN(want[i]));
    if (!ok) throw new Error(`element ${i}: got ${g[i]}, want ${want[i]}`);
  }
}
function gradOf(xs: number[], f: (x: Tensor) => Tensor): Tensor {
  const x = tensor(xs, { requiresGrad: true });
  f(x).sum().backward();
  return x.grad!;
}
const sigma = (v: number): number => 1 / (1 + Math.exp(-v));

describe('large inputs stay finite in value and gradient', () => {
  const big = [-200, -30, 30, 200];

  it('softplus switches to x above the threshold without overflowing exp', () => {
    const sp = (v: number) => (v > 20 ? v : Math.log1p(Math.exp(v)));
    expectClose(F.softplus(tensor(big)), big.map(sp));
    expectClose(gradOf(big, (x) => F.softplus(x)), big.map((v) => (v > 20 ? 1 : sigma(v))));
    // beta = 2, threshold = 5: the linear region starts at x = 2.5
    expectClose(F.softplus(tensor([2, 3]), { beta: 2, threshold: 5 }), [Math.log1p(Math.exp(4)) / 2, 3]);
  });

  it('elu, mish, logsigmoid and silu give finite gradients', () => {
    expectClose(F.elu(tensor(big), 0.5), big.map((v) => (v > 0 ? v : 0.5 * Math.expm1(v))));
    expectClose(gradOf(big, (x) => F.elu(x, 0.5)), big.map((v) => (v > 0 ? 1 : 0.5 * Math.exp(v))));
    expectClose(gradOf(big, (x) => F.mish(x)), [0, -30 * Math.exp(-30) + Math.tanh(Math.log1p(Math.exp(-30))), 1, 1], 1e-5, 1e-7);
    // log σ(x) = x - log(1 + e^x) → x for x → -∞; its derivative is 1 - σ(x) = σ(-x)
    expectClose(F.logsigmoid(tensor(big)), big.map((v) => Math.min(v, 0) - Math.log1p(Math.exp(-Math.abs(v)))));
    expectClose(gradOf(big, (x) => F.logsigmoid(x)), big.map((v) => sigma(-v)));
    expectClose(gradOf(big, (x) => F.silu(x)), big.map((v) => sigma(v) * (1 + v * (1 - sigma(v)))));
  });
});

describe("PyTorch's gradient choices at the kinks", () => {
  it('hardtanh and relu6 pass the gradient strictly inside their range', () => {
    expect([...gradOf([-2, -1, 0, 1, 2], (x) => F.hardtanh(x)).toArray()]).toEqual([0, 0, 1, 0, 0]);
    expect([...gradOf([-1, 0, 3, 6, 7], (x) => F.relu6(x)).toArray()]).toEqual([0, 0, 1, 0, 0]);
    expectClose(F.relu6(tensor([-1, 0, 3, 6, 7])), [0, 0, 3, 6, 6]);
    expect(() => F.hardtanh(tensor([0]), 1, -1)).toThrow(/hardtanh: minVal \(1\) must not be greater than maxVal \(-1\)/);
  });

  it('hardsigmoid is flat outside (-3, 3); hardswish has slope x/3 + 1/2 on [-3, 3]', () => {
    expectClose(gradOf([-3, 0, 3], (x) => F.hardsigmoid(x)), [0, 1 / 6, 0]);
    expectClose(gradOf([-4, -3, 0, 3, 4], (x) => F.hardswish(x)), [0, -0.5, 0.5, 1.5, 1]);
  });

  it('leakyRelu uses the slope at and below 0', () => {
    expectClose(gradOf([-1, 0, 1], (x) => F.leakyRelu(x, 0.2)), [0.2, 0.2, 1]);
    expectClose(F.leakyRelu(tensor([-1, 2])), [-0.01, 2]);
  });

  it('logsigmoid has derivative 1/2 at 0 (the tie of min(x, 0) splits evenly)', () => {
    expectClose(gradOf([0], (x) => F.logsigmoid(x)), [0.5]);
  });
});

describe('prelu', () => {
  it('uses one slope per channel (dim 1) and sums the weight gradient over the rest', () => {
    const x = tensor([[[-1, 2], [-3, 4]], [[5, -6], [7, -8]]], { requiresGrad: true }); // [N=2, C=2, L=2]
    const w = tensor([0.1, 0.5], { requiresGrad: true });
    const y = F.prelu(x, w);
    expectClose(y, [-0.1, 2, -1.5, 4, 5, -0.6, 7, -4]);
    const [gx, gw] = autograd.grad(y.sum(), [x, w]);
    expectClose(gx!, [0.1, 1, 0.5, 1, 1, 0.1, 1, 0.5]);
    expectClose(gw!, [-1 + -6, -3 + -8]); // sum of the negative inputs of each channel
  });

  it('accepts a single shared slope and rejects a mismatched weight', () => {
    expectClose(F.prelu(tensor([[-2, 2, -4]]), tensor([0.25])), [-0.5, 2, -1]);
    expect(() => F.prelu(tensor([[1, 2, 3]]), tensor([1, 2]))).toThrow(/prelu: weight of shape \[2\] must have 1 or 3 elements/);
  });
});

describe('double backward', () => {
  it('differentiates softplus twice: σ(x), then σ(x)(1 - σ(x))', () => {
    const vs = [-2, 0.5, 3, 25];
    const x = tensor(vs, { requiresGrad: true });
    const [g1] = autograd.grad(F.softplus(x).sum(), [x], { createGraph: true });
    expectClose(g1!, vs.map((v) => (v > 20 ? 1 : sigma(v))));
    const [g2] = autograd.grad(g1!.sum(), [x]);
    expectClose(g2!, vs.map((v) => (v > 20 ? 0 : sigma(v) * (1 - sigma(v)))), 1e-5, 1e-7);
  });

  it('differentiates gelu twice', () => {
    // gelu = xΦ(x); gelu' = Φ + xφ; gelu'' = 2φ - x²φ = φ(2 - x²), with φ the standard normal pdf.
    const vs = [-1.5, 0.2, 1.3];
    const phi = (v: number) => Math.exp(-v * v / 2) / Math.sqrt(2 * Math.PI);
    const x = tensor(vs, { requiresGrad: true });
    const [g1] = autograd.grad(F.gelu(x).sum(), [x], { createGraph: true });
    const [g2] = autograd.grad(g1!.sum(), [x]);
    expectClose(g2!, vs.map((v) => phi(v) * (2 - v * v)), 1e-5, 1e-6);
  });
});

describe('dropout', () => {
  const x = () => tensor([1, -2, 3, 4], { requiresGrad: true });

  it('is the identity in eval mode and for p = 0, through the dropout op', () => {
    for (const opts of [{ training: false }, { p: 0, training: true }]) {
      const a = x();
      const y = F.dropout(a, opts);
      expect([...y.toArray()]).toEqual([1, -2, 3, 4]);
      expect(y.gradFn?.def.name).toBe('dropout');
      y.sum().backward();
      expect([...a.grad!.toArray()]).toEqual([1, 1, 1, 1]);
    }
  });

  it('gives zeros for p = 1 and rejects p outside [0, 1]', () => {
    expect(F.dropout(x(), { p: 1 }).toArray().every((v) => v === 0)).toBe(true); // x·0, so -2 gives -0 (as PyTorch)
    expect(() => F.dropout(x(), { p: 1.5 })).toThrow(/dropout: probability p has to be between 0 and 1, but got 1.5/);
    expect(() => F.dropout(x(), { p: -0.1 })).toThrow(/dropout/);
  });

  it('drops a fraction p, scales the rest by 1/(1-p), and routes the gradient through the same mask', () => {
    manualSeed(7);
    const n = 20000, p = 0.3;
    const a = ones([n], { requiresGrad: true });
    const y = F.dropout(a, { p });
    const v = y.toArray();
    let zeros = 0, others = 0;
    for (const e of v) {
      if (e === 0) zeros++;
      else if (e !== Math.fround(1 / 0.7)) others++;
    }
    expect(others).toBe(0);
    // Binomial(20000, 0.3): standard deviation ≈ 65, so ±400 is > 6 sigma.
    expect(Math.abs(zeros - n * p)).toBeLessThan(400);
    y.sum().backward();
    expect([...a.grad!.toArray()]).toEqual([...v]);
  });

  it('draws the same mask after the same seed', () => {
    const draw = () => { manualSeed(3); return [...F.dropout(full([64], 1)).toArray()]; };
    expect(draw()).toEqual(draw());
  });

  it('refuses training-mode dropout in the op kernel (F.dropout draws the mask with the uniform op)', () => {
    expect(() => dispatch1('dropout', [tensor([1, 2])], { p: 0.5, training: true })).toThrow(/dropout: a dropout node with training=true \(p=0.5\) has no kernel/);
    expect(() => dispatch1('dropout', [tensor([1, 2])], { p: 2, training: false })).toThrow(/dropout: invalid attribute 'p'/);
    expect(noGrad(() => dispatch1('dropout', [tensor([1, 2])], { p: 0.5, training: false })).toArray()).toEqual(new Float32Array([1, 2]));
  });
});

describe('gelu', () => {
  it('rejects an unknown approximation', () => {
    // A caller from plain JS can pass any string.
    const opts = JSON.parse('{"approximate":"fast"}') as { approximate: 'none' };
    expect(() => F.gelu(tensor([1]), opts)).toThrow(/gelu: approximate must be 'none' or 'tanh', got 'fast'/);
  });
});
