// utils.checkpoint: same gradients as the plain run (through every path a gradient can take),
// fewer tensors saved, the same random draws on recomputation, and loud in-place errors.

import { describe, it, expect } from 'vitest';
import { autograd, F, manualSeed, randn, tensor, utils, type Tensor } from '../index.js';

function close(a: Tensor | null, b: Tensor | null, tol = 1e-5): void {
  expect(a).not.toBeNull();
  expect(b).not.toBeNull();
  expect(a!.shape).toEqual(b!.shape);
  const x = a!.toArray(), y = b!.toArray();
  for (let i = 0; i < x.length; i++) expect(Math.abs(x[i] - y[i])).toBeLessThanOrEqual(tol * (1 + Math.abs(y[i])));
}

/** A small tanh MLP with leaf parameters, built from a fixed seed. */
function mlp(seed: number) {
  manualSeed(seed);
  const W1 = randn([6, 4], { requiresGrad: true }), b1 = randn([6], { requiresGrad: true });
  const W2 = randn([5, 6], { requiresGrad: true }), b2 = randn([5], { requiresGrad: true });
  const block = (x: Tensor) => x.matmul(W1.t()).add(b1).tanh().matmul(W2.t()).add(b2).tanh();
  return { params: [W1, b1, W2, b2], block };
}

describe('utils.checkpoint', () => {
  it('gives the plain gradients while saving fewer tensors', () => {
    manualSeed(1);
    const W = randn([4, 4], { requiresGrad: true }), b = randn([4], { requiresGrad: true });
    const deep = (x: Tensor) => { for (let i = 0; i < 4; i++) x = x.matmul(W.t()).add(b).tanh(); return x; };
    const x = randn([3, 4], { requiresGrad: true }), G = randn([3, 4]);
    const plain = deep(x);
    const ck = utils.checkpoint(deep, x);
    close(ck, plain);
    // The plain graph keeps every layer's activations; the checkpointed one keeps only what the
    // recomputation needs: the input x and the parameters W and b.
    expect(autograd.savedTensorCount(ck)).toBe(3);
    expect(autograd.savedTensorCount(plain)).toBeGreaterThanOrEqual(9);
    const want = autograd.grad(plain.mul(G).sum(), [x, W, b]);
    const got = autograd.grad(ck.mul(G).sum(), [x, W, b]);
    got.forEach((g, i) => close(g, want[i]));
  });

  it('passes the same tensor given twice once', () => {
    const { params, block } = mlp(9);
    const x = randn([2, 4], { requiresGrad: true });
    const f = (a: Tensor, c: Tensor) => block(a).add(block(c));
    const want = autograd.grad(f(x, x).sum(), [x, ...params]);
    const got = autograd.grad(utils.checkpoint(f, x, x).sum(), [x, ...params]);
    got.forEach((g, i) => close(g, want[i]));
  });

  it('detects an in-place change of a parameter it used before backward', () => {
    const { params, block } = mlp(10);
    const y = utils.checkpoint(block, randn([2, 4]));
    autograd.noGrad(() => params[0].mul_(2));
    expect(() => y.sum().backward()).toThrow(/modified by an in-place operation.*checkpoint/);
  });

  it('accumulates parameter gradients through backward() once, running leaf hooks once', () => {
    const { params, block } = mlp(2);
    const x = randn([2, 4], { requiresGrad: true });
    block(x).sum().backward();
    const want = [x, ...params].map((t) => t.grad!.clone());
    [x, ...params].forEach((t) => t.zeroGrad());
    let calls = 0;
    params[0].registerHook(() => { calls++; });
    utils.checkpoint(block, x).sum().backward();
    expect(calls).toBe(1);
    [x, ...params].forEach((t, i) => close(t.grad, want[i]));
  });

  it('handles an outside activation captured by the function (not an argument)', () => {
    const { block } = mlp(3);
    const a = randn([2, 4], { requiresGrad: true });
    const h = a.mul(2).sin();                 // a non-leaf used inside the checkpointed closure
    const z = randn([2, 4], { requiresGrad: true });
    const f = (t: Tensor) => block(t.add(h));
    const [ga, gz] = autograd.grad(f(z).sum(), [a, z], { retainGraph: true }); // h's graph is used again below
    const [ca, cz] = autograd.grad(utils.checkpoint(f, z).sum(), [a, z]);
    close(ca, ga);
    close(cz, gz);
  });

  it('supports createGraph (second derivatives through the recomputation)', () => {
    const { block } = mlp(4);
    const x = randn([2, 4], { requiresGrad: true });
    const [gPlain] = autograd.grad(block(x).sum(), [x], { createGraph: true });
    const [g2Plain] = autograd.grad(gPlain!.pow(2).sum(), [x]);
    const [gCk] = autograd.grad(utils.checkpoint(block, x).sum(), [x], { createGraph: true });
    const [g2Ck] = autograd.grad(gCk!.pow(2).sum(), [x]);
    close(gCk, gPlain);
    close(g2Ck, g2Plain);
  });

  it('replays the random draws (dropout masks match the forward run)', () => {
    const w = randn([8, 8], { requiresGrad: true });
    const x = randn([4, 8], { requiresGrad: true });
    const f = (t: Tensor) => F.dropout(t.matmul(w), { p: 0.5, training: true }).tanh();
    manualSeed(7);
    const plain = f(x);
    const [gw] = autograd.grad(plain.sum(), [w]);
    manualSeed(7);
    const ck = utils.checkpoint(f, x);
    randn([100]);                             // advance the generator between forward and backward
    const [cw] = autograd.grad(ck.sum(), [w]);
    close(ck, plain);
    close(cw, gw);
  });

  it('returns arrays of outputs and passes non-tensor arguments through', () => {
    const { block } = mlp(5);
    const x = randn([2, 4], { requiresGrad: true });
    const f = (t: Tensor, k: number): Tensor[] => [block(t).mul(k), block(t).sum(1)];
    const [p0, p1] = f(x, 3);
    const [c0, c1] = utils.checkpoint(f, x, 3);
    const [gp] = autograd.grad(p0.sum().add(p1.mul(p1).sum()), [x]);
    const [gc] = autograd.grad(c0.sum().add(c1.mul(c1).sum()), [x]);
    close(gc, gp);
  });

  it('does not attach history to an argument returned unchanged', () => {
    const x = randn([3], { requiresGrad: true });
    const out = utils.checkpoint((t: Tensor) => t, x);
    expect(x.isLeaf).toBe(true);
    expect(out.isLeaf).toBe(false);
  });

  it('detects an in-place change of its input before backward', () => {
    const { block } = mlp(6);
    const x0 = randn([2, 4], { requiresGrad: true });
    const x = x0.mul(1);
    const y = utils.checkpoint(block, x);
    x.mul_(2);
    expect(() => y.sum().backward()).toThrow(/modified by an in-place operation.*checkpoint/);
  });

  it('just runs the function under noGrad', () => {
    const x = tensor([1, 2, 3], { requiresGrad: true });
    const y = autograd.noGrad(() => utils.checkpoint((t: Tensor) => t.mul(2), x));
    expect(y.requiresGrad).toBe(false);
    expect([...y.toArray()]).toEqual([2, 4, 6]);
  });

  it('checkpointSequential equals running the layers in order', () => {
    const { params, block } = mlp(8);
    const layers = [(t: Tensor) => t.mul(0.5), block, (t: Tensor) => t.sin(), (t: Tensor) => t.exp(), (t: Tensor) => t.sum(1)];
    const x = randn([3, 4], { requiresGrad: true });
    const plain = layers.reduce((t, l) => l(t), x);
    const ck = utils.checkpointSequential(layers, 2, x);
    close(ck, plain);
    expect(autograd.savedTensorCount(ck)).toBeLessThan(autograd.savedTensorCount(plain));
    const want = autograd.grad(plain.sum(), [x, ...params]);
    const got = autograd.grad(ck.sum(), [x, ...params]);
    got.forEach((g, i) => close(g, want[i]));
    expect(() => utils.checkpointSequential(layers, 0, x)).toThrow(/segments must be a positive integer/);
  });
});
