// Golden 'loss' cases → Kiln calls (F.*). See ../adapter.ts for the contract. Optional tensor
// arguments (weight, pos_weight) are found by the golden input's name; keyword attrs map from
// PyTorch's snake_case names to Kiln's option names.

import { F, type Tensor } from '@kiln/core';
import type { AdapterTable } from '../adapter.js';
import type { GoldenCase } from '../golden.js';

/** The input named `name` in the case (weight, pos_weight), or null when absent. */
function named(inputs: Tensor[], c: GoldenCase, name: string): Tensor | null {
  const i = c.inputs.findIndex((g) => g.name === name);
  return i < 0 ? null : inputs[i];
}

export const adapters: AdapterTable = {
  cross_entropy: (inputs, a, c) => F.crossEntropy(inputs[0], inputs[1], {
    weight: named(inputs, c, 'weight'), ignoreIndex: a.ignore_index, reduction: a.reduction, labelSmoothing: a.label_smoothing,
  }),
  nll_loss: (inputs, a, c) => F.nllLoss(inputs[0], inputs[1], {
    weight: named(inputs, c, 'weight'), ignoreIndex: a.ignore_index, reduction: a.reduction,
  }),
  mse_loss: ([x, t], a) => F.mseLoss(x, t, { reduction: a.reduction }),
  l1_loss: ([x, t], a) => F.l1Loss(x, t, { reduction: a.reduction }),
  smooth_l1_loss: ([x, t], a) => F.smoothL1Loss(x, t, { reduction: a.reduction, beta: a.beta }),
  huber_loss: ([x, t], a) => F.huberLoss(x, t, { reduction: a.reduction, delta: a.delta }),
  binary_cross_entropy: (inputs, a, c) => F.binaryCrossEntropy(inputs[0], inputs[1], {
    weight: named(inputs, c, 'weight'), reduction: a.reduction,
  }),
  binary_cross_entropy_with_logits: (inputs, a, c) => F.binaryCrossEntropyWithLogits(inputs[0], inputs[1], {
    weight: named(inputs, c, 'weight'), posWeight: named(inputs, c, 'pos_weight'), reduction: a.reduction,
  }),
  kl_div: ([x, t], a) => F.klDiv(x, t, { reduction: a.reduction, logTarget: a.log_target }),
};
