// nn.init: statistics of the initialisers on large tensors, PyTorch's fan/gain rules, in-place
// semantics, and reproducibility under manualSeed.
import { describe, expect, it } from 'vitest';
import { nn, zeros, manualSeed, Generator } from '../index.js';

const { init } = nn;

function stats(a: ArrayLike<number>): { mean: number; std: number; min: number; max: number } {
  let s = 0, s2 = 0, min = Infinity, max = -Infinity;
  for (let i = 0; i < a.length; i++) { s += a[i]; s2 += a[i] * a[i]; min = Math.min(min, a[i]); max = Math.max(max, a[i]); }
  const mean = s / a.length;
  return { mean, std: Math.sqrt(s2 / a.length - mean * mean), min, max };
}

describe('nn.init', () => {
  it('computes fans and gains as PyTorch', () => {
    expect(init.calculateFanInAndFanOut(zeros([64, 3, 5, 5]))).toEqual([75, 1600]);
    expect(init.calculateFanInAndFanOut(zeros([10, 20]))).toEqual([20, 10]);
    expect(() => init.calculateFanInAndFanOut(zeros([5]))).toThrow(/fewer than 2 dimensions/);
    expect(init.calculateGain('relu')).toBeCloseTo(Math.SQRT2, 12);
    expect(init.calculateGain('tanh')).toBeCloseTo(5 / 3, 12);
    expect(init.calculateGain('leaky_relu')).toBeCloseTo(Math.sqrt(2 / (1 + 0.01 ** 2)), 12);
    expect(init.calculateGain('leaky_relu', Math.sqrt(5))).toBeCloseTo(Math.sqrt(1 / 3), 12);
    expect(init.calculateGain('conv2d')).toBe(1);
    expect(init.calculateGain('selu')).toBe(0.75);
  });

  it('uniform_ and normal_ have the requested moments', () => {
    const u = stats(init.uniform_(zeros([200, 500]), -2, 4).toArray());
    expect(u.min).toBeGreaterThanOrEqual(-2);
    expect(u.max).toBeLessThan(4);
    expect(u.mean).toBeCloseTo(1, 1);
    expect(u.std).toBeCloseTo(6 / Math.sqrt(12), 1);
    const n = stats(init.normal_(zeros([200, 500]), 3, 0.5).toArray());
    expect(Math.abs(n.mean - 3)).toBeLessThan(0.01);
    expect(Math.abs(n.std - 0.5)).toBeLessThan(0.01);
  });

  it('kaiming and xavier follow the fan rules (std within 2%)', () => {
    // [256, 128, 3, 3]: fanIn = 128·9 = 1152, fanOut = 256·9 = 2304.
    const w = zeros([256, 128, 3, 3]);
    const ku = stats(init.kaimingUniform_(w, { nonlinearity: 'relu' }).toArray());
    const kuBound = Math.SQRT2 * Math.sqrt(3 / 1152);
    expect(ku.max).toBeLessThanOrEqual(kuBound);
    expect(ku.min).toBeGreaterThanOrEqual(-kuBound);
    expect(ku.std / (Math.SQRT2 / Math.sqrt(1152))).toBeCloseTo(1, 1);
    const kn = stats(init.kaimingNormal_(w, { mode: 'fan_out', nonlinearity: 'relu' }).toArray());
    expect(Math.abs(kn.mean)).toBeLessThan(1e-3);
    expect(Math.abs(kn.std / (Math.SQRT2 / Math.sqrt(2304)) - 1)).toBeLessThan(0.02);
    const xu = stats(init.xavierUniform_(w, { gain: 2 }).toArray());
    const xuBound = 2 * Math.sqrt(6 / (1152 + 2304));
    expect(xu.max).toBeLessThanOrEqual(xuBound);
    expect(Math.abs(xu.std / (xuBound / Math.sqrt(3)) - 1)).toBeLessThan(0.02);
    const xn = stats(init.xavierNormal_(w).toArray());
    expect(Math.abs(xn.std / Math.sqrt(2 / (1152 + 2304)) - 1)).toBeLessThan(0.02);
    expect(() => init.kaimingUniform_(w, { mode: 'fan_avg' as 'fan_in' })).toThrow(/mode 'fan_avg' not supported/);
  });

  it('orthogonal_ gives orthonormal rows or columns, times gain', () => {
    for (const [shape, gain] of [[[20, 8], 1], [[8, 20], 1], [[6, 2, 3, 3], 0.5], [[16, 16], 2]] as const) {
      const w = init.orthogonal_(zeros(shape), { gain });
      const rows = shape[0], cols = w.numel() / rows;
      const a = w.toArray();
      // Gram matrix of the shorter side: WᵀW (tall) or WWᵀ (wide) ≈ gain²·I.
      const n = Math.min(rows, cols);
      const at = (i: number, j: number) => (rows >= cols ? a[i * cols + j] : a[j * cols + i]);
      for (let p = 0; p < n; p++) {
        for (let q = 0; q < n; q++) {
          let dot = 0;
          for (let k = 0; k < Math.max(rows, cols); k++) dot += at(k, p) * at(k, q);
          expect(dot).toBeCloseTo(p === q ? gain * gain : 0, 4);
        }
      }
    }
    expect(() => init.orthogonal_(zeros([4]))).toThrow(/2 or more dimensions/);
  });

  it('constant_/zeros_/ones_ fill; every initialiser works in place on a parameter and bumps its version', () => {
    const p = new nn.Parameter(zeros([3, 4]));
    const v = p._version;
    expect(init.constant_(p, 2.5)).toBe(p);
    expect([...p.toArray()]).toEqual(Array(12).fill(2.5));
    init.ones_(p);
    expect(p.toArray().every((x) => x === 1)).toBe(true);
    init.zeros_(p);
    init.kaimingUniform_(p);
    expect(p._version).toBeGreaterThan(v + 3);
    expect(p.isLeaf && p.requiresGrad && p.gradFn === null).toBe(true);
  });

  it('is reproducible under manualSeed and with an explicit generator', () => {
    manualSeed(123);
    const a = init.normal_(zeros([50])).toArray();
    manualSeed(123);
    const b = init.normal_(zeros([50])).toArray();
    expect(b).toEqual(a);
    const g1 = new Generator(7), g2 = new Generator(7);
    expect(init.uniform_(zeros([10]), 0, 1, { generator: g1 }).toArray()).toEqual(init.uniform_(zeros([10]), 0, 1, { generator: g2 }).toArray());
    manualSeed(5);
    const l1 = new nn.Linear(4, 3);
    manualSeed(5);
    const l2 = new nn.Linear(4, 3);
    expect(l2.weight.toArray()).toEqual(l1.weight.toArray());
    expect(l2.bias!.toArray()).toEqual(l1.bias!.toArray());
  });

  it('layers use PyTorch default init bounds', () => {
    // Linear/Conv: kaiming_uniform(a=√5) = U(±1/√fanIn) for weights, U(±1/√fanIn) for biases.
    const lin = new nn.Linear(400, 300);
    const b = 1 / Math.sqrt(400);
    const ws = stats(lin.weight.toArray());
    expect(ws.max).toBeLessThanOrEqual(b);
    expect(ws.min).toBeGreaterThanOrEqual(-b);
    expect(Math.abs(ws.std / (b / Math.sqrt(3)) - 1)).toBeLessThan(0.02);
    expect(stats(lin.bias!.toArray()).max).toBeLessThanOrEqual(b);
    const conv = new nn.Conv2d(16, 32, 3);
    const cb = 1 / Math.sqrt(16 * 9);
    expect(Math.max(...conv.weight.toArray().map(Math.abs))).toBeLessThanOrEqual(cb);
    expect(Math.max(...conv.bias!.toArray().map(Math.abs))).toBeLessThanOrEqual(cb);
    expect(Math.max(...conv.weight.toArray().map(Math.abs))).toBeGreaterThan(cb * 0.9);
    // LSTM: everything U(±1/√hidden).
    const lstm = new nn.LSTM(5, 25);
    expect(Math.max(...lstm.parameters().flatMap((p) => [...p.toArray()].map(Math.abs)))).toBeLessThanOrEqual(0.2);
    // Embedding: N(0, 1).
    const emb = stats(new nn.Embedding(1000, 100).weight.toArray());
    expect(Math.abs(emb.std - 1)).toBeLessThan(0.02);
  });
});
