// Golden 'conv' cases → Kiln calls. See ../adapter.ts for the contract.
import { F } from '@kiln/core';
import type { AdapterTable } from '../adapter.js';

export const adapters: AdapterTable = {
  conv2d: ([x, w, b], a) => F.conv2d(x, w, b ?? null, { stride: a.stride, padding: a.padding, dilation: a.dilation, groups: a.groups }),
  conv1d: ([x, w, b], a) => F.conv1d(x, w, b ?? null, { stride: a.stride, padding: a.padding, dilation: a.dilation, groups: a.groups }),
  conv_transpose2d: ([x, w, b], a) => F.convTranspose2d(x, w, b ?? null, {
    stride: a.stride, padding: a.padding, outputPadding: a.output_padding, dilation: a.dilation, groups: a.groups,
  }),
};
