// F.embedding: rows of a weight table picked by integer indices. Invariant: the output is
// weight[input] for every index; rows at `paddingIdx` receive no gradient (their value is still
// returned, as in PyTorch).

import { OpError, fmtShape } from '@kiln/ir-spec';
import type { Tensor } from '../tensor.js';
import { dispatch1 } from '../dispatch.js';
import * as E from '../ops/elementwise.js';
import { reshape, unsqueeze } from '../ops/shape.js';

/**
 * Looks up rows of `weight` ([num, dim]) for int32 `input` of any shape: the result has shape
 * [...input.shape, dim]. The weight gradient accumulates over repeated indices.
 * @example F.embedding(tensor([[0, 2]], { dtype: 'int32' }), weight, { paddingIdx: 0 })
 */
export function embedding(input: Tensor, weight: Tensor, opts: { paddingIdx?: number | null } = {}): Tensor {
  if (weight.ndim !== 2) throw new OpError('embedding', `weight must be 2-D [numEmbeddings, embeddingDim], got shape ${fmtShape(weight.shape)}`);
  if (input.dtype !== 'int32') throw new OpError('embedding', `input must hold int32 indices, got ${input.dtype}`);
  const [num, dim] = weight.shape;
  const flat = input.ndim === 1 ? input : reshape(input, [input.numel()]);
  const rows = reshape(dispatch1('index_select', [weight, flat], { dim: 0 }), [...input.shape, dim]);
  const p = opts.paddingIdx;
  if (p === undefined || p === null) return rows;
  if (!Number.isInteger(p) || p < -num || p >= num) {
    throw new OpError('embedding', `paddingIdx ${p} must be within the ${num} embeddings (${-num}..${num - 1})`);
  }
  // Padding rows keep their value but take it from a detached copy, so no gradient reaches them.
  const isPad = unsqueeze(E.eq(input, p < 0 ? p + num : p), -1);
  return E.where(isPad, rows.detach(), rows);
}
