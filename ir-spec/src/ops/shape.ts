// Shape ops: reshape (a view in eager), expand (broadcast copy), permute (copy), slice and its
// gradient slice_backward, cat (variadic), flip. Everything else shape-like (squeeze, stack,
// split, repeat, getitem...) is a composite in packages/core over these.

import * as z from 'zod';
import { defineOp } from '../op-def.js';
import { dimProduct, dimSum, fmtShape, normDim, normDims, numel, OpError, sameDim, stridesOf, type Dim, type Shape, type TensorType } from '../shape.js';
import { canonicalDim, DimError, dimDivExact, sliceDim } from '../ir/dims.js';
import { allocate, promoteTypes } from '../dtype.js';
import { broadcastIndex } from '../kernels/broadcast.js';
import { copyRun, splitAt, stridedCopy, stridedScatter } from '../kernels/strided.js';

function need(op: string, t: TensorType | null): TensorType {
  if (!t) throw new OpError(op, 'input is required');
  return t;
}

const dimList = z.array(z.union([z.number().int(), z.string()]));

/**
 * Resolves one `-1` in a requested shape against the input's element count. Symbolic shapes
 * are solved as expressions: `[N,128,8,8]` to `[-1, 8192]` or `[N, -1]` gives `[N, 8192]`; the
 * `-1` must divide out exactly and the element counts must agree, or the error names both shapes.
 */
export function resolveShape(op: string, from: Shape, to: readonly Dim[]): Dim[] {
  const infer = to.filter((d) => d === -1).length;
  if (infer > 1) throw new OpError(op, `only one dimension can be -1, got ${fmtShape(to)}`);
  const concrete = from.every((d) => typeof d === 'number') && to.every((d) => typeof d === 'number');
  if (!concrete) return resolveSymbolic(op, from, to, infer > 0);
  if (to.some((d) => (d as number) < -1)) throw new OpError(op, `invalid shape dimension in ${fmtShape(to)}: sizes must be >= 0 (or -1 for one inferred dim)`);
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

/** A dim of a `shape` attribute in canonical form; the error names the op and the attribute. */
function attrDim(op: string, d: Dim, to: readonly Dim[]): Dim {
  if (typeof d === 'number') return d;
  let c: Dim;
  try {
    c = canonicalDim(d);
  } catch (e) {
    if (e instanceof DimError) throw new OpError(op, `invalid dim in shape ${fmtShape(to)}: ${e.message}`);
    throw e;
  }
  if (typeof c === 'number' && c < 0) throw new OpError(op, `invalid shape dimension '${d}' in ${fmtShape(to)}: sizes must be >= 0`);
  return c;
}

function resolveSymbolic(op: string, from: Shape, to: readonly Dim[], infer: boolean): Dim[] {
  const out = to.map((d) => {
    if (typeof d === 'number' && d < -1) throw new OpError(op, `invalid shape dimension in ${fmtShape(to)}: sizes must be >= 0 (or -1 for one inferred dim)`);
    return attrDim(op, d, to);
  });
  const total = dimProduct(from);
  const known = dimProduct(out.filter((d) => d !== -1));
  if (infer) {
    const q = dimDivExact(total, known);
    if (q === undefined) {
      throw new OpError(op, `cannot infer the -1 in shape ${fmtShape(to)} for input of shape ${fmtShape(from)}: its ${total} elements are not a whole multiple of ${known}; give that size explicitly or make the dims concrete`);
    }
    out[out.indexOf(-1)] = q;
  } else if (!sameDim(total, known)) {
    throw new OpError(op, `shape ${fmtShape(to)} is invalid for input of shape ${fmtShape(from)}: ${known} elements vs ${total}`);
  }
  return out;
}

export const reshape = defineOp({
  name: 'reshape', doc: 'same elements in row-major order, new shape (one dim may be -1)',
  inputs: ['x'], attrs: z.object({ shape: dimList }).strict(),
  view: () => true,
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
      return attrDim(op, d, to);
    }
    const s = from[i - lead];
    if (d === -1) return s;
    const c = attrDim(op, d, to);
    if (sameDim(c, s)) return s;
    if (s === 1) return c;
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
    else if (src.length === n) data.set(src); // same size: only 1-dims were added (copy_ of a same-shape tensor)
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

// ---- slice ---------------------------------------------------------------------------------

const sliceAttrs = z.object({
  dim: z.number().int(),
  start: z.number().int().nullable().default(null),
  end: z.number().int().nullable().default(null),
  step: z.number().int().default(1),
}).strict();

/**
 * PyTorch's slice bounds on a dim of `size`: negative bounds count from the end, out-of-range
 * bounds are clamped (never an error), an empty range gives length 0. Steps must be positive.
 */
export function sliceRange(op: string, size: number, start: number | null, end: number | null, step: number): { start: number; length: number } {
  if (step <= 0) throw new OpError(op, `slice step must be positive, got ${step} (negative steps are not supported; use flip)`);
  let s = start ?? 0, e = end ?? size;
  if (s < 0) s += size;
  if (e < 0) e += size;
  s = Math.min(Math.max(s, 0), size);
  e = Math.min(Math.max(e, s), size);
  return { start: s, length: Math.ceil((e - s) / step) };
}

/**
 * Size of the sliced dim. A symbolic size is kept by the full slice; any other slice of it
 * gives the derived symbol `d[start:end:step]` (e.g. `T[1::1]`), because clamping makes the
 * length depend on the size (`T-1` would be wrong for T = 0); the runtime evaluates it.
 */
function slicedDim(op: string, d: Dim, start: number | null, end: number | null, step: number): Dim {
  if (typeof d === 'number') return sliceRange(op, d, start, end, step).length;
  if (step <= 0) throw new OpError(op, `slice step must be positive, got ${step}`);
  return sliceDim(d, start, end, step);
}

/** Element offset of the first kept element and the strides that walk a slice of `shape`. */
function slicePlan(shape: readonly number[], dim: number, start: number, step: number): { offset: number; strides: number[] } {
  const strides = stridesOf(shape);
  const offset = start * strides[dim];
  strides[dim] *= step;
  return { offset, strides };
}

export const slice = defineOp({
  name: 'slice', doc: 'elements start, start+step, ... < end along dim (Python slice bounds, clamped)',
  inputs: ['x'], attrs: sliceAttrs,
  infer([x], { dim, start, end, step }) {
    const t = need('slice', x);
    if (!t.shape.length) throw new OpError('slice', 'cannot slice a 0-d tensor');
    const d = normDim('slice', dim, t.shape.length);
    return [{ dtype: t.dtype, shape: t.shape.map((s, i) => (i === d ? slicedDim('slice', s, start, end, step) : s)) }];
  },
  cpu([x], { dim, start, end, step }) {
    const shape = x!.shape;
    if (!shape.length) throw new OpError('slice', 'cannot slice a 0-d tensor');
    const d = normDim('slice', dim, shape.length);
    const r = sliceRange('slice', shape[d], start, end, step);
    const outShape = shape.map((s, i) => (i === d ? r.length : s));
    const out = allocate(x!.dtype, numel(outShape));
    const { offset, strides } = slicePlan(shape, d, r.start, step);
    stridedCopy(x!.data, outShape, strides, offset, out);
    return [{ data: out, shape: outShape, dtype: x!.dtype }];
  },
  grad: {
    rule: (b, { gradOutputs: [g], inputTypes: [t], attrs }) =>
      [g && b.op('slice_backward', [g], { ...attrs, shape: [...t!.shape] })],
  },
});

export const sliceBackward = defineOp({
  name: 'slice_backward', doc: 'zeros of `shape` with g written where slice(dim, start, end, step) reads',
  inputs: ['g'], attrs: sliceAttrs.extend({ shape: dimList }),
  infer([g], { shape, dim, start, end, step }) {
    const t = need('slice_backward', g);
    const d = normDim('slice_backward', dim, shape.length);
    const want = shape.map((s, i) => (i === d ? slicedDim('slice_backward', s, start, end, step) : s));
    if (t.shape.length !== want.length || t.shape.some((s, i) => !sameDim(s, want[i]))) {
      throw new OpError('slice_backward', `gradient of shape ${fmtShape(t.shape)} does not fit slice dim ${d} of ${fmtShape(shape)} (expected ${fmtShape(want)})`);
    }
    return [{ dtype: t.dtype, shape: shape.map((s) => attrDim('slice_backward', s, shape)) }];
  },
  cpu([g], { shape, dim, start, step, end }) {
    const full = shape as number[];
    const d = normDim('slice_backward', dim, full.length);
    const r = sliceRange('slice_backward', full[d], start, end, step);
    const out = allocate(g!.dtype, numel(full));
    const { offset, strides } = slicePlan(full, d, r.start, step);
    stridedScatter(g!.data, g!.shape, strides, offset, out);
    return [{ data: out, shape: full, dtype: g!.dtype }];
  },
  grad: {
    rule: (b, { gradOutputs: [gg], attrs: { dim, start, end, step } }) =>
      [gg && b.op('slice', [gg], { dim, start, end, step })],
  },
});

// ---- cat -----------------------------------------------------------------------------------

/** Checks cat's inputs; returns the normalized dim. The error lists every input's shape. */
function checkCat(ts: readonly (TensorType | null)[], dim: number): number {
  if (!ts.length) throw new OpError('cat', 'expects a non-empty list of tensors');
  const shapes = ts.map((t) => fmtShape(need('cat', t).shape));
  const first = ts[0]!.shape;
  if (!first.length) throw new OpError('cat', `zero-dimensional tensors cannot be concatenated (shapes ${shapes.join(', ')}); unsqueeze them or use stack`);
  const d = normDim('cat', dim, first.length);
  ts.forEach((t, i) => {
    const s = t!.shape;
    if (s.length !== first.length || s.some((v, k) => k !== d && !sameDim(v, first[k]))) {
      throw new OpError('cat', `tensors must have the same shape except in dim ${d}, but tensor ${i} has shape ${fmtShape(s)} and tensor 0 has ${fmtShape(first)} (all shapes: ${shapes.join(', ')})`);
    }
  });
  return d;
}

export const cat = defineOp({
  name: 'cat', doc: 'concatenation along dim (dtypes promote)',
  inputs: ['...xs'], attrs: z.object({ dim: z.number().int().default(0) }).strict(),
  infer(xs, { dim }) {
    const d = checkCat(xs, dim);
    // Along a symbolic dim the size is the sum as an expression: `N+M`, `N*2`, `T+1`.
    const total = dimSum(xs.map((t) => t!.shape[d]));
    return [{
      dtype: xs.map((t) => t!.dtype).reduce(promoteTypes),
      shape: xs[0]!.shape.map((s, i) => (i === d ? total : s)),
    }];
  },
  cpu(xs, { dim }) {
    const d = checkCat(xs, dim);
    const dtype = xs.map((t) => t!.dtype).reduce(promoteTypes);
    const shape = xs[0]!.shape.map((s, i) => (i === d ? xs.reduce((a, t) => a + t!.shape[d], 0) : s));
    const { outer, inner } = splitAt(shape, d);
    const rowLen = shape[d] * inner;
    const out = allocate(dtype, numel(shape));
    let at = 0;
    for (const t of xs) {
      const run = t!.shape[d] * inner, src = t!.data;
      for (let o = 0; o < outer; o++) copyRun(src, o * run, out, o * rowLen + at, run);
      at += run;
    }
    return [{ data: out, shape, dtype }];
  },
  grad: {
    rule: (b, { gradOutputs: [g], inputTypes, attrs: { dim }, needsInputGrad }) => {
      if (!g) return inputTypes.map(() => null);
      const d = normDim('cat', dim, inputTypes[0]!.shape.length);
      let at = 0;
      return inputTypes.map((t, i) => {
        const n = t!.shape[d];
        if (typeof n !== 'number') throw new OpError('cat', `gradient needs concrete sizes, got ${fmtShape(t!.shape)}`);
        const gi = needsInputGrad[i] ? b.op('slice', [g], { dim: d, start: at, end: at + n, step: 1 }) : null;
        at += n;
        return gi;
      });
    },
  },
});

// ---- flip ----------------------------------------------------------------------------------

export const flip = defineOp({
  name: 'flip', doc: 'reverses the order of elements along each of dims',
  inputs: ['x'], attrs: z.object({ dims: z.array(z.number().int()) }).strict(),
  infer([x], { dims }) {
    const t = need('flip', x);
    normDims('flip', dims, t.shape.length);
    return [{ dtype: t.dtype, shape: t.shape }];
  },
  cpu([x], { dims }) {
    const shape = x!.shape;
    const strides = stridesOf(shape);
    let offset = 0;
    for (const d of normDims('flip', dims, shape.length)) {
      if (d >= shape.length || shape[d] === 0) continue; // a 0-d tensor, or nothing to reverse
      offset += (shape[d] - 1) * strides[d];
      strides[d] = -strides[d];
    }
    const out = allocate(x!.dtype, x!.data.length);
    stridedCopy(x!.data, shape, strides, offset, out);
    return [{ data: out, shape, dtype: x!.dtype }];
  },
  grad: { rule: (b, { gradOutputs: [g], attrs: { dims } }) => [g && b.op('flip', [g], { dims })] },
});
