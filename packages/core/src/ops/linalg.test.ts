// Unit tests of matmul/mm/bmm/linear beyond the PyTorch golden cases: every operand form and
// kernel path (small M without packing, blocked N and K, a shared right operand folded into one
// GEMM) against a double-precision reference, gradients (exact directional checks: the products
// are linear in each operand), double backward, and the error messages.

import { describe, it, expect } from 'vitest';
import { autograd, randn, manualSeed, tensor, matmul, mm, bmm, F, type Tensor } from '../index.js';

/** torch.matmul by definition, in double precision. */
function matmulRef(a: Tensor, b: Tensor): { data: Float64Array; shape: number[] } {
  const as = a.ndim === 1 ? [1, a.shape[0]] : [...a.shape], bs = b.ndim === 1 ? [b.shape[0], 1] : [...b.shape];
  const M = as[as.length - 2], K = as[as.length - 1], N = bs[bs.length - 1];
  const ba = as.slice(0, -2), bb = bs.slice(0, -2), r = Math.max(ba.length, bb.length);
  const pa = [...Array(r - ba.length).fill(1), ...ba], pb = [...Array(r - bb.length).fill(1), ...bb];
  const batch = pa.map((d, i) => Math.max(d, pb[i]));
  const nb = batch.reduce((x, d) => x * d, 1), A = a.toArray(), B = b.toArray();
  const out = new Float64Array(nb * M * N);
  const offset = (dims: number[], pos: number[]) => dims.reduce((o, d, i) => o * d + (d === 1 ? 0 : pos[i]), 0);
  for (let o = 0; o < nb; o++) {
    const pos: number[] = [];
    for (let i = r - 1, t = o; i >= 0; i--) { pos[i] = t % batch[i]; t = Math.floor(t / batch[i]); }
    const ao = offset(pa, pos) * M * K, bo = offset(pb, pos) * K * N;
    for (let i = 0; i < M; i++) for (let j = 0; j < N; j++) {
      let s = 0;
      for (let k = 0; k < K; k++) s += A[ao + i * K + k] * B[bo + k * N + j];
      out[(o * M + i) * N + j] = s;
    }
  }
  const shape = [...batch, ...(a.ndim > 1 ? [M] : []), ...(b.ndim > 1 ? [N] : [])];
  return { data: out, shape };
}

function expectNear(got: Tensor, want: { data: ArrayLike<number>; shape: number[] }, tol = 1e-5): void {
  expect(got.shape).toEqual(want.shape);
  const g = got.toArray();
  for (let i = 0; i < want.data.length; i++) {
    if (!(Math.abs(g[i] - want.data[i]) <= tol * (1 + Math.abs(want.data[i])))) throw new Error(`element ${i}: got ${g[i]}, want ${want.data[i]}`);
  }
}
const dot = (a: ArrayLike<number>, b: ArrayLike<number>) => { let s = 0; for (let i = 0; i < a.length; i++) s += a[i] * b[i]; return s; };

/** ⟨∂Σ f·R/∂input_i, d⟩ = Σ (ref(…input_i + d…) − ref(…))·R exactly, as f is linear in each input. */
function checkLinearGrads(f: (...xs: Tensor[]) => Tensor, ref: (...xs: Tensor[]) => { data: Float64Array }, inputs: Tensor[]): void {
  const xs = inputs.map((t) => t.detach().clone().requiresGrad_());
  const y = f(...xs);
  const R = randn(y.shape);
  const grads = autograd.grad(y.mul(R).sum(), xs);
  const r = R.toArray(), base = dot(ref(...inputs).data, r);
  inputs.forEach((t, i) => {
    const d = randn(t.shape);
    const want = dot(ref(...inputs.map((u, j) => (j === i ? u.add(d) : u))).data, r) - base;
    expect(Math.abs(dot(grads[i]!.toArray(), d.toArray()) - want)).toBeLessThanOrEqual(1e-4 * (1 + Math.abs(want)));
  });
}

describe('matmul', () => {
  const cases: [string, number[], number[]][] = [
    ['dot', [7], [7]],
    ['vector · matrix (one row: no packing)', [9], [9, 6]],
    ['matrix · vector', [5, 9], [9]],
    ['batched matrix · vector', [2, 3, 4], [4]],
    ['vector · batched matrix', [4], [3, 4, 5]],
    ['3 rows: the small-M path', [3, 20], [20, 11]],
    ['blocked N and K', [9, 600], [600, 300]],
    ['shared right operand folds the batch into one GEMM', [2, 3, 5, 8], [8, 6]],
    ['broadcast batch dims', [2, 1, 5, 4], [3, 4, 7]],
    ['left operand broadcast over the batch', [5, 4], [2, 4, 3]],
  ];
  for (const [name, as, bs] of cases) {
    it(name, () => {
      manualSeed(31);
      const a = randn(as), b = randn(bs);
      // Sums in float32 (the SIMD kernels, like PyTorch's): error grows like √K·2⁻²⁴ of the terms.
      expectNear(matmul(a, b), matmulRef(a, b), 2e-6 * Math.sqrt(as[as.length - 1]));
      checkLinearGrads(matmul, matmulRef, [a, b]);
    });
  }

  it('double backward: a penalty on the gradient', () => {
    manualSeed(32);
    const a = randn([4, 3], { requiresGrad: true }), b = randn([3, 5], { requiresGrad: true }), R = randn([4, 5]);
    const penalty = (bb: Tensor) => {
      const [ga] = autograd.grad(matmul(a, bb).tanh().mul(R).sum(), [a], { createGraph: true });
      return ga!.mul(ga!).sum();
    };
    const [gb] = autograd.grad(penalty(b), [b]);
    const d = randn([3, 5]), h = 1e-2;
    const p = (bb: Tensor) => penalty(bb.detach().requiresGrad_()).item();
    const want = (p(b.add(d.mul(h))) - p(b.sub(d.mul(h)))) / (2 * h);
    expect(Math.abs(dot(gb!.toArray(), d.toArray()) - want)).toBeLessThanOrEqual(2e-3 * (1 + Math.abs(want)));
  });

  it('errors name both shapes', () => {
    expect(() => matmul(randn([2, 3]), randn([4, 5]))).toThrow('matmul: [2,3] @ [4,5]: inner dimensions 3 and 4 differ');
    expect(() => matmul(randn([2, 3, 4]), randn([5, 4, 6]))).toThrow('matmul: [2,3,4] @ [5,4,6]: batch dimensions [2] and [5] cannot be broadcast');
    expect(() => matmul(tensor(2), randn([3]))).toThrow('matmul: both arguments need at least 1 dimension, got [] and [3]');
    expect(() => matmul(randn([2, 2]), tensor([[1, 2], [3, 4]], { dtype: 'int32' }))).toThrow('matmul: b must be float32, got int32; call .float() first');
    expect(() => mm(randn([2, 3, 4]), randn([4, 5]))).toThrow('mm: [2,3,4] @ [4,5]: both arguments must be 2-D; use matmul for other ranks');
    expect(() => bmm(randn([2, 3, 4]), randn([3, 4, 5]))).toThrow('bmm: [2,3,4] @ [3,4,5]: batch sizes 2 and 3 differ');
  });
});

describe('linear', () => {
  const ref = (x: Tensor, w: Tensor, b?: Tensor) => {
    const y = matmulRef(x, w.t().contiguous());
    if (b) { const bd = b.toArray(); y.data.forEach((v, i) => { y.data[i] = v + bd[i % bd.length]; }); }
    return y;
  };
  it('1-D, 2-D and 4-D inputs; batch 1 runs the matrix-vector path', () => {
    manualSeed(33);
    for (const xs of [[6], [1, 6], [7, 6], [2, 3, 2, 6]]) {
      const x = randn(xs), w = randn([13, 6]), b = randn([13]);
      expectNear(F.linear(x, w, b), ref(x, w, b));
      expectNear(F.linear(x, w), ref(x, w));
      checkLinearGrads((xx, ww, bb) => F.linear(xx, ww, bb), (xx, ww, bb) => ref(xx, ww, bb), [x, w, b]);
    }
  });

  it('errors', () => {
    expect(() => F.linear(randn([2, 5]), randn([3, 4]))).toThrow('linear: input [2,5] has 5 features but weight [3,4] expects 4');
    expect(() => F.linear(randn([2, 4]), randn([3, 4]), randn([4]))).toThrow('linear: bias must have shape [3] to match weight [3,4], got [4]');
    expect(() => F.linear(randn([2, 4]), randn([4]))).toThrow('linear: weight must be 2-D [out_features, in_features], got [4]');
  });
});
