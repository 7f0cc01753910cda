// Op family 'conv': conv2d, conv_transpose2d and conv2d_weight_grad (the weight gradient).
// The three are closed under differentiation: the input gradient of conv2d is a
// conv_transpose2d with the same weight and vice versa, and both weight gradients are
// conv2d_weight_grad, whose own gradients are a conv2d and a conv_transpose2d.
// Layouts are PyTorch's (NCHW; conv weight [Cout, Cin/groups, kh, kw]; transposed-conv weight
// [Cin, Cout/groups, kh, kw]). Padding is explicit per side, [top, left, bottom, right] (the ONNX
// order), so F.conv2d can express PyTorch's 'same' with even kernels (1 before, 2 after).

import * as z from 'zod';
import { defineOp, type CpuTensor, type KernelContext } from '../op-def.js';
import { concreteDim, dimSum, fmtShape, numel, OpError, sameDim, symbolicWindowSize, type Dim, type TensorType } from '../shape.js';
import { dimMul } from '../ir/dims.js';
import { primitivesOf } from '../kernels/primitives.js';
import { convTranspose2dForward, type ConvWindow } from '../kernels/conv.js';

const int = z.number().int();
const pos2 = z.tuple([int.min(1), int.min(1)]);
const pad4 = z.tuple([int.min(0), int.min(0), int.min(0), int.min(0)]);

const convAttrs = z.object({
  stride: pos2.default([1, 1]),
  /** [top, left, bottom, right] */
  padding: pad4.default([0, 0, 0, 0]),
  dilation: pos2.default([1, 1]),
  groups: int.min(1).default(1),
}).strict();
export type ConvAttrs = z.output<typeof convAttrs>;

const convTransposeAttrs = convAttrs.extend({
  output_padding: z.tuple([int.min(0), int.min(0)]).default([0, 0]),
}).strict();
type ConvTransposeAttrs = z.output<typeof convTransposeAttrs>;

const weightGradAttrs = convAttrs.extend({ kernel_size: pos2 }).strict();

/**
 * Checks a 4-D float input. Activations ([N, C, H, W]) may have symbolic batch and spatial dims
 * (the channels must be concrete); weights must be concrete throughout.
 */
function need4(op: string, t: TensorType | null, name: string, layout: string, weight = false): TensorType {
  if (!t) throw new OpError(op, `input '${name}' is required`);
  if (t.dtype !== 'float32') throw new OpError(op, `${name} must be float32, got ${t.dtype}`);
  if (t.shape.length !== 4) throw new OpError(op, `${name} must be 4-D ${layout}, got ${fmtShape(t.shape)}`);
  for (let i = weight ? 0 : 1; i < (weight ? 4 : 2); i++) {
    if (typeof t.shape[i] !== 'number') concreteDim(op, t.shape[i], () => `${name} ${fmtShape(t.shape)} dim ${i}`, weight ? 'weight shapes cannot be symbolic' : 'the channel count fixes the weight shape');
  }
  return t;
}

function checkBias(op: string, bias: TensorType | null, C: number): void {
  if (!bias) return;
  if (bias.dtype !== 'float32' || bias.shape.length !== 1 || bias.shape[0] !== C) {
    throw new OpError(op, `bias must be float32 of shape [${C}], got ${bias.dtype}${fmtShape(bias.shape)}`);
  }
}

const windowOf = (kh: number, kw: number, a: ConvAttrs): ConvWindow => ({
  kh, kw, sh: a.stride[0], sw: a.stride[1], pt: a.padding[0], pl: a.padding[1], dh: a.dilation[0], dw: a.dilation[1],
});

/** Output size of a convolution along one dim (PyTorch's floor rule). */
export function convOutSize(size: number, k: number, stride: number, padBefore: number, padAfter: number, dilation: number): number {
  return Math.floor((size + padBefore + padAfter - dilation * (k - 1) - 1) / stride) + 1;
}

/** Shapes of conv2d(x, w): checks channels and groups, returns [N, Cout, OH, OW]; H and W may be symbolic. */
function conv2dShape(op: string, x: TensorType, w: readonly number[], a: ConvAttrs): Dim[] {
  const [, C, H, W] = x.shape as [Dim, number, Dim, Dim];
  const [Cout, Cg, kh, kw] = w;
  const g = a.groups;
  if (C % g !== 0 || Cout % g !== 0) {
    throw new OpError(op, `groups=${g} must divide both the input channels (${C}) and the output channels (${Cout})`);
  }
  if (Cg * g !== C) {
    throw new OpError(op, `input ${fmtShape(x.shape)} has ${C} channels but weight ${fmtShape(w)} with groups=${g} expects ${Cg * g}`);
  }
  // Numbers (every eager call) take the direct formula; symbols go through the dim algebra.
  const OH = typeof H === 'number' ? convOutSize(H, kh, a.stride[0], a.padding[0], a.padding[2], a.dilation[0])
    : symbolicWindowSize(op, () => `input ${fmtShape(x.shape)} dim 2`, H, kh, a.stride[0], a.padding[0], a.padding[2], a.dilation[0]);
  const OW = typeof W === 'number' ? convOutSize(W, kw, a.stride[1], a.padding[1], a.padding[3], a.dilation[1])
    : symbolicWindowSize(op, () => `input ${fmtShape(x.shape)} dim 3`, W, kw, a.stride[1], a.padding[1], a.padding[3], a.dilation[1]);
  if ((typeof OH === 'number' && OH < 1) || (typeof OW === 'number' && OW < 1)) {
    throw new OpError(op, `input ${fmtShape(x.shape)} padded by ${fmtShape(a.padding)} is smaller than the kernel ${kh}x${kw} dilated by ${fmtShape(a.dilation)} (output would be ${OH}x${OW})`);
  }
  return [x.shape[0], Cout, OH, OW];
}

/** Output padding that makes a transposed convolution reproduce an input of size `size`. */
export function adjointOutputPadding(size: number, k: number, stride: number, padBefore: number, padAfter: number, dilation: number): number {
  return (size + padBefore + padAfter - dilation * (k - 1) - 1) % stride;
}

/**
 * conv2d's CPU kernel, shared with fused_conv2d (which asks for its relu in the primitive's
 * epilogue): the device's conv2d primitive writes straight into the offered result buffer
 * (ctx.out[0], never an input's for this op) when it fits.
 */
export function conv2dKernel(x: CpuTensor, w: CpuTensor, bias: CpuTensor | null | undefined, a: ConvAttrs, ctx: KernelContext | undefined, relu = false): CpuTensor {
  const shape = conv2dShape('conv2d', x, w.shape, a) as number[];
  const [N, C, H, W] = x.shape, [Cout, , kh, kw] = w.shape, [, , OH, OW] = shape;
  const dims = { N, C, H, W, Cout, G: a.groups, OH, OW, win: windowOf(kh, kw, a) };
  const offered = ctx?.out?.[0];
  const out = offered instanceof Float32Array && offered.length === N * Cout * OH * OW ? offered : undefined;
  const epi = out || relu ? { out, relu } : undefined;
  return { data: primitivesOf(ctx).conv2d(x.data as Float32Array, w.data as Float32Array, (bias?.data ?? null) as Float32Array | null, dims, epi), shape, dtype: 'float32' };
}

export const conv2d = defineOp({
  name: 'conv2d', doc: '2-D cross-correlation of x [N,Cin,H,W] with weight [Cout,Cin/groups,kh,kw], plus bias [Cout]',
  inputs: ['input', 'weight', 'bias?'], attrs: convAttrs,
  infer([x, w, bias], a) {
    const tx = need4('conv2d', x, 'input', '[N, C, H, W]'), tw = need4('conv2d', w, 'weight', '[Cout, Cin/groups, kh, kw]', true);
    checkBias('conv2d', bias, tw.shape[0] as number);
    return [{ dtype: 'float32', shape: conv2dShape('conv2d', tx, tw.shape as number[], a) }];
  },
  // Each result element sums over a weight plane's Cin/groups·kh·kw taps.
  work: ([, w], _a, [y]) => numel(y.shape) * numel(w!.shape.slice(1)),
  cpu([x, w, bias], a, ctx) {
    return [conv2dKernel(x!, w!, bias, a, ctx)];
  },
  grad: {
    saveInputs: [0, 1],
    rule: (b, { gradOutputs: [g], inputs: [x, w], inputTypes: [tx, tw], attrs: a, needsInputGrad: [nx, nw, nb] }) => {
      if (!g) return [null, null, null];
      const [, , H, W] = tx!.shape as number[], [, , kh, kw] = tw!.shape as number[];
      const output_padding = [
        adjointOutputPadding(H, kh, a.stride[0], a.padding[0], a.padding[2], a.dilation[0]),
        adjointOutputPadding(W, kw, a.stride[1], a.padding[1], a.padding[3], a.dilation[1]),
      ];
      const gx = nx ? b.op('conv_transpose2d', [g, w!, null], { ...a, output_padding }) : null;
      const gw = nw ? b.op('conv2d_weight_grad', [x!, g], { ...a, kernel_size: [kh, kw] }) : null;
      const gb = nb ? b.sum(g, [0, 2, 3]) : null;
      return [gx, gw, gb];
    },
  },
});

/** Shape of conv_transpose2d(x, w): [N, Cout/groups·groups, OH, OW]; H and W may be symbolic (the rule is linear). */
function convTransposeShape(op: string, x: TensorType, w: readonly number[], a: ConvTransposeAttrs): Dim[] {
  const [, C, H, W] = x.shape as [Dim, number, Dim, Dim];
  const [Cin, Coutg, kh, kw] = w;
  const g = a.groups;
  if (Cin !== C) {
    throw new OpError(op, `input ${fmtShape(x.shape)} has ${C} channels but weight ${fmtShape(w)} (layout [Cin, Cout/groups, kh, kw]) expects ${Cin}`);
  }
  if (C % g !== 0) throw new OpError(op, `groups=${g} must divide the input channels (${C})`);
  for (let d = 0; d < 2; d++) {
    if (a.output_padding[d] >= a.stride[d]) {
      throw new OpError(op, `output_padding ${fmtShape(a.output_padding)} must be smaller than stride ${fmtShape(a.stride)} in every dim (F.convTranspose2d also handles output_padding < dilation)`);
    }
  }
  const OH = transposedSize(H, kh, 0, a), OW = transposedSize(W, kw, 1, a);
  if ((typeof OH === 'number' && OH < 1) || (typeof OW === 'number' && OW < 1)) throw new OpError(op, `input ${fmtShape(x.shape)} with padding ${fmtShape(a.padding)} gives an empty output (${OH}x${OW})`);
  return [x.shape[0], Coutg * g, OH, OW];
}

/** (size-1)·stride - pads + dilation·(k-1) + output_padding + 1 along spatial dim `d` (0: H, 1: W). */
function transposedSize(size: Dim, k: number, d: 0 | 1, a: ConvTransposeAttrs): Dim {
  const rest = -a.stride[d] - a.padding[d] - a.padding[d + 2] + a.dilation[d] * (k - 1) + a.output_padding[d] + 1;
  if (typeof size === 'number') return size * a.stride[d] + rest;
  return dimSum([dimMul(size, a.stride[d]), rest]);
}

export const conv_transpose2d = defineOp({
  name: 'conv_transpose2d',
  doc: 'transposed 2-D convolution (the adjoint of conv2d) of x [N,Cin,H,W] with weight [Cin,Cout/groups,kh,kw], plus bias [Cout]',
  inputs: ['input', 'weight', 'bias?'], attrs: convTransposeAttrs,
  infer([x, w, bias], a) {
    const tx = need4('conv_transpose2d', x, 'input', '[N, C, H, W]'), tw = need4('conv_transpose2d', w, 'weight', '[Cin, Cout/groups, kh, kw]', true);
    const shape = convTransposeShape('conv_transpose2d', tx, tw.shape as number[], a);
    checkBias('conv_transpose2d', bias, shape[1] as number);
    return [{ dtype: 'float32', shape }];
  },
  // Each input element is spread over Cout/groups·kh·kw result taps.
  work: ([x, w]) => numel(x!.shape) * numel(w!.shape.slice(1)),
  cpu([x, w, bias], a, ctx) {
    const shape = convTransposeShape('conv_transpose2d', x!, w!.shape, a) as number[];
    const [N, C, H, W] = x!.shape, [, , kh, kw] = w!.shape, [, Cout, OH, OW] = shape;
    const dims = { N, C, H, W, Cout, G: a.groups, OH, OW, win: windowOf(kh, kw, a) };
    // Into the runtime's planned slot when it offers one that fits (never an input's: conv_transpose2d is not elementwise).
    const offered = ctx?.out?.[0];
    const into = offered instanceof Float32Array && offered.length === N * Cout * OH * OW ? offered : undefined;
    return [{ data: convTranspose2dForward(x!.data as Float32Array, w!.data as Float32Array, (bias?.data ?? null) as Float32Array | null, dims, primitivesOf(ctx), into), shape, dtype: 'float32' }];
  },
  grad: {
    saveInputs: [0, 1],
    rule: (b, { gradOutputs: [g], inputs: [x, w], inputTypes: [, tw], attrs: a, needsInputGrad: [nx, nw, nb] }) => {
      if (!g) return [null, null, null];
      const { output_padding: _, ...conv } = a;
      const [, , kh, kw] = tw!.shape as number[];
      const gx = nx ? b.op('conv2d', [g, w!, null], conv) : null;
      const gw = nw ? b.op('conv2d_weight_grad', [g, x!], { ...conv, kernel_size: [kh, kw] }) : null;
      const gb = nb ? b.sum(g, [0, 2, 3]) : null;
      return [gx, gw, gb];
    },
  },
});

export const conv2d_weight_grad = defineOp({
  name: 'conv2d_weight_grad',
  doc: 'gradient of conv2d with respect to its weight: Σ over batch and positions of grad_output ⊗ input patches → [Cout, Cin/groups, kh, kw]',
  inputs: ['input', 'grad_output'], attrs: weightGradAttrs,
  infer([x, go], a) {
    const tx = need4('conv2d_weight_grad', x, 'input', '[N, C, H, W]'), tg = need4('conv2d_weight_grad', go, 'grad_output', '[N, Cout, OH, OW]');
    return [{ dtype: 'float32', shape: weightGradShape(tx, tg, a) }];
  },
  // Each grad_output element meets Cin/groups·kh·kw input taps.
  work: ([, go], _a, [gw]) => numel(go!.shape) * numel(gw.shape.slice(1)),
  cpu([x, go], a, ctx) {
    const shape = weightGradShape(x!, go!, a) as number[];
    const [N, C, H, W] = x!.shape, [, Cout, OH, OW] = go!.shape, [kh, kw] = a.kernel_size;
    const dims = { N, C, H, W, Cout, G: a.groups, OH, OW, win: windowOf(kh, kw, a) };
    return [{ data: primitivesOf(ctx).conv2dWeightGrad(x!.data as Float32Array, go!.data as Float32Array, dims), shape, dtype: 'float32' }];
  },
  grad: {
    saveInputs: [0, 1],
    rule: (b, { gradOutputs: [gw], inputs: [x, go], inputTypes: [tx], attrs: a, needsInputGrad: [nx, ng] }) => {
      if (!gw) return [null, null];
      const { kernel_size: [kh, kw], ...conv } = a;
      const [, , H, W] = tx!.shape as number[];
      const output_padding = [
        adjointOutputPadding(H, kh, a.stride[0], a.padding[0], a.padding[2], a.dilation[0]),
        adjointOutputPadding(W, kw, a.stride[1], a.padding[1], a.padding[3], a.dilation[1]),
      ];
      // The weight gradient is bilinear in (input, grad_output): differentiate each factor.
      const gx = nx ? b.op('conv_transpose2d', [go!, gw, null], { ...conv, output_padding }) : null;
      const gg = ng ? b.op('conv2d', [x!, gw, null], conv) : null;
      return [gx, gg];
    },
  },
});

function weightGradShape(x: TensorType, go: TensorType, a: z.output<typeof weightGradAttrs>): Dim[] {
  const C = x.shape[1] as number, Cout = go.shape[1] as number, g = a.groups;
  const [kh, kw] = a.kernel_size;
  if (C % g !== 0 || Cout % g !== 0) {
    throw new OpError('conv2d_weight_grad', `groups=${g} must divide both the input channels (${C}) and the grad_output channels (${Cout})`);
  }
  const expect = conv2dShape('conv2d_weight_grad', x, [Cout, C / g, kh, kw], a);
  if (!sameDim(x.shape[0], go.shape[0]) || !sameDim(expect[2], go.shape[2]) || !sameDim(expect[3], go.shape[3])) {
    throw new OpError('conv2d_weight_grad', `grad_output ${fmtShape(go.shape)} does not match the conv2d output ${fmtShape(expect)} of input ${fmtShape(x.shape)}`);
  }
  return [Cout, C / g, kh, kw];
}
