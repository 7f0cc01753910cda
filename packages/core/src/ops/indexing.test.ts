// Unit tests of the index-based ops beyond the PyTorch golden cases: range errors, accumulation
// of repeated indices, scatter_add with a src larger than its index, masked_select broadcasting
// and its symbolic length, batched tril/triu with far diagonals, F.embedding's padding rows,
// and double backward through the index_select/index_add and gather/scatter_add pairs.

import { describe, it, expect } from 'vitest';
import { getOp } from '@kiln/ir-spec';
import { autograd, F, tensor, zeros, type Tensor } from '../index.js';

const vals = (t: Tensor): number[] => [...t.toArray()];
const int = (v: number[], shape?: number[]): Tensor => tensor(v, { dtype: 'int32', shape });

describe('index_select', () => {
  it('picks slices, accumulates repeated indices in the gradient and names bad indices', () => {
    const x = tensor([[1, 2], [3, 4], [5, 6]], { requiresGrad: true });
    const y = x.indexSelect(0, int([2, 0, 2]));
    expect(vals(y)).toEqual([5, 6, 1, 2, 5, 6]);
    const [g] = autograd.grad(y.mul(tensor([[1, 2], [3, 4], [5, 6]])).sum(), x);
    // Row 2 was picked twice (weights [1,2] and [5,6]); row 0 once ([3,4]).
    expect(vals(g!)).toEqual([3, 4, 0, 0, 6, 8]);
    expect(() => x.indexSelect(1, int([2]))).toThrow(/index_select: index 2 is out of range for dim 1 of size 2 \(valid indices are 0..1\)/);
    expect(() => x.indexSelect(0, int([-1]))).toThrow(/index -1 is out of range/);
    expect(() => x.indexSelect(0, tensor([0]))).toThrow(/index_select: index must be an int32 tensor, got float32/);
  });

  it('supports double backward (index_add differentiates back to index_select)', () => {
    const x = tensor([1, 2, 3], { requiresGrad: true });
    const w = tensor([1, 10], { requiresGrad: true });
    const [gx] = autograd.grad(x.indexSelect(0, int([2, 2])), x, { gradOutputs: w, createGraph: true });
    expect(vals(gx!)).toEqual([0, 0, 11]);
    const [gw] = autograd.grad(gx!.mul(tensor([5, 6, 7])).sum(), w);
    expect(vals(gw!)).toEqual([7, 7]);
  });
});

describe('gather and scatter_add', () => {
  it('gather picks per element; its gradient scatters (adding repeats)', () => {
    const x = tensor([[1, 2, 3], [4, 5, 6]], { requiresGrad: true });
    const idx = int([0, 0, 2, 1], [2, 2]);
    const y = x.gather(1, idx);
    expect(vals(y)).toEqual([1, 1, 6, 5]);
    const [g] = autograd.grad(y.mul(tensor([[1, 2], [3, 4]])).sum(), x);
    expect(vals(g!)).toEqual([3, 0, 0, 0, 4, 3]);
    expect(() => x.gather(1, int([3], [1, 1]))).toThrow(/gather: index 3 is out of range for dim 1 of size 3/);
    expect(() => x.gather(0, int([0, 0, 0, 0], [1, 4]))).toThrow(/gather: index \[1,4\] is larger than input \[2,3\] in dim 1/);
  });

  it('gather accepts an index smaller than x in the other dims (general path)', () => {
    // x = [[1,2,3],[4,5,6],[7,8,9]]; index rows 0..1 only: out[r][c] = x[r][idx[r][c]].
    const x = tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]], { requiresGrad: true });
    const y = x.gather(1, int([2, 0, 1, 1], [2, 2]));
    expect(vals(y)).toEqual([3, 1, 5, 5]);
    const [g] = autograd.grad(y.sum(), x);
    expect(vals(g!)).toEqual([1, 0, 1, 0, 2, 0, 0, 0, 0]);
    // Along dim 0 with a narrower index: out[r][c] = x[idx[r][c]][c].
    expect(vals(x.gather(0, int([2, 0], [1, 2])))).toEqual([7, 2]);
  });

  it('scatter_add adds into a copy; src beyond the index gets zero gradient', () => {
    const x = zeros([2, 3], { requiresGrad: true });
    const src = tensor([[1, 2, 9], [3, 4, 9]], { requiresGrad: true });
    const idx = int([2, 2, 0, 1], [2, 2]);
    const y = x.scatterAdd(1, idx, src);
    expect(vals(y)).toEqual([0, 0, 3, 3, 4, 0]);
    expect(vals(x)).toEqual([0, 0, 0, 0, 0, 0]);
    const [gx, gs] = autograd.grad(y.mul(tensor([[1, 2, 3], [4, 5, 6]])).sum(), [x, src]);
    expect(vals(gx!)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(vals(gs!)).toEqual([3, 3, 0, 4, 5, 0]);
  });

  it('supports double backward through gather', () => {
    const x = tensor([1, 2], { requiresGrad: true });
    const w = tensor([1, 2, 3], { requiresGrad: true });
    const [gx] = autograd.grad(x.gather(0, int([1, 0, 1])), x, { gradOutputs: w, createGraph: true });
    expect(vals(gx!)).toEqual([2, 4]);
    const [gw] = autograd.grad(gx!.mul(tensor([10, 100])).sum(), w);
    expect(vals(gw!)).toEqual([100, 10, 100]);
  });
});

describe('masked_select', () => {
  it('broadcasts the mask, has a symbolic length in its type rule and scatters its gradient', () => {
    const x = tensor([[1, 2, 3], [4, 5, 6]], { requiresGrad: true });
    const mask = tensor([true, false, true]);
    const y = x.maskedSelect(mask);
    expect(vals(y)).toEqual([1, 3, 4, 6]);
    expect(getOp('masked_select').infer([{ dtype: 'float32', shape: [2, 3] }, { dtype: 'bool', shape: [3] }], {})[0].shape).toEqual(['nnz']);
    const [g] = autograd.grad(y.mul(tensor([1, 2, 3, 4])).sum(), x);
    expect(vals(g!)).toEqual([1, 0, 2, 3, 0, 4]);
    // A broadcast x: its gradient sums over the broadcast rows.
    const r = tensor([1, 2], { requiresGrad: true });
    const m2 = tensor([[true, true], [false, true]]);
    const [gr] = autograd.grad(r.maskedSelect(m2).sum(), r);
    expect(vals(gr!)).toEqual([1, 2]);
    expect(() => x.maskedSelect(int([1, 0, 1]))).toThrow(/masked_select: mask must be a bool tensor, got int32/);
  });
});

describe('tril and triu', () => {
  it('work on batches and clamp far diagonals', () => {
    const x = tensor(Array.from({ length: 12 }, (_, i) => i + 1), { shape: [2, 2, 3] });
    expect(vals(x.tril())).toEqual([1, 0, 0, 4, 5, 0, 7, 0, 0, 10, 11, 0]);
    expect(vals(x.triu(1))).toEqual([0, 2, 3, 0, 0, 6, 0, 8, 9, 0, 0, 12]);
    expect(vals(x.triu(5))).toEqual(new Array(12).fill(0));
    expect(vals(x.tril(-5))).toEqual(new Array(12).fill(0));
    expect(vals(x.tril(5))).toEqual(vals(x));
    const i = tensor([[1, 2], [3, 4]], { dtype: 'int32' }).triu();
    expect(i.dtype).toBe('int32');
    expect(vals(i)).toEqual([1, 2, 0, 4]);
    expect(() => tensor([1, 2]).tril()).toThrow(/tril: input must have at least 2 dims, got shape \[2\]/);
  });

  it('mask the gradient the same way', () => {
    const x = tensor([[1, 2], [3, 4]], { requiresGrad: true });
    const [g] = autograd.grad(x.tril().sum(), x);
    expect(vals(g!)).toEqual([1, 0, 1, 1]);
  });
});

describe('F.embedding', () => {
  it('looks up rows for indices of any shape and accumulates the weight gradient', () => {
    const w = tensor([[0, 1], [2, 3], [4, 5]], { requiresGrad: true });
    const out = F.embedding(int([2, 0, 2, 2], [2, 2]), w);
    expect(out.shape).toEqual([2, 2, 2]);
    expect(vals(out)).toEqual([4, 5, 0, 1, 4, 5, 4, 5]);
    const [g] = autograd.grad(out.sum(), w);
    expect(vals(g!)).toEqual([1, 1, 0, 0, 3, 3]);
  });

  it('returns padding rows but gives them no gradient (negative paddingIdx counts from the end)', () => {
    const w = tensor([[0, 1], [2, 3], [4, 5]], { requiresGrad: true });
    const out = F.embedding(int([1, 2, 1]), w, { paddingIdx: -1 });
    expect(vals(out)).toEqual([2, 3, 4, 5, 2, 3]);
    const [g] = autograd.grad(out.sum(), w);
    expect(vals(g!)).toEqual([0, 0, 2, 2, 0, 0]);
    expect(() => F.embedding(int([0]), w, { paddingIdx: 3 })).toThrow(/embedding: paddingIdx 3 must be within the 3 embeddings/);
    expect(() => F.embedding(int([3]), w)).toThrow(/index_select: index 3 is out of range for dim 0 of size 3/);
    expect(() => F.embedding(tensor([0]), w)).toThrow(/embedding: input must hold int32 indices/);
  });
});
