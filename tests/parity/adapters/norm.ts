// Golden 'norm' cases → Kiln calls. See ../adapter.ts for the contract.
// batch_norm inputs are (input, running_mean, running_var, weight?, bias?); the running stats
// are updated in place and compared as the side-effect outputs.
import { F } from '@kiln/core';
import type { AdapterTable } from '../adapter.js';

export const adapters: AdapterTable = {
  batch_norm: ([x, rm, rv, w, b], a) => {
    const output = F.batchNorm(x, rm, rv, { weight: w ?? null, bias: b ?? null, training: a.training, momentum: a.momentum, eps: a.eps });
    return { output, extra: { running_mean: rm, running_var: rv } };
  },
  layer_norm: ([x, w, b], a) => F.layerNorm(x, a.normalized_shape, { weight: w ?? null, bias: b ?? null, eps: a.eps }),
  group_norm: ([x, w, b], a) => F.groupNorm(x, a.num_groups, { weight: w ?? null, bias: b ?? null, eps: a.eps }),
  instance_norm: ([x, w, b], a) => F.instanceNorm(x, { weight: w ?? null, bias: b ?? null, eps: a.eps }),
};
