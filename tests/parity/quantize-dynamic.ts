// Golden family 'quantize_dynamic' (PyTorch's quantize_dynamic of a Linear to qint8, one case per
// quantized engine): the case's Linear is quantized with the engine's activation range
// (reduce_range: onednn and fbgemm [0,127], qnnpack [0,255]) and checked four ways: the int8
// weight values and scale exactly, the activation scale/zero point the engine chose, and the
// output against the engine's within the case tolerance (its emulation is exact).

import { nn, quantization, Tensor, tensor } from '@kiln/core';
import { quantizeActivations } from '@kiln/ir-spec';
import type { GoldenCase, GoldenTensor, Tol } from './golden.js';
import { expectClose, fromGolden } from './golden.js';

/** Checks one quantize_dynamic case; returns the number of tensors (and scalars) compared. */
export function runQuantizeDynamic(c: GoldenCase, tol: Tol): number {
  const { in_features: K, out_features: N } = c.attrs as { in_features: number; out_features: number };
  const params = c.params as Record<string, GoldenTensor>;
  const model = new nn.Sequential(new nn.Linear(K, N));
  model.loadStateDict({ '0.weight': fromGolden(params['0.weight']), '0.bias': fromGolden(params['0.bias']) }, { strict: true });
  const reduceRange = Boolean(c.emulation.reduce_range);
  const q = quantization.quantizeDynamic(model, { layers: [nn.Linear], dtype: 'qint8', reduceRange });
  const layer = q.get(0) as quantization.DynamicQuantizedLinear;
  if (!(layer instanceof quantization.DynamicQuantizedLinear)) throw new Error(`${c.name}: layer 0 was not quantized`);
  if (!(model.get(0) instanceof nn.Linear)) throw new Error(`${c.name}: quantizeDynamic changed the original model`);
  let n = 0;
  const wq = c.weight_quantized as { scale: number; zero_point: number; int_values: GoldenTensor };
  const gotInts = Array.from(layer.weight.toArray());
  const wantInts = wq.int_values.data!.map(Number);
  const bad = gotInts.findIndex((v, i) => v !== wantInts[i]);
  if (bad >= 0 || gotInts.length !== wantInts.length) throw new Error(`${c.name}: int8 weight element ${bad} is ${gotInts[bad]}, PyTorch has ${wantInts[bad]}`);
  n++;
  if (layer.weight_scale.toArray()[0] !== Math.fround(wq.scale)) throw new Error(`${c.name}: weight scale ${layer.weight_scale.toArray()[0]}, PyTorch ${wq.scale}`);
  if (wq.zero_point !== 0) throw new Error(`${c.name}: weight zero point ${wq.zero_point}; Kiln's weights are symmetric (0)`);
  n++;
  const input = fromGolden(c.inputs[0]);
  const { params: qp } = quantizeActivations(input.toArray() as Float32Array, reduceRange);
  if (qp.scale !== Math.fround(c.emulation.input_scale) || qp.zeroPoint !== c.emulation.input_zero_point) {
    throw new Error(`${c.name}: input qparams ${qp.scale}/${qp.zeroPoint}, PyTorch chose ${c.emulation.input_scale}/${c.emulation.input_zero_point}`);
  }
  n++;
  const out: Tensor = q.forward(input);
  const results = c.results as Record<string, GoldenTensor>;
  expectClose(out, results.output_dynamic_quantized, tol, `${c.name} output`);
  n++;
  // One quantization step of the output: |y − y_float| stays within what PyTorch's own differs by.
  const float = tensor(Array.from(model.forward(input).toArray()), { shape: [...out.shape] });
  const worst = out.sub(float).abs().max().item();
  if (!(worst <= 1.5 * Number(c.emulation.max_abs_diff_engine_vs_float) + 1e-6)) throw new Error(`${c.name}: max |int8 − float| = ${worst}, PyTorch's is ${c.emulation.max_abs_diff_engine_vs_float}`);
  return n;
}
