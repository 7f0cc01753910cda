// Unit tests of the shape ops beyond the PyTorch golden cases: slice bounds (clamping, negative
// values, steps), cat/stack errors and dtype promotion, split/chunk sizes, repeat/flip values,
// every kind of `index` item (strings, objects, ellipsis, new axes, int and bool tensors) and
// gradients, including double backward through slice/slice_backward.

import { describe, it, expect } from 'vitest';
import { autograd, arange, cat, stack, tensor, type Tensor } from '../index.js';

const vals = (t: Tensor): number[] => [...t.toArray()];
const int = (v: number[], shape?: number[]): Tensor => tensor(v, { dtype: 'int32', shape });

/** [[0,1,2,3],[4,5,6,7],[8,9,10,11]]-style float tensor 0..n-1 of `shape`. */
function iota(shape: number[], requiresGrad = false): Tensor {
  const n = shape.reduce((a, d) => a * d, 1);
  return tensor(Array.from({ length: n }, (_, i) => i), { shape, requiresGrad });
}

/** Gradient of sum(f(x) * w) with w = 1, 2, 3, ...: shows which output each input fed. */
function weightedGrad(x: Tensor, f: (x: Tensor) => Tensor | Tensor[]): number[] {
  const ys = ([] as Tensor[]).concat(f(x));
  let loss: Tensor | null = null;
  let k = 1;
  for (const y of ys) {
    const w = tensor(Array.from({ length: y.numel() }, () => k++), { shape: [...y.shape] });
    const term = y.mul(w).sum();
    loss = loss ? loss.add(term) : term;
  }
  return vals(autograd.grad(loss!, x)[0]!);
}

describe('slice', () => {
  it('follows Python bounds: negative, clamped, empty', () => {
    const x = arange(10);
    expect(vals(x.slice(0, -3))).toEqual([7, 8, 9]);
    expect(vals(x.slice(0, 2, 100, 3))).toEqual([2, 5, 8]);
    expect(vals(x.slice(0, -100, 2))).toEqual([0, 1]);
    expect(x.slice(0, 8, 2).shape).toEqual([0]);
    expect(x.slice(0, 20).shape).toEqual([0]);
    expect(() => x.slice(0, 0, 5, 0)).toThrow(/slice: slice step must be positive, got 0/);
  });

  it('scatters its gradient into zeros, and slice_backward differentiates back to slice', () => {
    const x = iota([2, 5], true);
    // Picked columns 1 and 3 get weights 1..4 in row-major output order.
    expect(weightedGrad(x, (t) => t.slice(1, 1, 5, 2))).toEqual([0, 1, 0, 2, 0, 0, 3, 0, 4, 0]);
    // Double backward: g(w) = slice_backward(w); differentiating sum(g·v) in w gives slice(v).
    const w = tensor([1, 2], { requiresGrad: true });
    const y = arange(5, undefined, 1, { dtype: 'float32', requiresGrad: true });
    const [gy] = autograd.grad(y.slice(0, 1, 5, 2), y, { gradOutputs: w, createGraph: true });
    expect(vals(gy!)).toEqual([0, 1, 0, 2, 0]);
    const [gw] = autograd.grad(gy!.mul(tensor([10, 11, 12, 13, 14])).sum(), w);
    expect(vals(gw!)).toEqual([11, 13]);
  });
});

describe('cat and stack', () => {
  it('concatenates along any dim, promotes dtypes and slices the gradient back', () => {
    const a = tensor([[1], [2]], { requiresGrad: true }), b = tensor([[3, 4], [5, 6]], { requiresGrad: true });
    const c = cat([a, b], -1);
    expect(c.shape).toEqual([2, 3]);
    expect(vals(c)).toEqual([1, 3, 4, 2, 5, 6]);
    const [ga, gb] = autograd.grad(c.mul(tensor([[1, 2, 3], [4, 5, 6]])).sum(), [a, b]);
    expect(vals(ga!)).toEqual([1, 4]);
    expect(vals(gb!)).toEqual([2, 3, 5, 6]);
    const mixed = cat([int([1, 2]), tensor([0.5])]);
    expect(mixed.dtype).toBe('float32');
    expect(vals(mixed)).toEqual([1, 2, 0.5]);
  });

  it('names the shapes in its errors', () => {
    expect(() => cat([tensor([[1, 2]]), tensor([[1, 2, 3]])], 0)).toThrow(/cat: tensors must have the same shape except in dim 0, but tensor 1 has shape \[1,3\] and tensor 0 has \[1,2\]/);
    expect(() => cat([], 0)).toThrow(/cat: expects a non-empty list/);
    expect(() => cat([tensor(1), tensor(2)])).toThrow(/cat: zero-dimensional tensors cannot be concatenated/);
    expect(() => stack([tensor([1, 2]), tensor([1, 2, 3])])).toThrow(/stack: expects tensors of equal shape, but tensor 0 has shape \[2\] and tensor 1 has \[3\]/);
  });

  it('stacks along a new (possibly negative) dim', () => {
    const s = stack([tensor([1, 2]), tensor([3, 4])], -1);
    expect(s.shape).toEqual([2, 2]);
    expect(vals(s)).toEqual([1, 3, 2, 4]);
  });
});

describe('split, chunk, unbind', () => {
  it('splits by size or by sections', () => {
    const x = arange(5);
    expect(x.split(2).map(vals)).toEqual([[0, 1], [2, 3], [4]]);
    expect(x.split([1, 4]).map(vals)).toEqual([[0], [1, 2, 3, 4]]);
    expect(() => x.split([1, 3])).toThrow(/split: sections \[1,3\] must be non-negative integers adding up to 5/);
    expect(() => x.split(0)).toThrow(/split: split size must be a positive integer, got 0/);
  });

  it('chunks with ceil sizes (7/3 → 3,3,1; 6/4 → three chunks of 2)', () => {
    expect(arange(7).chunk(3).map((t) => t.numel())).toEqual([3, 3, 1]);
    expect(arange(6).chunk(4).map((t) => t.numel())).toEqual([2, 2, 2]);
    expect(tensor([], { shape: [0, 2] }).chunk(3).map((t) => t.shape)).toEqual([[0, 2], [0, 2], [0, 2]]);
  });

  it('routes each piece\'s gradient to its place', () => {
    const x = iota([2, 3], true);
    expect(weightedGrad(x, (t) => t.chunk(2, 1))).toEqual([1, 2, 5, 3, 4, 6]);
    expect(weightedGrad(x, (t) => t.unbind(1))).toEqual([1, 3, 5, 2, 4, 6]);
  });
});

describe('repeat and flip', () => {
  it('repeat tiles like torch (leading repeats add dims) and sums the gradient', () => {
    expect(vals(tensor([[1, 2]]).repeat(2, 2))).toEqual([1, 2, 1, 2, 1, 2, 1, 2]);
    const r = tensor([1, 2]).repeat([3, 1, 2]);
    expect(r.shape).toEqual([3, 1, 4]);
    // Each input element appears 6 times; weights 1..12 alternate between them.
    expect(weightedGrad(tensor([1, 2], { requiresGrad: true }), (t) => t.repeat(3, 2))).toEqual([1 + 3 + 5 + 7 + 9 + 11, 2 + 4 + 6 + 8 + 10 + 12]);
    expect(() => tensor([[1]]).repeat(2)).toThrow(/repeat: 1 repeats given for a tensor of shape \[1,1\]/);
  });

  it('flip reverses several dims and flips its gradient back', () => {
    const x = iota([2, 3], true);
    expect(vals(x.flip([0, 1]))).toEqual([5, 4, 3, 2, 1, 0]);
    expect(vals(x.flip(-1))).toEqual([2, 1, 0, 5, 4, 3]);
    expect(weightedGrad(x, (t) => t.flip(1))).toEqual([3, 2, 1, 6, 5, 4]);
    expect(() => x.flip([1, -1])).toThrow(/flip: dim \[1,-1\] repeats a dimension/);
  });
});

describe('index (x[...])', () => {
  const x = iota([3, 4]);

  it('accepts Python slice strings and slice objects', () => {
    expect(vals(x.index('1:', '::2'))).toEqual([4, 6, 8, 10]);
    expect(vals(x.index(':', '-3:'))).toEqual([1, 2, 3, 5, 6, 7, 9, 10, 11]);
    expect(vals(x.index({ start: 0, stop: 3, step: 2 }, '1:5:2'))).toEqual([1, 3, 9, 11]);
    expect(() => x.index('1')).toThrow(/index: '1' is not a slice/);
    expect(() => x.index('a:')).toThrow(/slice bound 'a' is not an integer/);
  });

  it('selects with (negative) numbers, adds axes with null, expands ...', () => {
    expect(vals(x.index(-1))).toEqual([8, 9, 10, 11]);
    expect(x.index(1, 2).shape).toEqual([]);
    expect(x.index(1, 2).item()).toBe(6);
    expect(x.index(null, '...', null).shape).toEqual([1, 3, 4, 1]);
    expect(vals(x.index('...', -1))).toEqual([3, 7, 11]);
    const y = iota([2, 3, 4]);
    expect(y.index(0, '...', null, 1).shape).toEqual([3, 1]);
  });

  it('returns a new tensor even when nothing is indexed away', () => {
    const z = x.index(':');
    expect(z).not.toBe(x);
    expect(vals(z)).toEqual(vals(x));
  });

  it('int tensors pick along their dim; their shape replaces it; negatives wrap', () => {
    const picked = x.index(':', int([0, -1, 1, 1], [2, 2]));
    expect(picked.shape).toEqual([3, 2, 2]);
    expect(vals(picked.index(0))).toEqual([0, 3, 1, 1]);
    expect(vals(x.index(int([2, 0])))).toEqual([8, 9, 10, 11, 0, 1, 2, 3]);
    // A 0-d int tensor selects like a number.
    expect(x.index(int([2], [])).shape).toEqual([4]);
  });

  it('bool masks select the dims they cover, in place of those dims', () => {
    expect(vals(x.index(x.gt(8)))).toEqual([9, 10, 11]);
    const rows = x.index(tensor([true, false, true]));
    expect(rows.shape).toEqual([2, 4]);
    expect(vals(rows)).toEqual([0, 1, 2, 3, 8, 9, 10, 11]);
    const y = iota([2, 3, 2]);
    const mid = y.index(':', tensor([false, true, true]));
    expect(mid.shape).toEqual([2, 2, 2]);
    expect(vals(mid)).toEqual([2, 3, 4, 5, 8, 9, 10, 11]);
    expect(x.index(tensor(true)).shape).toEqual([1, 3, 4]);
    expect(x.index(tensor(false)).shape).toEqual([0, 3, 4]);
    expect(() => x.index(tensor([true, false]))).toThrow(/index: the bool mask of shape \[2\] does not match dims 0..0/);
  });

  it('gives gradients to the picked elements (accumulating repeats)', () => {
    const g = iota([3, 2], true);
    expect(weightedGrad(g, (t) => t.index(int([2, 2, 0])))).toEqual([5, 6, 0, 0, 1 + 3, 2 + 4]);
    expect(weightedGrad(g, (t) => t.index(t.gt(2)))).toEqual([0, 0, 0, 1, 2, 3]);
    expect(weightedGrad(g, (t) => t.index('...', '1:'))).toEqual([0, 1, 0, 2, 0, 3]);
  });

  it('explains bad indices', () => {
    expect(() => x.index(3)).toThrow(/index: index 3 is out of range for dim 0 of size 3 .*valid indices are -3..2/);
    expect(() => x.index(0, 0, 0)).toThrow(/index: too many indices for a tensor of shape \[3,4\]: 3 dims indexed/);
    expect(() => x.index('...', 0, '...')).toThrow(/single ellipsis/);
    expect(() => x.index(tensor([0.5]))).toThrow(/must be int32 or bool/);
    expect(() => x.index(int([0]), int([0]))).toThrow(/only one tensor index per call/);
    expect(() => x.index(int([5]))).toThrow(/index_select: index 5 is out of range for dim 0 of size 3/);
  });
});
