// utils.data: Dataset, TensorDataset and DataLoader (torch.utils.data). Invariant: one epoch
// visits every index of the dataset exactly once (in order, or in a permutation drawn from the
// loader's generator, so a seeded generator gives the same order every run); batches are
// consecutive runs of that order of batchSize (the last one shorter unless dropLast); the async
// iterator starts loading batch k+1 before it hands out batch k, so asynchronous datasets
// (files, fetches) load while the caller trains.

import { fmtShape } from '@kiln/ir-spec';
import { Tensor } from '../tensor.js';
import { tensor } from '../creation.js';
import { stack } from '../ops/shape.js';
import { defaultGenerator, randperm, type Generator } from '../random.js';

/**
 * A map-style dataset: `length` items, item `i` from `getItem(i)` (which may return a promise;
 * then only the async iterator of a DataLoader can read it).
 * @example class Squares extends utils.data.Dataset<number> { get length() { return 10; } getItem(i: number) { return i * i; } }
 */
export abstract class Dataset<T> {
  abstract get length(): number;
  abstract getItem(index: number): T | Promise<T>;
}

/**
 * Rows of tensors that share their first dim: item i is `[t0[i], t1[i], …]`.
 * @example const ds = new utils.data.TensorDataset(images, labels); const [x, y] = ds.getItem(0);
 */
export class TensorDataset extends Dataset<Tensor[]> {
  readonly tensors: readonly Tensor[];
  constructor(...tensors: Tensor[]) {
    super();
    if (tensors.length === 0) throw new Error('TensorDataset: give at least one tensor');
    const n = tensors[0].ndim > 0 ? tensors[0].shape[0] : -1;
    tensors.forEach((t, i) => {
      if (!(t instanceof Tensor)) throw new Error(`TensorDataset: argument ${i} is not a Tensor`);
      if (t.ndim === 0 || t.shape[0] !== n) {
        throw new Error(`TensorDataset: size mismatch between tensors: tensor 0 has shape ${fmtShape(tensors[0].shape)}, tensor ${i} ${fmtShape(t.shape)} (all need the same first dim)`);
      }
    });
    this.tensors = tensors;
  }
  get length(): number { return this.tensors[0].shape[0]; }
  getItem(index: number): Tensor[] {
    const n = this.length;
    if (!Number.isInteger(index) || index < -n || index >= n) throw new RangeError(`TensorDataset.getItem: index ${index} is out of range for ${n} items`);
    const i = index < 0 ? index + n : index;
    return this.tensors.map((t) => t.slice(0, i, i + 1).reshape(t.shape.slice(1)));
  }
}

/** A batch as the default collate function builds it from items of type T. */
export type Collated<T> = T extends Tensor ? Tensor
  : T extends number | boolean ? Tensor
  : T extends string ? string[]
  : T extends readonly unknown[] ? { [K in keyof T]: Collated<T[K]> }
  : T extends object ? { [K in keyof T]: Collated<T[K]> }
  : T[];

/**
 * PyTorch's default_collate: tensors are stacked along a new dim 0; numbers become a 1-D tensor
 * (int32 when all are integers, else float32; booleans bool); arrays and objects are collated
 * position by position / key by key; strings are gathered into an array.
 */
export function defaultCollate<T>(items: readonly T[]): Collated<T> {
  if (items.length === 0) throw new Error('defaultCollate: empty batch');
  const first = items[0] as unknown;
  if (first instanceof Tensor) {
    items.forEach((t, i) => {
      const x = t as unknown as Tensor;
      if (!(x instanceof Tensor) || x.ndim !== first.ndim || x.shape.some((d, k) => d !== first.shape[k])) {
        throw new Error(`defaultCollate: item ${i} of the batch is ${x instanceof Tensor ? `of shape ${fmtShape(x.shape)}` : 'not a Tensor'}, item 0 is a tensor of shape ${fmtShape(first.shape)}; every item must have the same shape (pass a collateFn to batch ragged items)`);
      }
    });
    return stack(items as unknown as Tensor[], 0) as Collated<T>;
  }
  if (typeof first === 'number') {
    const xs = items as unknown as number[];
    return tensor(xs, { dtype: xs.every(Number.isInteger) ? 'int32' : 'float32' }) as Collated<T>;
  }
  if (typeof first === 'boolean') return tensor((items as unknown as boolean[]).map(Number), { dtype: 'bool' }) as Collated<T>;
  if (typeof first === 'string') return [...items] as Collated<T>;
  if (Array.isArray(first)) {
    const len = first.length;
    items.forEach((it, i) => {
      if (!Array.isArray(it) || it.length !== len) throw new Error(`defaultCollate: item ${i} of the batch is not an array of ${len} entries like item 0`);
    });
    return first.map((_, k) => defaultCollate((items as unknown as unknown[][]).map((it) => it[k]))) as Collated<T>;
  }
  if (first !== null && typeof first === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(first)) out[k] = defaultCollate((items as unknown as Record<string, unknown>[]).map((it) => it[k]));
    return out as Collated<T>;
  }
  throw new Error(`defaultCollate: cannot batch items of type ${first === null ? 'null' : typeof first}; pass a collateFn`);
}

export interface DataLoaderOptions<T, B> {
  /** Items per batch (default 1). */
  batchSize?: number;
  /** A new random order every epoch (default false: dataset order). */
  shuffle?: boolean;
  /** The generator that draws the shuffled orders (default: the global one, see manualSeed). */
  generator?: Generator;
  /** Leave out the last batch when it is smaller than batchSize (default false). */
  dropLast?: boolean;
  /** Turns a list of items into a batch (default defaultCollate). */
  collateFn?: (items: T[]) => B;
}

/**
 * Batches of a dataset, in order or shuffled. Iterate it for one epoch: synchronously (`for …
 * of`, for datasets whose getItem returns items) or asynchronously (`for await … of`, which
 * loads the next batch while the current one is in use).
 * @example
 * const loader = new utils.data.DataLoader(new utils.data.TensorDataset(x, y), { batchSize: 32, shuffle: true, generator: new Generator().manualSeed(0) });
 * for await (const [xb, yb] of loader) { ... }
 */
export class DataLoader<T, B = Collated<T>> {
  readonly batchSize: number;
  readonly shuffle: boolean;
  readonly dropLast: boolean;
  readonly generator: Generator;
  readonly collateFn: (items: T[]) => B;
  constructor(readonly dataset: Dataset<T>, opts: DataLoaderOptions<T, B> = {}) {
    if (!(dataset instanceof Dataset) && !(typeof (dataset as Dataset<T>)?.getItem === 'function' && typeof (dataset as Dataset<T>).length === 'number')) {
      throw new Error('DataLoader: dataset must be a utils.data.Dataset (with length and getItem(i))');
    }
    this.batchSize = opts.batchSize ?? 1;
    if (!(Number.isInteger(this.batchSize) && this.batchSize > 0)) throw new Error(`DataLoader: batchSize must be a positive integer, got ${opts.batchSize}`);
    this.shuffle = opts.shuffle ?? false;
    this.dropLast = opts.dropLast ?? false;
    this.generator = opts.generator ?? defaultGenerator;
    this.collateFn = opts.collateFn ?? ((items: T[]) => defaultCollate(items) as unknown as B);
  }

  /** Batches per epoch. */
  get length(): number {
    const n = this.dataset.length;
    return this.dropLast ? Math.floor(n / this.batchSize) : Math.ceil(n / this.batchSize);
  }

  /** The dataset indices of one epoch's batches (draws a permutation when shuffling). */
  batchIndices(): number[][] {
    const n = this.dataset.length;
    const order = this.shuffle ? Array.from(randperm(n, this.generator)) : Array.from({ length: n }, (_, i) => i);
    const out: number[][] = [];
    for (let s = 0; s < n; s += this.batchSize) {
      const b = order.slice(s, s + this.batchSize);
      if (b.length < this.batchSize && this.dropLast) break;
      out.push(b);
    }
    return out;
  }

  *[Symbol.iterator](): Iterator<B> {
    for (const idx of this.batchIndices()) {
      const items = idx.map((i) => {
        const it = this.dataset.getItem(i);
        if (it instanceof Promise) throw new Error(`DataLoader: the dataset's getItem(${i}) returned a promise; iterate with for await (const batch of loader)`);
        return it;
      });
      yield this.collateFn(items);
    }
  }

  async *[Symbol.asyncIterator](): AsyncIterator<B> {
    const batches = this.batchIndices();
    const load = async (idx: number[]): Promise<B> => this.collateFn(await Promise.all(idx.map((i) => this.dataset.getItem(i))));
    let next: Promise<B> | null = batches.length ? load(batches[0]) : null;
    for (let k = 0; k < batches.length; k++) {
      const current = next as Promise<B>;
      // Start the next batch before handing out this one.
      next = k + 1 < batches.length ? load(batches[k + 1]) : null;
      // Keep a rejection of the prefetched batch from being reported as unhandled before it is awaited.
      next?.catch(() => undefined);
      yield await current;
    }
  }
}
