// rand/randn/randLike/randnLike and training-mode dropout dispatch the random ops and draw
// kiln's default generator: statistics, seeding, shapes, and the dispatch's observers see them.
import { describe, it, expect } from 'vitest';
import { Generator, manualSeed } from './random.js';
import { rand, randint, randn, randLike, randnLike, zeros } from './creation.js';
import { dropout } from './functional/activation.js';
import { withObserver } from './dispatch.js';

const mean = (a: ArrayLike<number>) => Array.prototype.reduce.call(a, (s: number, v: number) => s + v, 0) as number / a.length;

describe('random factories', () => {
  it('have the right statistics and repeat for a seed', () => {
    manualSeed(3);
    const u = rand([20000]), n = randn([20000]);
    expect(mean(u.data)).toBeCloseTo(0.5, 1);
    expect(Math.min(...u.data)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...u.data)).toBeLessThan(1);
    const m = mean(n.data), v = mean(Array.from(n.data, (x) => (x - m) ** 2));
    expect(m).toBeCloseTo(0, 1);
    expect(v).toBeCloseTo(1, 1);
    manualSeed(3);
    expect(Array.from(rand([5]).data)).toEqual(Array.from(u.data.slice(0, 5)));
  });
  it('go through the dispatch as uniform/normal ops (so tracers record them)', () => {
    const seen: string[] = [];
    withObserver({ onOp: (op) => { seen.push(op.name); } }, () => { rand([2]); randn([2]); randLike(zeros([3])); randnLike(zeros([3])); });
    expect(seen).toEqual(['uniform', 'normal', 'uniform', 'normal']);
  });
  it('*Like forms take the shape; a private generator leaves the default one alone', () => {
    expect(randLike(zeros([2, 3])).shape).toEqual([2, 3]);
    expect(randnLike(zeros([4])).shape).toEqual([4]);
    manualSeed(1);
    const a = rand([3], { generator: new Generator(9) });
    const b = rand([3], { generator: new Generator(9) });
    expect(Array.from(a.data)).toEqual(Array.from(b.data));
    const next = rand([1]).data[0];
    manualSeed(1);
    expect(rand([1]).data[0]).toBe(next);
    expect(rand([2], { requiresGrad: true }).requiresGrad).toBe(true);
    expect(() => rand([2], { dtype: 'int32' })).toThrow(/random samples are floating point \(float32, float16, bfloat16\), got dtype int32/);
  });
  it('randint covers [low, high) evenly, int32 by default, through the dispatch', () => {
    manualSeed(4);
    const seen: string[] = [];
    const r = withObserver({ onOp: (op) => { seen.push(op.name); } }, () => randint(-3, 4, [7000]));
    expect(seen[0]).toBe('uniform');
    expect(r.dtype).toBe('int32');
    const counts = new Map<number, number>();
    for (const v of r.data) counts.set(v, (counts.get(v) ?? 0) + 1);
    expect([...counts.keys()].sort((a, b) => a - b)).toEqual([-3, -2, -1, 0, 1, 2, 3]);
    for (const c of counts.values()) expect(Math.abs(c - 1000)).toBeLessThan(150);
    expect(randint(0, 2, [3], { dtype: 'float32' }).dtype).toBe('float32');
    expect(() => randint(3, 3, [1])).toThrow(/low < high/);
  });
  it('training-mode dropout zeroes about p of the elements and scales the rest', () => {
    manualSeed(2);
    const y = dropout(zeros([10000]).add(1), { p: 0.3 });
    const zerosFrac = Array.from(y.data).filter((v) => v === 0).length / 10000;
    expect(zerosFrac).toBeCloseTo(0.3, 1);
    expect(Array.from(y.data).every((v) => v === 0 || Math.abs(v - 1 / 0.7) < 1e-6)).toBe(true);
  });
});
