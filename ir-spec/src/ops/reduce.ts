// Reductions over dims (`dim` null = all dims; `keepdim` keeps reduced dims as size 1).

import { z } from 'zod';
import { defineOp } from '../op-def.js';
import { normDims, OpError, type Dim, type TensorType } from '../shape.js';
import { allocate, type DType } from '../dtype.js';
import { planReduce, reduceSum } from '../kernels/reduce.js';

export const reduceAttrs = z.object({
  dim: z.union([z.number().int(), z.array(z.number().int())]).nullable().default(null),
  keepdim: z.boolean().default(false),
}).strict();

/** Output type of reducing `t` over `dim`. */
export function reducedType(op: string, t: TensorType | null, dim: number | number[] | null, keepdim: boolean, dtype?: DType): TensorType {
  if (!t) throw new OpError(op, 'input is required');
  const dims = normDims(op, dim, t.shape.length);
  const shape: Dim[] = [];
  t.shape.forEach((d, i) => {
    if (!dims.includes(i)) shape.push(d);
    else if (keepdim) shape.push(1);
  });
  return { dtype: dtype ?? t.dtype, shape };
}

export const sum = defineOp({
  name: 'sum', doc: 'sum over dims (bool/int sum to int32)', inputs: ['x'], attrs: reduceAttrs,
  infer([x], { dim, keepdim }) {
    return [reducedType('sum', x, dim, keepdim, x && x.dtype === 'bool' ? 'int32' : undefined)];
  },
  cpu([x], { dim, keepdim }) {
    const t = reducedType('sum', x, dim, keepdim, x!.dtype === 'bool' ? 'int32' : undefined);
    const plan = planReduce(x!.shape, normDims('sum', dim, x!.shape.length));
    const out = allocate(t.dtype, plan.outSize);
    reduceSum(x!.data, plan, out);
    return [{ data: out, shape: t.shape as number[], dtype: t.dtype }];
  },
  grad: {
    rule: (b, { gradOutputs: [g], inputTypes: [t], attrs: { dim, keepdim } }) => {
      if (!g) return [null];
      const shape = t!.shape;
      const kept = reducedType('sum', t, dim, true).shape;
      const gk = keepdim ? g : b.reshape(g, kept);
      return [b.expand(gk, shape)];
    },
  },
});
