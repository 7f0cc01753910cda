// Golden 'indexing' cases → Kiln calls. See ../adapter.ts for the contract.
import { F, where, type IndexItem } from '@kiln/core';
import type { AdapterTable } from '../adapter.js';

/** A golden index item ({start, stop, step} | int | null | "...") as a Kiln index item. */
const item = (v: any): IndexItem => (v !== null && typeof v === 'object' ? { start: v.start, stop: v.stop, step: v.step } : v);

export const adapters: AdapterTable = {
  getitem: ([x], a) => x.index(...(a.index as unknown[]).map(item)),
  index: ([x, idx]) => x.index(idx),
  index_select: ([x, idx], a) => x.indexSelect(a.dim, idx),
  gather: ([x, idx], a) => x.gather(a.dim, idx),
  scatter_add: ([x, idx, src], a) => x.scatterAdd(a.dim, idx, src),
  where: ([cond, x, other]) => where(cond, x, other),
  masked_fill: ([x, mask], a) => x.maskedFill(mask, a.value),
  tril: ([x], a) => x.tril(a.diagonal ?? 0),
  triu: ([x], a) => x.triu(a.diagonal ?? 0),
  embedding: ([idx, weight], a) => F.embedding(idx, weight, { paddingIdx: a.padding_idx }),
};
