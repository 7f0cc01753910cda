// F.interpolate: nearest and (bi)linear resizing of the spatial dims (all dims after N, C), as a
// composite, separable per dim: nearest is an index_select; linear mixes two index_selects with
// constant weights. Invariant: the source positions follow PyTorch 1.13's formulas exactly
// (area_pixel_compute_source_index, nearest_idx), computed in float32 as PyTorch does for
// float32 inputs.

import { fmtShape, OpError } from '@kiln/ir-spec';
import { Tensor } from '../tensor.js';
import { dispatch1 } from '../dispatch.js';

export type InterpolateMode = 'nearest' | 'linear' | 'bilinear';
export interface InterpolateOptions {
  size?: number | readonly number[];
  scaleFactor?: number | readonly number[];
  mode?: InterpolateMode;
  /** Linear modes only: corner pixels of input and output align (default false). */
  alignCorners?: boolean | null;
}

const f = Math.fround;
const index = (idx: number[]): Tensor => Tensor._fromCpu({ data: Int32Array.from(idx), shape: [idx.length], dtype: 'int32' });

/** PyTorch's per-dim scale: 1/scaleFactor when given, else in/out (align_corners: (in−1)/(out−1)). */
function scaleOf(inSize: number, outSize: number, scale: number | null, alignCorners: boolean): number {
  if (alignCorners) return outSize > 1 ? f((inSize - 1) / (outSize - 1)) : 0;
  return scale !== null && scale > 0 ? f(1 / scale) : f(inSize / outSize);
}

function resizeDim(x: Tensor, dim: number, outSize: number, scale: number | null, mode: InterpolateMode, alignCorners: boolean): Tensor {
  const n = x.shape[dim];
  const s = scaleOf(n, outSize, scale, alignCorners);
  if (mode === 'nearest') {
    const idx = Array.from({ length: outSize }, (_, o) => Math.min(Math.floor(f(o * s)), n - 1));
    return dispatch1('index_select', [x, index(idx)], { dim });
  }
  const i0: number[] = [], i1: number[] = [], w1 = new Float32Array(outSize), w0 = new Float32Array(outSize);
  for (let o = 0; o < outSize; o++) {
    let src = alignCorners ? f(o * s) : f(f(s * f(o + 0.5)) - 0.5);
    if (src < 0) src = 0;
    const lo = Math.min(Math.floor(src), n - 1);
    i0.push(lo);
    i1.push(Math.min(lo + 1, n - 1));
    w1[o] = f(src - lo);
    w0[o] = f(1 - w1[o]);
  }
  const wShape = x.shape.map((d, i) => (i === dim ? outSize : 1));
  const a = dispatch1('mul', [dispatch1('index_select', [x, index(i0)], { dim }), Tensor._fromCpu({ data: w0, shape: wShape, dtype: 'float32' })]);
  const b = dispatch1('mul', [dispatch1('index_select', [x, index(i1)], { dim }), Tensor._fromCpu({ data: w1, shape: wShape, dtype: 'float32' })]);
  return dispatch1('add', [a, b]);
}

/**
 * Resizes [N, C, ...spatial] to `size`, or by `scaleFactor` (torch.nn.functional.interpolate).
 * Modes: 'nearest' (any spatial rank), 'linear' (1 spatial dim), 'bilinear' (2).
 * @example interpolate(x, { scaleFactor: 2, mode: 'bilinear', alignCorners: false })
 */
export function interpolate(x: Tensor, opts: InterpolateOptions): Tensor {
  const mode = opts.mode ?? 'nearest', spatial = x.ndim - 2;
  if (spatial < 1) throw new OpError('interpolate', `expects [N, C, ...spatial], got ${fmtShape(x.shape)}`);
  if (mode === 'linear' && spatial !== 1) throw new OpError('interpolate', `mode 'linear' expects a 3-D input, got ${fmtShape(x.shape)}`);
  if (mode === 'bilinear' && spatial !== 2) throw new OpError('interpolate', `mode 'bilinear' expects a 4-D input, got ${fmtShape(x.shape)}`);
  if (mode === 'nearest' && opts.alignCorners !== undefined && opts.alignCorners !== null) throw new OpError('interpolate', "alignCorners only applies to the linear modes ('linear', 'bilinear')");
  if ((opts.size === undefined) === (opts.scaleFactor === undefined)) throw new OpError('interpolate', 'give exactly one of size and scaleFactor');
  const list = (v: number | readonly number[], what: string): number[] => {
    const l = typeof v === 'number' ? new Array<number>(spatial).fill(v) : [...v];
    if (l.length !== spatial) throw new OpError('interpolate', `${what} ${JSON.stringify(v)} must have one entry per spatial dim (${spatial})`);
    return l;
  };
  const scales = opts.scaleFactor === undefined ? null : list(opts.scaleFactor, 'scaleFactor');
  const sizes = opts.size !== undefined ? list(opts.size, 'size') : scales!.map((s, i) => Math.floor(x.shape[2 + i] * s));
  if (!sizes.every((s) => Number.isInteger(s) && s > 0)) throw new OpError('interpolate', `output sizes ${fmtShape(sizes)} must be positive integers`);
  if (mode !== 'nearest' && x.dtype !== 'float32') throw new OpError('interpolate', `mode '${mode}' needs a float32 input, got ${x.dtype}`);
  let out = x;
  sizes.forEach((s, i) => {
    if (s === x.shape[2 + i] && (scales === null || scales[i] === 1)) return;
    out = resizeDim(out, 2 + i, s, scales ? scales[i] : null, mode, opts.alignCorners ?? false);
  });
  return out;
}
