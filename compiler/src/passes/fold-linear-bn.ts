// Pass `fold-linear-bn`: batch_norm(linear(x, W, b)) over [N, F] → linear(x, W', b'), with the
// same algebra as fold-conv-bn (one output feature = one channel). Invariant: as fold-conv-bn.

import type { Graph } from '@kiln/ir-spec';
import { applyRules } from '../patterns.js';
import { foldBnRule } from './fold-conv-bn.js';

/**
 * Folds `batch_norm(linear(x, W, b))` into `linear(x, W', b')`.
 *
 * @example
 * foldLinearBn(freeze(g)); // BatchNorm1d after a Linear is gone
 */
export function foldLinearBn(g: Graph): Graph {
  return applyRules(g, [foldBnRule('linear')], { label: 'fold-linear-bn' }).graph;
}
