// Op family 'pool': max_pool2d, avg_pool2d, adaptive_avg_pool2d, adaptive_max_pool2d over NCHW
// inputs, plus the two linear backward ops avg_pool2d_backward and adaptive_avg_pool2d_backward
// (each the other's gradient with its forward). The max pools return [values, int32 indices]
// (flat h·W + w offsets per plane, as PyTorch); their gradient scatters through those indices
// with scatter_add, whose own gradient is a gather, so double backward needs no extra op.

import * as z from 'zod';
import { defineOp, outputBuffer } from '../op-def.js';
import { concreteDim, fmtShape, numel, OpError, symbolicWindowSize, type Dim, type TensorType } from '../shape.js';
import type { GradBuilder } from '../grad-builder.js';
import { primitivesOf } from '../kernels/primitives.js';
import {
  adaptiveAvgPool, adaptiveAvgPoolBackward, adaptiveMaxPool, avgPool, avgPoolBackward, poolOutSize, type PoolWindow,
} from '../kernels/pool.js';

const int = z.number().int();
const pos2 = z.tuple([int.min(1), int.min(1)]);
const nonneg2 = z.tuple([int.min(0), int.min(0)]);

const maxAttrs = z.object({
  kernel_size: pos2,
  stride: pos2,
  /** Symmetric padding per dim (reads as -inf). */
  padding: nonneg2.default([0, 0]),
  dilation: pos2.default([1, 1]),
  ceil_mode: z.boolean().default(false),
}).strict();
type MaxAttrs = z.output<typeof maxAttrs>;

const avgAttrs = z.object({
  kernel_size: pos2,
  stride: pos2,
  /** Symmetric zero padding per dim. */
  padding: nonneg2.default([0, 0]),
  ceil_mode: z.boolean().default(false),
  count_include_pad: z.boolean().default(true),
  divisor_override: int.min(1).nullable().default(null),
}).strict();
type AvgAttrs = z.output<typeof avgAttrs>;

const avgBackwardAttrs = avgAttrs.extend({ input_size: pos2 }).strict();
const adaptiveAttrs = z.object({ output_size: pos2 }).strict();
const adaptiveBackwardAttrs = z.object({ input_size: pos2 }).strict();

/**
 * Checks an NCHW float input. Any dim may be symbolic here; the spatial dims must be concrete
 * only where the output size needs them (`spatial`: the backward ops, whose output size is an
 * attribute checked against them).
 */
function needNCHW(op: string, t: TensorType | null, name = 'input', spatial = false): TensorType {
  if (!t) throw new OpError(op, `input '${name}' is required`);
  if (t.dtype !== 'float32') throw new OpError(op, `${name} must be float32, got ${t.dtype}`);
  if (t.shape.length !== 4) throw new OpError(op, `${name} must be 4-D [N, C, H, W], got ${fmtShape(t.shape)}`);
  if (spatial) {
    for (const i of [2, 3]) if (typeof t.shape[i] !== 'number') concreteDim(op, t.shape[i], () => `${name} ${fmtShape(t.shape)} dim ${i}`, 'it is checked against the input_size attribute');
  }
  return t;
}

const windowOf = (a: { kernel_size: number[]; stride: number[]; padding: number[] }, dilation: readonly number[] = [1, 1]): PoolWindow => ({
  kh: a.kernel_size[0], kw: a.kernel_size[1], sh: a.stride[0], sw: a.stride[1],
  ph: a.padding[0], pw: a.padding[1], dh: dilation[0], dw: dilation[1],
});

/**
 * Output [OH, OW] of a fixed-window pool, with PyTorch's checks on padding and size. A symbolic
 * H or W works when the window arithmetic is exact (stride 1, or a size like `H*2` with stride 2);
 * otherwise the error names the dim that must be concrete.
 */
function pooledSize(op: string, shape: readonly Dim[], a: { kernel_size: number[]; stride: number[]; padding: number[]; ceil_mode: boolean }, dilation: readonly number[]): [Dim, Dim] {
  const out: Dim[] = [];
  for (let d = 0; d < 2; d++) {
    const size = shape[d + 2], k = a.kernel_size[d], eff = dilation[d] * (k - 1) + 1;
    // PyTorch: the padding may be at most half the (dilated) kernel, so no window is all padding.
    if (a.padding[d] * 2 > eff) {
      throw new OpError(op, `padding ${fmtShape(a.padding)} must be at most half of the kernel size ${fmtShape(a.kernel_size)}${dilation[d] > 1 ? ` dilated by ${fmtShape(dilation)}` : ''}`);
    }
    const o = typeof size === 'number' ? poolOutSize(size, k, a.stride[d], a.padding[d], dilation[d], a.ceil_mode)
      : symbolicWindowSize(op, () => `input ${fmtShape(shape)} dim ${d + 2}`, size, k, a.stride[d], a.padding[d], a.padding[d], dilation[d], a.ceil_mode);
    if (typeof o === 'number' && o < 1) {
      throw new OpError(op, `input ${fmtShape(shape)} is too small for kernel ${fmtShape(a.kernel_size)} with padding ${fmtShape(a.padding)} (output would be ${out.concat(o).join('x')})`);
    }
    out.push(o);
  }
  return [out[0], out[1]];
}

/** Gradient of a max pool: g scattered (added) to the winning positions of each plane. */
function maxPoolGrad<T>(b: GradBuilder<T>, g: T, indices: T, input: TensorType): T {
  const [N, C, H, W] = input.shape;
  const HW = (H as number) * (W as number);
  const flat = [N, C, -1];
  const zeros = b.expand(b.scalar(0), [N, C, HW]);
  const gx = b.op('scatter_add', [zeros, b.reshape(indices, flat), b.reshape(g, flat)], { dim: 2 });
  return b.reshape(gx, input.shape);
}

export const max_pool2d = defineOp({
  name: 'max_pool2d', doc: 'max over windows of x [N,C,H,W]; outputs [values, int32 indices] (flat h·W+w offsets per plane)',
  inputs: ['input'], attrs: maxAttrs, outputs: 2,
  // Each result element visits a kernel_size window.
  work: (_inputs, a, [y]) => numel(y.shape) * a.kernel_size[0] * a.kernel_size[1],
  infer([x], a) {
    const t = needNCHW('max_pool2d', x);
    const shape = [t.shape[0], t.shape[1], ...pooledSize('max_pool2d', t.shape, a, a.dilation)];
    return [{ dtype: 'float32', shape }, { dtype: 'int32', shape }];
  },
  cpu([x], a: MaxAttrs, ctx) {
    const [N, C, H, W] = x!.shape;
    const [OH, OW] = pooledSize('max_pool2d', x!.shape, a, a.dilation) as [number, number];
    // The results go straight into the buffers the device offers (arena slots) when they fit.
    const n = N * C * OH * OW;
    const val = outputBuffer(ctx, 0, 'float32', n) as Float32Array, idx = outputBuffer(ctx, 1, 'int32', n) as Int32Array;
    primitivesOf(ctx).maxPool(x!.data as Float32Array, N * C, H, W, windowOf(a, a.dilation), OH, OW, val, idx);
    const shape = [N, C, OH, OW];
    return [{ data: val, shape, dtype: 'float32' }, { data: idx, shape, dtype: 'int32' }];
  },
  grad: {
    saveOutputs: [1],
    rule: (b, { gradOutputs: [g], outputs: [, idx], inputTypes: [t] }) => [g && maxPoolGrad(b, g, idx!, t!)],
  },
});

export const adaptive_max_pool2d = defineOp({
  name: 'adaptive_max_pool2d', doc: 'max over adaptive bins [floor(i·H/o), ceil((i+1)·H/o)); outputs [values, int32 plane indices]',
  inputs: ['input'], attrs: adaptiveAttrs, outputs: 2,
  infer([x], { output_size }) {
    const t = needNCHW('adaptive_max_pool2d', x);
    const shape = [t.shape[0], t.shape[1], ...output_size];
    return [{ dtype: 'float32', shape }, { dtype: 'int32', shape }];
  },
  cpu([x], { output_size: [OH, OW] }) {
    const [N, C, H, W] = x!.shape;
    const val = new Float32Array(N * C * OH * OW), idx = new Int32Array(N * C * OH * OW);
    adaptiveMaxPool(x!.data as Float32Array, N * C, H, W, OH, OW, val, idx);
    const shape = [N, C, OH, OW];
    return [{ data: val, shape, dtype: 'float32' }, { data: idx, shape, dtype: 'int32' }];
  },
  grad: {
    saveOutputs: [1],
    rule: (b, { gradOutputs: [g], outputs: [, idx], inputTypes: [t] }) => [g && maxPoolGrad(b, g, idx!, t!)],
  },
});

export const avg_pool2d = defineOp({
  name: 'avg_pool2d', doc: 'mean over windows of x [N,C,H,W] (zero padding counted unless count_include_pad is false)',
  inputs: ['input'], attrs: avgAttrs,
  // Each result element visits a kernel_size window.
  work: (_inputs, a, [y]) => numel(y.shape) * a.kernel_size[0] * a.kernel_size[1],
  infer([x], a) {
    const t = needNCHW('avg_pool2d', x);
    return [{ dtype: 'float32', shape: [t.shape[0], t.shape[1], ...pooledSize('avg_pool2d', t.shape, a, [1, 1])] }];
  },
  cpu([x], a: AvgAttrs) {
    const [N, C, H, W] = x!.shape;
    const [OH, OW] = pooledSize('avg_pool2d', x!.shape, a, [1, 1]) as [number, number];
    const out = new Float32Array(N * C * OH * OW);
    avgPool(x!.data as Float32Array, N * C, H, W, windowOf(a), OH, OW, a.count_include_pad, a.divisor_override, out);
    return [{ data: out, shape: [N, C, OH, OW], dtype: 'float32' }];
  },
  grad: {
    rule: (b, { gradOutputs: [g], inputTypes: [t], attrs }) =>
      [g && b.op('avg_pool2d_backward', [g], { ...attrs, input_size: t!.shape.slice(2) })],
  },
});

export const avg_pool2d_backward = defineOp({
  name: 'avg_pool2d_backward', doc: 'gradient of avg_pool2d: each output gradient spread evenly over its window (input_size [H, W])',
  inputs: ['grad_output'], attrs: avgBackwardAttrs,
  // Each grad_output element is spread over a kernel_size window.
  work: ([g], a) => numel(g!.shape) * a.kernel_size[0] * a.kernel_size[1],
  infer([g], a) {
    const t = needNCHW('avg_pool2d_backward', g, 'grad_output', true);
    const want = pooledSize('avg_pool2d_backward', [t.shape[0], t.shape[1], ...a.input_size], a, [1, 1]);
    if (want[0] !== t.shape[2] || want[1] !== t.shape[3]) {
      throw new OpError('avg_pool2d_backward', `grad_output ${fmtShape(t.shape)} does not match the pooled size ${fmtShape(want)} of input size ${fmtShape(a.input_size)}`);
    }
    return [{ dtype: 'float32', shape: [t.shape[0], t.shape[1], ...a.input_size] }];
  },
  cpu([g], a) {
    const [N, C, OH, OW] = g!.shape, [H, W] = a.input_size;
    const gx = new Float32Array(N * C * H * W);
    avgPoolBackward(g!.data as Float32Array, N * C, H, W, windowOf(a), OH, OW, a.count_include_pad, a.divisor_override, gx);
    return [{ data: gx, shape: [N, C, H, W], dtype: 'float32' }];
  },
  grad: {
    // Linear in grad_output: its adjoint is the forward pool.
    rule: (b, { gradOutputs: [gg], attrs: { input_size: _, ...pool } }) => [gg && b.op('avg_pool2d', [gg], pool)],
  },
});

export const adaptive_avg_pool2d = defineOp({
  name: 'adaptive_avg_pool2d', doc: 'mean over adaptive bins [floor(i·H/o), ceil((i+1)·H/o)) to output_size [OH, OW]',
  inputs: ['input'], attrs: adaptiveAttrs,
  infer([x], { output_size }) {
    const t = needNCHW('adaptive_avg_pool2d', x);
    return [{ dtype: 'float32', shape: [t.shape[0], t.shape[1], ...output_size] }];
  },
  cpu([x], { output_size: [OH, OW] }) {
    const [N, C, H, W] = x!.shape;
    const out = new Float32Array(N * C * OH * OW);
    adaptiveAvgPool(x!.data as Float32Array, N * C, H, W, OH, OW, out);
    return [{ data: out, shape: [N, C, OH, OW], dtype: 'float32' }];
  },
  grad: {
    rule: (b, { gradOutputs: [g], inputTypes: [t] }) =>
      [g && b.op('adaptive_avg_pool2d_backward', [g], { input_size: t!.shape.slice(2) })],
  },
});

export const adaptive_avg_pool2d_backward = defineOp({
  name: 'adaptive_avg_pool2d_backward', doc: 'gradient of adaptive_avg_pool2d: each output gradient spread evenly over its bin (input_size [H, W])',
  inputs: ['grad_output'], attrs: adaptiveBackwardAttrs,
  infer([g], { input_size }) {
    const t = needNCHW('adaptive_avg_pool2d_backward', g, 'grad_output');
    return [{ dtype: 'float32', shape: [t.shape[0], t.shape[1], ...input_size] }];
  },
  cpu([g], { input_size: [H, W] }) {
    const [N, C, OH, OW] = g!.shape;
    const gx = new Float32Array(N * C * H * W);
    adaptiveAvgPoolBackward(g!.data as Float32Array, N * C, H, W, OH, OW, gx);
    return [{ data: gx, shape: [N, C, H, W], dtype: 'float32' }];
  },
  grad: {
    // Linear in grad_output: its adjoint is the forward pool back to grad_output's size.
    rule: (b, { gradOutputs: [gg], inputTypes: [t] }) =>
      [gg && b.op('adaptive_avg_pool2d', [gg], { output_size: t!.shape.slice(2) })],
  },
});
