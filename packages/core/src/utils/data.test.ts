// utils.data: every sample exactly once per epoch, the same order for the same seed (and a new
// order each epoch), batch sizes with and without dropLast, the default collate of tensors,
// numbers, tuples and objects, a custom collateFn, and the async iterator loading batch k+1
// before batch k is consumed.
import { describe, expect, it } from 'vitest';
import { Generator, arange, tensor, utils, type Tensor } from '../index.js';

const { Dataset, TensorDataset, DataLoader, defaultCollate } = utils.data;

function epochIds(loader: InstanceType<typeof DataLoader<Tensor[]>>): number[][] {
  return [...loader].map(([, y]) => Array.from(y.toArray() as Int32Array));
}

describe('DataLoader', () => {
  const x = arange(0, 23 * 2).reshape([23, 2]);
  const y = arange(0, 23, 1, { dtype: 'int32' });
  const ds = new TensorDataset(x, y);

  it('TensorDataset rows line up across tensors', () => {
    const [xi, yi] = ds.getItem(5);
    expect(xi.shape).toEqual([2]);
    expect(Array.from(xi.toArray() as Float32Array)).toEqual([10, 11]);
    expect(yi.item()).toBe(5);
    expect(ds.getItem(-1)[1].item()).toBe(22);
    expect(() => ds.getItem(23)).toThrow(/out of range for 23 items/);
    expect(() => new TensorDataset(x, arange(0, 5))).toThrow(/same first dim/);
  });

  it('visits every sample once per epoch in order without shuffle; batch sizes and dropLast', () => {
    const loader = new DataLoader(ds, { batchSize: 5 });
    const batches = epochIds(loader);
    expect(batches.map((b) => b.length)).toEqual([5, 5, 5, 5, 3]);
    expect(batches.flat()).toEqual(Array.from({ length: 23 }, (_, i) => i));
    expect(loader.length).toBe(5);
    const dl = new DataLoader(ds, { batchSize: 5, dropLast: true });
    expect(epochIds(dl).map((b) => b.length)).toEqual([5, 5, 5, 5]);
    expect(dl.length).toBe(4);
    const [xb] = [...loader][0];
    expect(xb.shape).toEqual([5, 2]);
  });

  it('shuffles deterministically for a seeded generator: a permutation per epoch, new each epoch', () => {
    const run = () => {
      const loader = new DataLoader(ds, { batchSize: 4, shuffle: true, generator: new Generator(123) });
      return [epochIds(loader).flat(), epochIds(loader).flat()];
    };
    const [e1, e2] = run();
    const [f1, f2] = run();
    expect(e1).toEqual(f1);
    expect(e2).toEqual(f2);
    for (const e of [e1, e2]) expect([...e].sort((a, b) => a - b)).toEqual(Array.from({ length: 23 }, (_, i) => i));
    expect(e1).not.toEqual(e2);
    expect(e1).not.toEqual(Array.from({ length: 23 }, (_, i) => i));
    const other = new DataLoader(ds, { batchSize: 4, shuffle: true, generator: new Generator(124) });
    expect(epochIds(other).flat()).not.toEqual(e1);
  });

  it('default collate: numbers, tuples, objects, strings; clear error for ragged tensors', () => {
    const ints = defaultCollate([1, 2, 3]);
    expect(ints.dtype).toBe('int32');
    const floats = defaultCollate([0.5, 2]);
    expect(floats.dtype).toBe('float32');
    const obj = defaultCollate([{ a: 1, s: 'x', t: tensor([1, 2]) }, { a: 2, s: 'y', t: tensor([3, 4]) }]);
    expect(obj.s).toEqual(['x', 'y']);
    expect(obj.t.shape).toEqual([2, 2]);
    expect(Array.from(obj.a.toArray() as Int32Array)).toEqual([1, 2]);
    expect(() => defaultCollate([tensor([1, 2]), tensor([1, 2, 3])])).toThrow(/same shape.*collateFn/);
  });

  it('a custom collateFn receives the items of each batch', () => {
    class Words extends Dataset<string> {
      readonly words = ['a', 'bb', 'ccc', 'dddd', 'eeeee'];
      get length() { return this.words.length; }
      getItem(i: number) { return this.words[i]; }
    }
    const loader = new DataLoader(new Words(), { batchSize: 2, collateFn: (items) => items.join('+') });
    expect([...loader]).toEqual(['a+bb', 'ccc+dddd', 'eeeee']);
  });

  it('async iteration loads the next batch before the current one is consumed', async () => {
    const log: string[] = [];
    class Slow extends Dataset<number> {
      get length() { return 6; }
      async getItem(i: number) {
        log.push(`start ${i}`);
        await new Promise((r) => setTimeout(r, 1));
        log.push(`done ${i}`);
        return i;
      }
    }
    const loader = new DataLoader(new Slow(), { batchSize: 2 });
    const seen: number[][] = [];
    for await (const b of loader) {
      // When batch k is handed out, batch k+1 has already been started.
      const k = seen.length;
      if (k + 1 < 3) expect(log).toContain(`start ${2 * (k + 1)}`);
      log.push(`use ${k}`);
      seen.push(Array.from(b.toArray() as Int32Array));
    }
    expect(seen).toEqual([[0, 1], [2, 3], [4, 5]]);
    expect(() => [...loader]).toThrow(/returned a promise; iterate with for await/);
  });
});
