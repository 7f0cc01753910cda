// Function forms of shape ops. Primitives: reshape (a view), permute, expand, slice, cat, flip
// (copies). view/flatten/squeeze/unsqueeze are reshapes; transpose/t are permutes; repeat,
// stack, split, chunk, unbind and PyTorch-style indexing (`index`) are composites.

import { normDim, OpError, fmtShape, shape as shapeOps } from '@kiln/ir-spec';
import { Tensor, type IndexItem } from '../tensor.js';
import * as E from './elementwise.js';
import { dispatch1 } from '../dispatch.js';

/** Accepts both `f(2, 3)` and `f([2, 3])` argument styles. */
export function shapeArg(args: number[] | [readonly number[]]): number[] {
  return args.length === 1 && Array.isArray(args[0]) ? [...(args[0] as readonly number[])] : (args as number[]);
}

export function reshape(x: Tensor, shape: readonly number[]): Tensor {
  return dispatch1('reshape', [x], { shape: [...shape] });
}
/** Same as reshape here: our tensors are always contiguous, so a view is always possible. */
export const view = reshape;

export function permute(x: Tensor, dims: readonly number[]): Tensor {
  return dispatch1('permute', [x], { dims: [...dims] });
}
export function transpose(x: Tensor, dim0: number, dim1: number): Tensor {
  const r = x.ndim;
  const a = normDim('transpose', dim0, r), b = normDim('transpose', dim1, r);
  const dims = Array.from({ length: r }, (_, i) => i);
  [dims[a], dims[b]] = [dims[b], dims[a]];
  return a === b ? x : permute(x, dims);
}
export function t(x: Tensor): Tensor {
  if (x.ndim > 2) throw new OpError('t', `expects a tensor with <= 2 dims, got shape ${fmtShape(x.shape)}; use transpose(dim0, dim1)`);
  return x.ndim < 2 ? x : transpose(x, 0, 1);
}
export function expand(x: Tensor, shape: readonly number[]): Tensor {
  return dispatch1('expand', [x], { shape: [...shape] });
}
export function flatten(x: Tensor, startDim = 0, endDim = -1): Tensor {
  if (x.ndim === 0) return reshape(x, [1]);
  const s = normDim('flatten', startDim, x.ndim), e = normDim('flatten', endDim, x.ndim);
  if (s > e) throw new OpError('flatten', `startDim ${startDim} comes after endDim ${endDim}`);
  const mid = x.shape.slice(s, e + 1).reduce((a, d) => a * d, 1);
  return reshape(x, [...x.shape.slice(0, s), mid, ...x.shape.slice(e + 1)]);
}
export function squeeze(x: Tensor, dim?: number | number[]): Tensor {
  const dims = dim === undefined ? null : (typeof dim === 'number' ? [dim] : dim).map((d) => normDim('squeeze', d, x.ndim));
  return reshape(x, x.shape.filter((d, i) => !(d === 1 && (dims === null || dims.includes(i)))));
}
export function unsqueeze(x: Tensor, dim: number): Tensor {
  const d = normDim('unsqueeze', dim, x.ndim + 1);
  return reshape(x, [...x.shape.slice(0, d), 1, ...x.shape.slice(d)]);
}

/**
 * Tiles x `repeats[i]` times along dim i (leading repeats add dims), as torch's repeat: an
 * expand over interleaved size-1 axes, then a reshape.
 * @example tensor([[1, 2]]).repeat(2, 2) // shape [2, 4]
 */
export function repeat(x: Tensor, repeats: readonly number[]): Tensor {
  if (repeats.length < x.ndim) {
    throw new OpError('repeat', `${repeats.length} repeats given for a tensor of shape ${fmtShape(x.shape)}; give at least one per dim (${x.ndim})`);
  }
  if (!repeats.every((r) => Number.isInteger(r) && r >= 0)) throw new OpError('repeat', `repeats must be non-negative integers, got ${fmtShape(repeats)}`);
  const shape = [...new Array<number>(repeats.length - x.ndim).fill(1), ...x.shape];
  const inter = shape.flatMap((s) => [1, s]);
  const tiled = shape.flatMap((s, i) => [repeats[i], s]);
  return reshape(expand(reshape(x, inter), tiled), shape.map((s, i) => s * repeats[i]));
}

/** Reverses the order of elements along each of `dims` (a copy). */
export function flip(x: Tensor, dims: number | number[]): Tensor {
  return dispatch1('flip', [x], { dims: typeof dims === 'number' ? [dims] : [...dims] });
}

/** Concatenates tensors of equal shape except in `dim` (dtypes promote). */
export function cat(xs: readonly Tensor[], dim = 0): Tensor {
  return dispatch1('cat', [...xs], { dim });
}

/** Stacks equal-shape tensors along a new dim `dim` (unsqueeze each, then cat). */
export function stack(xs: readonly Tensor[], dim = 0): Tensor {
  if (!xs.length) throw new OpError('stack', 'expects a non-empty list of tensors');
  const first = xs[0].shape;
  xs.forEach((t, i) => {
    if (t.ndim !== first.length || t.shape.some((d, k) => d !== first[k])) {
      throw new OpError('stack', `expects tensors of equal shape, but tensor 0 has shape ${fmtShape(first)} and tensor ${i} has ${fmtShape(t.shape)}`);
    }
  });
  const d = normDim('stack', dim, first.length + 1);
  return cat(xs.map((t) => unsqueeze(t, d)), d);
}

/**
 * Pieces of x along `dim`: of size `sizeOrSections` each (the last may be smaller), or of the
 * listed sizes, which must add up to the dim's size.
 */
export function split(x: Tensor, sizeOrSections: number | number[], dim = 0): Tensor[] {
  const d = normDim('split', dim, x.ndim), n = x.shape[d];
  let sizes: number[];
  if (typeof sizeOrSections === 'number') {
    const s = sizeOrSections;
    if (!Number.isInteger(s) || s < 0 || (s === 0 && n !== 0)) {
      throw new OpError('split', `split size must be a positive integer, got ${s} (dim ${d} of shape ${fmtShape(x.shape)})`);
    }
    sizes = [];
    for (let at = 0; at < n; at += s) sizes.push(Math.min(s, n - at));
    if (!sizes.length) sizes.push(0);
  } else {
    sizes = sizeOrSections;
    const total = sizes.reduce((a, v) => a + v, 0);
    if (total !== n || sizes.some((v) => !Number.isInteger(v) || v < 0)) {
      throw new OpError('split', `sections ${fmtShape(sizes)} must be non-negative integers adding up to ${n}, the size of dim ${d} of shape ${fmtShape(x.shape)} (they add up to ${total})`);
    }
  }
  let at = 0;
  return sizes.map((sz) => { const p = slice(x, d, at, at + sz); at += sz; return p; });
}

/** `chunks` pieces of size ceil(n / chunks) (fewer when they run out, as torch.chunk: 6/4 → 3). */
export function chunk(x: Tensor, chunks: number, dim = 0): Tensor[] {
  if (!Number.isInteger(chunks) || chunks <= 0) throw new OpError('chunk', `chunks must be a positive integer, got ${chunks}`);
  const d = normDim('chunk', dim, x.ndim), n = x.shape[d];
  if (n === 0) return split(x, new Array<number>(chunks).fill(0), d);
  return split(x, Math.ceil(n / chunks), d);
}

/** The slices x[i] along `dim`, each without that dim. */
export function unbind(x: Tensor, dim = 0): Tensor[] {
  const d = normDim('unbind', dim, x.ndim);
  const shape = x.shape.filter((_, i) => i !== d);
  return Array.from({ length: x.shape[d] }, (_, i) => reshape(slice(x, d, i, i + 1), shape));
}

/** Elements start, start+step, ... < end along `dim`: Python slice bounds, clamped, a copy. */
export function slice(x: Tensor, dim: number, start?: number | null, end?: number | null, step = 1): Tensor {
  return dispatch1('slice', [x], { dim, start: start ?? null, end: end ?? null, step });
}

/** x[i] along `dim` without that dim; negative i (and dim) count from the end (torch.select). */
export function select(x: Tensor, dim: number, i: number): Tensor {
  dim = normDim('select', dim, x.ndim);
  const size = x.shape[dim];
  if (!Number.isInteger(i) || i < -size || i >= size) {
    throw new OpError('index', `index ${i} is out of range for dim ${dim} of size ${size} (tensor shape ${fmtShape(x.shape)}; valid indices are ${-size}..${size - 1})`);
  }
  const j = i < 0 ? i + size : i;
  return reshape(slice(x, dim, j, j + 1), x.shape.filter((_, k) => k !== dim));
}

// ---- x[...] (PyTorch's __getitem__) ------------------------------------------------------

type Item =
  | { kind: 'int'; i: number }
  | { kind: 'slice'; start: number | null; stop: number | null; step: number }
  | { kind: 'newaxis' }
  | { kind: 'ellipsis' }
  | { kind: 'tensor'; t: Tensor };

/** Parses Python slice text such as ':', '1:5:2', '::3', '-3:'. */
function parseSliceText(text: string): Item {
  const parts = text.split(':');
  if (parts.length < 2 || parts.length > 3) {
    throw new OpError('index', `'${text}' is not a slice: use Python syntax such as ':', '1:5', '::2' or '-3:' (a number selects)`);
  }
  const [start, stop, step] = parts.map((p) => {
    const v = p.trim();
    if (v === '') return null;
    const n = Number(v);
    if (!Number.isInteger(n)) throw new OpError('index', `'${text}': slice bound '${v}' is not an integer`);
    return n;
  });
  return { kind: 'slice', start, stop, step: step ?? 1 };
}

function parseItem(item: IndexItem): Item {
  if (item === null) return { kind: 'newaxis' };
  if (item === '...') return { kind: 'ellipsis' };
  if (typeof item === 'number') return { kind: 'int', i: item };
  if (typeof item === 'string') return parseSliceText(item);
  if (item instanceof Tensor) {
    if (item.dtype === 'float32') throw new OpError('index', 'tensors used as indices must be int32 or bool, got float32');
    return { kind: 'tensor', t: item };
  }
  return { kind: 'slice', start: item.start ?? null, stop: item.stop ?? null, step: item.step ?? 1 };
}

/** How many dims of the indexed tensor an item consumes. */
const consumes = (it: Item): number =>
  it.kind === 'int' || it.kind === 'slice' ? 1 : it.kind === 'tensor' ? (it.t.dtype === 'bool' ? it.t.ndim : 1) : 0;

/**
 * PyTorch indexing `x[items]`: numbers select (drop the dim; negative counts from the end),
 * slices (`'1:5:2'`, `{ start, stop, step }`) keep it, `null` inserts a size-1 dim, `'...'`
 * stands for the remaining dims, an int32 tensor picks positions along its dim (its dims replace
 * that dim), a bool tensor masks the dims it covers (they become one dim of the selected count).
 * @example x.index(':', '1:5:2', 0); x.index('...', -1); x.index(mask)
 */
export function index(x: Tensor, items: readonly IndexItem[]): Tensor {
  const parsed = items.map(parseItem);
  const used = parsed.reduce((n, it) => n + consumes(it), 0);
  if (parsed.filter((it) => it.kind === 'ellipsis').length > 1) throw new OpError('index', 'an index can only have a single ellipsis (\'...\')');
  if (used > x.ndim) throw new OpError('index', `too many indices for a tensor of shape ${fmtShape(x.shape)}: ${used} dims indexed, it has ${x.ndim}`);
  if (parsed.filter((it) => it.kind === 'tensor').length > 1) {
    throw new OpError('index', 'only one tensor index per call is supported (PyTorch would broadcast several together); index one dim at a time or combine them with gather');
  }
  let y = x, d = 0;
  for (const it of parsed) {
    switch (it.kind) {
      case 'ellipsis': d += x.ndim - used; break;
      case 'newaxis': y = unsqueeze(y, d); d++; break;
      case 'int': y = select(y, d, it.i); break;
      case 'slice': {
        const size = y.shape[d];
        const r = shapeOps.sliceRange('index', size, it.start, it.stop, it.step);
        if (!(r.start === 0 && r.length === size)) y = slice(y, d, it.start, it.stop, it.step);
        d++;
        break;
      }
      case 'tensor':
        if (it.t.dtype === 'bool') { y = maskDims(y, d, it.t); d++; } else { y = takeAlong(y, d, it.t); d += it.t.ndim; }
        break;
    }
  }
  // x[...] is always a new tensor in PyTorch, even when it indexes nothing away.
  return y === x ? reshape(x, x.shape) : y;
}

/** Positions `idx` (int32, any shape, negatives wrap) along dim d; idx's dims replace dim d. */
function takeAlong(y: Tensor, d: number, idx: Tensor): Tensor {
  const size = y.shape[d];
  const flat = idx.ndim === 1 ? idx : reshape(idx, [idx.numel()]);
  const wrapped = E.where(E.lt(flat, 0), E.add(flat, size), flat);
  const picked = dispatch1('index_select', [y, wrapped], { dim: d });
  return reshape(picked, [...y.shape.slice(0, d), ...idx.shape, ...y.shape.slice(d + 1)]);
}

/** Elements where `mask` (covering dims d..d+k-1) is true: those dims become one dim at d. */
function maskDims(y: Tensor, d: number, mask: Tensor): Tensor {
  const k = mask.ndim;
  const covered = y.shape.slice(d, d + k);
  if (covered.length !== k || covered.some((s, i) => s !== mask.shape[i])) {
    throw new OpError('index', `the bool mask of shape ${fmtShape(mask.shape)} does not match dims ${d}..${d + k - 1} of the tensor of shape ${fmtShape(y.shape)} (${fmtShape(covered)})`);
  }
  if (k === 0) {
    // A 0-d mask adds a dim: of size 1 when true, 0 when false.
    const u = unsqueeze(y, d);
    return mask.item() ? u : slice(u, d, 0, 0);
  }
  // Move the masked dims to the front so each selected position owns a contiguous block.
  const rank = y.ndim;
  const order = [...Array.from({ length: k }, (_, i) => d + i), ...Array.from({ length: rank }, (_, i) => i).filter((i) => i < d || i >= d + k)];
  const front = d === 0 ? y : permute(y, order);
  const rest = front.shape.slice(k);
  const picked = dispatch1('masked_select', [front, reshape(mask, [...mask.shape, ...rest.map(() => 1)])]);
  const restN = rest.reduce((a, s) => a * s, 1);
  const count = restN > 0 ? picked.numel() / restN : countTrue(mask);
  const out = reshape(picked, [count, ...rest]);
  if (d === 0) return out;
  // Put the selected dim back where the mask was.
  const back = Array.from({ length: out.ndim }, (_, i) => i).slice(1);
  back.splice(d, 0, 0);
  return permute(out, back);
}

function countTrue(mask: Tensor): number {
  let n = 0;
  for (const v of mask.data) if (v) n++;
  return n;
}

// ---- narrow, roll, repeatInterleave ----------------------------------------------------------

/** `length` elements of `dim` from `start` (negative counts from the end): torch.narrow, a copy. */
export function narrow(x: Tensor, dim: number, start: number, length: number): Tensor {
  const d = normDim('narrow', dim, x.ndim), n = x.shape[d];
  const s = start < 0 ? start + n : start;
  if (!Number.isInteger(s) || s < 0 || s > n) throw new OpError('narrow', `start ${start} is out of range for dim ${d} of size ${n} (shape ${fmtShape(x.shape)})`);
  if (!Number.isInteger(length) || length < 0 || s + length > n) {
    throw new OpError('narrow', `start ${s} + length ${length} exceeds dim ${d} of size ${n} (shape ${fmtShape(x.shape)})`);
  }
  return slice(x, d, s, s + length);
}

/**
 * Shifts elements by `shifts` along `dims` with wrap-around (torch.roll); without dims the
 * flattened tensor rolls and keeps its shape. Two slices and a cat per dim.
 */
export function roll(x: Tensor, shifts: number | readonly number[], dims?: number | readonly number[] | null): Tensor {
  const sh = typeof shifts === 'number' ? [shifts] : [...shifts];
  if (dims === undefined || dims === null) {
    if (sh.length !== 1) throw new OpError('roll', `without dims, give one shift (got ${sh.length})`);
    return reshape(roll(reshape(x, [x.numel()]), sh, [0]), x.shape);
  }
  const ds = typeof dims === 'number' ? [dims] : [...dims];
  if (ds.length !== sh.length) throw new OpError('roll', `shifts (${sh.length}) and dims (${ds.length}) must have the same length`);
  let out = x;
  ds.forEach((dim, k) => {
    const d = normDim('roll', dim, x.ndim), n = x.shape[d];
    if (n === 0) return;
    const s = ((sh[k] % n) + n) % n;
    if (s === 0) return;
    out = cat([slice(out, d, n - s, n), slice(out, d, 0, n - s)], d);
  });
  return out;
}

/**
 * Each element repeated `repeats` times along `dim` (flattened when dim is omitted):
 * torch.repeat_interleave, as index_select with the repeated positions (so it differentiates).
 * `repeats` may be a number, or a per-element list / int32 tensor (read eagerly).
 */
export function repeatInterleave(x: Tensor, repeats: number | readonly number[] | Tensor, dim?: number | null): Tensor {
  const src = dim === undefined || dim === null ? reshape(x, [x.numel()]) : x;
  const d = dim === undefined || dim === null ? 0 : normDim('repeatInterleave', dim, x.ndim);
  const n = src.ndim ? src.shape[d] : 1;
  let reps: number[] = typeof repeats === 'number' ? [repeats] : repeats instanceof Tensor ? Array.from(repeats.toArray()) : [...repeats];
  if (reps.length === 1) reps = new Array<number>(n).fill(reps[0]);
  if (reps.length !== n) throw new OpError('repeatInterleave', `${reps.length} repeats for dim ${d} of size ${n}; give one per element or a single number`);
  if (!reps.every((r) => Number.isInteger(r) && r >= 0)) throw new OpError('repeatInterleave', `repeats must be non-negative integers, got [${reps.join(',')}]`);
  const idx: number[] = [];
  reps.forEach((r, i) => { for (let k = 0; k < r; k++) idx.push(i); });
  const index = Tensor._fromCpu({ data: Int32Array.from(idx), shape: [idx.length], dtype: 'int32' });
  return dispatch1('index_select', [src.ndim ? src : reshape(src, [1]), index], { dim: d });
}
