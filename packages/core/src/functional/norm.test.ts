// Unit tests of F's normalizations beyond the PyTorch golden cases: running-statistic updates
// (momentum, the cumulative average, unbiased variance), eval mode, gradients through the batch
// statistics (against central differences of a double-precision reference), double backward,
// instance norm's running statistics, and the error messages.

import { describe, it, expect } from 'vitest';
import { autograd, randn, manualSeed, tensor, ones, zeros, F, type Tensor } from '../index.js';

/** Normalizes groups of `x` (each group = the flat indices `groups[g]`) in double precision. */
function normalizeRef(x: ArrayLike<number>, groups: number[][], eps: number): Float64Array {
  const out = new Float64Array(x.length);
  for (const idx of groups) {
    const m = idx.reduce((s, i) => s + x[i], 0) / idx.length;
    const v = idx.reduce((s, i) => s + (x[i] - m) ** 2, 0) / idx.length;
    for (const i of idx) out[i] = (x[i] - m) / Math.sqrt(v + eps);
  }
  return out;
}
/** Flat indices of each channel of an [N, C, inner] layout (batch norm's groups). */
function channelGroups(N: number, C: number, inner: number): number[][] {
  return Array.from({ length: C }, (_, c) => Array.from({ length: N * inner }, (_, k) => (Math.floor(k / inner) * C + c) * inner + (k % inner)));
}
/** Consecutive blocks of `size` (layer/group/instance norm's groups). */
function blocks(total: number, size: number): number[][] {
  return Array.from({ length: total / size }, (_, g) => Array.from({ length: size }, (_, k) => g * size + k));
}
/** y = norm·w[ch(i)] + b[ch(i)] */
function affine(y: Float64Array, w: ArrayLike<number> | null, b: ArrayLike<number> | null, ch: (i: number) => number): Float64Array {
  return y.map((v, i) => v * (w ? w[ch(i)] : 1) + (b ? b[ch(i)] : 0));
}

function expectValues(got: Tensor, want: ArrayLike<number>, tol = 1e-5): void {
  const g = got.toArray();
  expect(g.length).toBe(want.length);
  for (let i = 0; i < want.length; i++) {
    if (!(Math.abs(g[i] - want[i]) <= tol * (1 + Math.abs(want[i])))) throw new Error(`element ${i}: got ${g[i]}, want ${want[i]}`);
  }
}

/**
 * Checks autograd's gradients of Σ f(inputs)·R against central differences (step 1e-4, in double
 * precision) of the reference along a random direction per input.
 */
function checkGrads(f: (...xs: Tensor[]) => Tensor, ref: (...xs: Float64Array[]) => Float64Array, inputs: Tensor[]): void {
  const xs = inputs.map((t) => t.detach().clone().requiresGrad_());
  const y = f(...xs);
  const R = randn(y.shape).toArray();
  const grads = autograd.grad(y.mul(tensor(R, { shape: y.shape })).sum(), xs);
  const base = inputs.map((t) => Float64Array.from(t.toArray()));
  inputs.forEach((t, i) => {
    const d = randn(t.shape).toArray(), h = 1e-4;
    const L = (sign: number) => {
      const args = base.map((a, j) => (j === i ? a.map((v, k) => v + sign * h * d[k]) : a));
      return ref(...args).reduce((s, v, k) => s + v * R[k], 0);
    };
    const want = (L(1) - L(-1)) / (2 * h);
    const got = grads[i]!.toArray().reduce((s, v, k) => s + v * d[k], 0);
    expect(Math.abs(got - want)).toBeLessThanOrEqual(2e-4 * (1 + Math.abs(want)));
  });
}

describe('batchNorm', () => {
  it('training: normalizes with the biased batch variance, updates running stats with the unbiased one', () => {
    manualSeed(21);
    const x = randn([4, 3, 2, 5]), w = randn([3]), b = randn([3]);
    const rm = tensor([0.5, -1, 2]), rv = tensor([1, 2, 0.5]);
    const y = F.batchNorm(x, rm, rv, { weight: w, bias: b, training: true, momentum: 0.2, eps: 1e-3 });
    const X = x.toArray(), groups = channelGroups(4, 3, 10);
    expectValues(y, affine(normalizeRef(X, groups, 1e-3), w.toArray(), b.toArray(), (i) => Math.floor(i / 10) % 3));
    groups.forEach((idx, c) => {
      const m = idx.reduce((s, i) => s + X[i], 0) / 40;
      const unbiased = idx.reduce((s, i) => s + (X[i] - m) ** 2, 0) / 39;
      expect(rm.toArray()[c]).toBeCloseTo(0.8 * [0.5, -1, 2][c] + 0.2 * m, 6);
      expect(rv.toArray()[c]).toBeCloseTo(0.8 * [1, 2, 0.5][c] + 0.2 * unbiased, 6);
    });
  });

  it('momentum null is the cumulative average over numBatchesTracked batches', () => {
    manualSeed(22);
    const rm = zeros([2]), rv = ones([2]);
    const xs = [randn([5, 2]), randn([5, 2]), randn([5, 2])];
    xs.forEach((x, i) => F.batchNorm(x, rm, rv, { training: true, momentum: null, numBatchesTracked: i + 1 }));
    // After k batches with factor 1/k the running mean is the plain mean of the batch means.
    const means = [0, 1].map((c) => xs.reduce((s, x) => s + x.index(':', c).mean().item(), 0) / 3);
    expectValues(rm, means);
    expect(() => F.batchNorm(xs[0], rm, rv, { training: true, momentum: null })).toThrow(/batch_norm: momentum null \(cumulative average\) needs numBatchesTracked/);
  });

  it('eval mode uses the running statistics and leaves them alone', () => {
    const x = tensor([[1, 2], [3, 4]]), rm = tensor([1, 1]), rv = tensor([4, 0.25]);
    const y = F.batchNorm(x, rm, rv, { weight: tensor([2, 1]), bias: tensor([0, 1]), eps: 0 });
    // (x − 1)/2·2 and (x − 1)/0.5 + 1
    expectValues(y, [0, 3, 2, 7]);
    expectValues(rm, [1, 1]);
    expectValues(rv, [4, 0.25]);
  });

  it('gradients flow through the batch statistics to x, weight and bias', () => {
    manualSeed(23);
    const x = randn([3, 2, 4]), w = randn([2]), b = randn([2]);
    const groups = channelGroups(3, 2, 4), ch = (i: number) => Math.floor(i / 4) % 2;
    checkGrads(
      (xx, ww, bb) => F.batchNorm(xx, null, null, { weight: ww, bias: bb, training: true }),
      (xx, ww, bb) => affine(normalizeRef(xx, groups, 1e-5), ww, bb, ch),
      [x, w, b],
    );
    // Eval mode: gradients with respect to the statistics themselves.
    const rm = randn([2]), rv = randn([2]).abs().add(0.5);
    checkGrads(
      (xx, mm, vv) => F.batchNorm(xx, mm, vv, { training: false }),
      (xx, mm, vv) => xx.map((v, i) => (v - mm[ch(i)]) / Math.sqrt(vv[ch(i)] + 1e-5)),
      [x, rm, rv],
    );
  });

  it('double backward through training-mode batch norm', () => {
    manualSeed(24);
    const x = randn([4, 2, 3], { requiresGrad: true }), w = randn([2], { requiresGrad: true });
    const R = randn([4, 2, 3]);
    // ∂L/∂x is linear in w, so P(w) = Σ(∂L/∂x)² is quadratic and its central difference exact.
    const penalty = (ww: Tensor) => {
      const [gx] = autograd.grad(F.batchNorm(x, null, null, { weight: ww, training: true }).mul(R).sum(), [x], { createGraph: true });
      return gx!.mul(gx!).sum();
    };
    const [gw] = autograd.grad(penalty(w), [w]);
    const d = randn([2]), t = 0.1;
    const p = (ww: Tensor) => penalty(ww.detach().requiresGrad_()).item();
    const want = (p(w.add(d.mul(t))) - p(w.sub(d.mul(t)))) / (2 * t);
    const got = gw!.toArray().reduce((s, v, k) => s + v * d.toArray()[k], 0);
    expect(Math.abs(got - want)).toBeLessThanOrEqual(1e-3 * (1 + Math.abs(want)));
  });

  it('errors', () => {
    expect(() => F.batchNorm(randn([1, 3]), null, null, { training: true })).toThrow('batch_norm: expected more than 1 value per channel when training, got input [1,3]');
    expect(() => F.batchNorm(randn([2, 3]), zeros([2]), ones([2]))).toThrow('batch_norm: mean must be float32 of shape [3] for input [2,3], got float32[2]');
    expect(() => F.batchNorm(randn([2, 3]), null, null)).toThrow(/eval mode \(training: false\) needs runningMean and runningVar/);
  });
});

describe('layerNorm, groupNorm, instanceNorm', () => {
  it('layerNorm over the last two dims, with elementwise affine', () => {
    manualSeed(25);
    const x = randn([2, 3, 4, 5]), w = randn([4, 5]), b = randn([4, 5]);
    const ref = (xx: Float64Array, ww: Float64Array, bb: Float64Array) => affine(normalizeRef(xx, blocks(120, 20), 1e-5), ww, bb, (i) => i % 20);
    expectValues(F.layerNorm(x, [4, 5], { weight: w, bias: b }), ref(Float64Array.from(x.toArray()), Float64Array.from(w.toArray()), Float64Array.from(b.toArray())));
    checkGrads((xx, ww, bb) => F.layerNorm(xx, [4, 5], { weight: ww, bias: bb }), ref, [x, w, b]);
    expect(() => F.layerNorm(x, [5, 4])).toThrow('layer_norm: input [2,3,4,5] does not end in normalizedShape [5,4]');
  });

  it('groupNorm: 2 groups of 3 channels', () => {
    manualSeed(26);
    const x = randn([2, 6, 2, 2]), w = randn([6]), b = randn([6]);
    const ref = (xx: Float64Array, ww: Float64Array, bb: Float64Array) => affine(normalizeRef(xx, blocks(48, 12), 1e-5), ww, bb, (i) => Math.floor(i / 4) % 6);
    checkGrads((xx, ww, bb) => F.groupNorm(xx, 2, { weight: ww, bias: bb }), ref, [x, w, b]);
    expect(() => F.groupNorm(x, 4)).toThrow('group_norm: numGroups 4 must divide the 6 channels of input [2,6,2,2]');
  });

  it('instanceNorm updates running stats with the batch average of instance statistics', () => {
    manualSeed(27);
    const x = randn([3, 2, 5]), rm = zeros([2]), rv = ones([2]);
    const y = F.instanceNorm(x, { runningMean: rm, runningVar: rv, momentum: 0.5 });
    expectValues(y, normalizeRef(x.toArray(), blocks(30, 5), 1e-5));
    const X = x.toArray();
    for (let c = 0; c < 2; c++) {
      let m = 0, v = 0;
      for (let n = 0; n < 3; n++) {
        const vals = Array.from({ length: 5 }, (_, k) => X[(n * 2 + c) * 5 + k]);
        const mu = vals.reduce((s, t) => s + t, 0) / 5;
        m += mu / 3;
        v += vals.reduce((s, t) => s + (t - mu) ** 2, 0) / 4 / 3;
      }
      expect(rm.toArray()[c]).toBeCloseTo(0.5 * m, 6);
      expect(rv.toArray()[c]).toBeCloseTo(0.5 + 0.5 * v, 6);
    }
    // useInputStats false normalizes with the running statistics instead.
    const z = F.instanceNorm(x, { runningMean: rm, runningVar: rv, useInputStats: false });
    expectValues(z, X.map((t, i) => {
      const c = Math.floor(i / 5) % 2;
      return (t - rm.toArray()[c]) / Math.sqrt(rv.toArray()[c] + 1e-5);
    }));
  });
});
