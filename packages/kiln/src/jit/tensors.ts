// Converting between core Tensors and the runtime's plain {data, shape, dtype} outputs.

import { Tensor } from '@kiln/core';
import type { Output } from '@kiln/runtime';

/** A runtime output as a core Tensor (it owns a fresh buffer). */
export function toTensor(o: Output): Tensor {
  return new Tensor({ data: o.data, version: 0 }, o.shape, o.dtype);
}
