// F: convolutions (torch.nn.functional.conv1d/conv2d/conv_transpose1d/conv_transpose2d).
// PyTorch's argument forms (a number or a pair, 'same'/'valid', unbatched inputs) are resolved
// here into the explicit per-side attributes of the conv2d / conv_transpose2d primitives;
// the 1-D forms run as 2-D convolutions over a height-1 plane.

import { fmtShape, OpError } from '@kiln/ir-spec';
import type { Tensor } from '../tensor.js';
import { dispatch1 } from '../dispatch.js';
import { cat } from '../ops/shape.js';
import { zeros } from '../creation.js';

/** A size given as one number for every spatial dim or one per dim. */
export type Size2 = number | readonly [number, number] | readonly number[];
/** A 1-D size: a number or a one-element list (what nn.Conv1d stores). */
export type Size1 = number | readonly number[];

export interface Conv2dOptions {
  stride?: Size2;
  /** Zero padding per side of each dim, or 'valid' (none) / 'same' (output size = input size; stride 1 only). */
  padding?: Size2 | 'same' | 'valid';
  dilation?: Size2;
  groups?: number;
}

export interface Conv1dOptions {
  stride?: Size1;
  padding?: Size1 | 'same' | 'valid';
  dilation?: Size1;
  groups?: number;
}

export interface ConvTranspose2dOptions {
  stride?: Size2;
  padding?: Size2;
  /** Extra rows/columns on the bottom/right, < stride or < dilation (picks among the sizes a stride allows). */
  outputPadding?: Size2;
  dilation?: Size2;
  groups?: number;
}

/** Expands a number or a one-element list to a pair; checks a two-element list. */
function pair(op: string, name: string, v: Size2): [number, number] {
  if (typeof v === 'number') return [v, v];
  if (v.length === 1) return [v[0], v[0]];
  if (v.length !== 2) throw new OpError(op, `${name} must be a number or a pair, got ${fmtShape(v)}`);
  return [v[0], v[1]];
}

function single(op: string, name: string, v: Size1): number {
  if (typeof v === 'number') return v;
  if (v.length !== 1) throw new OpError(op, `${name} must be a number or a one-element list, got ${fmtShape(v)}`);
  return v[0];
}

/** Explicit [top, left, bottom, right] padding for the conv2d primitive. */
function convPadding(op: string, padding: Conv2dOptions['padding'], k: readonly number[], stride: readonly number[], dilation: readonly number[]): number[] {
  if (padding === 'valid') return [0, 0, 0, 0];
  if (padding === 'same') {
    if (stride[0] !== 1 || stride[1] !== 1) {
      throw new OpError(op, `padding='same' is not supported for strided convolutions (stride ${fmtShape(stride)}); pad explicitly`);
    }
    // PyTorch puts the smaller half first: an even kernel gets one more row after than before.
    const total = [dilation[0] * (k[0] - 1), dilation[1] * (k[1] - 1)];
    const before = total.map((t) => Math.floor(t / 2));
    return [before[0], before[1], total[0] - before[0], total[1] - before[1]];
  }
  const [ph, pw] = pair(op, 'padding', padding ?? 0);
  return [ph, pw, ph, pw];
}

/** Runs `f` on a batch of one when `x` is unbatched (PyTorch accepts [C, H, W]). */
function batched(op: string, x: Tensor, rank: number, f: (x: Tensor) => Tensor): Tensor {
  if (x.ndim === rank) return f(x);
  if (x.ndim === rank - 1) return f(x.unsqueeze(0)).squeeze(0);
  throw new OpError(op, `expected a ${rank}-D (batched) or ${rank - 1}-D (unbatched) input, got ${fmtShape(x.shape)}`);
}

/**
 * 2-D convolution (cross-correlation) of `x` [N, Cin, H, W] with `weight` [Cout, Cin/groups, kh, kw].
 * @example conv2d(randn([1, 3, 32, 32]), randn([64, 3, 3, 3]), null, { padding: 1 }).shape // [1, 64, 32, 32]
 */
export function conv2d(x: Tensor, weight: Tensor, bias?: Tensor | null, opts: Conv2dOptions = {}): Tensor {
  if (weight.ndim !== 4) throw new OpError('conv2d', `weight must be 4-D [Cout, Cin/groups, kh, kw], got ${fmtShape(weight.shape)}`);
  const stride = pair('conv2d', 'stride', opts.stride ?? 1), dilation = pair('conv2d', 'dilation', opts.dilation ?? 1);
  const padding = convPadding('conv2d', opts.padding, weight.shape.slice(2), stride, dilation);
  const attrs = { stride, padding, dilation, groups: opts.groups ?? 1 };
  return batched('conv2d', x, 4, (xb) => dispatch1('conv2d', [xb, weight, bias ?? null], attrs));
}

/**
 * 1-D convolution of `x` [N, Cin, L] with `weight` [Cout, Cin/groups, k] (a 2-D convolution over a
 * height-1 plane).
 * @example conv1d(randn([2, 3, 10]), randn([4, 3, 3]), null, { stride: 2, padding: 1 }).shape // [2, 4, 5]
 */
export function conv1d(x: Tensor, weight: Tensor, bias?: Tensor | null, opts: Conv1dOptions = {}): Tensor {
  if (weight.ndim !== 3) throw new OpError('conv1d', `weight must be 3-D [Cout, Cin/groups, k], got ${fmtShape(weight.shape)}`);
  const p = opts.padding ?? 0;
  const padding = typeof p === 'string' ? p : [0, single('conv1d', 'padding', p)];
  return batched('conv1d', x, 3, (xb) => conv2d(xb.unsqueeze(2), weight.unsqueeze(2), bias, {
    stride: [1, single('conv1d', 'stride', opts.stride ?? 1)], padding,
    dilation: [1, single('conv1d', 'dilation', opts.dilation ?? 1)], groups: opts.groups,
  }).squeeze(2));
}

/**
 * Transposed 2-D convolution (the gradient of conv2d with respect to its input) of `x`
 * [N, Cin, H, W] with `weight` [Cin, Cout/groups, kh, kw].
 * @example convTranspose2d(randn([1, 4, 4, 4]), randn([4, 3, 3, 3]), null, { stride: 2, padding: 1, outputPadding: 1 }).shape // [1, 3, 8, 8]
 */
export function convTranspose2d(x: Tensor, weight: Tensor, bias?: Tensor | null, opts: ConvTranspose2dOptions = {}): Tensor {
  const op = 'conv_transpose2d';
  if (weight.ndim !== 4) throw new OpError(op, `weight must be 4-D [Cin, Cout/groups, kh, kw], got ${fmtShape(weight.shape)}`);
  const [ph, pw] = pair(op, 'padding', opts.padding ?? 0);
  const stride = pair(op, 'stride', opts.stride ?? 1), dilation = pair(op, 'dilation', opts.dilation ?? 1);
  const outputPadding = pair(op, 'outputPadding', opts.outputPadding ?? 0);
  for (let d = 0; d < 2; d++) {
    if (outputPadding[d] >= stride[d] && outputPadding[d] >= dilation[d]) {
      throw new OpError(op, `outputPadding ${fmtShape(outputPadding)} must be smaller than either stride ${fmtShape(stride)} or dilation ${fmtShape(dilation)}`);
    }
  }
  // The primitive takes output_padding < stride; whole strides beyond that (possible when the
  // dilation is larger) only add rows that no input reaches, which hold just the bias.
  const extra = outputPadding.map((p, d) => p - (p % stride[d]));
  const attrs = {
    stride, padding: [ph, pw, ph, pw], output_padding: outputPadding.map((p, d) => p % stride[d]), dilation, groups: opts.groups ?? 1,
  };
  return batched(op, x, 4, (xb) => {
    if (extra[0] === 0 && extra[1] === 0) return dispatch1(op, [xb, weight, bias ?? null], attrs);
    let y = dispatch1(op, [xb, weight, null], attrs);
    for (let d = 0; d < 2; d++) {
      if (extra[d]) y = cat([y, zeros(y.shape.map((s, i) => (i === d + 2 ? extra[d] : s)))], d + 2);
    }
    return bias ? y.add(bias.reshape([-1, 1, 1])) : y;
  });
}

/** Transposed 1-D convolution of `x` [N, Cin, L] with `weight` [Cin, Cout/groups, k]. */
export function convTranspose1d(
  x: Tensor, weight: Tensor, bias?: Tensor | null,
  opts: { stride?: Size1; padding?: Size1; outputPadding?: Size1; dilation?: Size1; groups?: number } = {},
): Tensor {
  const op = 'conv_transpose1d';
  if (weight.ndim !== 3) throw new OpError(op, `weight must be 3-D [Cin, Cout/groups, k], got ${fmtShape(weight.shape)}`);
  return batched(op, x, 3, (xb) => convTranspose2d(xb.unsqueeze(2), weight.unsqueeze(2), bias, {
    stride: [1, single(op, 'stride', opts.stride ?? 1)], padding: [0, single(op, 'padding', opts.padding ?? 0)],
    outputPadding: [0, single(op, 'outputPadding', opts.outputPadding ?? 0)],
    dilation: [1, single(op, 'dilation', opts.dilation ?? 1)], groups: opts.groups,
  }).squeeze(2));
}
