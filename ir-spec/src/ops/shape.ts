// Shape ops: reshape (a view in eager), expand (broadcast copy), permute (copy).

import { z } from 'zod';
import { defineOp } from '../op-def.js';
import { fmtShape, normDim, numel, OpError, stridesOf, type Dim, type Shape, type TensorType } from '../shape.js';
import { allocate } from '../dtype.js';
import { broadcastIndex } from '../kernels/broadcast.js';

function need(op: string, t: TensorType | null): TensorType {
  if (!t) throw new OpError(op, 'input is required');
  return t;
}

const dimList = z.array(z.union([z.number().int(), z.string()]));

/** Resolves one `-1` in a requested shape against the input's element count. */
export function resolveShape(op: string, from: Shape, to: readonly Dim[]): Dim[] {
  const infer = to.filter((d) => d === -1).length;
  if (infer > 1) throw new OpError(op, `only one dimension can be -1, got ${fmtShape(to)}`);
  const concrete = from.every((d) => typeof d === 'number') && to.every((d) => typeof d === 'number');
  if (!concrete) return [...to];
  const total = numel(from);
  const known = (to as number[]).filter((d) => d !== -1).reduce((a, d) => a * d, 1);
  const out = [...to] as number[];
  if (infer) {
    if (known === 0 || total % known !== 0) throw new OpError(op, `shape ${fmtShape(to)} is invalid for input of size ${total} (shape ${fmtShape(from)})`);
    out[out.indexOf(-1)] = total / known;
  } else if (known !== total) {
    throw new OpError(op, `shape ${fmtShape(to)} is invalid for input of size ${total} (shape ${fmtShape(from)})`);
  }
  return out;
}

export const reshape = defineOp({
  name: 'reshape', doc: 'same elements in row-major order, new shape (one dim may be -1)',
  inputs: ['x'], attrs: z.object({ shape: dimList }).strict(),
  infer([x], { shape }) { const t = need('reshape', x); return [{ dtype: t.dtype, shape: resolveShape('reshape', t.shape, shape) }]; },
  cpu([x], { shape }) {
    return [{ data: x!.data, shape: resolveShape('reshape', x!.shape, shape) as number[], dtype: x!.dtype }];
  },
  grad: { rule: (b, { gradOutputs: [g], inputTypes: [t] }) => [g && b.reshape(g, t!.shape)] },
});

/** Target shape of expand: -1 keeps a dim; new leading dims are allowed. */
export function expandShape(op: string, from: Shape, to: readonly Dim[]): Dim[] {
  if (to.length < from.length) throw new OpError(op, `cannot expand ${fmtShape(from)} to fewer dims ${fmtShape(to)}`);
  const lead = to.length - from.length;
  return to.map((d, i) => {
    if (i < lead) {
      if (d === -1) throw new OpError(op, `-1 is not allowed for a new leading dim in ${fmtShape(to)}`);
      return d;
    }
    const s = from[i - lead];
    if (d === -1 || d === s) return s;
    if (s === 1) return d;
    throw new OpError(op, `cannot expand ${fmtShape(from)} to ${fmtShape(to)}: dim ${i} has size ${s}, not 1`);
  });
}

export const expand = defineOp({
  name: 'expand', doc: 'broadcast to a larger shape (-1 keeps a dim)',
  inputs: ['x'], attrs: z.object({ shape: dimList }).strict(),
  infer([x], { shape }) { const t = need('expand', x); return [{ dtype: t.dtype, shape: expandShape('expand', t.shape, shape) }]; },
  cpu([x], { shape }) {
    const out = expandShape('expand', x!.shape, shape) as number[];
    const n = numel(out), data = allocate(x!.dtype, n), src = x!.data;
    if (src.length === 1) data.fill(src[0]);
    else {
      const [idx] = broadcastIndex([x!.shape], out);
      for (let i = 0; i < n; i++) data[i] = src[idx[i]];
    }
    return [{ data, shape: out, dtype: x!.dtype }];
  },
  grad: { rule: (b, { gradOutputs: [g], inputTypes: [t] }) => [g && b.sumToShape(g, t!.shape)] },
});

export const permute = defineOp({
  name: 'permute', doc: 'reorders dims: out.shape[i] = x.shape[dims[i]]',
  inputs: ['x'], attrs: z.object({ dims: z.array(z.number().int()) }).strict(),
  infer([x], { dims }) {
    const t = need('permute', x);
    const d = checkPerm(t.shape.length, dims);
    return [{ dtype: t.dtype, shape: d.map((i) => t.shape[i]) }];
  },
  cpu([x], { dims }) {
    const d = checkPerm(x!.shape.length, dims);
    const shape = d.map((i) => x!.shape[i]);
    const st = stridesOf(x!.shape);
    const n = numel(shape), src = x!.data, out = allocate(x!.dtype, n);
    const pst = d.map((i) => st[i]);
    const r = shape.length;
    if (r === 0) { out[0] = src[0]; return [{ data: out, shape, dtype: x!.dtype }]; }
    // Walk the output in order; the innermost loop is unrolled over the last output dim.
    const inner = shape[r - 1], istride = pst[r - 1];
    const pos = new Array<number>(r).fill(0);
    let off = 0;
    for (let o = 0; o < n; o += inner) {
      for (let k = 0, s = off; k < inner; k++, s += istride) out[o + k] = src[s];
      for (let dd = r - 2; dd >= 0; dd--) {
        pos[dd]++; off += pst[dd];
        if (pos[dd] < shape[dd]) break;
        off -= pst[dd] * shape[dd]; pos[dd] = 0;
      }
    }
    return [{ data: out, shape, dtype: x!.dtype }];
  },
  grad: {
    rule: (b, { gradOutputs: [g], attrs: { dims }, inputTypes: [t] }) => {
      if (!g) return [null];
      const d = checkPerm(t!.shape.length, dims);
      const inv = new Array<number>(d.length);
      d.forEach((p, i) => { inv[p] = i; });
      return [b.permute(g, inv)];
    },
  },
});

function checkPerm(rank: number, dims: readonly number[]): number[] {
  if (dims.length !== rank) throw new OpError('permute', `dims ${fmtShape(dims)} must list all ${rank} dims`);
  const d = dims.map((x) => normDim('permute', x, rank));
  if (new Set(d).size !== rank) throw new OpError('permute', `dims ${fmtShape(dims)} repeat a dim`);
  return d;
}
