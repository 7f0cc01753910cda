// Index-based ops. Forward: index_select, gather, masked_select, tril, triu. Their gradients
// need the scatter direction, which PyTorch also has as ops: index_add (index_select's gradient,
// accumulating duplicate indices), scatter_add (gather's) and masked_scatter (masked_select's).
// Index tensors are int32; masks are bool. masked_select's length is data dependent: its shape
// rule returns the symbolic dim 'nnz' and the kernel the concrete one.

import * as z from 'zod';
import { defineOp, outputBuffer } from '../op-def.js';
import { broadcastShapes, fmtShape, normDim, numel, OpError, sameDim, type Dim, type TensorType } from '../shape.js';
import { allocate } from '../dtype.js';
import type { GradBuilder } from '../grad-builder.js';
import { splitAt } from '../kernels/strided.js';
import {
  checkIndices, gatherKernel, indexAddKernel, indexSelectKernel, maskedScatterKernel, maskedSelectKernel,
  scatterAddKernel, triangleKernel,
} from '../kernels/gather.js';

function need(op: string, t: TensorType | null, name: string): TensorType {
  if (!t) throw new OpError(op, `input '${name}' is required`);
  return t;
}
function needIndex(op: string, t: TensorType | null): TensorType {
  const i = need(op, t, 'index');
  if (i.dtype !== 'int32') throw new OpError(op, `index must be an int32 tensor, got ${i.dtype}`);
  return i;
}
function needMask(op: string, t: TensorType | null): TensorType {
  const m = need(op, t, 'mask');
  if (m.dtype !== 'bool') throw new OpError(op, `mask must be a bool tensor, got ${m.dtype}`);
  return m;
}
/** A zero tensor of `shape` written with ops (so graph autodiff can build it too). */
const zerosOf = <T>(b: GradBuilder<T>, shape: readonly Dim[], dtype: 'float32' | 'int32' = 'float32'): T =>
  b.expand(b.scalar(0, dtype), shape);

const dimAttrs = z.object({ dim: z.number().int() }).strict();

// ---- index_select / index_add --------------------------------------------------------------

/** index_select's result type: dim `d` of x becomes the index length (a 0-d index counts as 1). */
function indexSelectType(op: string, x: TensorType, index: TensorType, dim: number): TensorType {
  if (index.shape.length > 1) throw new OpError(op, `index must be 0-d or 1-d, got shape ${fmtShape(index.shape)}`);
  const d = normDim(op, dim, x.shape.length);
  const k = index.shape.length ? index.shape[0] : 1;
  return { dtype: x.dtype, shape: x.shape.length ? x.shape.map((s, i) => (i === d ? k : s)) : [] };
}

export const indexSelect = defineOp({
  name: 'index_select', doc: 'slices of x along dim at the positions in a 1-D int32 index',
  inputs: ['x', 'index'], attrs: dimAttrs,
  infer([x, index], { dim }) {
    return [indexSelectType('index_select', need('index_select', x, 'x'), needIndex('index_select', index), dim)];
  },
  cpu([x, index], { dim }) {
    const t = indexSelectType('index_select', x!, index!, dim);
    const d = normDim('index_select', dim, x!.shape.length);
    const split = splitAt(x!.shape, d);
    checkIndices('index_select', index!.data, split.size, d);
    const out = allocate(x!.dtype, numel(t.shape));
    indexSelectKernel(x!.data, split, index!.data, out);
    return [{ data: out, shape: t.shape as number[], dtype: x!.dtype }];
  },
  grad: {
    saveInputs: [1],
    rule: (b, { gradOutputs: [g], inputs: [, index], inputTypes: [t], attrs: { dim } }) =>
      [g && b.op('index_add', [zerosOf(b, t!.shape), index!, g], { dim })],
  },
});

export const indexAdd = defineOp({
  name: 'index_add', doc: 'x with src slice j added at position index[j] along dim (duplicates accumulate)',
  inputs: ['x', 'index', 'src'], attrs: dimAttrs,
  infer([x, index, src], { dim }) {
    const tx = need('index_add', x, 'x'), ts = need('index_add', src, 'src');
    const want = indexSelectType('index_add', tx, needIndex('index_add', index), dim);
    if (ts.shape.length !== want.shape.length || ts.shape.some((s, i) => !sameDim(s, want.shape[i]))) {
      throw new OpError('index_add', `src has shape ${fmtShape(ts.shape)}; for x ${fmtShape(tx.shape)} and an index of shape ${fmtShape(index!.shape)} along dim ${dim} it must be ${fmtShape(want.shape)}`);
    }
    return [{ dtype: tx.dtype, shape: tx.shape }];
  },
  cpu([x, index, src], { dim }) {
    const d = normDim('index_add', dim, x!.shape.length);
    const split = splitAt(x!.shape, d);
    checkIndices('index_add', index!.data, split.size, d);
    const out = allocate(x!.dtype, x!.data.length);
    out.set(x!.data);
    indexAddKernel(out, split, index!.data, src!.data);
    return [{ data: out, shape: x!.shape, dtype: x!.dtype }];
  },
  grad: {
    saveInputs: [1],
    rule: (b, { gradOutputs: [g], inputs: [, index], attrs: { dim }, needsInputGrad: [nx, , ns] }) => {
      if (!g) return [null, null, null];
      return [nx ? g : null, null, ns ? b.op('index_select', [g, index!], { dim }) : null];
    },
  },
});

// ---- gather / scatter_add ------------------------------------------------------------------

/** PyTorch's rule: same rank, and index no larger than `other` in every dim except (maybe) dim. */
function checkFits(op: string, index: TensorType, other: TensorType, otherName: string, d: number, exceptDim: boolean): void {
  if (index.shape.length !== other.shape.length) {
    throw new OpError(op, `index ${fmtShape(index.shape)} and ${otherName} ${fmtShape(other.shape)} must have the same number of dims`);
  }
  index.shape.forEach((s, i) => {
    const o = other.shape[i];
    if ((!exceptDim || i !== d) && typeof s === 'number' && typeof o === 'number' && s > o) {
      throw new OpError(op, `index ${fmtShape(index.shape)} is larger than ${otherName} ${fmtShape(other.shape)} in dim ${i}`);
    }
  });
}

export const gather = defineOp({
  name: 'gather', doc: 'out[p] = x[p with p[dim] = index[p]]; out has the index\'s shape',
  inputs: ['x', 'index'], attrs: dimAttrs,
  infer([x, index], { dim }) {
    const tx = need('gather', x, 'x'), ti = needIndex('gather', index);
    const d = normDim('gather', dim, tx.shape.length);
    checkFits('gather', ti, tx, 'input', d, true);
    return [{ dtype: tx.dtype, shape: ti.shape }];
  },
  cpu([x, index], { dim }) {
    const d = normDim('gather', dim, x!.shape.length);
    checkFits('gather', index!, x!, 'input', d, true);
    checkIndices('gather', index!.data, x!.shape.length ? x!.shape[d] : 1, d);
    const out = allocate(x!.dtype, index!.data.length);
    gatherKernel(x!.data, x!.shape, index!.data, index!.shape, d, out);
    return [{ data: out, shape: index!.shape, dtype: x!.dtype }];
  },
  grad: {
    saveInputs: [1],
    rule: (b, { gradOutputs: [g], inputs: [, index], inputTypes: [t], attrs: { dim } }) =>
      [g && b.op('scatter_add', [zerosOf(b, t!.shape), index!, g], { dim })],
  },
});

export const scatterAdd = defineOp({
  name: 'scatter_add', doc: 'x plus src[p] added at (p with p[dim] = index[p]) for each position p of index',
  inputs: ['x', 'index', 'src'], attrs: dimAttrs,
  infer([x, index, src], { dim }) {
    const tx = need('scatter_add', x, 'x'), ti = needIndex('scatter_add', index), ts = need('scatter_add', src, 'src');
    const d = normDim('scatter_add', dim, tx.shape.length);
    checkFits('scatter_add', ti, tx, 'input', d, true);
    checkFits('scatter_add', ti, ts, 'src', d, false);
    return [{ dtype: tx.dtype, shape: tx.shape }];
  },
  cpu([x, index, src], { dim }, ctx) {
    const d = normDim('scatter_add', dim, x!.shape.length);
    checkFits('scatter_add', index!, x!, 'input', d, true);
    checkFits('scatter_add', index!, src!, 'src', d, false);
    checkIndices('scatter_add', index!.data, x!.shape.length ? x!.shape[d] : 1, d);
    // An arena slot when offered (never an input: scatter_add is not planned in place).
    const out = outputBuffer(ctx, 0, x!.dtype, x!.data.length);
    out.set(x!.data);
    scatterAddKernel(out, x!.shape, index!.data, index!.shape, src!.data, src!.shape, d);
    return [{ data: out, shape: x!.shape, dtype: x!.dtype }];
  },
  grad: {
    saveInputs: [1],
    rule: (b, { gradOutputs: [g], inputs: [, index], inputTypes: [, , ts], attrs: { dim }, needsInputGrad: [nx, , ns] }) => {
      if (!g) return [null, null, null];
      // src positions outside the index's extent were never read: their gradient is zero.
      const gs = ns ? padTo(b, b.op('gather', [g, index!], { dim }), ts!.shape) : null;
      return [nx ? g : null, null, gs];
    },
  },
});

/** Zero-pads `g` at the end of every dim up to `shape` (slice_backward, one dim at a time). */
function padTo<V>(b: GradBuilder<V>, g: V, shape: readonly Dim[]): V {
  let cur = g;
  shape.forEach((s, i) => {
    const have = b.shape(cur);
    if (have[i] === s) return;
    const full = have.map((h, k) => (k === i ? s : h));
    cur = b.op('slice_backward', [cur], { shape: [...full], dim: i, start: 0, end: have[i], step: 1 });
  });
  return cur;
}

// ---- masked_select / masked_scatter --------------------------------------------------------

export const maskedSelect = defineOp({
  name: 'masked_select', doc: '1-D tensor of the elements of x (broadcast with mask) where mask is true',
  inputs: ['x', 'mask'], attrs: z.object({}).strict(),
  dataDims: {
    // Broadcasting repeats every mask element numel(x ⊕ mask) / numel(mask) times.
    reads: [1],
    dims([x, mask], [m]) {
      const all = numel(broadcastShapes('masked_select', x!.shape, mask!.shape));
      let trues = 0;
      for (let k = 0; k < m.length; k++) if (m[k] !== 0) trues++;
      return { nnz: m.length ? (trues * all) / m.length : 0 };
    },
  },
  infer([x, mask]) {
    const tx = need('masked_select', x, 'x');
    broadcastShapes('masked_select', tx.shape, needMask('masked_select', mask).shape);
    return [{ dtype: tx.dtype, shape: ['nnz'] }];
  },
  cpu([x, mask]) {
    const shape = broadcastShapes('masked_select', x!.shape, needMask('masked_select', mask).shape) as number[];
    const data = maskedSelectKernel(x!.data, x!.shape, mask!.data, mask!.shape, shape, numel(shape), (n) => allocate(x!.dtype, n));
    return [{ data, shape: [data.length], dtype: x!.dtype }];
  },
  grad: {
    saveInputs: [1],
    rule: (b, { gradOutputs: [g], inputs: [, mask], inputTypes: [t, tm] }) => {
      if (!g) return [null, null];
      const shape = broadcastShapes('masked_select', t!.shape, tm!.shape);
      return [b.op('masked_scatter', [zerosOf(b, shape), mask!, g]), null];
    },
  },
});

export const maskedScatter = defineOp({
  name: 'masked_scatter', doc: 'x (broadcast with mask) with the masked positions filled by src\'s elements in order',
  inputs: ['x', 'mask', 'src'], attrs: z.object({}).strict(),
  infer([x, mask, src]) {
    const tx = need('masked_scatter', x, 'x'), ts = need('masked_scatter', src, 'src');
    if (ts.dtype !== tx.dtype) throw new OpError('masked_scatter', `src dtype ${ts.dtype} must match x dtype ${tx.dtype}`);
    return [{ dtype: tx.dtype, shape: broadcastShapes('masked_scatter', tx.shape, needMask('masked_scatter', mask).shape) }];
  },
  cpu([x, mask, src]) {
    const shape = broadcastShapes('masked_scatter', x!.shape, mask!.shape) as number[];
    const n = numel(shape), out = allocate(x!.dtype, n);
    maskedScatterKernel(x!.data, x!.shape, mask!.data, mask!.shape, shape, n, src!.data, out);
    return [{ data: out, shape, dtype: x!.dtype }];
  },
  grad: {
    saveInputs: [1],
    rule: (b, { gradOutputs: [g], inputs: [, mask], inputTypes: [, , ts], needsInputGrad: [nx, , ns] }) => {
      if (!g) return [null, null, null];
      const gx = nx ? b.where(mask!, b.scalar(0, b.dtype(g)), g) : null;
      // src elements past the selected count were never used: their gradient is zero.
      const gs = ns ? b.reshape(padTo(b, b.op('masked_select', [g, mask!]), [numel(ts!.shape)]), ts!.shape) : null;
      return [gx, null, gs];
    },
  },
});

// ---- tril / triu ---------------------------------------------------------------------------

function defineTriangle(name: 'tril' | 'triu', upper: boolean) {
  return defineOp({
    name, doc: `${upper ? 'upper' : 'lower'} triangle of the last two dims (diagonal offsets it); the rest is zero`,
    inputs: ['x'], attrs: z.object({ diagonal: z.number().int().default(0) }).strict(),
    infer([x]) {
      const t = need(name, x, 'x');
      if (t.shape.length < 2) throw new OpError(name, `input must have at least 2 dims, got shape ${fmtShape(t.shape)}`);
      return [t];
    },
    cpu([x], { diagonal }) {
      const s = x!.shape;
      if (s.length < 2) throw new OpError(name, `input must have at least 2 dims, got shape ${fmtShape(s)}`);
      const out = allocate(x!.dtype, x!.data.length);
      triangleKernel(x!.data, s[s.length - 2], s[s.length - 1], diagonal, upper, out);
      return [{ data: out, shape: s, dtype: x!.dtype }];
    },
    grad: { rule: (b, { gradOutputs: [g], attrs: { diagonal } }) => [g && b.op(name, [g], { diagonal })] },
  });
}

export const tril = defineTriangle('tril', false);
export const triu = defineTriangle('triu', true);
