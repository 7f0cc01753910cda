// Reductions over dims (`dim` null = all dims; `keepdim` keeps reduced dims as size 1): sum,
// amax/amin, prod, argmax/argmin (int32 indices), and the scan cumsum. mean/var/std/softmax/...
// are composites in packages/core over these.

import * as z from 'zod';
import { defineOp } from '../op-def.js';
import { normDim, normDims, numel, fmtShape, OpError, type Dim, type TensorType } from '../shape.js';
import { allocate, type DType } from '../dtype.js';
import { argExtreme, cumsumKernel, planReduce, reduceProd } from '../kernels/reduce.js';
import { primitivesOf } from '../kernels/primitives.js';
import { splitAt } from '../kernels/strided.js';
import type { GradBuilder } from '../grad-builder.js';

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
  cpu([x], { dim, keepdim }, ctx) {
    const t = reducedType('sum', x, dim, keepdim, x!.dtype === 'bool' ? 'int32' : undefined);
    const dims = normDims('sum', dim, x!.shape.length);
    const out = allocate(t.dtype, numel(t.shape as number[]));
    primitivesOf(ctx).sum(x!.data, x!.shape, dims, out);
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

// ---- amax / amin ---------------------------------------------------------------------------

/** amax/amin: the gradient is split evenly among the elements equal to the result (PyTorch). */
function defineExtreme(name: 'amax' | 'amin', max: boolean) {
  return defineOp({
    name, doc: `${max ? 'maximum' : 'minimum'} over dims (NaN propagates); ties share the gradient evenly`,
    inputs: ['x'], attrs: reduceAttrs,
    infer([x], { dim, keepdim }) { return [reducedType(name, x, dim, keepdim)]; },
    cpu([x], { dim, keepdim }, ctx) {
      const t = reducedType(name, x, dim, keepdim);
      const dims = normDims(name, dim, x!.shape.length), outSize = numel(t.shape as number[]);
      if (dims.some((d) => x!.shape[d] === 0) && outSize > 0) {
        throw new OpError(name, `cannot reduce an empty dimension of shape ${fmtShape(x!.shape)} (dim ${JSON.stringify(dim)}): there is no identity for ${name}`);
      }
      const out = allocate(t.dtype, outSize);
      if (outSize > 0) primitivesOf(ctx).extreme(x!.data, x!.shape, dims, out, max);
      return [{ data: out, shape: t.shape as number[], dtype: t.dtype }];
    },
    grad: {
      saveInputs: [0], saveOutputs: [0],
      rule: (b, { gradOutputs: [g], inputs: [x], outputs: [y], inputTypes: [t], attrs: { dim, keepdim } }) => {
        if (!g) return [null];
        const dims = normDims(name, dim, t!.shape.length);
        const kept = reducedType(name, t, dim, true).shape;
        const yk = keepdim ? y! : b.reshape(y!, kept), gk = keepdim ? g : b.reshape(g, kept);
        const hit = b.cast(b.compare('eq', x!, yk), b.dtype(g));
        return [b.mul(b.div(gk, b.sum(hit, dims, true)), hit)];
      },
    },
  });
}

export const amax = defineExtreme('amax', true);
export const amin = defineExtreme('amin', false);

// ---- argmax / argmin -----------------------------------------------------------------------

const argAttrs = z.object({
  dim: z.number().int().nullable().default(null),
  keepdim: z.boolean().default(false),
}).strict();

/** Output type of argmax/argmin: `dim` null indexes the flattened tensor. */
function argType(op: string, x: TensorType | null, dim: number | null, keepdim: boolean): TensorType {
  if (!x) throw new OpError(op, 'input is required');
  if (dim === null) return { dtype: 'int32', shape: keepdim ? x.shape.map(() => 1) : [] };
  return reducedType(op, x, dim, keepdim, 'int32');
}

function defineArg(name: 'argmax' | 'argmin', max: boolean) {
  return defineOp({
    name, doc: `int32 index of the first ${max ? 'maximum' : 'minimum'} along dim (null: of the flattened tensor)`,
    inputs: ['x'], attrs: argAttrs,
    infer([x], { dim, keepdim }) { return [argType(name, x, dim, keepdim)]; },
    cpu([x], { dim, keepdim }) {
      const t = argType(name, x, dim, keepdim);
      const shape = x!.shape;
      const { outer, size, inner } = dim === null
        ? { outer: 1, size: x!.data.length, inner: 1 }
        : splitAt(shape, shape.length ? normDim(name, dim, shape.length) : 0);
      if (size === 0 && outer * inner > 0) {
        throw new OpError(name, `cannot take ${name} of an empty dimension (shape ${fmtShape(shape)}, dim ${dim})`);
      }
      const out = new Int32Array(outer * inner);
      argExtreme(x!.data, outer, size, inner, out, max);
      return [{ data: out, shape: t.shape as number[], dtype: 'int32' }];
    },
    grad: null,
  });
}

export const argmax = defineArg('argmax', true);
export const argmin = defineArg('argmin', false);

// ---- prod ----------------------------------------------------------------------------------

export const prod = defineOp({
  name: 'prod', doc: 'product over dims (bool/int give int32)', inputs: ['x'], attrs: reduceAttrs,
  infer([x], { dim, keepdim }) {
    return [reducedType('prod', x, dim, keepdim, x && x.dtype === 'bool' ? 'int32' : undefined)];
  },
  cpu([x], { dim, keepdim }) {
    const t = reducedType('prod', x, dim, keepdim, x!.dtype === 'bool' ? 'int32' : undefined);
    const plan = planReduce(x!.shape, normDims('prod', dim, x!.shape.length));
    const out = allocate(t.dtype, plan.outSize);
    reduceProd(x!.data, plan, out);
    return [{ data: out, shape: t.shape as number[], dtype: t.dtype }];
  },
  grad: {
    saveInputs: [0], saveOutputs: [0],
    rule: (b, { gradOutputs: [g], inputs: [x], outputs: [y], inputTypes: [t], attrs: { dim, keepdim } }) => {
      if (!g) return [null];
      const kept = reducedType('prod', t, dim, true).shape;
      const yk = keepdim ? y! : b.reshape(y!, kept), gk = keepdim ? g : b.reshape(g, kept);
      return [b.mul(gk, prodGradFactor(b, x!, yk, normDims('prod', dim, t!.shape.length)))];
    },
  },
});

/**
 * d prod / d x_i = product of the other elements. y / x_i is that product unless x_i is 0; at a
 * zero it is the product of the nonzero elements when x_i is the group's only zero, else 0.
 */
function prodGradFactor<T>(b: GradBuilder<T>, x: T, yk: T, dims: number[]): T {
  const dt = b.dtype(x);
  const isZero = b.compare('eq', x, b.scalar(0, dt));
  const safeX = b.where(isZero, b.scalar(1, dt), x);
  const nonzeroProd = b.op('prod', [safeX], { dim: dims, keepdim: true });
  const loneZero = b.compare('eq', b.sum(isZero, dims, true), b.scalar(1, 'int32'));
  const atZero = b.where(loneZero, nonzeroProd, b.scalar(0, dt));
  return b.where(isZero, atZero, b.div(yk, safeX));
}

// ---- cumsum --------------------------------------------------------------------------------

export const cumsum = defineOp({
  name: 'cumsum', doc: 'inclusive prefix sums along dim (bool/int give int32)',
  inputs: ['x'], attrs: z.object({ dim: z.number().int() }).strict(),
  infer([x], { dim }) {
    if (!x) throw new OpError('cumsum', 'input is required');
    normDim('cumsum', dim, x.shape.length);
    return [{ dtype: x.dtype === 'float32' ? 'float32' : 'int32', shape: x.shape }];
  },
  cpu([x], { dim }) {
    const shape = x!.shape, dtype = x!.dtype === 'float32' ? 'float32' : 'int32';
    const d = normDim('cumsum', dim, shape.length);
    const { outer, size, inner } = splitAt(shape, shape.length ? d : 0);
    const out = allocate(dtype, x!.data.length);
    cumsumKernel(x!.data, outer, size, inner, out);
    return [{ data: out, shape, dtype }];
  },
  grad: {
    // The gradient of a prefix sum is the suffix sum of g: flip, cumsum, flip back.
    rule: (b, { gradOutputs: [g], inputTypes: [t], attrs: { dim } }) => {
      if (!g) return [null];
      if (!t!.shape.length) return [g];
      const d = normDim('cumsum', dim, t!.shape.length);
      const flipped = b.op('flip', [g], { dims: [d] });
      return [b.op('flip', [b.op('cumsum', [flipped], { dim: d })], { dims: [d] })];
    },
  },
});
