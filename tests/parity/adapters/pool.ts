// Golden 'pool' cases → Kiln calls. See ../adapter.ts for the contract.
import { F } from '@kiln/core';
import type { AdapterTable } from '../adapter.js';

export const adapters: AdapterTable = {
  max_pool2d: ([x], a) => F.maxPool2d(x, a.kernel_size, {
    stride: a.stride, padding: a.padding, dilation: a.dilation, ceilMode: a.ceil_mode, returnIndices: a.return_indices ?? false,
  }),
  avg_pool2d: ([x], a) => F.avgPool2d(x, a.kernel_size, {
    stride: a.stride, padding: a.padding, ceilMode: a.ceil_mode, countIncludePad: a.count_include_pad, divisorOverride: a.divisor_override,
  }),
  adaptive_avg_pool2d: ([x], a) => F.adaptiveAvgPool2d(x, a.output_size),
  adaptive_max_pool2d: ([x], a) => F.adaptiveMaxPool2d(x, a.output_size, { returnIndices: a.return_indices ?? false }),
};
