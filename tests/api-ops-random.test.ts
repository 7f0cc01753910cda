// The random and data-reading ops of issue #22 (part A): multinomial (with and without
// replacement) and dropout2d follow their distributions, draw from the seeded generator, and
// draw at run time when traced; plus edge cases and error messages of the other new ops that
// golden data cannot show (messages name the op and the fix).
import { describe, it, expect } from 'vitest';
import { jit, nn, F, manualSeed, multinomial, tensor, randn, ones, sort, topk, einsum, narrow, nonzero, roll, type Tensor } from 'kiln';

const counts = (t: Tensor, n: number): number[] => {
  const c = new Array<number>(n).fill(0);
  for (const v of t.toArray()) c[v]++;
  return c;
};

describe('multinomial', () => {
  it('with replacement: frequencies follow the (unnormalized) weights', () => {
    manualSeed(1);
    const s = multinomial(tensor([1, 2, 7, 0]), 20000, { replacement: true });
    expect(s.dtype).toBe('int32');
    expect(s.shape).toEqual([20000]);
    const c = counts(s, 4);
    expect(c[3]).toBe(0); // a zero weight is never drawn
    [0.1, 0.2, 0.7].forEach((p, i) => expect(Math.abs(c[i] / 20000 - p)).toBeLessThan(0.015));
  });

  it('without replacement: each row is distinct categories, the first drawn in proportion to the weights', () => {
    manualSeed(2);
    const rows = 4000;
    const w = tensor(Array.from({ length: rows }, () => [8, 1, 1, 0]));
    const s = multinomial(w, 3);
    expect(s.shape).toEqual([rows, 3]);
    const data = s.toArray();
    for (let r = 0; r < rows; r++) {
      const row = [data[3 * r], data[3 * r + 1], data[3 * r + 2]];
      expect(new Set(row).size).toBe(3);
      expect(row).not.toContain(3);
    }
    const first = counts(s.index(':', 0), 4);
    expect(Math.abs(first[0] / rows - 0.8)).toBeLessThan(0.03);
  });

  it('is reproducible for a seed, accepts a generator, and names bad arguments', () => {
    manualSeed(5);
    const a = multinomial(tensor([0.3, 0.3, 0.4]), 6, { replacement: true }).toArray();
    manualSeed(5);
    expect(multinomial(tensor([0.3, 0.3, 0.4]), 6, { replacement: true }).toArray()).toEqual(a);
    expect(() => multinomial(tensor([1, 1]), 3)).toThrow(/cannot draw 3 samples without replacement from 2 categories; pass \{ replacement: true \}/);
    expect(() => multinomial(ones([2, 2, 2]), 1)).toThrow(/multinomial: probs must be 1-D or 2-D/);
  });

  it('draws at run time when traced (uniform in the graph), equal to eager for a seed', () => {
    class Sampler extends nn.Module {
      forward(p: Tensor): Tensor { return multinomial(p, 2).add(multinomial(p, 3, { replacement: true }).sum(-1, { keepdim: true })); }
    }
    const m = new Sampler();
    const p = tensor([[1, 2, 3, 4], [4, 3, 2, 1]]);
    const traced = jit.trace(m, [p]);
    expect(traced.graph.toString()).toContain('uniform(');
    for (const seed of [3, 4]) {
      manualSeed(seed);
      const want = m.forward(p).toArray();
      manualSeed(seed);
      expect((traced.forward(p) as Tensor).toArray()).toEqual(want);
    }
  });
});

describe('dropout2d', () => {
  it('zeroes whole channels with probability p and scales the rest by 1/(1-p)', () => {
    manualSeed(7);
    const x = ones([50, 40, 2, 3]);
    const y = F.dropout2d(x, { p: 0.25 });
    const d = y.toArray();
    let dropped = 0;
    for (let c = 0; c < 2000; c++) {
      const vals = new Set(Array.from(d.subarray(c * 6, c * 6 + 6)));
      expect(vals.size).toBe(1); // one draw per channel
      const v = [...vals][0];
      expect([0, Math.fround(1 / 0.75)]).toContain(v);
      if (v === 0) dropped++;
    }
    expect(Math.abs(dropped / 2000 - 0.25)).toBeLessThan(0.04);
    expect(F.dropout2d(x, { training: false }).toArray()).toEqual(x.toArray());
    expect(() => F.dropout2d(ones([2, 3]))).toThrow(/dropout2d: expects a 3-D \[C, H, W\] or 4-D/);
  });
});

describe('edge cases and messages', () => {
  it('sort keeps ties in input order both ways; topk takes the lower index first', () => {
    const x = tensor([2, 1, 2, 1, 2]);
    expect(sort(x)[1].tolist()).toEqual([1, 3, 0, 2, 4]);
    expect(sort(x, { descending: true })[1].tolist()).toEqual([0, 2, 4, 1, 3]);
    expect(topk(x, 2)[1].tolist()).toEqual([0, 2]);
    expect(() => topk(x, 6)).toThrow(/topk: k = 6 must be an integer in \[0, 5\]/);
    expect(sort(tensor(3))[0].item()).toBe(3);
  });

  it('sorts a line longer than 2^21 (the comparator path) stably, NaN last', () => {
    const n = 2 ** 21 + 3;
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++) data[i] = i % 7 === 3 ? NaN : (i * 7919) % 1000 - 500;
    const [v, i] = sort(tensor(data));
    const vs = v.toArray(), is = i.toArray();
    for (let k = 1; k < n; k++) {
      const a = vs[k - 1], b = vs[k];
      const ok = Number.isNaN(b) ? (Number.isNaN(a) ? is[k] > is[k - 1] : true) : !Number.isNaN(a) && (a < b || (a === b && is[k] > is[k - 1]));
      if (!ok) throw new Error(`position ${k}: (${a}, ${is[k - 1]}) then (${b}, ${is[k]})`);
      if (data[is[k]] !== vs[k] && !Number.isNaN(vs[k])) throw new Error(`position ${k}: index ${is[k]} does not hold ${vs[k]}`);
    }
  });

  it('einsum, narrow, pad and interpolate name what is wrong', () => {
    const m = randn([2, 3]);
    expect(() => einsum('ij,jk->ik', m)).toThrow(/names 2 operands but 1 were given/);
    expect(() => einsum('ijk->i', m)).toThrow(/operand 0 has 3 labels but 2 dims/);
    expect(() => einsum('...ij->ij', m)).toThrow(/ellipsis/);
    expect(() => einsum('ij->ik', m)).toThrow(/output label 'k' does not appear/);
    expect(() => narrow(m, 1, 2, 2)).toThrow(/narrow: start 2 \+ length 2 exceeds dim 1 of size 3/);
    expect(() => F.pad(m, [1, 1, 1])).toThrow(/pad: padding \[1,1,1\] must have an even length/);
    expect(() => F.pad(randn([1, 2, 3]), [3, 0], { mode: 'reflect' })).toThrow(/reflect padding \(3, 0\) must be smaller than the size 3 of dim 2/);
    expect(() => F.interpolate(randn([1, 1, 4, 4]), { size: 8, scaleFactor: 2 })).toThrow(/exactly one of size and scaleFactor/);
    expect(() => F.interpolate(randn([1, 1, 4]), { size: 8, mode: 'bilinear' })).toThrow(/mode 'bilinear' expects a 4-D input/);
    expect(() => F.oneHot(tensor([0, 4], { dtype: 'int32' }), 3)).toThrow(/class value 4 is out of range for numClasses 3/);
  });

  it('nonzero of a 0-d tensor, roll of an empty dim, dim(), numel() and nested tolist()', () => {
    expect(nonzero(tensor(2)).shape).toEqual([1, 0]);
    expect(nonzero(tensor(0)).shape).toEqual([0, 0]);
    expect(roll(randn([0, 3]), 2, 0).shape).toEqual([0, 3]);
    const t = tensor([[[1, 2]], [[3, 4]]]);
    expect(t.dim()).toBe(3);
    expect([t.numel(), t.nelement(), tensor(5).numel(), randn([0, 3]).numel()]).toEqual([4, 4, 1, 0]);
    expect(t.tolist()).toEqual([[[1, 2]], [[3, 4]]]);
    expect(tensor([true, false]).tolist()).toEqual([true, false]);
  });
});
