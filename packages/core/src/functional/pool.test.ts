// Unit tests of F's pooling beyond the PyTorch golden cases: ceil mode, dilation, the avg-pool
// divisor rules (count_include_pad, ceil-mode windows, divisor_override), NaN and tie handling of
// max pooling, adaptive bins that overlap, unbatched inputs, gradients (max: to the winner;
// avg: spread over the window), double backward and errors. Expected values come from direct
// double-precision loops written from PyTorch's definitions.

import { describe, it, expect } from 'vitest';
import { autograd, randn, manualSeed, tensor, F, type Tensor } from '../index.js';

interface Win { k: number[]; s: number[]; p: number[]; d: number[]; ceil: boolean }

function outSize(size: number, k: number, s: number, p: number, d: number, ceil: boolean): number {
  const span = size + 2 * p - d * (k - 1) - 1;
  let o = (ceil ? Math.ceil(span / s) : Math.floor(span / s)) + 1;
  if (ceil && (o - 1) * s >= size + p) o--;
  return o;
}

/** Max pooling by definition: values, and the first (row-major) arg max per window. */
function maxRef(x: Tensor, w: Win): { values: number[]; indices: number[]; shape: number[] } {
  const [N, C, H, W] = x.shape, X = x.toArray();
  const OH = outSize(H, w.k[0], w.s[0], w.p[0], w.d[0], w.ceil), OW = outSize(W, w.k[1], w.s[1], w.p[1], w.d[1], w.ceil);
  const values: number[] = [], indices: number[] = [];
  for (let pl = 0; pl < N * C; pl++) for (let oy = 0; oy < OH; oy++) for (let ox = 0; ox < OW; ox++) {
    let best = -Infinity, bi = -1;
    for (let ky = 0; ky < w.k[0]; ky++) for (let kx = 0; kx < w.k[1]; kx++) {
      const iy = oy * w.s[0] - w.p[0] + ky * w.d[0], ix = ox * w.s[1] - w.p[1] + kx * w.d[1];
      if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
      const v = X[pl * H * W + iy * W + ix];
      if (bi < 0 || v > best) { best = v; bi = iy * W + ix; }
    }
    values.push(best);
    indices.push(bi);
  }
  return { values, indices, shape: [N, C, OH, OW] };
}

/** Average pooling by PyTorch's definition (divisor from the window clipped to the padded input). */
function avgRef(x: Tensor, w: Win, includePad: boolean, override: number | null): { values: number[]; shape: number[] } {
  const [N, C, H, W] = x.shape, X = x.toArray();
  const OH = outSize(H, w.k[0], w.s[0], w.p[0], 1, w.ceil), OW = outSize(W, w.k[1], w.s[1], w.p[1], 1, w.ceil);
  const values: number[] = [];
  for (let pl = 0; pl < N * C; pl++) for (let oy = 0; oy < OH; oy++) for (let ox = 0; ox < OW; ox++) {
    const y0 = oy * w.s[0] - w.p[0], x0 = ox * w.s[1] - w.p[1];
    const y1 = Math.min(y0 + w.k[0], H + w.p[0]), x1 = Math.min(x0 + w.k[1], W + w.p[1]);
    let s = 0, n = 0;
    for (let iy = Math.max(y0, 0); iy < Math.min(y1, H); iy++) for (let ix = Math.max(x0, 0); ix < Math.min(x1, W); ix++) { s += X[pl * H * W + iy * W + ix]; n++; }
    values.push(s / (override ?? (includePad ? (y1 - y0) * (x1 - x0) : n)));
  }
  return { values, shape: [N, C, OH, OW] };
}

function expectValues(got: Tensor, want: readonly number[], shape: number[], tol = 1e-6): void {
  expect(got.shape).toEqual(shape);
  const g = got.toArray();
  want.forEach((w, i) => {
    if (!(Math.abs(g[i] - w) <= tol * (1 + Math.abs(w)))) throw new Error(`element ${i}: got ${g[i]}, want ${w}`);
  });
}

const win = (k: number[], s: number[], p = [0, 0], d = [1, 1], ceil = false): Win => ({ k, s, p, d, ceil });

describe('maxPool2d', () => {
  const cases: [string, number[], Win][] = [
    ['2x2 stride 2', [2, 3, 6, 6], win([2, 2], [2, 2])],
    ['3x3 stride 2 pad 1', [1, 2, 7, 7], win([3, 3], [2, 2], [1, 1])],
    ['ceil mode keeps a last partial window', [1, 2, 7, 6], win([2, 2], [2, 2], [0, 0], [1, 1], true)],
    ['ceil mode drops a window that would start in the padding', [1, 1, 5, 5], win([3, 3], [2, 2], [1, 1], [1, 1], true)],
    ['dilation 2 with padding', [1, 2, 9, 8], win([3, 2], [2, 1], [2, 1], [2, 2])],
  ];
  for (const [name, shape, w] of cases) {
    it(name, () => {
      manualSeed(11);
      const x = randn(shape, { requiresGrad: true });
      const [y, idx] = F.maxPool2d(x, w.k, { stride: w.s, padding: w.p, dilation: w.d, ceilMode: w.ceil, returnIndices: true });
      const ref = maxRef(x, w);
      expectValues(y, ref.values, ref.shape, 0);
      expect([...idx.toArray()]).toEqual(ref.indices);
      expect(idx.dtype).toBe('int32');
      // The gradient of Σ y·R adds R at each window's winner (windows may share one).
      const R = randn(y.shape);
      const [g] = autograd.grad(y.mul(R).sum(), [x]);
      const want = new Float64Array(x.numel()), r = R.toArray(), plane = shape[2] * shape[3], per = ref.shape[2] * ref.shape[3];
      ref.indices.forEach((p, o) => { want[Math.floor(o / per) * plane + p] += r[o]; });
      expectValues(g!, [...want], shape);
    });
  }

  it('a NaN wins its window; ties go to the first maximum', () => {
    const x = tensor([[[[1, NaN, 3, 3], [0, 2, 3, 1]]]]);
    const [y, idx] = F.maxPool2d(x, 2, { returnIndices: true });
    expect(Number.isNaN(y.toArray()[0])).toBe(true);
    expect([...idx.toArray()]).toEqual([1, 2]);
    expect(y.toArray()[1]).toBe(3);
  });

  it('unbatched input and the default stride (= kernel)', () => {
    manualSeed(12);
    const x = randn([3, 5, 5]);
    const y = F.maxPool2d(x, 2);
    expectValues(y, maxRef(x.unsqueeze(0), win([2, 2], [2, 2])).values, [3, 2, 2], 0);
  });

  it('double backward: the gradient scatter is differentiable (its gradient is a gather)', () => {
    manualSeed(13);
    const x = randn([1, 2, 4, 4], { requiresGrad: true });
    const G = randn([1, 2, 2, 2], { requiresGrad: true });
    const [gx] = autograd.grad(F.maxPool2d(x, 2).mul(G).sum(), [x], { createGraph: true });
    const S = randn([1, 2, 4, 4]);
    const [gG] = autograd.grad(gx!.mul(S).sum(), [G]);
    // gx scatters G to the winners, so ∂Σ gx·S/∂G picks S at the winners.
    const [, idx] = F.maxPool2d(x, 2, { returnIndices: true });
    const s = S.toArray(), want = [...idx.toArray()].map((p, o) => s[Math.floor(o / 4) * 16 + p]);
    expectValues(gG!, want, [1, 2, 2, 2], 0);
  });
});

describe('avgPool2d', () => {
  const cases: [string, number[], Win, boolean, number | null][] = [
    ['3x3 stride 2 pad 1, padding counted', [1, 2, 7, 7], win([3, 3], [2, 2], [1, 1]), true, null],
    ['3x3 stride 2 pad 1, padding not counted', [1, 2, 7, 7], win([3, 3], [2, 2], [1, 1]), false, null],
    ['ceil mode: the last window reaches past the padding', [2, 1, 6, 6], win([3, 3], [2, 2], [1, 1], [1, 1], true), true, null],
    ['ceil mode without counting padding', [1, 2, 6, 5], win([2, 3], [2, 2], [1, 1], [1, 1], true), false, null],
    ['divisor override', [1, 2, 5, 5], win([2, 2], [1, 1]), true, 3],
  ];
  for (const [name, shape, w, includePad, override] of cases) {
    it(name, () => {
      manualSeed(14);
      const x = randn(shape, { requiresGrad: true });
      const y = F.avgPool2d(x, w.k, { stride: w.s, padding: w.p, ceilMode: w.ceil, countIncludePad: includePad, divisorOverride: override });
      const ref = avgRef(x, w, includePad, override);
      expectValues(y, ref.values, ref.shape);
      // Linear: ⟨∂Σ y·R/∂x, d⟩ = Σ avg(d)·R.
      const R = randn(y.shape), d = randn(shape);
      const [g] = autograd.grad(y.mul(R).sum(), [x]);
      const dRef = avgRef(d, w, includePad, override).values, r = R.toArray(), gd = g!.toArray(), dd = d.toArray();
      const want = dRef.reduce((s, v, i) => s + v * r[i], 0);
      const got = gd.reduce((s, v, i) => s + v * dd[i], 0);
      expect(Math.abs(got - want)).toBeLessThanOrEqual(1e-5 * (1 + Math.abs(want)));
    });
  }

  it('double backward: the backward op differentiates back to the forward pool', () => {
    manualSeed(15);
    const x = randn([1, 1, 5, 5], { requiresGrad: true });
    const G = randn([1, 1, 3, 3], { requiresGrad: true });
    const opts = { stride: 2, padding: 1, countIncludePad: false };
    const [gx] = autograd.grad(F.avgPool2d(x, 3, opts).mul(G).sum(), [x], { createGraph: true });
    const S = randn([1, 1, 5, 5]);
    const [gG] = autograd.grad(gx!.mul(S).sum(), [G]);
    // Σ gx·S = Σ G·avgPool(S), so the gradient with respect to G is avgPool(S).
    expectValues(gG!, [...F.avgPool2d(S, 3, opts).toArray()], [1, 1, 3, 3]);
  });
});

describe('adaptive pools', () => {
  /** PyTorch's bins: [floor(i·H/o), ceil((i+1)·H/o)). */
  function adaptiveRef(x: Tensor, o: number[], max: boolean): number[] {
    const [N, C, H, W] = x.shape, X = x.toArray(), out: number[] = [];
    for (let pl = 0; pl < N * C; pl++) for (let i = 0; i < o[0]; i++) for (let j = 0; j < o[1]; j++) {
      const y0 = Math.floor((i * H) / o[0]), y1 = Math.ceil(((i + 1) * H) / o[0]);
      const x0 = Math.floor((j * W) / o[1]), x1 = Math.ceil(((j + 1) * W) / o[1]);
      let acc = max ? -Infinity : 0;
      for (let y = y0; y < y1; y++) for (let xx = x0; xx < x1; xx++) {
        const v = X[pl * H * W + y * W + xx];
        acc = max ? Math.max(acc, v) : acc + v;
      }
      out.push(max ? acc : acc / ((y1 - y0) * (x1 - x0)));
    }
    return out;
  }

  it('overlapping bins (7x5 → 3x4), with None keeping an input dim', () => {
    manualSeed(16);
    const x = randn([2, 3, 7, 5], { requiresGrad: true });
    expectValues(F.adaptiveAvgPool2d(x, [3, 4]), adaptiveRef(x, [3, 4], false), [2, 3, 3, 4]);
    expectValues(F.adaptiveMaxPool2d(x, [3, 4]), adaptiveRef(x, [3, 4], true), [2, 3, 3, 4], 0);
    expect(F.adaptiveAvgPool2d(x, [null, 2]).shape).toEqual([2, 3, 7, 2]);
    expect(F.adaptiveAvgPool2d(randn([3, 6, 6]), 1).shape).toEqual([3, 1, 1]);
  });

  it('gradients: avg spreads over each bin, max goes to the winner; double backward', () => {
    manualSeed(17);
    const x = randn([1, 2, 5, 5], { requiresGrad: true });
    const y = F.adaptiveAvgPool2d(x, 2);
    const R = randn(y.shape, { requiresGrad: true });
    const [g] = autograd.grad(y.mul(R).sum(), [x], { createGraph: true });
    // Bins of 5 → 2 are rows/cols 0..2 and 2..4 (9 elements each); element (2,2) is in all four.
    const r = R.toArray(), gd = g!.toArray();
    expect(gd[2 * 5 + 2]).toBeCloseTo((r[0] + r[1] + r[2] + r[3]) / 9, 6);
    expect(gd[0]).toBeCloseTo(r[0] / 9, 6);
    // Σ g·S = Σ R·adaptiveAvgPool(S): the backward op differentiates back to the forward pool.
    const S = randn([1, 2, 5, 5]);
    const [gR] = autograd.grad(g!.mul(S).sum(), [R]);
    expectValues(gR!, [...F.adaptiveAvgPool2d(S, 2).toArray()], [1, 2, 2, 2]);
    const [v, idx] = F.adaptiveMaxPool2d(x, 2, { returnIndices: true });
    const [gm] = autograd.grad(v.mul(R.detach()).sum(), [x]);
    const want = new Float64Array(50);
    [...idx.toArray()].forEach((p, o) => { want[Math.floor(o / 4) * 25 + p] += r[o]; });
    expectValues(gm!, [...want], [1, 2, 5, 5]);
  });
});

describe('errors', () => {
  const x = randn([1, 2, 6, 6]);
  it('name the op and the offending sizes', () => {
    expect(() => F.maxPool2d(x, 2, { padding: 2 })).toThrow('max_pool2d: padding [2,2] must be at most half of the kernel size [2,2]');
    expect(() => F.avgPool2d(x, 8)).toThrow(/avg_pool2d: input \[1,2,6,6\] is too small for kernel \[8,8\]/);
    expect(() => F.maxPool2d(randn([6, 6]), 2)).toThrow(/max_pool2d: expected a 4-D \[N, C, H, W\] or 3-D \[C, H, W\] input, got \[6,6\]/);
    expect(() => F.adaptiveAvgPool2d(x, [0, 2])).toThrow(/adaptive_avg_pool2d: outputSize must be positive integers/);
  });
});
