// nn.utils (clipping, parameter vectors) against hand-computed values, and the layers of
// activation-extra/layers-extra/transformer where PyTorch golden data cannot pin behaviour
// (random Dropout2d masks, copies inside stacks, containers, error messages).
import { describe, expect, it } from 'vitest';
import { nn, tensor, ones, zeros, randn, manualSeed, type Tensor } from '../index.js';

const arr = (t: Tensor) => Array.from(t.toArray() as Float32Array);

describe('nn.utils', () => {
  it('clipGradNorm_ scales by maxNorm / (total + 1e-6) when the total 2-norm is larger, returns the total', () => {
    const a = zeros([2]).requiresGrad_(true), b = zeros([1]).requiresGrad_(true), c = zeros([1]).requiresGrad_(true);
    a.grad = tensor([3, 0]);
    b.grad = tensor([4]);
    const total = nn.utils.clipGradNorm_([a, b, c], 1);
    expect(total.item()).toBeCloseTo(5, 6);
    const k = 1 / (5 + 1e-6);
    expect(arr(a.grad)[0]).toBeCloseTo(3 * k, 6);
    expect(arr(b.grad)[0]).toBeCloseTo(4 * k, 6);
    // Below the limit nothing changes.
    nn.utils.clipGradNorm_([a, b], 10);
    expect(arr(b.grad)[0]).toBeCloseTo(4 * k, 6);
  });

  it('clipGradNorm_ with the infinity norm and with p = 1', () => {
    const a = zeros([3]).requiresGrad_(true);
    a.grad = tensor([1, -6, 2]);
    expect(nn.utils.clipGradNorm_(a, 3, { normType: Infinity }).item()).toBe(6);
    expect(arr(a.grad)[1]).toBeCloseTo(-3, 5);
    a.grad = tensor([1, -6, 2]);
    expect(nn.utils.clipGradNorm_(a, 4.5, { normType: 1 }).item()).toBe(9);
    expect(arr(a.grad)).toEqual(arr(tensor([1, -6, 2]).mul(4.5 / (9 + 1e-6))));
  });

  it('clipGradNorm_ refuses a non-finite norm when asked', () => {
    const a = zeros([1]).requiresGrad_(true);
    a.grad = tensor([Infinity]);
    expect(() => nn.utils.clipGradNorm_([a], 1, { errorIfNonfinite: true })).toThrow(/total norm of order 2 .* is Infinity/);
  });

  it('clipGradValue_ clamps every entry', () => {
    const a = zeros([4]).requiresGrad_(true);
    a.grad = tensor([-3, -0.5, 0.2, 7]);
    nn.utils.clipGradValue_([a], 1);
    expect(arr(a.grad)).toEqual([-1, -0.5, Math.fround(0.2), 1]);
  });

  it('parametersToVector and vectorToParameters round-trip a model', () => {
    manualSeed(1);
    const m = new nn.Sequential(new nn.Linear(3, 2), new nn.Linear(2, 1));
    const v = nn.utils.parametersToVector(m.parameters());
    expect(v.shape).toEqual([3 * 2 + 2 + 2 + 1]);
    const w0 = m.parameters()[0];
    nn.utils.vectorToParameters(v.mul(2), m.parameters());
    expect(arr(m.parameters()[0])).toEqual(arr(v.slice(0, 0, 6).mul(2)));
    expect(m.parameters()[0]).toBe(w0);
    expect(() => nn.utils.vectorToParameters(zeros([3]), m.parameters())).toThrow(/3 entries, the parameters 11/);
  });
});

describe('layers without golden data', () => {
  it('Dropout2d zeroes whole channels and scales the rest; identity in eval', () => {
    manualSeed(3);
    const d = new nn.Dropout2d(0.5);
    const x = ones([4, 16, 3, 3]);
    const y = d.forward(x);
    const v = arr(y);
    let dropped = 0;
    for (let p = 0; p < 64; p++) {
      const plane = v.slice(p * 9, p * 9 + 9);
      expect(plane.every((e) => e === plane[0])).toBe(true);
      expect([0, 2]).toContain(plane[0]);
      if (plane[0] === 0) dropped++;
    }
    expect(dropped).toBeGreaterThan(16);
    expect(dropped).toBeLessThan(48);
    d.eval();
    expect(d.forward(x)).toBe(x);
    expect(() => new nn.Dropout2d(1.5)).toThrow(/between 0 and 1/);
  });

  it('TransformerEncoder layers start as copies of the given layer (as deepcopy), and train separately', () => {
    const layer = new nn.TransformerEncoderLayer(8, 2, { dimFeedforward: 16 });
    const enc = new nn.TransformerEncoder(layer, 2);
    const sd = enc.stateDict();
    expect(arr(sd['layers.0.linear1.weight'])).toEqual(arr(layer.linear1.weight));
    expect(arr(sd['layers.1.linear1.weight'])).toEqual(arr(layer.linear1.weight));
    expect(enc.layers.get(0)).not.toBe(layer);
    expect((enc.layers.get(0) as nn.TransformerEncoderLayer).linear1.weight).not.toBe((enc.layers.get(1) as nn.TransformerEncoderLayer).linear1.weight);
  });

  it('TransformerEncoderLayer isCausal equals an explicit causal mask; gradients reach every parameter', () => {
    manualSeed(5);
    const layer = new nn.TransformerEncoderLayer(8, 2, { dimFeedforward: 16, dropout: 0, batchFirst: true });
    const x = randn([2, 5, 8]);
    const a = layer.forward(x, { isCausal: true });
    const b = layer.forward(x, { srcMask: nn.generateSquareSubsequentMask(5) });
    expect(arr(a)).toEqual(arr(b));
    a.sum().backward();
    for (const [k, p] of layer.namedParameters()) expect(p.grad, k).toBeTruthy();
  });

  it('ParameterList / ParameterDict hold parameters and refuse bad indices and keys', () => {
    const pl = new nn.ParameterList([ones([2])]);
    pl.append(zeros([3]));
    expect(pl.length).toBe(2);
    expect(pl.get(-1).shape).toEqual([3]);
    expect(pl.parameters().length).toBe(2);
    expect(() => pl.get(2)).toThrow(/out of range for 2 parameters/);
    const pd = new nn.ParameterDict({ b: ones([1]), a: ones([2]) });
    expect(pd.keys()).toEqual(['b', 'a']);
    expect(pd.get('a').requiresGrad).toBe(true);
    expect(() => pd.get('c')).toThrow(/no parameter under key 'c'/);
  });

  it('bad arguments get errors naming the layer', () => {
    expect(() => new nn.Upsample()).toThrow(/exactly one of size and scaleFactor/);
    expect(() => new nn.Upsample({ scaleFactor: 2, mode: 'nearest', alignCorners: true })).toThrow(/alignCorners only has an effect/);
    expect(() => new nn.Upsample({ scaleFactor: 2, mode: 'bilinear' }).forward(ones([1, 1, 4]))).toThrow(/mode 'bilinear' expects a 4-D input/);
    expect(() => new nn.ZeroPad2d([1, 2, 3])).toThrow(/\[left, right, top, bottom\]/);
    expect(() => new nn.EmbeddingBag(5, 2, { mode: 'mean' }).forward(tensor([1, 2], { dtype: 'int32' }), tensor([0], { dtype: 'int32' }), ones([2])))
      .toThrow(/perSampleWeights is only supported for mode 'sum'/);
    expect(() => new nn.GRUCell(4, 3).forward(ones([2, 5]))).toThrow(/GRUCell: expected input \[batch, 4\]/);
    expect(() => new nn.TransformerEncoderLayer(8, 3)).toThrow(/divisible by numHeads/);
    expect(() => new nn.RNN(4, 5, { nonlinearity: 'gelu' as 'tanh' })).toThrow(/nonlinearity/);
  });

  it('EmbeddingBag: an empty bag gives zeros; paddingIdx rows are left out', () => {
    const bag = new nn.EmbeddingBag(5, 2, { mode: 'mean', paddingIdx: 0 });
    const out = bag.forward(tensor([0, 1, 0, 2], { dtype: 'int32' }), tensor([0, 2, 2], { dtype: 'int32' }));
    expect(out.shape).toEqual([3, 2]);
    const w = arr(bag.weight);
    expect(arr(out).slice(0, 2)).toEqual([w[2], w[3]]); // bag [0, 1] → row 1 only
    expect(arr(out).slice(2, 4)).toEqual([0, 0]);
  });
});

describe('Dropout2d on 3-D input', () => {
  it('drops per (sample, channel) of [N, C, L], as PyTorch 1.13', () => {
    manualSeed(9);
    const y = arr(new nn.Dropout2d(0.5).forward(ones([8, 4, 5])));
    for (let p = 0; p < 32; p++) {
      const row = y.slice(p * 5, p * 5 + 5);
      expect(row.every((e) => e === row[0])).toBe(true);
    }
  });
});
