// F.pad, F.unfold/F.fold, F.pixelShuffle/pixelUnshuffle: composites over cat, slice,
// slice_backward, index_select, reshape and permute. Invariant: index tensors are built from the
// static shape (constants in a graph), so each function differentiates, traces and scripts.

import { fmtShape, OpError } from '@kiln/ir-spec';
import { Tensor } from '../tensor.js';
import { dispatch1 } from '../dispatch.js';

export type PadMode = 'constant' | 'reflect' | 'replicate' | 'circular';

const index = (idx: number[]): Tensor => Tensor._fromCpu({ data: Int32Array.from(idx), shape: [idx.length], dtype: 'int32' });
const sliceOf = (x: Tensor, dim: number, start: number, end: number, step = 1): Tensor => dispatch1('slice', [x], { dim, start, end, step });

/** `value` in a block of x's shape with `n` along `dim`. */
function block(x: Tensor, dim: number, n: number, value: number): Tensor {
  return dispatch1('expand', [Tensor._scalar(value, x.dtype)], { shape: x.shape.map((s, i) => (i === dim ? n : s)) });
}

/** Source position of each output position along one dim of size n padded by (l, r). */
function padIndex(mode: Exclude<PadMode, 'constant'>, n: number, l: number, r: number, dim: number): number[] {
  if (mode === 'reflect' && (l >= n || r >= n)) throw new OpError('pad', `reflect padding (${l}, ${r}) must be smaller than the size ${n} of dim ${dim}`);
  if (mode === 'circular' && (l > n || r > n)) throw new OpError('pad', `circular padding (${l}, ${r}) must not exceed the size ${n} of dim ${dim}`);
  if (n === 0) throw new OpError('pad', `${mode} padding of an empty dim ${dim}`);
  const out: number[] = [];
  for (let o = -l; o < n + r; o++) {
    if (mode === 'replicate') out.push(Math.min(Math.max(o, 0), n - 1));
    else if (mode === 'circular') out.push(((o % n) + n) % n);
    else out.push(o < 0 ? -o : o >= n ? 2 * (n - 1) - o : o);
  }
  return out;
}

/**
 * Pads the last dims (torch.nn.functional.pad): `pad` lists (left, right) pairs from the last dim
 * backward. Modes: 'constant' (with `value`; negative pads crop), 'reflect' (mirror without the
 * edge), 'replicate' (repeat the edge), 'circular' (wrap around).
 * @example pad(x, [1, 1, 2, 0], { mode: 'reflect' }) // W by 1 each side, H by 2 on top
 */
export function pad(x: Tensor, padding: readonly number[], opts: { mode?: PadMode; value?: number } = {}): Tensor {
  const mode = opts.mode ?? 'constant', value = opts.value ?? 0;
  if (padding.length % 2 || padding.length / 2 > x.ndim) throw new OpError('pad', `padding ${fmtShape(padding)} must have an even length of at most 2·ndim = ${2 * x.ndim}`);
  if (!padding.every(Number.isInteger)) throw new OpError('pad', `padding ${fmtShape(padding)} must be integers`);
  let out = x;
  for (let k = 0; k < padding.length / 2; k++) {
    const dim = x.ndim - 1 - k, l = padding[2 * k], r = padding[2 * k + 1];
    if (l === 0 && r === 0) continue;
    const n = out.shape[dim];
    if (mode === 'constant') {
      if (l < 0 || r < 0) out = sliceOf(out, dim, Math.max(0, -l), n - Math.max(0, -r));
      const parts = [...(l > 0 ? [block(out, dim, l, value)] : []), out, ...(r > 0 ? [block(out, dim, r, value)] : [])];
      out = parts.length > 1 ? dispatch1('cat', parts, { dim }) : out;
    } else {
      if (l < 0 || r < 0) throw new OpError('pad', `${mode} padding must be non-negative, got (${l}, ${r}) for dim ${dim}`);
      out = dispatch1('index_select', [out, index(padIndex(mode, n, l, r, dim))], { dim });
    }
  }
  return out;
}

type Pair = number | readonly number[];
const pair = (v: Pair, what: string): [number, number] => {
  const p = typeof v === 'number' ? [v, v] : [...v];
  if (p.length !== 2 || !p.every((q) => Number.isInteger(q) && q >= 0)) throw new OpError(what, `expects an int or a pair of non-negative ints, got ${JSON.stringify(v)}`);
  return p as [number, number];
};
export interface UnfoldOptions { dilation?: Pair; padding?: Pair; stride?: Pair }

function windows(where: string, size: [number, number], k: [number, number], o: UnfoldOptions) {
  const dil = pair(o.dilation ?? 1, where), padd = pair(o.padding ?? 0, where), st = pair(o.stride ?? 1, where);
  if (st[0] === 0 || st[1] === 0 || dil[0] === 0 || dil[1] === 0) throw new OpError(where, 'stride and dilation must be positive');
  const out = [0, 1].map((i) => Math.floor((size[i] + 2 * padd[i] - dil[i] * (k[i] - 1) - 1) / st[i]) + 1) as [number, number];
  if (out[0] <= 0 || out[1] <= 0) throw new OpError(where, `kernel ${fmtShape(k)} (dilation ${fmtShape(dil)}) does not fit the padded input ${fmtShape([size[0] + 2 * padd[0], size[1] + 2 * padd[1]])}`);
  return { dil, padd, st, out };
}

/**
 * Sliding local blocks (im2col, torch.nn.functional.unfold): [N, C, H, W] → [N, C·kh·kw, L], L the
 * number of block positions, channel-major then kernel row, kernel column.
 */
export function unfold(x: Tensor, kernelSize: Pair, opts: UnfoldOptions = {}): Tensor {
  if (x.ndim !== 4) throw new OpError('unfold', `expects a 4-D input [N, C, H, W], got ${fmtShape(x.shape)}`);
  const k = pair(kernelSize, 'unfold');
  const [N, C, H, W] = x.shape;
  const { dil, padd, st, out } = windows('unfold', [H, W], k, opts);
  const xp = pad(x, [padd[1], padd[1], padd[0], padd[0]]);
  const cols: Tensor[] = [];
  for (let i = 0; i < k[0]; i++) {
    for (let j = 0; j < k[1]; j++) {
      const h0 = i * dil[0], w0 = j * dil[1];
      const rows = sliceOf(xp, 2, h0, h0 + (out[0] - 1) * st[0] + 1, st[0]);
      cols.push(dispatch1('reshape', [sliceOf(rows, 3, w0, w0 + (out[1] - 1) * st[1] + 1, st[1])], { shape: [N, C, 1, out[0] * out[1]] }));
    }
  }
  const stacked = dispatch1('cat', cols, { dim: 2 });
  return dispatch1('reshape', [stacked], { shape: [N, C * k[0] * k[1], out[0] * out[1]] });
}

/**
 * The inverse layout of unfold, summing overlaps (col2im, torch.nn.functional.fold):
 * [N, C·kh·kw, L] → [N, C, outputSize].
 */
export function fold(x: Tensor, outputSize: Pair, kernelSize: Pair, opts: UnfoldOptions = {}): Tensor {
  if (x.ndim !== 3) throw new OpError('fold', `expects a 3-D input [N, C·kh·kw, L], got ${fmtShape(x.shape)}`);
  const k = pair(kernelSize, 'fold'), size = pair(outputSize, 'fold');
  const [N, CK, L] = x.shape;
  if (CK % (k[0] * k[1])) throw new OpError('fold', `dim 1 (${CK}) must be divisible by the kernel size ${k[0]}·${k[1]}`);
  const C = CK / (k[0] * k[1]);
  const { dil, padd, st, out } = windows('fold', size, k, opts);
  if (out[0] * out[1] !== L) throw new OpError('fold', `dim 2 (${L}) must be the number of blocks ${out[0]}·${out[1]} = ${out[0] * out[1]} for output size ${fmtShape(size)}`);
  const Hp = size[0] + 2 * padd[0], Wp = size[1] + 2 * padd[1];
  const blocks = dispatch1('reshape', [x], { shape: [N, C, k[0] * k[1], out[0], out[1]] });
  let acc: Tensor | null = null;
  for (let i = 0; i < k[0]; i++) {
    for (let j = 0; j < k[1]; j++) {
      const h0 = i * dil[0], w0 = j * dil[1], q = i * k[1] + j;
      const b = dispatch1('reshape', [sliceOf(blocks, 2, q, q + 1)], { shape: [N, C, out[0], out[1]] });
      const rows = dispatch1('slice_backward', [b], { shape: [N, C, Hp, out[1]], dim: 2, start: h0, end: h0 + (out[0] - 1) * st[0] + 1, step: st[0] });
      const placed = dispatch1('slice_backward', [rows], { shape: [N, C, Hp, Wp], dim: 3, start: w0, end: w0 + (out[1] - 1) * st[1] + 1, step: st[1] });
      acc = acc ? dispatch1('add', [acc, placed]) : placed;
    }
  }
  return sliceOf(sliceOf(acc!, 2, padd[0], padd[0] + size[0]), 3, padd[1], padd[1] + size[1]);
}

/** [N, C·r², H, W] → [N, C, H·r, W·r] (torch.nn.functional.pixel_shuffle). */
export function pixelShuffle(x: Tensor, upscaleFactor: number): Tensor {
  const r = upscaleFactor;
  if (x.ndim < 3 || x.shape[x.ndim - 3] % (r * r)) throw new OpError('pixelShuffle', `expects [..., C·${r}², H, W], got ${fmtShape(x.shape)}`);
  const lead = x.shape.slice(0, -3), [c, h, w] = x.shape.slice(-3), C = c / (r * r), n = lead.length;
  const y = dispatch1('reshape', [x], { shape: [...lead, C, r, r, h, w] });
  const p = dispatch1('permute', [y], { dims: [...lead.map((_, i) => i), n, n + 3, n + 1, n + 4, n + 2] });
  return dispatch1('reshape', [p], { shape: [...lead, C, h * r, w * r] });
}
/** [N, C, H·r, W·r] → [N, C·r², H, W] (torch.nn.functional.pixel_unshuffle). */
export function pixelUnshuffle(x: Tensor, downscaleFactor: number): Tensor {
  const r = downscaleFactor;
  if (x.ndim < 3 || x.shape[x.ndim - 1] % r || x.shape[x.ndim - 2] % r) throw new OpError('pixelUnshuffle', `expects [..., C, H·${r}, W·${r}], got ${fmtShape(x.shape)}`);
  const lead = x.shape.slice(0, -3), [c, H, W] = x.shape.slice(-3), h = H / r, w = W / r, n = lead.length;
  const y = dispatch1('reshape', [x], { shape: [...lead, c, h, r, w, r] });
  const p = dispatch1('permute', [y], { dims: [...lead.map((_, i) => i), n, n + 2, n + 4, n + 1, n + 3] });
  return dispatch1('reshape', [p], { shape: [...lead, c * r * r, h, w] });
}
