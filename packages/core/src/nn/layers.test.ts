// Layers: forward values against hand computations, train/eval behaviour (Dropout, BatchNorm
// running statistics), shapes and errors, and gradients reaching every parameter.
import { describe, expect, it } from 'vitest';
import { nn, Tensor, tensor, randn, zeros, manualSeed, noGrad, autograd } from '../index.js';

function expectClose(actual: ArrayLike<number>, expected: ArrayLike<number>, tol = 1e-5): void {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < actual.length; i++) expect(Math.abs(actual[i] - expected[i]), `element ${i}`).toBeLessThan(tol);
}

/** Sets a parameter's values (row-major). */
function setValues(t: Tensor, values: number[]): void {
  noGrad(() => t.copy_(tensor(values, { shape: t.shape })));
}

/** Backward of a generic scalar and a check that every parameter got a nonzero gradient. */
function expectGradsEverywhere(m: nn.Module, out: Tensor): void {
  out.pow(2).sum().backward();
  for (const [name, p] of m.namedParameters()) {
    expect(p.grad, name).not.toBeNull();
    expect(p.grad!.shape, name).toEqual(p.shape);
    expect(p.grad!.toArray().some((v) => v !== 0), name).toBe(true);
  }
}

describe('Linear', () => {
  it('computes x Wᵀ + b and sends gradients to weight and bias', () => {
    const fc = new nn.Linear(3, 2);
    setValues(fc.weight, [1, 2, 3, -1, 0, 1]);
    setValues(fc.bias!, [0.5, -0.5]);
    const y = fc.forward(tensor([[1, 1, 1], [2, 0, -1]]));
    // Row 1: [1+2+3+0.5, -1+0+1-0.5]; row 2: [2-3+0.5, -2-1-0.5].
    expectClose(y.toArray(), [6.5, -0.5, -0.5, -3.5]);
    expectGradsEverywhere(fc, fc.forward(randn([4, 3])));
    expect(new nn.Linear(3, 2, { bias: false }).bias).toBeNull();
    expect(() => fc.forward(randn([2, 4]))).toThrow(/does not end in inFeatures=3/);
  });
});

describe('convolutions', () => {
  it('Conv2d matches a hand-computed cross-correlation (stride 2, padding 1)', () => {
    const conv = new nn.Conv2d(1, 1, 2, { stride: 2, padding: 1 });
    setValues(conv.weight, [1, 2, 3, 4]);
    setValues(conv.bias!, [10]);
    // x = [[1,2],[3,4]] padded to 4×4; windows at (0,0),(0,2),(2,0),(2,2) of the padded plane
    // see only x[0][0]·4, x[0][1]·3, x[1][0]·2, x[1][1]·1 respectively.
    const y = conv.forward(tensor([[[[1, 2], [3, 4]]]]));
    expect(y.shape).toEqual([1, 1, 2, 2]);
    expectClose(y.toArray(), [14, 16, 16, 14]);
    expectGradsEverywhere(conv, conv.forward(randn([2, 1, 5, 5])));
  });

  it('Conv2d handles groups, unbatched input and shape errors', () => {
    const conv = new nn.Conv2d(4, 6, 3, { groups: 2, padding: 'same' });
    expect(conv.weight.shape).toEqual([6, 2, 3, 3]);
    expect(conv.forward(randn([4, 7, 5])).shape).toEqual([6, 7, 5]);
    expect(() => conv.forward(randn([1, 3, 7, 5]))).toThrow(/has 3 channels, but the layer expects inChannels=4/);
    expect(() => new nn.Conv2d(3, 6, 3, { groups: 2 })).toThrow(/inChannels \(3\) must be divisible by groups \(2\)/);
    expect(() => new nn.Conv2d(3, 6, 3, { padding: 'same', stride: 2 })).toThrow(/strided/);
  });

  it('Conv1d matches a hand computation', () => {
    const conv = new nn.Conv1d(1, 1, 3, { bias: false });
    setValues(conv.weight, [1, 0, -1]);
    const y = conv.forward(tensor([[[1, 2, 4, 8, 16]]]));
    expectClose(y.toArray(), [1 - 4, 2 - 8, 4 - 16]);
    expectGradsEverywhere(conv, conv.forward(randn([2, 1, 6])));
  });

  it('ConvTranspose2d scatters each input through the kernel (stride 2)', () => {
    const ct = new nn.ConvTranspose2d(1, 1, 2, { stride: 2 });
    expect(ct.weight.shape).toEqual([1, 1, 2, 2]);
    setValues(ct.weight, [1, 2, 3, 4]);
    setValues(ct.bias!, [0]);
    // Each input value v lands as v·kernel in its own 2×2 block.
    const y = ct.forward(tensor([[[[1, 10]]]]));
    expect(y.shape).toEqual([1, 1, 2, 4]);
    expectClose(y.toArray(), [1, 2, 10, 20, 3, 4, 30, 40]);
    const ct2 = new nn.ConvTranspose2d(2, 4, 3, { stride: 2, padding: 1, outputPadding: 1, groups: 2 });
    expect(ct2.weight.shape).toEqual([2, 2, 3, 3]);
    expect(ct2.forward(randn([1, 2, 4, 4])).shape).toEqual([1, 4, 8, 8]);
    // Sizes stride 2 allows from 4: (4-1)·2 - 2 + 2 + 1 = 7 up to 8.
    expect(ct2.forward(randn([1, 2, 4, 4]), [7, 8]).shape).toEqual([1, 4, 7, 8]);
    expect(() => ct2.forward(randn([1, 2, 4, 4]), [9, 9])).toThrow(/between 7 and 8/);
    expectGradsEverywhere(ct2, ct2.forward(randn([1, 2, 3, 3])));
  });
});

describe('Dropout', () => {
  it('is the identity in eval mode and drops/scales in training mode', () => {
    manualSeed(0);
    const d = new nn.Dropout(0.25);
    const x = randn([100, 100]);
    d.eval();
    expect(d.forward(x).toArray()).toEqual(x.toArray());
    d.train();
    const y = d.forward(x).toArray(), xs = x.toArray();
    let zerosN = 0;
    for (let i = 0; i < y.length; i++) {
      if (y[i] === 0) zerosN++;
      else expect(y[i]).toBeCloseTo(xs[i] / 0.75, 5);
    }
    expect(Math.abs(zerosN / y.length - 0.25)).toBeLessThan(0.02);
    expect(() => new nn.Dropout(1.5)).toThrow(/between 0 and 1/);
  });
});

describe('BatchNorm', () => {
  it('BatchNorm1d normalises with batch statistics and updates running stats with momentum', () => {
    const bn = new nn.BatchNorm1d(2, { momentum: 0.1 });
    setValues(bn.weight!, [2, 1]);
    setValues(bn.bias!, [0, 1]);
    // Channel 0: [1, 3] (mean 2, biased var 1, unbiased 2); channel 1: [4, 4] (mean 4, var 0).
    const x = tensor([[1, 4], [3, 4]]);
    const y = bn.forward(x);
    const s = 1 / Math.sqrt(1 + 1e-5);
    expectClose(y.toArray(), [-2 * s, 1, 2 * s, 1], 1e-4);
    expectClose(bn.runningMean!.toArray(), [0.9 * 0 + 0.1 * 2, 0.1 * 4]);
    expectClose(bn.runningVar!.toArray(), [0.9 * 1 + 0.1 * 2, 0.9 * 1 + 0.1 * 0]);
    expect(bn.numBatchesTracked!.item()).toBe(1);
    bn.forward(x);
    expect(bn.numBatchesTracked!.item()).toBe(2);
    expectClose(bn.runningMean!.toArray(), [0.9 * 0.2 + 0.2, 0.9 * 0.4 + 0.4]);
  });

  it('uses running statistics in eval mode and leaves them unchanged', () => {
    const bn = new nn.BatchNorm2d(2);
    setValues(bn.runningMean!, [1, -1]);
    setValues(bn.runningVar!, [4, 0.25]);
    bn.eval();
    const x = randn([2, 2, 3, 3]);
    const y = bn.forward(x);
    const xs = x.toArray(), ys = y.toArray();
    for (let i = 0; i < xs.length; i++) {
      const c = Math.floor(i / 9) % 2;
      const expected = c === 0 ? (xs[i] - 1) / Math.sqrt(4 + 1e-5) : (xs[i] + 1) / Math.sqrt(0.25 + 1e-5);
      expect(ys[i]).toBeCloseTo(expected, 4);
    }
    expectClose(bn.runningMean!.toArray(), [1, -1]);
    expect(bn.numBatchesTracked!.item()).toBe(0);
  });

  it('momentum null gives the cumulative average; trackRunningStats false has no buffers', () => {
    const bn = new nn.BatchNorm1d(1, { momentum: null });
    bn.forward(tensor([[1], [3]])); // mean 2
    bn.forward(tensor([[5], [7]])); // mean 6
    expectClose(bn.runningMean!.toArray(), [4]); // (2 + 6) / 2
    const nt = new nn.BatchNorm1d(3, { trackRunningStats: false, affine: false });
    expect(Object.keys(nt.stateDict())).toEqual([]);
    nt.eval();
    const y = nt.forward(tensor([[1, 2, 3], [3, 2, 1]]));
    expectClose(y.toArray(), [-1, 0, 1, 1, 0, -1], 1e-3); // batch statistics even in eval
  });

  it('checks input ranks and channels; gradients reach weight and bias', () => {
    expect(() => new nn.BatchNorm2d(3).forward(randn([2, 3]))).toThrow(/expected 4D input \(got 2D input/);
    expect(() => new nn.BatchNorm1d(3).forward(randn([2, 4]))).toThrow(/has 4 channels \(dim 1\), expected numFeatures=3/);
    const bn = new nn.BatchNorm1d(3);
    nn.init.uniform_(bn.weight!, 0.5, 1.5);
    expectGradsEverywhere(bn, bn.forward(randn([5, 3, 2])).mul(randn([5, 3, 2])));
  });
});

describe('LayerNorm and GroupNorm', () => {
  it('LayerNorm normalises over the trailing dims', () => {
    const ln = new nn.LayerNorm(4);
    setValues(ln.weight!, [1, 2, 1, 1]);
    setValues(ln.bias!, [0, 0, 0, 1]);
    const y = ln.forward(tensor([[1, 2, 3, 4]]));
    // mean 2.5, biased var 1.25.
    const s = Math.sqrt(1.25 + 1e-5);
    expectClose(y.toArray(), [-1.5 / s, 2 * (-0.5 / s), 0.5 / s, 1.5 / s + 1], 1e-5);
    const ln2 = new nn.LayerNorm([2, 3], { elementwiseAffine: false });
    expect(ln2.parameters()).toEqual([]);
    expect(ln2.forward(randn([4, 2, 3])).shape).toEqual([4, 2, 3]);
    const ln3 = new nn.LayerNorm(3);
    expectGradsEverywhere(ln3, ln3.forward(randn([2, 3])).mul(randn([2, 3])));
  });

  it('GroupNorm normalises each group of channels', () => {
    const gn = new nn.GroupNorm(2, 4, { affine: false });
    // Group 0 = channels 0,1 = [0, 2] (mean 1, var 1); group 1 = channels 2,3 = [5, 5] (var 0).
    const y = gn.forward(tensor([[[0], [2], [5], [5]]]));
    const s = Math.sqrt(1 + 1e-5);
    expectClose(y.toArray(), [-1 / s, 1 / s, 0, 0], 1e-5);
    expect(() => new nn.GroupNorm(3, 4)).toThrow(/divisible by numGroups/);
    const gn2 = new nn.GroupNorm(2, 4);
    expectGradsEverywhere(gn2, gn2.forward(randn([2, 4, 3])).mul(randn([2, 4, 3])));
  });
});

describe('activations, pooling and reshaping layers', () => {
  it('activation layers compute their functions', () => {
    const x = tensor([-2, -0.5, 0, 1.5]);
    const xs = [-2, -0.5, 0, 1.5];
    expectClose(new nn.ReLU().forward(x).toArray(), xs.map((v) => Math.max(v, 0)));
    expectClose(new nn.LeakyReLU(0.2).forward(x).toArray(), xs.map((v) => (v > 0 ? v : 0.2 * v)));
    expectClose(new nn.Sigmoid().forward(x).toArray(), xs.map((v) => 1 / (1 + Math.exp(-v))));
    expectClose(new nn.Tanh().forward(x).toArray(), xs.map(Math.tanh));
    expectClose(new nn.SiLU().forward(x).toArray(), xs.map((v) => v / (1 + Math.exp(-v))));
    // GELU tanh form: 0.5·x·(1 + tanh(√(2/π)(x + 0.044715x³))).
    expectClose(new nn.GELU({ approximate: 'tanh' }).forward(x).toArray(),
      xs.map((v) => 0.5 * v * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (v + 0.044715 * v ** 3)))), 1e-5);
    const sm = new nn.Softmax(1).forward(tensor([[1, 2, 3]])).toArray();
    const z = Math.exp(1) + Math.exp(2) + Math.exp(3);
    expectClose(sm, [1, 2, 3].map((v) => Math.exp(v) / z));
    expectClose(new nn.LogSoftmax(-1).forward(tensor([1, 2, 3])).toArray(), [1, 2, 3].map((v) => v - Math.log(z)));
    const r = tensor([-1, 2]);
    expect(new nn.ReLU({ inplace: true }).forward(r)).toBe(r);
    expect([...r.toArray()]).toEqual([0, 2]);
    expect(new nn.ReLU({ inplace: true }).toString()).toBe('ReLU(inplace=True)');
    expect(new nn.GELU().toString()).toBe("GELU(approximate='none')");
  });

  it('pooling layers compute max/mean windows', () => {
    const x = tensor([[[[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12], [13, 14, 15, 16]]]]);
    expect([...new nn.MaxPool2d(2).forward(x).toArray()]).toEqual([6, 8, 14, 16]);
    expectClose(new nn.AvgPool2d(2).forward(x).toArray(), [3.5, 5.5, 11.5, 13.5]);
    expectClose(new nn.AdaptiveAvgPool2d(1).forward(x).toArray(), [8.5]);
    const [v, idx] = new nn.MaxPool2d(2, { returnIndices: true }).forward(x);
    expect([...v.toArray()]).toEqual([6, 8, 14, 16]);
    expect([...idx.toArray()]).toEqual([5, 7, 13, 15]);
    expect(new nn.AdaptiveAvgPool2d([2, null]).toString()).toBe('AdaptiveAvgPool2d(output_size=(2, None))');
  });

  it('Flatten, Unflatten and Identity reshape or pass through', () => {
    const x = randn([2, 3, 4, 5]);
    expect(new nn.Flatten().forward(x).shape).toEqual([2, 60]);
    expect(new nn.Flatten(0, 1).forward(x).shape).toEqual([6, 4, 5]);
    expect(new nn.Unflatten(1, [3, 20]).forward(new nn.Flatten().forward(x)).shape).toEqual([2, 3, 20]);
    expect(new nn.Unflatten(-1, [5, -1]).forward(x).shape).toEqual([2, 3, 4, 5, 1]);
    expect(new nn.Identity(1, 'ignored').forward(x)).toBe(x);
  });
});

describe('Embedding', () => {
  it('looks up rows; the padding row starts at zero and gets no gradient', () => {
    manualSeed(9);
    const emb = new nn.Embedding(5, 3, { paddingIdx: 0 });
    expect([...emb.weight.toArray().slice(0, 3)]).toEqual([0, 0, 0]);
    const idx = tensor([[1, 0], [4, 1]], { dtype: 'int32' });
    const y = emb.forward(idx);
    expect(y.shape).toEqual([2, 2, 3]);
    const w = emb.weight.toArray();
    expect([...y.toArray().slice(0, 3)]).toEqual([...w.slice(3, 6)]);
    y.sum().backward();
    const g = emb.weight.grad!.toArray();
    expect([...g.slice(0, 3)]).toEqual([0, 0, 0]); // padding row
    expect([...g.slice(3, 6)]).toEqual([2, 2, 2]); // index 1 used twice
    expect([...g.slice(6, 9)]).toEqual([0, 0, 0]); // unused
  });

  it('fromPretrained freezes by default', () => {
    const e = nn.Embedding.fromPretrained(tensor([[1, 2], [3, 4]]));
    expect(e.weight.requiresGrad).toBe(false);
    expect(e.parameters().length).toBe(1);
    expect([...e.forward(tensor([1], { dtype: 'int32' })).toArray()]).toEqual([3, 4]);
    expect(nn.Embedding.fromPretrained(zeros([2, 2]), { freeze: false }).weight.requiresGrad).toBe(true);
  });
});

describe('a seed-style CNN end to end', () => {
  it('trains one step: every parameter gets a gradient; eval is deterministic', () => {
    manualSeed(1);
    const model = new nn.Sequential(
      new nn.Conv2d(3, 4, 3, { padding: 1 }), new nn.BatchNorm2d(4), new nn.ReLU(), new nn.MaxPool2d(2),
      new nn.Flatten(), new nn.Dropout(0.5), new nn.Linear(4 * 4 * 4, 10));
    const x = randn([2, 3, 8, 8]);
    expectGradsEverywhere(model, model.forward(x));
    model.eval();
    expect(model.forward(x).toArray()).toEqual(model.forward(x).toArray());
  });
});

describe('higher-order gradients through layers', () => {
  it('a gradient penalty through Linear → Tanh → Linear reaches the weights (createGraph)', () => {
    manualSeed(2);
    const net = new nn.Sequential(new nn.Linear(3, 4), new nn.Tanh(), new nn.Linear(4, 1));
    const x = randn([5, 3], { requiresGrad: true });
    const [gx] = autograd.grad(net.forward(x).sum(), [x], { createGraph: true });
    // d/dW of Σ (∂y/∂x)²: nonzero for every weight (biases of the last layer do not enter ∂y/∂x).
    gx!.pow(2).sum().backward();
    for (const [name, p] of net.namedParameters()) {
      if (name === '2.bias') expect(p.grad === null || p.grad.toArray().every((v) => v === 0), name).toBe(true);
      else expect(p.grad?.toArray().some((v) => v !== 0), name).toBe(true);
    }
  });
});
