// How a golden op case maps onto Kiln's API. One adapter per golden `op` name; it receives the
// case's inputs as Kiln tensors (float inputs require grad) and returns the output(s) in the
// golden file's structure. The parity test does the comparing and the gradient checks.

import type { Tensor } from '@kiln/core';
import type { GoldenCase } from './golden.js';

export interface AdapterResult {
  output: Tensor | Tensor[];
  /** Tensors changed as side effects, compared with the case's `extra_outputs`. */
  extra?: Record<string, Tensor>;
}

export type Adapter = (inputs: Tensor[], attrs: Record<string, any>, c: GoldenCase) => Tensor | Tensor[] | AdapterResult;

/** Adapters of one golden file family, keyed by the case's `op`. */
export type AdapterTable = Record<string, Adapter>;
