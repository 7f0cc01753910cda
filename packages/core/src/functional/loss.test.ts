// Loss functions and modules beyond the PyTorch golden cases (tests/golden/ops/loss.json): edge
// cases (ignored targets, exact 0/1 probabilities, zero targets in kl_div, logits at 0), K-dim
// weights, errors, and the loss modules. Expected values are derived by hand in the comments.

import { describe, it, expect } from 'vitest';
import { autograd, F, nn, randn, manualSeed, tensor, type Tensor } from '../index.js';

const arr = (t: Tensor | null) => [...t!.toArray()];
const near = (got: number[], want: number[], tol = 1e-6) => {
  expect(got.length).toBe(want.length);
  got.forEach((g, i) => expect(Math.abs(g - want[i])).toBeLessThanOrEqual(tol * (1 + Math.abs(want[i]))));
};
const LN2 = Math.log(2);

describe('class-index losses', () => {
  // log-probabilities, targets [1, 0, ignored], class weights [2, 3]:
  // terms −w[t]·logp[t] = 3·2 = 6 and 2·3 = 6, the ignored row 0; summed weights 3 + 2 = 5.
  const logp = () => tensor([[-1, -2], [-3, -4], [-5, -6]], { requiresGrad: true });
  const target = tensor([1, 0, -100], { dtype: 'int32' });
  const weight = tensor([2, 3]);

  it('nllLoss weights targets and leaves ignored ones out of the mean', () => {
    near(arr(F.nllLoss(logp(), target, { weight, reduction: 'none' })), [6, 6, 0]);
    near(arr(F.nllLoss(logp(), target, { weight, reduction: 'sum' })), [12]);
    near(arr(F.nllLoss(logp(), target, { weight })), [12 / 5]);
    // Gradient of the mean: −w[t]/5 at the target entries, 0 elsewhere and on the ignored row.
    const x = logp();
    F.nllLoss(x, target, { weight }).backward();
    near(arr(x.grad), [0, -3 / 5, -2 / 5, 0, 0, 0]);
  });

  it('an ignoreIndex inside the class range also works', () => {
    // Targets [1, 0, 1] with ignoreIndex 1: only row 1 counts → −logp[1][0] = 3.
    near(arr(F.nllLoss(logp(), tensor([1, 0, 1], { dtype: 'int32' }), { ignoreIndex: 1 })), [3]);
  });

  it('the mean over only ignored targets is NaN, as in PyTorch', () => {
    expect(Number.isNaN(F.crossEntropy(randn([2, 3]), tensor([-100, -100], { dtype: 'int32' })).item())).toBe(true);
  });

  it('crossEntropy of a 1-D input with a 0-d target', () => {
    // Two equal logits: −log softmax = log 2.
    near(arr(F.crossEntropy(tensor([0, 0]), tensor(1, { dtype: 'int32' }))), [LN2]);
  });

  it('label smoothing with class weights and ignored targets follows PyTorch formula', () => {
    // Check against the formula written out with loops: (1−ε)·nll + ε/C·Σ_i w-mean of −Σ_c w_c·logp_ic.
    manualSeed(4);
    const x = randn([4, 3]), t = tensor([2, -100, 0, 1], { dtype: 'int32' }), w = tensor([0.5, 2, 1]);
    const eps = 0.2, C = 3, lp = x.logSoftmax(1).toArray(), wd = w.toArray(), td = t.toArray();
    let nll = 0, smooth = 0, wsum = 0;
    for (let i = 0; i < 4; i++) {
      if (td[i] === -100) continue;
      nll += -wd[td[i]] * lp[i * C + td[i]];
      for (let c = 0; c < C; c++) smooth += -wd[c] * lp[i * C + c];
      wsum += wd[td[i]];
    }
    const want = (1 - eps) * nll / wsum + (eps / C) * smooth / wsum;
    near(arr(F.crossEntropy(x, t, { weight: w, labelSmoothing: eps })), [want], 1e-5);
  });

  it('K-dim targets use the class weights along dim 1', () => {
    // input [1, 2, 2]: position 0 has logits (0, 0) → log 2 for either class; position 1 has
    // (0, log 3) → target 1 gives −log(3/4). Weights [1, 3]: (1·log 2 + 3·log(4/3)) / (1 + 3).
    const x = tensor([[[0, 0], [0, Math.log(3)]]]);
    const t = tensor([[0, 1]], { dtype: 'int32' });
    near(arr(F.crossEntropy(x, t, { weight: tensor([1, 3]) })), [(LN2 + 3 * Math.log(4 / 3)) / 4], 1e-5);
  });

  it('errors name the loss and the offending value or shape', () => {
    const x = randn([2, 3]);
    expect(() => F.crossEntropy(x, tensor([0, 3], { dtype: 'int32' }))).toThrow(/crossEntropy: target 3 \(element 1\) is out of bounds for 3 classes/);
    expect(() => F.nllLoss(x, tensor([0, 1, 2], { dtype: 'int32' }))).toThrow(/nllLoss: for input of shape \[2,3\] .* must have shape \[2\], got \[3\]/);
    expect(() => F.crossEntropy(x, randn([2, 4]))).toThrow(/float \(probability\) targets must have the input's shape/);
    expect(() => F.nllLoss(x, tensor([0, 1], { dtype: 'int32' }), { weight: tensor([1, 2]) })).toThrow(/weight must have shape \[3\]/);
    expect(() => F.mseLoss(x, randn([3, 2]))).toThrow(/mseLoss: input \[2,3\] and target \[3,2\] must have the same shape/);
    expect(() => F.mseLoss(x, x, { reduction: 'avg' as 'mean' })).toThrow(/reduction must be 'none', 'mean' or 'sum', got 'avg'/);
  });
});

describe('binary and distribution losses', () => {
  it('binaryCrossEntropyWithLogits at a logit of exactly 0 has the exact gradient', () => {
    // x = 0, posWeight 3: t = 1 → loss 3·log 2, d/dx = −3·sigmoid(0) = −1.5;
    // t = 0 → loss log 2, d/dx = 1 − sigmoid(0) = 0.5.
    const x = tensor([0, 0], { requiresGrad: true });
    const l = F.binaryCrossEntropyWithLogits(x, tensor([1, 0]), { posWeight: tensor([3]), reduction: 'none' });
    near(arr(l), [3 * LN2, LN2]);
    l.sum().backward();
    near(arr(x.grad), [-1.5, 0.5]);
  });

  it('binaryCrossEntropyWithLogits stays finite for large logits', () => {
    // x = ±100: the loss is 0 (confident and right) or 100 (confident and wrong).
    near(arr(F.binaryCrossEntropyWithLogits(tensor([100, -100, 100]), tensor([1, 0, 0]), { reduction: 'none' })), [0, 0, 100]);
  });

  it('binaryCrossEntropy clamps each log at −100 (probabilities of exactly 0 and 1)', () => {
    // p = 0, t = 1 → −max(log 0, −100) = 100; p = 1, t = 1 → 0; p = 0, t = 0 → 0.
    near(arr(F.binaryCrossEntropy(tensor([0, 1, 0]), tensor([1, 1, 0]), { reduction: 'none' })), [100, 0, 0]);
    expect(() => F.binaryCrossEntropy(tensor([1.5]), tensor([1]))).toThrow(/between 0 and 1, element 0 is 1.5/);
  });

  it('klDiv treats zero targets as contributing 0 (value and gradient)', () => {
    // t = [0, 1], input log(0.5) both: only the second term, 1·(log 1 − log 0.5) = log 2; N = 1.
    const x = tensor([[Math.log(0.5), Math.log(0.5)]], { requiresGrad: true });
    const l = F.klDiv(x, tensor([[0, 1]]), { reduction: 'batchmean' });
    near(arr(l), [LN2], 1e-5);
    l.backward();
    near(arr(x.grad), [0, -1]);       // d/dx = −t/N
    // logTarget: e^t·(t − x) with t = log 1 = 0 → −x.
    near(arr(F.klDiv(x, tensor([[0, 0]]), { logTarget: true, reduction: 'sum' })), [2 * LN2], 1e-5);
  });

  it('huberLoss(delta) equals delta · smoothL1Loss(beta = delta)', () => {
    manualSeed(5);
    const a = randn([3, 4]).mul(2), b = randn([3, 4]);
    const h = F.huberLoss(a, b, { delta: 0.7, reduction: 'none' }).toArray();
    const s = F.smoothL1Loss(a, b, { beta: 0.7, reduction: 'none' }).toArray();
    near([...h], [...s].map((v) => 0.7 * v), 1e-5);
  });
});

describe('loss modules', () => {
  it('compute the functional form with their options; weights are buffers', () => {
    manualSeed(6);
    const x = randn([4, 3]), t = tensor([0, 2, 1, 2], { dtype: 'int32' }), w = tensor([1, 2, 3]);
    const ce = new nn.CrossEntropyLoss({ weight: w, labelSmoothing: 0.1, reduction: 'sum' });
    near(arr(ce.forward(x, t)), arr(F.crossEntropy(x, t, { weight: w, labelSmoothing: 0.1, reduction: 'sum' })));
    expect(Object.keys(ce.stateDict())).toEqual(['weight']);
    expect(ce.parameters()).toEqual([]);
    expect(Object.keys(new nn.NLLLoss().stateDict())).toEqual([]);
    const y = randn([4, 3]), q = y.sigmoid();
    const bce = new nn.BCEWithLogitsLoss({ posWeight: tensor([1, 2, 3]) });
    expect(Object.keys(bce.stateDict())).toEqual(['pos_weight']);
    near(arr(bce.forward(x, q)), arr(F.binaryCrossEntropyWithLogits(x, q, { posWeight: tensor([1, 2, 3]) })));
    near(arr(new nn.MSELoss({ reduction: 'sum' }).forward(x, y)), arr(F.mseLoss(x, y, { reduction: 'sum' })));
    near(arr(new nn.L1Loss().forward(x, y)), arr(F.l1Loss(x, y)));
    near(arr(new nn.SmoothL1Loss({ beta: 0.5 }).forward(x, y)), arr(F.smoothL1Loss(x, y, { beta: 0.5 })));
    near(arr(new nn.HuberLoss({ delta: 2 }).forward(x, y)), arr(F.huberLoss(x, y, { delta: 2 })));
    const p = x.sigmoid();
    near(arr(new nn.BCELoss().forward(p, q)), arr(F.binaryCrossEntropy(p, q)));
    near(arr(new nn.KLDivLoss({ reduction: 'batchmean' }).forward(x.logSoftmax(1), q)), arr(F.klDiv(x.logSoftmax(1), q, { reduction: 'batchmean' })));
  });

  it('train a tiny classifier: the loss goes down', () => {
    manualSeed(7);
    const x = randn([16, 4]), t = tensor(Array.from({ length: 16 }, (_, i) => i % 3), { dtype: 'int32' });
    const W = randn([3, 4], { requiresGrad: true });
    const lossFn = new nn.CrossEntropyLoss();
    const first = lossFn.forward(x.matmul(W.t()), t).item();
    let last = first;
    for (let s = 0; s < 20; s++) {
      const l = lossFn.forward(x.matmul(W.t()), t);
      const [g] = autograd.grad(l, W);
      autograd.noGrad(() => W.sub_(g!.mul(0.5)));
      last = l.item();
    }
    expect(last).toBeLessThan(first);
  });
});
