// F: 2-D pooling (torch.nn.functional.max_pool2d, avg_pool2d, adaptive_avg_pool2d,
// adaptive_max_pool2d). Resolves PyTorch's argument forms (numbers or pairs, stride defaulting
// to the kernel, unbatched [C, H, W] inputs, null output dims) into the primitives' attributes.

import { fmtShape, OpError } from '@kiln/ir-spec';
import type { Tensor } from '../tensor.js';
import { dispatch, dispatch1 } from '../dispatch.js';
import type { Size2 } from './conv.js';

export interface MaxPool2dOptions {
  /** Default: the kernel size. */
  stride?: Size2 | null;
  /** Implicit -inf padding on both sides; at most half the kernel. */
  padding?: Size2;
  dilation?: Size2;
  /** Round the output size up instead of down. */
  ceilMode?: boolean;
  /** Also return the flat h·W + w index of each maximum within its plane. */
  returnIndices?: boolean;
}

export interface AvgPool2dOptions {
  /** Default: the kernel size. */
  stride?: Size2 | null;
  /** Implicit zero padding on both sides; at most half the kernel. */
  padding?: Size2;
  ceilMode?: boolean;
  /** Count the zero padding in the divisor (default true). */
  countIncludePad?: boolean;
  /** Divide by this instead of the window size. */
  divisorOverride?: number | null;
}

/** Expands a number or a one-element list to a pair; checks a two-element list. */
function pair(op: string, name: string, v: Size2): [number, number] {
  if (typeof v === 'number') return [v, v];
  if (v.length === 1) return [v[0], v[0]];
  if (v.length !== 2) throw new OpError(op, `${name} must be a number or a pair, got ${fmtShape(v)}`);
  return [v[0], v[1]];
}

/** Runs `f` on [1, C, H, W] when `x` is an unbatched [C, H, W] input. */
function batched<R extends Tensor | Tensor[]>(op: string, x: Tensor, f: (x: Tensor) => R): R {
  if (x.ndim === 4) return f(x);
  if (x.ndim === 3) {
    const r = f(x.unsqueeze(0));
    return (Array.isArray(r) ? r.map((t) => t.squeeze(0)) : r.squeeze(0)) as R;
  }
  throw new OpError(op, `expected a 4-D [N, C, H, W] or 3-D [C, H, W] input, got ${fmtShape(x.shape)}`);
}

/**
 * Max over `kernelSize` windows of `x` [N, C, H, W] (or [C, H, W]).
 * @example maxPool2d(randn([1, 64, 32, 32]), 2).shape // [1, 64, 16, 16]
 */
export function maxPool2d(x: Tensor, kernelSize: Size2, opts: MaxPool2dOptions & { returnIndices: true }): [Tensor, Tensor];
export function maxPool2d(x: Tensor, kernelSize: Size2, opts?: MaxPool2dOptions & { returnIndices?: false }): Tensor;
export function maxPool2d(x: Tensor, kernelSize: Size2, opts?: MaxPool2dOptions): Tensor | [Tensor, Tensor];
export function maxPool2d(x: Tensor, kernelSize: Size2, opts: MaxPool2dOptions = {}): Tensor | [Tensor, Tensor] {
  const op = 'max_pool2d';
  const kernel_size = pair(op, 'kernelSize', kernelSize);
  const attrs = {
    kernel_size, stride: pair(op, 'stride', opts.stride ?? kernel_size), padding: pair(op, 'padding', opts.padding ?? 0),
    dilation: pair(op, 'dilation', opts.dilation ?? 1), ceil_mode: opts.ceilMode ?? false,
  };
  const [values, indices] = batched(op, x, (xb) => dispatch(op, [xb], attrs));
  return opts.returnIndices ? [values, indices] : values;
}

/**
 * Mean over `kernelSize` windows of `x` [N, C, H, W] (or [C, H, W]).
 * @example avgPool2d(randn([1, 3, 6, 6]), 2).shape // [1, 3, 3, 3]
 */
export function avgPool2d(x: Tensor, kernelSize: Size2, opts: AvgPool2dOptions = {}): Tensor {
  const op = 'avg_pool2d';
  const kernel_size = pair(op, 'kernelSize', kernelSize);
  const attrs = {
    kernel_size, stride: pair(op, 'stride', opts.stride ?? kernel_size), padding: pair(op, 'padding', opts.padding ?? 0),
    ceil_mode: opts.ceilMode ?? false, count_include_pad: opts.countIncludePad ?? true,
    divisor_override: opts.divisorOverride ?? null,
  };
  return batched(op, x, (xb) => dispatch1(op, [xb], attrs));
}

/** An adaptive output size: one number for both dims, or a pair where null keeps that input dim. */
export type AdaptiveSize = number | readonly (number | null)[];

function adaptiveSize(op: string, x: Tensor, size: AdaptiveSize): [number, number] {
  const s = typeof size === 'number' ? [size, size] : size.length === 1 ? [size[0], size[0]] : size;
  if (s.length !== 2) throw new OpError(op, `outputSize must be a number or a pair, got ${JSON.stringify(size)}`);
  const r = x.ndim;
  const out = s.map((d, i) => d ?? x.shape[r - 2 + i]);
  if (!out.every((d) => Number.isInteger(d) && d >= 1)) throw new OpError(op, `outputSize must be positive integers, got ${JSON.stringify(size)}`);
  return [out[0], out[1]];
}

/**
 * Mean over adaptive bins so the output is `outputSize` (PyTorch's bins
 * [floor(i·H/o), ceil((i+1)·H/o)), which may overlap).
 * @example adaptiveAvgPool2d(randn([2, 512, 7, 7]), 1).shape // [2, 512, 1, 1]
 */
export function adaptiveAvgPool2d(x: Tensor, outputSize: AdaptiveSize): Tensor {
  const op = 'adaptive_avg_pool2d';
  return batched(op, x, (xb) => dispatch1(op, [xb], { output_size: adaptiveSize(op, xb, outputSize) }));
}

/** Max over adaptive bins; with `returnIndices`, also the flat per-plane index of each maximum. */
export function adaptiveMaxPool2d(x: Tensor, outputSize: AdaptiveSize, opts: { returnIndices: true }): [Tensor, Tensor];
export function adaptiveMaxPool2d(x: Tensor, outputSize: AdaptiveSize, opts?: { returnIndices?: false }): Tensor;
export function adaptiveMaxPool2d(x: Tensor, outputSize: AdaptiveSize, opts?: { returnIndices?: boolean }): Tensor | [Tensor, Tensor];
export function adaptiveMaxPool2d(x: Tensor, outputSize: AdaptiveSize, opts: { returnIndices?: boolean } = {}): Tensor | [Tensor, Tensor] {
  const op = 'adaptive_max_pool2d';
  const [values, indices] = batched(op, x, (xb) => dispatch(op, [xb], { output_size: adaptiveSize(op, xb, outputSize) }));
  return opts.returnIndices ? [values, indices] : values;
}
