// Optimizer behaviour beyond the PyTorch golden trajectories (tests/golden/ops/optim.json):
// groups, skipping, zeroGrad, version counters, options PyTorch has but the golden cases do not
// exercise (maximize, centered, lrDecay, ...) with hand-derived expected values, and state dicts.

import { describe, it, expect } from 'vitest';
import { optim, tensor, ones, randn, manualSeed, Tensor } from '../index.js';

const arr = (t: Tensor) => [...t.toArray()];
const near = (got: number[], want: number[], tol = 1e-6) =>
  got.forEach((g, i) => expect(Math.abs(g - want[i])).toBeLessThanOrEqual(tol * (1 + Math.abs(want[i]))));

function param(values: number[]): Tensor { return tensor(values, { requiresGrad: true }); }

describe('Optimizer base', () => {
  it('applies per-group options and skips parameters without a gradient', () => {
    const a = param([1, 2]), b = param([3]), c = param([5]);
    const opt = new optim.SGD([{ params: [a] }, { params: [b, c], lr: 1 }], { lr: 0.1 });
    a.grad = ones([2]);
    b.grad = tensor([2]);
    opt.step();
    near(arr(a), [0.9, 1.9]);          // 1 - 0.1·1, 2 - 0.1·1
    near(arr(b), [1]);                 // 3 - 1·2
    expect(arr(c)).toEqual([5]);       // no grad: untouched, no state
    expect(opt.state.has(c)).toBe(false);
    expect(opt.paramGroups[1].lr).toBe(1);
    expect(opt.paramGroups[0].momentum).toBe(0);
  });

  it('zeroGrad drops gradients by default and zeroes them with setToNone: false', () => {
    const p = param([1, 2]);
    const opt = new optim.Adam([p]);
    p.grad = tensor([3, 4]);
    const g = p.grad;
    opt.zeroGrad({ setToNone: false });
    expect(p.grad).toBe(g);
    expect(arr(g)).toEqual([0, 0]);
    opt.zeroGrad();
    expect(p.grad).toBeNull();
  });

  it('bumps the version counter, so a graph that saved the parameter fails in backward', () => {
    const p = param([1, 2]);
    const loss = p.mul(p).sum();       // mul saves p
    const opt = new optim.SGD([p], { lr: 0.1 });
    p.grad = tensor([1, 1]);
    const v = p._version;
    opt.step();
    expect(p._version).toBe(v + 1);
    expect(() => loss.backward()).toThrow(/modified by an in-place operation/);
  });

  it('rejects bad arguments with messages that name the optimizer', () => {
    const p = param([1]);
    expect(() => new optim.SGD([p], { lr: -1 })).toThrow(/SGD: invalid learning rate lr -1/);
    expect(() => new optim.SGD([p], { lr: 0.1, nesterov: true })).toThrow(/SGD: Nesterov momentum requires a momentum > 0/);
    expect(() => new optim.Adam([p], { betas: [1, 0.9] })).toThrow(/Adam: invalid beta parameter at index 0 1/);
    expect(() => new optim.Adam([])).toThrow(/Adam: got an empty parameter list/);
    expect(() => new optim.SGD([{ params: [p] }, { params: [p] }], { lr: 0.1 })).toThrow(/more than one parameter group/);
    expect(() => new optim.SGD([p.mul(2)], { lr: 0.1 })).toThrow(/can't optimize a non-leaf tensor/);
    const q = param([1, 2]);
    q.grad = tensor([1]);
    expect(() => new optim.SGD([q], { lr: 0.1 }).step()).toThrow(/SGD: the gradient has shape \[1\] but the parameter has shape \[2\]/);
  });

  it('step(closure) evaluates the closure with grad enabled and returns its loss', () => {
    const p = param([2]);
    const opt = new optim.SGD([p], { lr: 0.25 });
    const loss = opt.step(() => {
      opt.zeroGrad();
      const l = p.mul(p).sum();
      l.backward();
      return l;
    });
    if (!(loss instanceof Tensor)) throw new Error('step(closure) should return the closure\'s loss');
    expect(loss.item()).toBe(4);
    near(arr(p), [1]);                 // 2 - 0.25·(2·2)
  });

  it('stateDict/loadStateDict continue the same trajectory', () => {
    manualSeed(3);
    const grads = [randn([4]), randn([4]), randn([4])];
    const run = (restoreAfter: number | null) => {
      const p = tensor([0.5, -1, 2, 0.25], { requiresGrad: true });
      let opt = new optim.Adam([p], { lr: 0.1, amsgrad: true });
      grads.forEach((g, s) => {
        if (s === restoreAfter) {
          const sd = opt.stateDict();
          opt = new optim.Adam([p], { lr: 0.5 });
          opt.loadStateDict(sd);       // also restores lr 0.1 and amsgrad
        }
        p.grad = g;
        opt.step();
      });
      return arr(p);
    };
    near(run(2), run(null), 0);
  });
});

describe('options without golden cases (hand-derived)', () => {
  it('SGD maximize ascends', () => {
    const p = param([1]);
    const opt = new optim.SGD([p], { lr: 0.5, maximize: true });
    p.grad = tensor([2]);
    opt.step();
    near(arr(p), [2]);                 // 1 + 0.5·2
  });

  it('Adam first step moves by lr·sign(g); AdamW first shrinks by 1 − lr·wd (default wd 1e-2)', () => {
    // Step 1: m̂ = g, v̂ = g², so the update is lr·g/(|g| + eps) ≈ lr·sign(g).
    const a = param([1]), w = param([1]);
    const adam = new optim.Adam([a], { lr: 0.1 }), adamw = new optim.AdamW([w], { lr: 0.1 });
    a.grad = tensor([2]);
    w.grad = tensor([2]);
    adam.step();
    adamw.step();
    near(arr(a), [0.9]);
    near(arr(w), [1 * (1 - 0.1 * 0.01) - 0.1]);
    expect(adamw.paramGroups[0].weightDecay).toBe(0.01);
  });

  it('RMSprop centered with momentum', () => {
    // g = 2, alpha = 0.99: square_avg = 0.01·4 = 0.04, grad_avg = 0.01·2 = 0.02,
    // avg = sqrt(0.04 − 0.02²) + eps, buf = g/avg, p = 1 − 0.01·buf.
    const p = param([1]);
    const opt = new optim.RMSprop([p], { lr: 0.01, centered: true, momentum: 0.9 });
    p.grad = tensor([2]);
    opt.step();
    const avg = Math.sqrt(0.04 - 0.0004) + 1e-8;
    near(arr(p), [1 - 0.01 * (2 / avg)]);
    const st = opt.state.get(p)!;
    expect(st.step).toBe(1);
    near(arr(st.grad_avg!), [0.02]);
    near(arr(st.momentum_buffer!), [2 / avg]);
  });

  it('Adagrad lrDecay and initialAccumulatorValue', () => {
    // Step 1: sum = 1 + 1 = 2, p = 1 − 0.1·1/sqrt(2). Step 2: clr = 0.1/(1 + 0.5), sum = 3.
    const p = param([1]);
    const opt = new optim.Adagrad([p], { lr: 0.1, lrDecay: 0.5, initialAccumulatorValue: 1 });
    expect(arr(opt.state.get(p)!.sum)).toEqual([1]);   // created by the constructor, as PyTorch
    p.grad = tensor([1]);
    opt.step();
    opt.step();
    near(arr(p), [1 - 0.1 / Math.sqrt(2) - 0.1 / 1.5 / Math.sqrt(3)]);
  });
});
