// Dynamically quantized LSTM and GRU (PyTorch's torch.ao.nn.quantized.dynamic.LSTM/GRU): every
// gate projection is a `quantized_linear` with an int8 weight; the cells (rnn-cells.ts) and the
// layer loop are the float layers'. Invariant: as ATen's quantized_lstm/quantized_gru on the
// CPU, the input projection of a layer runs once over the whole [T, B, F] sequence (so the
// activation range is the sequence's) and the hidden projection once per step, each with its
// bias; everything between the projections is float32.

import type { Tensor } from '../tensor.js';
import { cat, stack } from '../ops/shape.js';
import * as F from '../functional/index.js';
import { GRU, LSTM } from '../nn/rnn.js';
import { cellOf, type CellOps } from '../nn/rnn-cells.js';
import { tensorOps } from '../nn/rnn.js';
import { quantizedLinear, quantizeWeightTensor, type QScheme } from './linear.js';

interface QuantOpts { readonly qscheme: QScheme; readonly reduceRange: boolean }

type FloatRecurrent = LSTM | GRU;

/** Replaces the float weights of a freshly built layer by int8 buffers quantized from `src`. */
function adoptQuantized(layer: FloatRecurrent, src: FloatRecurrent, opts: QuantOpts): void {
  const dirs = src.bidirectional ? 2 : 1;
  for (let l = 0; l < src.numLayers; l++) {
    for (let d = 0; d < dirs; d++) {
      const sfx = `_l${l}${d === 1 ? '_reverse' : ''}`;
      for (const kind of ['ih', 'hh']) {
        const q = quantizeWeightTensor(src.getParameter(`weight_${kind}${sfx}`), opts.qscheme);
        layer.registerParameter(`weight_${kind}${sfx}`, null);
        layer.registerBuffer(`weight_${kind}${sfx}`, q.weight);
        layer.registerBuffer(`weight_${kind}${sfx}_scale`, q.scale);
        const b = src.bias ? src.getParameter(`bias_${kind}${sfx}`).detach() : null;
        layer.registerParameter(`bias_${kind}${sfx}`, null);
        layer.registerBuffer(`bias_${kind}${sfx}`, b);
      }
    }
  }
  layer.training = false;
}

/** The layer loop of a quantized LSTM/GRU (the float layer's `steps` with quantized projections). */
function quantizedSteps(layer: FloatRecurrent, kind: 'LSTM' | 'GRU', opts: QuantOpts, x: Tensor, h0: Tensor, c0: Tensor | null): [Tensor, Tensor, Tensor | null] {
  const { cell } = cellOf(kind);
  const dirs = layer.bidirectional ? 2 : 1;
  const T = x.shape[0];
  const hs = h0.unbind(0), cs = c0 ? c0.unbind(0) : null;
  const hN: Tensor[] = [], cN: Tensor[] = [];
  const buf = (name: string): Tensor => layer.getBuffer(name);
  const maybe = (name: string): Tensor | null => (layer.bias ? layer.getBuffer(name) : null);
  let input = x;
  for (let l = 0; l < layer.numLayers; l++) {
    const outs: Tensor[] = [];
    for (let d = 0; d < dirs; d++) {
      const sfx = `_l${l}${d === 1 ? '_reverse' : ''}`;
      const xw = quantizedLinear(input, buf(`weight_ih${sfx}`), buf(`weight_ih${sfx}_scale`), maybe(`bias_ih${sfx}`), opts).unbind(0);
      const wHh = buf(`weight_hh${sfx}`), sHh = buf(`weight_hh${sfx}_scale`);
      const ops: CellOps<Tensor> = { ...tensorOps, linear: (v, w, b) => quantizedLinear(v, w, sHh, b, opts) };
      let h = hs[l * dirs + d], c = cs ? cs[l * dirs + d] : null;
      const steps = new Array<Tensor>(T);
      for (let s = 0; s < T; s++) {
        const t = d === 1 ? T - 1 - s : s;
        [h, c] = cell(ops, xw[t], h, c, wHh, maybe(`bias_hh${sfx}`));
        steps[t] = h;
      }
      hN.push(h);
      if (c) cN.push(c);
      outs.push(stack(steps, 0));
    }
    input = dirs === 2 ? cat(outs, 2) : outs[0];
    if (layer.dropout > 0 && layer.training && l < layer.numLayers - 1) input = F.dropout(input, { p: layer.dropout, training: true });
  }
  return [input, stack(hN, 0), c0 ? stack(cN, 0) : null];
}

const layerOptions = (m: FloatRecurrent) => ({
  numLayers: m.numLayers, bias: m.bias, batchFirst: m.batchFirst, dropout: m.dropout, bidirectional: m.bidirectional,
});

/**
 * An LSTM whose weights are int8 (made by quantization.quantizeDynamic or fromFloat); forward as
 * nn.LSTM. Buffers: `weight_ih_l0` (int8), `weight_ih_l0_scale`, `bias_ih_l0` (float32), … .
 */
export class DynamicQuantizedLSTM extends LSTM {
  readonly qscheme: QScheme;
  readonly reduceRange: boolean;
  constructor(src: LSTM, opts: QuantOpts) {
    super(src.inputSize, src.hiddenSize, { ...layerOptions(src), dropout: src.numLayers > 1 ? src.dropout : 0 });
    this.qscheme = opts.qscheme;
    this.reduceRange = opts.reduceRange;
    adoptQuantized(this, src, opts);
  }
  static fromFloat(src: LSTM, opts: QuantOpts): DynamicQuantizedLSTM { return new DynamicQuantizedLSTM(src, opts); }
  protected override run(x: Tensor, h0: Tensor, c0: Tensor | null): [Tensor, Tensor, Tensor | null] {
    return quantizedSteps(this, 'LSTM', this, x, h0, c0);
  }
}

/** A GRU whose weights are int8 (see DynamicQuantizedLSTM); forward as nn.GRU. */
export class DynamicQuantizedGRU extends GRU {
  readonly qscheme: QScheme;
  readonly reduceRange: boolean;
  constructor(src: GRU, opts: QuantOpts) {
    super(src.inputSize, src.hiddenSize, { ...layerOptions(src), dropout: src.numLayers > 1 ? src.dropout : 0 });
    this.qscheme = opts.qscheme;
    this.reduceRange = opts.reduceRange;
    adoptQuantized(this, src, opts);
  }
  static fromFloat(src: GRU, opts: QuantOpts): DynamicQuantizedGRU { return new DynamicQuantizedGRU(src, opts); }
  protected override run(x: Tensor, h0: Tensor, c0: Tensor | null): [Tensor, Tensor, Tensor | null] {
    return quantizedSteps(this, 'GRU', this, x, h0, c0);
  }
}
