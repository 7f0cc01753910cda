// Golden 'reductions' cases → Kiln calls. See ../adapter.ts for the contract.
import { F, type Tensor } from '@kiln/core';
import type { AdapterTable } from '../adapter.js';

type A = Record<string, any>;
const keep = (a: A) => ({ keepdim: a.keepdim ?? false });
/** torch.max/min: no dim → the value; with dim → [values, indices]. */
const extreme = (which: 'max' | 'min') => ([x]: Tensor[], a: A): Tensor | Tensor[] =>
  a.dim === undefined ? x[which]() : x[which](a.dim, keep(a));

export const adapters: AdapterTable = {
  sum: ([x], a) => x.sum(a.dim ?? null, keep(a)),
  mean: ([x], a) => x.mean(a.dim ?? null, keep(a)),
  max: extreme('max'),
  min: extreme('min'),
  amax: ([x], a) => x.amax(a.dim ?? null, keep(a)),
  amin: ([x], a) => x.amin(a.dim ?? null, keep(a)),
  argmax: ([x], a) => x.argmax(a.dim ?? null, keep(a)),
  argmin: ([x], a) => x.argmin(a.dim ?? null, keep(a)),
  var: ([x], a) => x.var(a.dim ?? null, { unbiased: a.unbiased, ...keep(a) }),
  std: ([x], a) => x.std(a.dim ?? null, { unbiased: a.unbiased, ...keep(a) }),
  logsumexp: ([x], a) => x.logsumexp(a.dim, keep(a)),
  softmax: ([x], a) => F.softmax(x, a.dim),
  log_softmax: ([x], a) => F.logSoftmax(x, a.dim),
  prod: ([x], a) => x.prod(a.dim ?? null, keep(a)),
  norm: ([x], a) => x.norm(a.p ?? 2, a.dim ?? null, keep(a)),
  cumsum: ([x], a) => x.cumsum(a.dim),
};
