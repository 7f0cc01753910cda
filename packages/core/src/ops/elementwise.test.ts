// Unit tests of the elementwise ops beyond the PyTorch golden cases: dtype promotion of scalar
// operands, broadcasting (kernel paths and errors), the in-place protocol with autograd's
// version counters, gradient edge cases (ties, bounds, zeros) and double backward.
// Expected values are hand-derived from the math, written out in double precision.

import { describe, it, expect } from 'vitest';
import { getOp } from '@kiln/ir-spec';
import { autograd, noGrad, tensor, add, sub, mul, div, pow, maximum, minimum, clamp, erf, where, type Tensor } from '../index.js';

const f32 = (xs: readonly number[]): number[] => xs.map((v) => Math.fround(v));

/** |got - want| <= atol + rtol·|want| for every element. */
function expectClose(got: Tensor | ArrayLike<number>, want: ArrayLike<number>, rtol = 1e-6, atol = 1e-7): void {
  const g = 'shape' in got ? got.toArray() : got;
  expect(g.length).toBe(want.length);
  for (let i = 0; i < want.length; i++) {
    const ok = Math.abs(g[i] - want[i]) <= atol + rtol * Math.abs(want[i]) || (Number.isNaN(g[i]) && Number.isNaN(want[i]));
    if (!ok) throw new Error(`element ${i}: got ${g[i]}, want ${want[i]}`);
  }
}

/** d(sum f(x))/dx elementwise, through autograd. */
function gradOf(xs: number[], f: (x: Tensor) => Tensor): Float32Array | Int32Array | Uint8Array {
  const x = tensor(xs, { requiresGrad: true });
  f(x).sum().backward();
  return x.grad!.toArray();
}

describe('scalar operands and dtype promotion', () => {
  it('keeps an int32 tensor int32 with an integer scalar and promotes it with a fractional one', () => {
    const a = tensor([1, 2, 3], { dtype: 'int32' });
    const b = a.add(2);
    expect(b.dtype).toBe('int32');
    expect([...b.toArray()]).toEqual([3, 4, 5]);
    const c = a.add(2.5);
    expect(c.dtype).toBe('float32');
    expect([...c.toArray()]).toEqual([3.5, 4.5, 5.5]);
    expect(mul(2, a).dtype).toBe('int32');
  });

  it('gives float32 for int32 / int32 (true division)', () => {
    const q = div(tensor([1, 2, 3], { dtype: 'int32' }), tensor([2, 2, 2], { dtype: 'int32' }));
    expect(q.dtype).toBe('float32');
    expect([...q.toArray()]).toEqual([0.5, 1, 1.5]);
  });

  it('applies alpha to a scalar or tensor operand', () => {
    // 1 + 3·2 = 7, 2 + 3·2 = 8;  [1,2] - 2·[1,1] = [-1, 0]
    expect([...add(tensor([1, 2]), 2, { alpha: 3 }).toArray()]).toEqual([7, 8]);
    expect([...sub(tensor([1, 2]), tensor([1, 1]), { alpha: 2 }).toArray()]).toEqual([-1, 0]);
  });

  it('puts a scalar on the left: 2 / x and 2 ** x', () => {
    expectClose(div(2, tensor([4, 0.5])), [0.5, 4]);
    expectClose(pow(2, tensor([3, -1])), [8, 0.5]);
  });

  it('promotes int clamps with fractional bounds and gives bool from logicalNot', () => {
    const c = clamp(tensor([-1, 0, 3], { dtype: 'int32' }), 0.5);
    expect(c.dtype).toBe('float32');
    expect([...c.toArray()]).toEqual([0.5, 0.5, 3]);
    expect(clamp(tensor([-1, 0, 3], { dtype: 'int32' }), 0, 2).dtype).toBe('int32');
    const n = tensor([0, 2, -1]).logicalNot();
    expect(n.dtype).toBe('bool');
    expect([...n.toArray()]).toEqual([1, 0, 0]);
  });
});

describe('broadcasting', () => {
  /** Naive reference: every output index mapped back to each input. */
  function naive(a: Tensor, b: Tensor, out: readonly number[], f: (x: number, y: number) => number): number[] {
    const n = out.reduce((p, d) => p * d, 1), res: number[] = [];
    const at = (t: Tensor, idx: number[]) => {
      const lead = out.length - t.ndim;
      let off = 0;
      t.shape.forEach((d, i) => { off = off * d + (d === 1 ? 0 : idx[i + lead]); });
      return t.data[off];
    };
    for (let k = 0; k < n; k++) {
      const idx: number[] = [];
      let r = k;
      for (let d = out.length - 1; d >= 0; d--) { idx[d] = r % out[d]; r = Math.floor(r / out[d]); }
      res.push(f(at(a, idx), at(b, idx)));
    }
    return res;
  }
  const seq = (shape: number[], start = 1) => tensor(Array.from({ length: shape.reduce((p, d) => p * d, 1) }, (_, i) => start + i * 0.5), { shape });

  it.each([
    [[2, 1, 4], [3, 1]],
    [[2, 3, 4, 5], [1, 3, 1, 1]],
    [[4, 1, 5], [1, 6, 1]],
    [[3, 1], [2, 3, 4]],
    [[2, 3, 1, 5], [3, 4, 1]],
    [[1, 3, 1], [2, 1, 1]],
  ])('%j with %j matches a naive loop for every hot op', (sa, sb) => {
    const a = seq(sa), b = seq(sb, 2);
    const out = a.add(b).shape;
    expectClose(a.add(b), f32(naive(a, b, out, (x, y) => x + y)));
    expectClose(a.sub(b), f32(naive(a, b, out, (x, y) => x - y)));
    expectClose(b.mul(a), f32(naive(b, a, out, (x, y) => x * y)));
    expectClose(a.div(b), f32(naive(a, b, out, (x, y) => x / y)));
    expectClose(a.gt(b), naive(a, b, out, (x, y) => (x > y ? 1 : 0)));
    expectClose(maximum(a, b), naive(a, b, out, Math.max));
  });

  it('broadcasts int32 operands without converting them', () => {
    const a = tensor([[1], [2]], { dtype: 'int32' }), b = tensor([10, 20, 30], { dtype: 'int32' });
    const s = a.add(b);
    expect(s.dtype).toBe('int32');
    expect([...s.toArray()]).toEqual([11, 21, 31, 12, 22, 32]);
  });

  it('names the op and both shapes when shapes do not broadcast', () => {
    const a = tensor(new Float32Array(6), { shape: [2, 3] }), b = tensor(new Float32Array(4), { shape: [4] });
    expect(() => a.add(b)).toThrow(/add: shapes \[2,3\] and \[4\] cannot be broadcast/);
    expect(() => maximum(a, b)).toThrow(/maximum: shapes \[2,3\] and \[4\]/);
    expect(() => pow(a, b)).toThrow(/^pow: /);
    expect(() => where(tensor([true, false, true, false]), a, 0)).toThrow(/where: shapes/);
  });

  it('broadcasts where with scalar branches (the index-free path)', () => {
    const c = tensor([true, false, true]);
    expect([...where(c, tensor([1, 2, 3]), 0).toArray()]).toEqual([1, 0, 3]);
    expect([...where(c, 5, tensor([[1, 2, 3], [4, 5, 6]])).toArray()]).toEqual([5, 2, 5, 5, 5, 5]);
  });
});

describe('in-place ops and version counters', () => {
  it('refuses to backward through exp after its saved output was modified in place', () => {
    const x = tensor([0.5, -1, 2], { requiresGrad: true });
    const y = x.exp();
    y.mul_(2);
    expect(() => y.sum().backward()).toThrow(/output 0 of exp/);
  });

  it('lets sin (which saves its input) be followed by an in-place op on its output', () => {
    const xs = [0.5, -1, 2];
    const x = tensor(xs, { requiresGrad: true });
    const y = x.sin();
    y.mul_(2);
    y.sum().backward();
    expectClose(x.grad!, xs.map((v) => 2 * Math.cos(v))); // d/dx 2·sin x
  });

  it('keeps sigmoid_ and tanh_ differentiable through the re-saved output', () => {
    const xs = [0.3, -2, 1.5];
    const s = xs.map((v) => 1 / (1 + Math.exp(-v)));
    expectClose(gradOf(xs, (x) => x.mul(1).sigmoid_()), s.map((v) => v * (1 - v)));
    expectClose(gradOf(xs, (x) => x.mul(1).tanh_()), xs.map((v) => 1 - Math.tanh(v) ** 2));
  });

  it('does not save the output of pow, so x.pow(2).mul_(3) still differentiates', () => {
    expectClose(gradOf([1.5, -2], (x) => x.pow(2).mul_(3)), [9, -12]); // d/dx 3x² = 6x
  });

  it('forbids relu_ and add_ on a leaf that requires grad, except inside noGrad', () => {
    const w = tensor([-1, 2], { requiresGrad: true });
    expect(() => w.relu_()).toThrow(/relu_: a leaf tensor that requires grad/);
    expect(() => w.add_(1)).toThrow(/add_: a leaf tensor that requires grad/);
    noGrad(() => w.relu_().add_(1));
    expect([...w.toArray()]).toEqual([1, 3]);
    expect(w.requiresGrad).toBe(true);
  });

  it('rejects an in-place result of another dtype or shape', () => {
    const i = tensor([1, 2], { dtype: 'int32' });
    expect(() => i.div_(2)).toThrow(/div_: the result type float32 can't be cast to the int32 tensor/);
    expect(() => tensor([1, 2]).add_(tensor([[1], [2]]))).toThrow(/add_: the result has shape \[2,2\]/);
  });
});

describe('gradients of the primitives', () => {
  const xs = [-1.7, -0.4, 0.3, 1.1, 2.6];

  it('matches hand-derived derivatives', () => {
    expectClose(gradOf(xs, (x) => x.sin()), xs.map(Math.cos));
    expectClose(gradOf(xs, (x) => x.cos()), xs.map((v) => -Math.sin(v)));
    expectClose(gradOf(xs, (x) => x.abs()), xs.map(Math.sign));
    expectClose(gradOf(xs, (x) => x.sign()), xs.map(() => 0));
    expectClose(gradOf(xs, (x) => x.tanh()), xs.map((v) => 1 - Math.tanh(v) ** 2));
    expectClose(gradOf(xs, (x) => erf(x)), xs.map((v) => (2 / Math.sqrt(Math.PI)) * Math.exp(-v * v)), 1e-5);
    const pos = xs.map(Math.abs);
    expectClose(gradOf(pos, (x) => x.sqrt()), pos.map((v) => 0.5 / Math.sqrt(v)), 1e-5);
    expectClose(gradOf(pos, (x) => x.rsqrt()), pos.map((v) => -0.5 * v ** -1.5), 1e-5);
    expectClose(gradOf(xs, (x) => x.pow(3)), xs.map((v) => 3 * v * v), 1e-5);
    expectClose(gradOf(xs, (x) => pow(3, x)), xs.map((v) => 3 ** v * Math.log(3)), 1e-5);
  });

  it('gives 0 (not NaN) for pow at 0 with exponent 0, and for the exponent at base 0', () => {
    const a = tensor([0, 0, 2], { requiresGrad: true }), b = tensor([0, 2, 0], { requiresGrad: true });
    const [ga, gb] = autograd.grad(a.pow(b).sum(), [a, b]);
    // d/da a^b = b·a^(b-1): 0 where b = 0; 2·0 = 0 at (0, 2).  d/db = a^b·ln a: 0 at a = 0, ln 2 at (2, 0).
    expectClose(ga!, [0, 0, 0]);
    expectClose(gb!, [0, 0, Math.log(2)]);
  });

  it('splits the gradient evenly between tied maximum/minimum inputs', () => {
    const a = tensor([1, 2, 3], { requiresGrad: true }), b = tensor([3, 2, 1], { requiresGrad: true });
    let [ga, gb] = autograd.grad(maximum(a, b).sum(), [a, b]);
    expect([...ga!.toArray()]).toEqual([0, 0.5, 1]);
    expect([...gb!.toArray()]).toEqual([1, 0.5, 0]);
    [ga, gb] = autograd.grad(minimum(a, b).sum(), [a, b]);
    expect([...ga!.toArray()]).toEqual([1, 0.5, 0]);
    expect([...gb!.toArray()]).toEqual([0, 0.5, 1]);
    // A broadcast scalar operand collects the gradient of every element it wins.
    const s = tensor(2, { requiresGrad: true });
    const [gs] = autograd.grad(maximum(tensor([1, 2, 3]), s).sum(), [s]);
    expect(gs!.item()).toBe(1.5); // wins at 1 (1), ties at 2 (0.5), loses at 3
  });

  it('passes the clamp gradient on the bounds and inside only', () => {
    const g = gradOf([-2, -1, 0, 1, 2], (x) => x.clamp(-1, 1));
    expect([...g]).toEqual([0, 1, 1, 1, 0]);
    expect([...gradOf([-2, 0, 2], (x) => x.clamp(null, 0))]).toEqual([1, 1, 0]);
    expect(clamp(tensor([-5, 5]), 3, 1).toArray()).toEqual(new Float32Array([1, 1])); // min > max gives max
    expect(Number.isNaN(clamp(tensor([NaN]), 0, 1).item())).toBe(true);
  });

  it('backpropagates through relu with a zero gradient at 0', () => {
    expect([...gradOf([-1, 0, 2], (x) => x.relu())]).toEqual([0, 0, 1]);
  });

  it('differentiates tanh twice (createGraph)', () => {
    const vs = [-1.2, 0.1, 0.9];
    const x = tensor(vs, { requiresGrad: true });
    const [g1] = autograd.grad(x.tanh().sum(), [x], { createGraph: true });
    // tanh' = 1 - t², tanh'' = -2t(1 - t²)
    expectClose(g1!, vs.map((v) => 1 - Math.tanh(v) ** 2));
    const [g2] = autograd.grad(g1!.sum(), [x]);
    expectClose(g2!, vs.map((v) => -2 * Math.tanh(v) * (1 - Math.tanh(v) ** 2)), 1e-5);
  });
});

describe('kernels', () => {
  it('computes erf to float32 accuracy against Simpson integration of 2/√π e^(-t²)', () => {
    // Reference: composite Simpson's rule with 4000 panels per unit (error ~1e-15 here).
    const ref = (x: number): number => {
      const n = Math.max(2, 2 * Math.ceil(Math.abs(x) * 2000)), h = x / n;
      let s = 1 + Math.exp(-x * x);
      for (let i = 1; i < n; i++) s += (i % 2 ? 4 : 2) * Math.exp(-((i * h) ** 2));
      return (s * h) / 3 * (2 / Math.sqrt(Math.PI));
    };
    const xs = Array.from({ length: 1601 }, (_, i) => -8 + i * 0.01);
    const got = erf(tensor(xs)).toArray();
    xs.forEach((x, i) => {
      const want = ref(Math.fround(x));
      if (Math.abs(got[i] - want) >= 1e-7) throw new Error(`erf(${x}) = ${got[i]}, want ${want}`);
    });
    expectClose(erf(tensor([Infinity, -Infinity, NaN, 0])), [1, -1, NaN, 0], 0, 0);
  });

  it('computes relu on special values and every dtype', () => {
    const y = tensor([-1, -0, 0, 2, -Infinity, Infinity, NaN, -1e-45]).relu().toArray();
    expect([...y]).toEqual([0, 0, 0, 2, 0, Infinity, NaN, 0]);
    expect(y.every((v) => !Object.is(v, -0))).toBe(true); // +0 for negatives, as PyTorch
    // A NaN with its sign bit set (x86's default NaN, e.g. in a loaded weight file) stays NaN.
    const raw = new Float32Array(2);
    new Int32Array(raw.buffer).set([0xffc00000 | 0, 0x80000001 | 0]); // -NaN, the smallest negative subnormal
    const r = tensor(raw).relu().toArray();
    expect(Number.isNaN(r[0])).toBe(true);
    expect(r[1]).toBe(0);
    const i = tensor([-3, 0, 5, -2147483648], { dtype: 'int32' }).relu();
    expect(i.dtype).toBe('int32');
    expect([...i.toArray()]).toEqual([0, 0, 5, 0]);
    expect([...tensor([true, false]).relu().toArray()]).toEqual([1, 0]);
  });

  it('keeps sigmoid finite for large |x|', () => {
    expectClose(tensor([-1000, -50, 0, 50, 1000]).sigmoid(), [0, Math.exp(-50), 0.5, 1, 1], 1e-6, 0);
    expectClose(gradOf([-1000, 1000], (x) => x.sigmoid()), [0, 0], 0, 0);
  });

  it('has a CPU kernel, shape rule and gradient for every op of this family', () => {
    for (const name of ['pow', 'maximum', 'minimum', 'sqrt', 'rsqrt', 'sin', 'cos', 'abs', 'sign', 'erf', 'sigmoid', 'tanh', 'clamp']) {
      const op = getOp(name);
      expect(op.grad, name).not.toBeNull();
      expect(op.elementwise, name).toBe(true);
    }
    expect(getOp('logical_not').grad).toBeNull();
    expect(getOp('logical_not').infer([{ dtype: 'float32', shape: [2, 'N'] }], {})).toEqual([{ dtype: 'bool', shape: [2, 'N'] }]);
    expect(getOp('sqrt').infer([{ dtype: 'int32', shape: [3] }], {})[0].dtype).toBe('float32');
  });
});
