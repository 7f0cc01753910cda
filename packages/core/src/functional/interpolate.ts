// F.interpolate: nearest, nearest-exact, (bi/tri)linear and bicubic resizing of the spatial dims
// (all dims after N, C), as a composite, separable per dim: nearest is an index_select; linear
// mixes two index_selects with constant weights, bicubic four; 'area' is adaptive average
// pooling. Invariant: the source positions follow PyTorch 1.13's formulas exactly
// (area_pixel_compute_source_index, nearest_idx), computed in float32 as PyTorch does for
// float32 inputs.

import { fmtShape, OpError } from '@kiln/ir-spec';
import { Tensor } from '../tensor.js';
import { dispatch1 } from '../dispatch.js';

export type InterpolateMode = 'nearest' | 'nearest-exact' | 'linear' | 'bilinear' | 'trilinear' | 'bicubic' | 'area';
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
  if (mode === 'nearest' || mode === 'nearest-exact') {
    const half = mode === 'nearest' ? 0 : 0.5;
    const idx = Array.from({ length: outSize }, (_, o) => Math.min(Math.floor(f(f(o + half) * s)), n - 1));
    return dispatch1('index_select', [x, index(idx)], { dim });
  }
  const wShape = x.shape.map((d, i) => (i === dim ? outSize : 1));
  const weighted = (idx: number[], w: Float32Array): Tensor =>
    dispatch1('mul', [dispatch1('index_select', [x, index(idx)], { dim }), Tensor._fromCpu({ data: w, shape: wShape, dtype: 'float32' })]);
  if (mode === 'bicubic') {
    // PyTorch's cubic convolution (A = -0.75) on 4 taps, indices clamped at the borders.
    const A = -0.75;
    const c1 = (t: number) => ((A + 2) * t - (A + 3)) * t * t + 1;
    const c2 = (t: number) => ((A * t - 5 * A) * t + 8 * A) * t - 4 * A;
    const taps = [0, 1, 2, 3].map(() => ({ idx: [] as number[], w: new Float32Array(outSize) }));
    for (let o = 0; o < outSize; o++) {
      const src = alignCorners ? f(o * s) : f(f(s * f(o + 0.5)) - 0.5);
      const i0 = Math.floor(src), t = f(src - i0);
      const ws = [c2(t + 1), c1(t), c1(1 - t), c2(2 - t)];
      taps.forEach((tap, k) => { tap.idx.push(Math.min(Math.max(i0 - 1 + k, 0), n - 1)); tap.w[o] = ws[k]; });
    }
    return taps.map((tap) => weighted(tap.idx, tap.w)).reduce((a, b) => dispatch1('add', [a, b]));
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
  return dispatch1('add', [weighted(i0, w0), weighted(i1, w1)]);
}

/**
 * Resizes [N, C, ...spatial] to `size`, or by `scaleFactor` (torch.nn.functional.interpolate).
 * Modes: 'nearest', 'nearest-exact' (any spatial rank), 'linear' (1 spatial dim), 'bilinear' and
 * 'bicubic' (2), 'trilinear' (3), 'area' (adaptive average pooling; 1 or 2 spatial dims).
 * @example interpolate(x, { scaleFactor: 2, mode: 'bilinear', alignCorners: false })
 */
export function interpolate(x: Tensor, opts: InterpolateOptions): Tensor {
  const mode = opts.mode ?? 'nearest', spatial = x.ndim - 2;
  if (spatial < 1) throw new OpError('interpolate', `expects [N, C, ...spatial], got ${fmtShape(x.shape)}`);
  if (mode === 'linear' && spatial !== 1) throw new OpError('interpolate', `mode 'linear' expects a 3-D input, got ${fmtShape(x.shape)}`);
  if ((mode === 'bilinear' || mode === 'bicubic') && spatial !== 2) throw new OpError('interpolate', `mode '${mode}' expects a 4-D input, got ${fmtShape(x.shape)}`);
  if (mode === 'trilinear' && spatial !== 3) throw new OpError('interpolate', `mode 'trilinear' expects a 5-D input, got ${fmtShape(x.shape)}`);
  if (mode === 'area' && spatial > 2) throw new OpError('interpolate', `mode 'area' supports 1 or 2 spatial dims, got ${fmtShape(x.shape)}`);
  if ((mode === 'nearest' || mode === 'nearest-exact' || mode === 'area') && opts.alignCorners !== undefined && opts.alignCorners !== null) throw new OpError('interpolate', "alignCorners only applies to the modes 'linear', 'bilinear', 'trilinear' and 'bicubic'");
  if ((opts.size === undefined) === (opts.scaleFactor === undefined)) throw new OpError('interpolate', 'give exactly one of size and scaleFactor');
  const list = (v: number | readonly number[], what: string): number[] => {
    const l = typeof v === 'number' ? new Array<number>(spatial).fill(v) : [...v];
    if (l.length !== spatial) throw new OpError('interpolate', `${what} ${JSON.stringify(v)} must have one entry per spatial dim (${spatial})`);
    return l;
  };
  const scales = opts.scaleFactor === undefined ? null : list(opts.scaleFactor, 'scaleFactor');
  const sizes = opts.size !== undefined ? list(opts.size, 'size') : scales!.map((s, i) => Math.floor(x.shape[2 + i] * s));
  if (!sizes.every((s) => Number.isInteger(s) && s > 0)) throw new OpError('interpolate', `output sizes ${fmtShape(sizes)} must be positive integers`);
  if (mode !== 'nearest' && mode !== 'nearest-exact' && x.dtype !== 'float32') throw new OpError('interpolate', `mode '${mode}' needs a float32 input, got ${x.dtype}`);
  if (mode === 'area') {
    // Adaptive average pooling over the output grid (PyTorch's area mode); 1-D as a 1-row image.
    const img = spatial === 1 ? dispatch1('reshape', [x], { shape: [...x.shape.slice(0, 2), 1, x.shape[2]] }) : x;
    const out = dispatch1('adaptive_avg_pool2d', [img], { output_size: spatial === 1 ? [1, sizes[0]] : sizes });
    return spatial === 1 ? dispatch1('reshape', [out], { shape: [...x.shape.slice(0, 2), sizes[0]] }) : out;
  }
  const linear = mode === 'bilinear' || mode === 'trilinear' ? 'linear' : mode;
  let out = x;
  sizes.forEach((s, i) => {
    if (s === x.shape[2 + i] && (scales === null || scales[i] === 1)) return;
    out = resizeDim(out, 2 + i, s, scales ? scales[i] : null, linear, opts.alignCorners ?? false);
  });
  return out;
}
