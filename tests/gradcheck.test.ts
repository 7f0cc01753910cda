// Finite-difference gradient checks for EVERY differentiable op in the ir-spec registry (and a
// few composites). Each op's gradient rule is compared with central differences of its CPU
// kernel: f(x) = Σ out·R for fixed random R, df/dx_j ≈ (f(x+ε) − f(x−ε)) / (x+ε − x−ε) in float64
// from float32 forward runs (dividing by the float32-rounded step, not 2ε, removes most of the
// step error). The rules are also checked one order up (their own gradient, via createGraph),
// since rules are written with ops and double backward must work. Inputs stay away from kinks
// (relu/abs at 0, clamp bounds, ties in max) by more than ε. The table must name every
// differentiable registered op: a new op without an entry fails the coverage test.

import { describe, it, expect } from 'vitest';
import { allOps, type OpDef } from '@kiln/ir-spec';
import { autograd, dispatch, einsum, enableGrad, F, Generator, noGrad, scatterReduce, tensor, type Tensor } from '@kiln/core';

const EPS = 1e-3;
const RTOL = 1e-2;
const ATOL = 1e-3;

// ---- inputs ----------------------------------------------------------------------------------

const numelOf = (shape: readonly number[]) => shape.reduce((a, d) => a * d, 1);

/** Deterministic sample inputs for one case. */
class Sampler {
  private g: Generator;
  constructor(seed: number) { this.g = new Generator(seed); }
  private make(shape: number[], f: () => number): Tensor {
    return tensor(Array.from({ length: numelOf(shape) }, f), { shape });
  }
  normal(...shape: number[]): Tensor { return this.make(shape, () => this.g.normal()); }
  uniform(lo: number, hi: number, ...shape: number[]): Tensor { return this.make(shape, () => lo + (hi - lo) * this.g.random()); }
  /** Uniform in [−1.5, 1.5] but at least `gap` away from each kink. */
  avoiding(kinks: number[], ...shape: number[]): Tensor {
    const gap = 0.1;
    return this.make(shape, () => {
      for (;;) {
        const v = -1.5 + 3 * this.g.random();
        if (kinks.every((k) => Math.abs(v - k) > gap)) return v;
      }
    });
  }
  /** Uniform in [−5, 5] but at least 0.1 away from every integer (where piecewise activations switch). */
  wide(...shape: number[]): Tensor {
    return this.make(shape, () => {
      for (;;) {
        const v = -5 + 10 * this.g.random();
        if (Math.abs(v - Math.round(v)) > 0.1) return v;
      }
    });
  }
  /** Distinct values 0.15 apart in random order (no ties for max/min-like ops). */
  distinct(...shape: number[]): Tensor {
    const n = numelOf(shape);
    const vals = Array.from({ length: n }, (_, i) => (i - n / 2) * 0.15);
    for (let i = n - 1; i > 0; i--) { const j = this.g.int(i + 1); [vals[i], vals[j]] = [vals[j], vals[i]]; }
    return tensor(vals, { shape });
  }
  /** `a` ± a distance from [lo, hi): elementwise pairs that never tie. */
  apart(a: Tensor, lo = 0.2, hi = 0.6): Tensor {
    const d = a.toArray();
    return tensor(Array.from(d, (v) => v + (this.g.random() < 0.5 ? -1 : 1) * (lo + (hi - lo) * this.g.random())), { shape: a.shape });
  }
  index(high: number, ...shape: number[]): Tensor { return this.make(shape, () => this.g.int(high)).int(); }
  /** A bool mask with both values present. */
  mask(...shape: number[]): Tensor {
    const n = numelOf(shape);
    return tensor(Array.from({ length: n }, (_, i) => (i % 3 === 1 || this.g.random() < 0.3 ? 1 : 0)), { shape, dtype: 'bool' });
  }
}

// ---- the table -------------------------------------------------------------------------------

type Ins = (Tensor | null)[];

interface OpCase {
  make: (s: Sampler) => Ins;
  attrs?: Record<string, unknown>;
  /** Float inputs that are held fixed (not differentiated). */
  fixed?: number[];
}

const OPS: Record<string, OpCase[]> = {
  add: [{ make: (s) => [s.normal(2, 3), s.normal(3)] }],
  sub: [{ make: (s) => [s.normal(2, 3), s.normal(2, 1)] }],
  mul: [{ make: (s) => [s.normal(2, 3), s.normal(2, 1)] }],
  div: [{ make: (s) => [s.normal(2, 3), s.avoiding([0], 3)] }],
  pow: [
    { make: (s) => [s.uniform(0.5, 2, 2, 3), s.normal(2, 3)] },
    { make: (s) => [s.avoiding([0], 2, 3), tensor(3)], fixed: [1] },
  ],
  maximum: [{ make: (s) => { const a = s.normal(2, 3); return [a, s.apart(a)]; } }],
  minimum: [{ make: (s) => { const a = s.normal(2, 3); return [a, s.apart(a)]; } }],
  clone: [{ make: (s) => [s.normal(2, 3)] }],
  neg: [{ make: (s) => [s.normal(2, 3)] }],
  exp: [{ make: (s) => [s.normal(2, 3)] }],
  log: [{ make: (s) => [s.uniform(0.5, 2, 2, 3)] }],
  relu: [{ make: (s) => [s.avoiding([0], 2, 3)] }],
  sqrt: [{ make: (s) => [s.uniform(0.5, 2, 2, 3)] }],
  rsqrt: [{ make: (s) => [s.uniform(0.5, 2, 2, 3)] }],
  sin: [{ make: (s) => [s.normal(2, 3)] }],
  cos: [{ make: (s) => [s.normal(2, 3)] }],
  abs: [{ make: (s) => [s.avoiding([0], 2, 3)] }],
  sign: [{ make: (s) => [s.avoiding([0], 2, 3)] }],
  clamp: [
    { make: (s) => [s.avoiding([-0.5, 0.5], 3, 4)], attrs: { min: -0.5, max: 0.5 } },
    { make: (s) => [s.avoiding([0.25], 3, 4)], attrs: { min: 0.25, max: null } },
  ],
  where: [{ make: (s) => [s.mask(2, 3), s.normal(2, 3), s.normal(3)] }],
  cast: [{ make: (s) => [s.normal(2, 3)], attrs: { dtype: 'float32' } }],
  erf: [{ make: (s) => [s.normal(2, 3)] }],
  sigmoid: [{ make: (s) => [s.normal(2, 3)] }],
  tanh: [{ make: (s) => [s.normal(2, 3)] }],
  log1p: [{ make: (s) => [s.uniform(-0.5, 2, 2, 3)] }],
  expm1: [{ make: (s) => [s.normal(2, 3)] }],
  // avoiding() draws from [−1.5, 1.5]: away from the halves, where round jumps.
  round: [{ make: (s) => [s.avoiding([-1.5, -0.5, 0.5, 1.5], 2, 3)] }],
  sort: [
    { make: (s) => [s.distinct(2, 5)], attrs: { dim: 1, descending: true } },
    { make: (s) => [s.distinct(4, 3)], attrs: { dim: 0, descending: false } },
  ],
  // Training-mode dropout is eager-only (F.dropout draws the mask); the op is the identity form.
  dropout: [{ make: (s) => [s.normal(2, 3)], attrs: { p: 0.5, training: false } }],
  sum: [
    { make: (s) => [s.normal(2, 3, 2)], attrs: { dim: [0, 2], keepdim: true } },
    { make: (s) => [s.normal(2, 3)], attrs: { dim: -1, keepdim: false } },
    { make: (s) => [s.normal(2, 3)], attrs: { dim: null } },
  ],
  amax: [
    { make: (s) => [s.distinct(2, 3, 2)], attrs: { dim: 1, keepdim: false } },
    { make: (s) => [s.distinct(2, 3)], attrs: { dim: null, keepdim: true } },
  ],
  amin: [
    { make: (s) => [s.distinct(2, 3, 2)], attrs: { dim: [0, 2], keepdim: true } },
    { make: (s) => [s.distinct(2, 3)], attrs: { dim: null } },
  ],
  prod: [
    { make: (s) => [s.avoiding([0], 2, 3)], attrs: { dim: 1, keepdim: false } },
    { make: (s) => [s.avoiding([0], 2, 3)], attrs: { dim: null } },
  ],
  cumsum: [{ make: (s) => [s.normal(2, 4)], attrs: { dim: 1 } }, { make: (s) => [s.normal(3, 2)], attrs: { dim: -2 } }],
  reshape: [{ make: (s) => [s.normal(2, 3, 2)], attrs: { shape: [3, -1] } }],
  expand: [{ make: (s) => [s.normal(3, 1)], attrs: { shape: [2, 3, 4] } }],
  permute: [{ make: (s) => [s.normal(2, 3, 4)], attrs: { dims: [2, 0, 1] } }],
  slice: [
    { make: (s) => [s.normal(4, 5)], attrs: { dim: 1, start: 1, end: 5, step: 2 } },
    { make: (s) => [s.normal(4, 3)], attrs: { dim: 0, start: -3, end: null } },
  ],
  slice_backward: [{ make: (s) => [s.normal(4, 2)], attrs: { dim: 1, start: 1, end: null, step: 2, shape: [4, 5] } }],
  cat: [{ make: (s) => [s.normal(2, 3), s.normal(2, 1), s.normal(2, 2)], attrs: { dim: 1 } }],
  flip: [{ make: (s) => [s.normal(2, 3, 2)], attrs: { dims: [0, 2] } }],
  index_select: [{ make: (s) => [s.normal(4, 3), tensor([3, 0, 3, 1, 2], { dtype: 'int32' })], attrs: { dim: 0 } }],
  index_add: [{ make: (s) => [s.normal(4, 3), tensor([3, 0, 3, 1, 2], { dtype: 'int32' }), s.normal(5, 3)], attrs: { dim: 0 } }],
  gather: [{ make: (s) => [s.normal(3, 4), s.index(4, 3, 2)], attrs: { dim: 1 } }],
  scatter_add: [{ make: (s) => [s.normal(3, 4), s.index(4, 3, 2), s.normal(3, 2)], attrs: { dim: 1 } }],
  masked_select: [
    { make: (s) => [s.normal(2, 3), s.mask(2, 3)] },
    { make: (s) => [s.normal(2, 3), s.mask(3)] },
  ],
  masked_scatter: [{ make: (s) => [s.normal(2, 3), s.mask(2, 3), s.normal(7)] }],
  tril: [{ make: (s) => [s.normal(3, 4)], attrs: { diagonal: 0 } }, { make: (s) => [s.normal(2, 3, 3)], attrs: { diagonal: -1 } }],
  triu: [{ make: (s) => [s.normal(3, 4)], attrs: { diagonal: 1 } }],
  matmul: [
    { make: (s) => [s.normal(2, 3), s.normal(3, 4)] },
    { make: (s) => [s.normal(2, 1, 2, 3), s.normal(3, 3, 2)] },
    { make: (s) => [s.normal(2, 2, 3), s.normal(3)] },
    { make: (s) => [s.normal(4), s.normal(2, 4, 3)] },
    { make: (s) => [s.normal(3), s.normal(3)] },
  ],
  linear: [
    { make: (s) => [s.normal(2, 3), s.normal(4, 3), s.normal(4)] },
    { make: (s) => [s.normal(2, 2, 3), s.normal(4, 3), null] },
  ],
  conv2d: [
    { make: (s) => [s.normal(1, 2, 4, 4), s.normal(3, 2, 2, 2), s.normal(3)] },
    {
      make: (s) => [s.normal(2, 2, 5, 5), s.normal(4, 1, 3, 3), s.normal(4)],
      attrs: { stride: [2, 1], padding: [1, 0, 1, 1], dilation: [1, 2], groups: 2 },
    },
  ],
  conv_transpose2d: [
    { make: (s) => [s.normal(1, 2, 3, 3), s.normal(2, 3, 2, 2), s.normal(3)] },
    {
      make: (s) => [s.normal(1, 4, 3, 3), s.normal(4, 1, 3, 3), s.normal(2)],
      attrs: { stride: [2, 2], padding: [1, 1, 1, 1], output_padding: [1, 0], groups: 2 },
    },
  ],
  conv2d_weight_grad: [
    { make: (s) => [s.normal(1, 2, 5, 5), s.normal(1, 3, 5, 5)], attrs: { kernel_size: [3, 3], padding: [1, 1, 1, 1] } },
    { make: (s) => [s.normal(1, 4, 5, 5), s.normal(1, 2, 2, 2)], attrs: { kernel_size: [2, 3], stride: [2, 2], groups: 2 } },
  ],
  max_pool2d: [
    { make: (s) => [s.distinct(1, 2, 4, 4)], attrs: { kernel_size: [2, 2], stride: [2, 2] } },
    { make: (s) => [s.distinct(1, 1, 5, 5)], attrs: { kernel_size: [3, 3], stride: [2, 2], padding: [1, 1] } },
  ],
  adaptive_max_pool2d: [{ make: (s) => [s.distinct(1, 2, 5, 5)], attrs: { output_size: [2, 3] } }],
  avg_pool2d: [
    { make: (s) => [s.normal(1, 2, 5, 5)], attrs: { kernel_size: [3, 3], stride: [2, 2], padding: [1, 1], count_include_pad: false } },
    { make: (s) => [s.normal(1, 1, 5, 5)], attrs: { kernel_size: [2, 2], stride: [2, 2], ceil_mode: true } },
  ],
  avg_pool2d_backward: [
    { make: (s) => [s.normal(1, 2, 3, 3)], attrs: { kernel_size: [3, 3], stride: [2, 2], padding: [1, 1], input_size: [5, 5] } },
  ],
  adaptive_avg_pool2d: [{ make: (s) => [s.normal(1, 2, 5, 5)], attrs: { output_size: [2, 3] } }],
  adaptive_avg_pool2d_backward: [{ make: (s) => [s.normal(1, 2, 2, 3)], attrs: { input_size: [5, 5] } }],
  // Statistics as inputs: running ones in eval mode, batch_norm_stats' outputs in training mode.
  batch_norm: [
    { make: (s) => [s.normal(2, 3, 2, 2), s.normal(3), s.uniform(0.5, 2, 3), s.normal(3), s.normal(3)], attrs: { eps: 1e-5 } },
    { make: (s) => [s.normal(4, 2), s.normal(2), s.uniform(0.5, 2, 2), null, null], attrs: { eps: 0.1 } },
  ],
  batch_norm_stats: [{ make: (s) => [s.normal(3, 2, 2, 2)] }, { make: (s) => [s.normal(5, 3)] }],
};

/** Composites (functions over primitives) checked the same way. */
const COMPOSITES: Record<string, { make: (s: Sampler) => Ins; fn: (ins: Ins) => Tensor; fixed?: number[] }> = {
  softmax: { make: (s) => [s.normal(2, 4)], fn: ([x]) => x!.softmax(1) },
  logSoftmax: { make: (s) => [s.normal(3, 4)], fn: ([x]) => x!.logSoftmax(0) },
  'gelu (erf)': { make: (s) => [s.normal(2, 3)], fn: ([x]) => x!.gelu() },
  'gelu (tanh)': { make: (s) => [s.normal(2, 3)], fn: ([x]) => x!.gelu({ approximate: 'tanh' }) },
  layerNorm: {
    make: (s) => [s.normal(2, 3, 4), s.normal(3, 4), s.normal(3, 4)],
    fn: ([x, w, b]) => F.layerNorm(x!, [3, 4], { weight: w, bias: b }),
  },
  'batchNorm (training)': {
    make: (s) => [s.normal(3, 2, 2), s.normal(2), s.normal(2)],
    fn: ([x, w, b]) => F.batchNorm(x!, null, null, { weight: w, bias: b, training: true }),
  },
  crossEntropy: {
    make: (s) => [s.normal(4, 3), tensor([2, 0, -100, 1], { dtype: 'int32' }), s.uniform(0.5, 2, 3)],
    fn: ([x, t, w]) => F.crossEntropy(x!, t!, { weight: w, labelSmoothing: 0.2 }),
    fixed: [2],
  },
  'crossEntropy (probabilities, K-dim)': {
    make: (s) => [s.normal(2, 3, 2), s.normal(2, 3, 2).softmax(1)],
    fn: ([x, t]) => F.crossEntropy(x!, t!, { reduction: 'sum' }),
  },
  binaryCrossEntropyWithLogits: {
    make: (s) => [s.normal(3, 2), s.uniform(0, 1, 3, 2), s.uniform(0.5, 2, 2)],
    fn: ([x, t, pw]) => F.binaryCrossEntropyWithLogits(x!, t!, { posWeight: pw }),
    fixed: [2],
  },
  binaryCrossEntropy: { make: (s) => [s.uniform(0.1, 0.9, 2, 3), s.uniform(0, 1, 2, 3)], fn: ([x, t]) => F.binaryCrossEntropy(x!, t!) },
  // |x − t| in [0.2, 0.3) (quadratic part) for the first, in [0.5, 0.6) (linear part) for the second.
  'smoothL1Loss (quadratic)': {
    make: (s) => { const a = s.normal(2, 3); return [a, s.apart(a, 0.2, 0.3)]; },
    fn: ([x, t]) => F.smoothL1Loss(x!, t!, { beta: 0.4, reduction: 'sum' }),
  },
  'smoothL1Loss (linear)': {
    make: (s) => { const a = s.normal(2, 3); return [a, s.apart(a, 0.5, 0.6)]; },
    fn: ([x, t]) => F.smoothL1Loss(x!, t!, { beta: 0.4, reduction: 'sum' }),
  },
  cumprod: { make: (s) => [s.avoiding([0], 2, 4)], fn: ([x]) => x!.cumprod(1) },
  einsum: { make: (s) => [s.normal(2, 3), s.normal(4, 3, 2), s.normal(2, 2)], fn: ([a, w, b]) => einsum('bi,oij,bj->bo', a!, w!, b!) },
  'pad (reflect)': { make: (s) => [s.normal(1, 2, 3, 4)], fn: ([x]) => F.pad(x!, [2, 1, 1, 2], { mode: 'reflect' }) },
  'interpolate (bicubic)': { make: (s) => [s.normal(1, 1, 3, 4)], fn: ([x]) => F.interpolate(x!, { scaleFactor: 2, mode: 'bicubic' }) },
  'scaledDotProductAttention (causal)': {
    make: (s) => [s.normal(2, 3, 4), s.normal(2, 3, 4), s.normal(2, 3, 2)],
    fn: ([q, k, v]) => F.scaledDotProductAttention(q!, k!, v!, { isCausal: true }),
  },
  normalize: { make: (s) => [s.normal(3, 4)], fn: ([x]) => F.normalize(x!) },
  cosineSimilarity: { make: (s) => [s.normal(3, 4), s.normal(3, 4)], fn: ([a, b]) => F.cosineSimilarity(a!, b!) },
  'fold (unfold)': { make: (s) => [s.normal(1, 2, 4, 5)], fn: ([x]) => F.fold(F.unfold(x!, 2, { padding: 1 }).mul(1.5), [4, 5], 2, { padding: 1 }) },
  'scatterReduce (amax)': {
    make: (s) => [s.distinct(2, 5), s.distinct(2, 4)],
    fn: ([x, src]) => scatterReduce(x!, 1, tensor([[0, 2, 0, 1], [2, 2, 3, 3]], { dtype: 'int32' }), src!, 'amax'),
  },
  klDiv: {
    make: (s) => [s.normal(2, 3).logSoftmax(1), s.uniform(0.1, 1, 2, 3)],
    fn: ([x, t]) => F.klDiv(x!, t!, { reduction: 'batchmean' }),
  },
};

// ---- the check ---------------------------------------------------------------------------------

const asList = (r: Tensor | Tensor[]): Tensor[] => (Array.isArray(r) ? r : [r]);
const floatOuts = (r: Tensor | Tensor[]) => asList(r).filter((t) => t.dtype === 'float32');

/** Σ_k Σ out_k·R_k in float64. */
function dot(outs: Tensor[], R: Float64Array[]): number {
  let f = 0;
  outs.forEach((o, k) => { const d = o.data; for (let i = 0; i < R[k].length; i++) f += d[i] * R[k][i]; });
  return f;
}

/** Central differences of `f` with respect to every element of `t` (mutated and restored). */
function numericGrad(t: Tensor, f: () => number): Float64Array {
  const d = t.data, out = new Float64Array(t.numel());
  for (let j = 0; j < out.length; j++) {
    const x = d[j], h = EPS * Math.max(1, Math.abs(x));
    d[j] = x + h; const xp = d[j]; const fp = f();
    d[j] = x - h; const xm = d[j]; const fm = f();
    d[j] = x;
    out[j] = (fp - fm) / (xp - xm);
  }
  return out;
}

function compare(what: string, analytic: Tensor | null, numeric: Float64Array): void {
  const a = analytic ? analytic.toArray() : new Float32Array(numeric.length);
  expect(a.length, `${what}: gradient size`).toBe(numeric.length);
  for (let j = 0; j < numeric.length; j++) {
    const err = Math.abs(a[j] - numeric[j]);
    if (!(err <= ATOL + RTOL * Math.max(Math.abs(a[j]), Math.abs(numeric[j])))) {
      throw new Error(`${what}: element ${j}: analytic ${a[j]} vs finite difference ${numeric[j]} (|diff| ${err.toExponential(2)})`);
    }
  }
}

function weights(g: Generator, outs: Tensor[]): Float64Array[] {
  return outs.map((o) => Float64Array.from({ length: o.numel() }, () => g.normal()));
}
const weightTensors = (outs: Tensor[], R: Float64Array[]) => outs.map((o, k) => tensor(R[k], { shape: o.shape }));

/** First- and second-order checks of `fn` at `ins` with respect to the float inputs not in `fixed`. */
function gradcheck(label: string, fn: (ins: Ins) => Tensor | Tensor[], ins: Ins, fixed: number[] = [], seed = 1): void {
  const wrt = ins.flatMap((t, i) => (t && t.dtype === 'float32' && !fixed.includes(i) ? [i] : []));
  expect(wrt.length, `${label}: nothing to differentiate`).toBeGreaterThan(0);
  const xs = wrt.map((i) => ins[i]!.requiresGrad_());
  const g = new Generator(seed);
  const outs0 = floatOuts(fn(ins));
  const R = weights(g, outs0), Rt = weightTensors(outs0, R);
  const loss = (outs: Tensor[]) => outs.map((o, k) => o.mul(Rt[k]).sum()).reduce((a, b) => a.add(b));

  // First order: the rule against differences of the kernel.
  const analytic = autograd.grad(loss(outs0), xs, { allowUnused: true });
  const f = () => noGrad(() => dot(floatOuts(fn(ins)), R));
  xs.forEach((x, k) => compare(`${label}: d/d input ${wrt[k]}`, analytic[k], numericGrad(x, f)));

  // Second order: h(x) = Σ V·∇f(x), differentiated through the recorded rule.
  const V = xs.map((x) => Float64Array.from({ length: x.numel() }, () => g.normal()));
  const Vt = xs.map((x, k) => tensor(V[k], { shape: x.shape }));
  const grads = (createGraph: boolean) => enableGrad(() => autograd.grad(loss(floatOuts(fn(ins))), xs, { allowUnused: true, createGraph }));
  const first = grads(true);
  const terms = first.flatMap((gk, k) => (gk && gk.requiresGrad ? [gk.mul(Vt[k]).sum()] : []));
  const second = terms.length ? autograd.grad(terms.reduce((a, b) => a.add(b)), xs, { allowUnused: true }) : xs.map(() => null);
  const h = () => grads(false).reduce((acc, gk, k) => (gk ? acc + dot([gk], [V[k]]) : acc), 0);
  xs.forEach((x, k) => compare(`${label}: second order, d/d input ${wrt[k]}`, second[k], numericGrad(x, h)));
}

// ---- tests -----------------------------------------------------------------------------------------

/**
 * The cases of `op`: its row above, else (attribute-free one-input elementwise maps, such as
 * hardswish) values over [−5, 5] away from the integers, so every piece of a piecewise map is hit.
 */
function casesOf(op: OpDef): OpCase[] | undefined {
  if (Object.hasOwn(OPS, op.name)) return OPS[op.name];
  const attrs = op.attrs.safeParse({});
  if (op.elementwise && op.inputs.length === 1 && attrs.success && Object.keys(attrs.data as object).length === 0) return [{ make: (s) => [s.wide(2, 3)] }];
  return undefined;
}

describe('finite-difference gradient checks', () => {
  const differentiable = allOps().filter((op) => op.grad !== null);

  it('every differentiable registered op has sample inputs here', () => {
    const missing = differentiable.filter((op) => !casesOf(op)).map((op) => op.name);
    expect(missing, `add entries to OPS in tests/gradcheck.test.ts for: ${missing.join(', ')}`).toEqual([]);
  });

  it('the table names only registered differentiable ops', () => {
    const names = new Set(differentiable.map((op) => op.name));
    expect(Object.keys(OPS).filter((n) => !names.has(n))).toEqual([]);
  });

  for (const op of differentiable) {
    (casesOf(op) ?? []).forEach((c, i) => {
      it(`${op.name} #${i}`, () => {
        const ins = c.make(new Sampler(1000 + i));
        gradcheck(`${op.name} #${i}`, (xs) => dispatch(op.name, xs, c.attrs ?? {}), ins, c.fixed, 7 + i);
      });
    });
  }

  it('the check itself rejects a wrong gradient (a hook scales it by 1.1)', () => {
    const wrong = ([x]: Ins) => { const y = x!.mul(2); if (y.requiresGrad) y.registerHook((g) => g.mul(1.1)); return y; };
    expect(() => gradcheck('wrong', wrong, [new Sampler(3).normal(2, 3)])).toThrow(/analytic .* vs finite difference/);
  });

  for (const [name, c] of Object.entries(COMPOSITES)) {
    it(`composite ${name}`, () => {
      gradcheck(`composite ${name}`, c.fn, c.make(new Sampler(2000)), c.fixed);
    });
  }
});
