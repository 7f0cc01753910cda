// Op family 'quant': dynamically quantized inference ops (quantization.quantizeDynamic). The
// weights are int8 (symmetric, zero point 0) with a float32 scale per tensor ([1]) or per output
// channel ([N]); the activation is quantized to uint8 on every call over its own range
// (kernels/quant.ts, PyTorch 1.13's arithmetic). Invariant: these ops are inference only
// (no gradient) and compute what PyTorch's quantized::linear_dynamic computes, bit for bit.

import * as z from 'zod';
import { defineOp, outputBuffer } from '../op-def.js';
import { fmtShape, numel, OpError, sameDim, type TensorType } from '../shape.js';
import { primitivesOf } from '../kernels/primitives.js';
import { linearWork } from './linalg.js';

function need(t: TensorType | null, name: string, dtype: string): TensorType {
  if (!t) throw new OpError('quantized_linear', `input '${name}' is required`);
  if (t.dtype !== dtype) throw new OpError('quantized_linear', `${name} must be ${dtype}, got ${t.dtype}${dtype === 'int8' ? ' (quantize the layer with quantization.quantizeDynamic)' : '; call .float() first'}`);
  return t;
}

/** Shape rule: x[..., K], weight i8[N, K], scale f32[1] or f32[N], bias f32[N] → f32[..., N]. */
function quantizedLinearType(x: TensorType | null, w: TensorType | null, s: TensorType | null, bias: TensorType | null): TensorType {
  const tx = need(x, 'input', 'float32'), tw = need(w, 'weight', 'int8'), ts = need(s, 'weight_scale', 'float32');
  if (tx.shape.length < 1) throw new OpError('quantized_linear', `input must have at least 1 dimension, got ${fmtShape(tx.shape)}`);
  if (tw.shape.length !== 2) throw new OpError('quantized_linear', `weight must be 2-D [out_features, in_features], got ${fmtShape(tw.shape)}`);
  const K = tx.shape[tx.shape.length - 1];
  if (!sameDim(tw.shape[1], K)) throw new OpError('quantized_linear', `input ${fmtShape(tx.shape)} has ${K} features but weight ${fmtShape(tw.shape)} expects ${tw.shape[1]}`);
  if (ts.shape.length !== 1 || !(sameDim(ts.shape[0], 1) || sameDim(ts.shape[0], tw.shape[0]))) {
    throw new OpError('quantized_linear', `weight_scale must be [1] (per tensor) or [${tw.shape[0]}] (per channel), got ${fmtShape(ts.shape)}`);
  }
  if (bias) {
    need(bias, 'bias', 'float32');
    if (bias.shape.length !== 1 || !sameDim(bias.shape[0], tw.shape[0])) {
      throw new OpError('quantized_linear', `bias must have shape [${tw.shape[0]}] to match weight ${fmtShape(tw.shape)}, got ${fmtShape(bias.shape)}`);
    }
  }
  return { dtype: 'float32', shape: [...tx.shape.slice(0, -1), tw.shape[0]] };
}

export const quantized_linear = defineOp({
  name: 'quantized_linear',
  doc: 'dynamically quantized linear (PyTorch quantized::linear_dynamic): x quantized to uint8 over its range per call (reduceRange: [0,127] as fbgemm/onednn, else [0,255] as qnnpack), int32 sums with the int8 weight, y = float32(sum)·(s_x·s_w) + bias; relu: then relu(y) (quantized::linear_relu_dynamic; fuse-epilogue folds a following relu in)',
  inputs: ['input', 'weight', 'weight_scale', 'bias?'],
  attrs: z.object({ reduceRange: z.boolean(), relu: z.boolean().default(false) }).strict(),
  infer([x, w, s, bias]) { return [quantizedLinearType(x, w, s, bias)]; },
  // Each result element sums over the input's last dim, as linear.
  work: linearWork,
  cpu([x, w, s, bias], { reduceRange, relu }, ctx) {
    const t = quantizedLinearType(x, w, s, bias);
    const N = w!.shape[0], K = w!.shape[1], M = numel(x!.shape.slice(0, -1));
    const out = outputBuffer(ctx, 0, 'float32', M * N) as Float32Array;
    primitivesOf(ctx).quantizedLinear(M, N, K, x!.data as Float32Array, reduceRange, w!.data as Int8Array, s!.data as Float32Array, bias ? bias.data as Float32Array : null, out, relu === true);
    return [{ data: out, shape: t.shape as number[], dtype: 'float32' }];
  },
  grad: null,
});
