// The dynamically quantized Linear (PyTorch's torch.ao.nn.quantized.dynamic.Linear): an int8
// weight with its float32 scale(s), a float32 bias, and the `quantized_linear` op, which
// quantizes the input on every call. Invariant: inference only; the buffers are what a trace
// records, so a compiled graph and its .tsgraph file hold the int8 weight itself.

import { fmtShape, quantizeWeight } from '@kiln/ir-spec';
import { Tensor } from '../tensor.js';
import { dispatch1 } from '../dispatch.js';
import { Module, pyBool } from '../nn/module.js';

/** Per tensor (one scale) or per output channel (one scale per row of the weight). */
export type QScheme = 'per_tensor' | 'per_channel';

/** A quantized weight: int8 values [N, K] and float32 scales [1] or [N] (zero point 0). */
export interface QuantizedWeight { readonly weight: Tensor; readonly scale: Tensor }

/** Quantizes a float32 weight [N, K] symmetrically to int8 (PyTorch's default weight observers). */
export function quantizeWeightTensor(w: Tensor, qscheme: QScheme): QuantizedWeight {
  if (w.ndim !== 2 || w.dtype !== 'float32') throw new Error(`quantizeDynamic: a weight must be a 2-D float32 tensor, got ${w.dtype}${fmtShape(w.shape)}`);
  const [N, K] = w.shape;
  const { q, scale } = quantizeWeight(w.toArray() as Float32Array, N, K, qscheme === 'per_channel');
  return {
    weight: Tensor._fromCpu({ data: q, shape: [N, K], dtype: 'int8' }),
    scale: Tensor._fromCpu({ data: scale, shape: [scale.length], dtype: 'float32' }),
  };
}

/**
 * x·Wᵀ + b with W int8 and x quantized to uint8 per call (PyTorch's quantized::linear_dynamic).
 * `reduceRange` quantizes x to [0, 127] as fbgemm/onednn do (x86), else [0, 255] as qnnpack.
 * @example quantizedLinear(x, q.weight, q.scale, bias, { reduceRange: true })
 */
export function quantizedLinear(x: Tensor, weight: Tensor, scale: Tensor, bias: Tensor | null, opts: { reduceRange: boolean }): Tensor {
  return dispatch1('quantized_linear', [x, weight, scale, bias], { reduceRange: opts.reduceRange });
}

/**
 * A Linear layer with an int8 weight, made by quantization.quantizeDynamic (or fromFloat).
 * Buffers: `weight` (int8 [out, in]), `weight_scale` (float32 [1] or [out]), `bias` (float32).
 */
export class DynamicQuantizedLinear extends Module {
  readonly inFeatures: number;
  readonly outFeatures: number;
  readonly qscheme: QScheme;
  readonly reduceRange: boolean;
  declare weight: Tensor;
  declare weight_scale: Tensor;
  declare bias: Tensor | null;

  constructor(weight: QuantizedWeight, bias: Tensor | null, opts: { qscheme: QScheme; reduceRange: boolean }) {
    super();
    [this.outFeatures, this.inFeatures] = weight.weight.shape;
    this.qscheme = opts.qscheme;
    this.reduceRange = opts.reduceRange;
    this.registerBuffer('weight', weight.weight);
    this.registerBuffer('weight_scale', weight.scale);
    this.registerBuffer('bias', bias ? bias.detach() : null);
    this.training = false;
  }

  /** The quantized copy of a float Linear's weight and bias. */
  static fromFloat(m: { weight: Tensor; bias: Tensor | null }, opts: { qscheme: QScheme; reduceRange: boolean }): DynamicQuantizedLinear {
    return new DynamicQuantizedLinear(quantizeWeightTensor(m.weight, opts.qscheme), m.bias, opts);
  }

  forward(x: Tensor): Tensor {
    if (x.ndim === 0 || x.shape[x.ndim - 1] !== this.inFeatures) {
      throw new Error(`DynamicQuantizedLinear: input of shape ${fmtShape(x.shape)} does not end in inFeatures=${this.inFeatures}`);
    }
    return quantizedLinear(x, this.weight, this.weight_scale, this.bias, { reduceRange: this.reduceRange });
  }

  override extraRepr(): string {
    return `in_features=${this.inFeatures}, out_features=${this.outFeatures}, dtype=torch.qint8, qscheme=torch.${this.qscheme}_affine, bias=${pyBool(this.bias !== null)}`;
  }
}
