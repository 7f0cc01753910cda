// Golden 'shape' cases → Kiln calls. See ../adapter.ts for the contract.
import { cat, stack, type Tensor } from '@kiln/core';
import type { AdapterTable } from '../adapter.js';

export const adapters: AdapterTable = {
  reshape: ([x], a) => x.reshape(a.shape),
  view: ([x], a) => x.view(a.size),
  permute: ([x], a) => x.permute(a.dims),
  'permute+reshape': ([x], a) => x.permute(a.dims).reshape(a.shape),
  transpose: ([x], a) => x.transpose(a.dim0, a.dim1),
  t: ([x]) => x.t(),
  flatten: ([x], a) => x.flatten(a.start_dim ?? 0, a.end_dim ?? -1),
  squeeze: ([x], a) => x.squeeze(a.dim),
  unsqueeze: ([x], a) => x.unsqueeze(a.dim),
  expand: ([x], a) => x.expand(a.size),
  repeat: ([x], a) => x.repeat(a.repeats),
  flip: ([x], a) => x.flip(a.dims),
  cat: (xs, a) => cat(xs, a.dim ?? 0),
  stack: (xs, a) => stack(xs, a.dim ?? 0),
  split: ([x], a) => x.split(a.split_size_or_sections, a.dim ?? 0),
  chunk: ([x], a) => x.chunk(a.chunks, a.dim ?? 0),
  unbind: ([x], a): Tensor[] => x.unbind(a.dim ?? 0),
};
