// Layer parity with PyTorch 1.13 (issue #22 part B): each case in tests/golden-kiln/nn_api/layers
// (written by scripts/golden/nn_api.py) holds a PyTorch module's state_dict, its inputs, its
// outputs, a cotangent per output and the gradients of Σ out·cot. The Kiln layer built with the
// same configuration loads the state_dict (strict: PyTorch's keys, shapes and order), runs the
// same inputs, and must give the same outputs and gradients for inputs and parameters.

import { describe, it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { nn, loadSafetensors, noGrad, ones, zeros, type Tensor } from '@kiln/core';

const DIR = fileURLToPath(new URL('./golden-kiln/nn_api/', import.meta.url));
interface CaseInfo { name: string; inputs: string[]; outputs: number; stateKeys: string[]; evalNoGrad: boolean }
const INDEX = JSON.parse(readFileSync(`${DIR}layers.json`, 'utf8')) as { torch: string; cases: CaseInfo[]; parameterContainers: string[] };

type In = Record<string, Tensor>;
type Case = { make: () => nn.Module; run: (m: nn.Module, i: In) => Tensor[]; tol?: number };
const one = (t: Tensor): Tensor[] => [t];
const enc = (m: nn.Module) => m as nn.TransformerEncoderLayer;
const dec = (m: nn.Module) => m as nn.TransformerDecoderLayer;

/** The Kiln side of every golden case: same configuration, same call. */
const CASES: Record<string, Case> = {
  transformer_encoder_layer_post_relu_batch_first: {
    make: () => new nn.TransformerEncoderLayer(8, 2, { dimFeedforward: 16, dropout: 0, batchFirst: true }),
    run: (m, i) => one(enc(m).forward(i.x, { srcMask: i.mask })),
  },
  transformer_encoder_layer_pre_gelu: {
    make: () => new nn.TransformerEncoderLayer(8, 2, { dimFeedforward: 16, dropout: 0, activation: 'gelu', normFirst: true }),
    run: (m, i) => one(enc(m).forward(i.x, { srcKeyPaddingMask: i.kpm })),
  },
  transformer_decoder_layer: {
    make: () => new nn.TransformerDecoderLayer(8, 2, { dimFeedforward: 16, dropout: 0 }),
    run: (m, i) => one(dec(m).forward(i.tgt, i.memory, { tgtMask: i.mask })),
  },
  transformer_decoder_layer_pre_batch_first: {
    make: () => new nn.TransformerDecoderLayer(8, 2, { dimFeedforward: 16, dropout: 0, batchFirst: true, normFirst: true }),
    run: (m, i) => one(dec(m).forward(i.tgt, i.memory)),
  },
  transformer_encoder_stack: {
    make: () => new nn.TransformerEncoder(new nn.TransformerEncoderLayer(8, 2, { dimFeedforward: 16, dropout: 0 }), 2, new nn.LayerNorm(8)),
    run: (m, i) => one((m as nn.TransformerEncoder).forward(i.x, { mask: i.mask })),
  },
  transformer: {
    make: () => new nn.Transformer({ dModel: 8, nhead: 2, numEncoderLayers: 1, numDecoderLayers: 1, dimFeedforward: 16, dropout: 0 }),
    run: (m, i) => one((m as nn.Transformer).forward(i.src, i.tgt, { tgtMask: i.tgt_mask })),
  },
  gru_cell: { make: () => new nn.GRUCell(4, 6), run: (m, i) => one((m as nn.GRUCell).forward(i.x, i.h)) },
  gru_cell_unbatched_no_state: { make: () => new nn.GRUCell(4, 6, { bias: false }), run: (m, i) => one((m as nn.GRUCell).forward(i.x)) },
  lstm_cell: { make: () => new nn.LSTMCell(4, 5), run: (m, i) => (m as nn.LSTMCell).forward(i.x, [i.h, i.c]) },
  rnn_cell_relu: { make: () => new nn.RNNCell(4, 5, { nonlinearity: 'relu' }), run: (m, i) => one((m as nn.RNNCell).forward(i.x, i.h)) },
  rnn_tanh_2layer_bidirectional: { make: () => new nn.RNN(4, 5, { numLayers: 2, bidirectional: true }), run: (m, i) => (m as nn.RNN).forward(i.x) },
  rnn_relu_batch_first: { make: () => new nn.RNN(4, 5, { nonlinearity: 'relu', batchFirst: true }), run: (m, i) => (m as nn.RNN).forward(i.x, i.h0) },
  group_norm: { make: () => new nn.GroupNorm(2, 6), run: (m, i) => one(m.forward(i.x)) },
  conv1d: { make: () => new nn.Conv1d(3, 4, 3, { stride: 2, padding: 1 }), run: (m, i) => one(m.forward(i.x)) },
  conv_transpose1d: { make: () => new nn.ConvTranspose1d(3, 2, 3, { stride: 2, padding: 1, outputPadding: 1 }), run: (m, i) => one(m.forward(i.x)) },
  instance_norm2d_affine: { make: () => new nn.InstanceNorm2d(3, { affine: true }), run: (m, i) => one(m.forward(i.x)) },
  instance_norm2d_running: { make: () => new nn.InstanceNorm2d(3, { trackRunningStats: true }), run: (m, i) => one(m.forward(i.x)) },
  prelu: { make: () => new nn.PReLU(3, 0.1), run: (m, i) => one(m.forward(i.x)) },
  elu: { make: () => new nn.ELU(0.5), run: (m, i) => one(m.forward(i.x)) },
  softplus: { make: () => new nn.Softplus({ beta: 2, threshold: 5 }), run: (m, i) => one(m.forward(i.x)) },
  hardswish: { make: () => new nn.Hardswish(), run: (m, i) => one(m.forward(i.x)) },
  mish: { make: () => new nn.Mish(), run: (m, i) => one(m.forward(i.x)) },
  silu: { make: () => new nn.SiLU(), run: (m, i) => one(m.forward(i.x)) },
  upsample_nearest_scale2: { make: () => new nn.Upsample({ scaleFactor: 2, mode: 'nearest' }), run: (m, i) => one(m.forward(i.x)) },
  upsample_nearest_size: { make: () => new nn.Upsample({ size: [5, 7], mode: 'nearest' }), run: (m, i) => one(m.forward(i.x)) },
  upsample_bilinear_size: { make: () => new nn.Upsample({ size: [5, 7], mode: 'bilinear', alignCorners: false }), run: (m, i) => one(m.forward(i.x)) },
  upsample_bilinear_align: { make: () => new nn.Upsample({ scaleFactor: 2, mode: 'bilinear', alignCorners: true }), run: (m, i) => one(m.forward(i.x)) },
  upsample_linear_scale: { make: () => new nn.Upsample({ scaleFactor: 2.5, mode: 'linear' }), run: (m, i) => one(m.forward(i.x)) },
  zero_pad2d: { make: () => new nn.ZeroPad2d([1, 0, 2, 1]), run: (m, i) => one(m.forward(i.x)) },
  constant_pad2d_crop: { make: () => new nn.ConstantPad2d([-1, 2, 0, 1], 1.5), run: (m, i) => one(m.forward(i.x)) },
  max_pool1d: { make: () => new nn.MaxPool1d(3, { stride: 2, padding: 1 }), run: (m, i) => one(m.forward(i.x)) },
  avg_pool1d: { make: () => new nn.AvgPool1d(3, { stride: 2, padding: 1, countIncludePad: false }), run: (m, i) => one(m.forward(i.x)) },
  adaptive_max_pool2d: { make: () => new nn.AdaptiveMaxPool2d([2, 3]), run: (m, i) => one(m.forward(i.x) as Tensor) },
  embedding_bag_mean_offsets: { make: () => new nn.EmbeddingBag(10, 3, { mode: 'mean' }), run: (m, i) => one((m as nn.EmbeddingBag).forward(i.idx, i.offsets)) },
  embedding_bag_sum_weights: { make: () => new nn.EmbeddingBag(10, 3, { mode: 'sum' }), run: (m, i) => one((m as nn.EmbeddingBag).forward(i.idx, i.offsets, i.psw)) },
  embedding_bag_max_2d: { make: () => new nn.EmbeddingBag(10, 3, { mode: 'max' }), run: (m, i) => one((m as nn.EmbeddingBag).forward(i.idx)) },
  unflatten: { make: () => new nn.Unflatten(1, [2, 3]), run: (m, i) => one(m.forward(i.x)) },
  // Eval under noGrad: PyTorch's nested-tensor fast path (zeros at padding, cut to the longest
  // sequence, then the final norm) for post-norm batchFirst layers; the ordinary path for pre-norm.
  transformer_encoder_eval_nested: {
    make: () => new nn.TransformerEncoder(new nn.TransformerEncoderLayer(8, 2, { dimFeedforward: 16, dropout: 0, batchFirst: true }), 2, new nn.LayerNorm(8)),
    run: (m, i) => one((m as nn.TransformerEncoder).forward(i.x, { srcKeyPaddingMask: i.kpm })),
  },
  transformer_encoder_eval_pre_norm: {
    make: () => new nn.TransformerEncoder(new nn.TransformerEncoderLayer(8, 2, { dimFeedforward: 16, dropout: 0, batchFirst: true, normFirst: true }), 2),
    run: (m, i) => one((m as nn.TransformerEncoder).forward(i.x, { srcKeyPaddingMask: i.kpm })),
  },
  identity: { make: () => new nn.Identity(54, { unusedArgument: 0.1 }), run: (m, i) => one(m.forward(i.x)) },
  transformer_decoder_stack_gelu: {
    make: () => new nn.TransformerDecoder(new nn.TransformerDecoderLayer(8, 2, { dimFeedforward: 16, dropout: 0, activation: 'gelu' }), 2, new nn.LayerNorm(8)),
    run: (m, i) => one((m as nn.TransformerDecoder).forward(i.tgt, i.memory, { tgtMask: i.mask, memoryKeyPaddingMask: i.mkpm })),
  },
};

function expectClose(name: string, got: Tensor, want: Tensor, tol: number): void {
  expect(got.shape, `${name}: shape`).toEqual(want.shape);
  const g = got.toArray() as ArrayLike<number>, w = want.toArray() as ArrayLike<number>;
  let worst = 0, at = -1;
  for (let k = 0; k < w.length; k++) {
    const err = Math.abs(g[k] - w[k]) / (tol + Math.abs(w[k]) * tol);
    if (!(err <= worst)) { worst = err; at = k; }
  }
  if (worst > 1) expect.fail(`${name}: element ${at} is ${g[at]}, PyTorch ${w[at]} (tolerance ${tol} abs + rel)`);
}

describe(`nn layers match PyTorch ${INDEX.torch} (state dicts loaded from safetensors)`, () => {
  it('has a Kiln case for every golden case and a golden case for every Kiln case', () => {
    expect(Object.keys(CASES).sort()).toEqual(INDEX.cases.map((c) => c.name).sort());
  });

  for (const info of INDEX.cases) {
    it(info.name, () => {
      const c = CASES[info.name];
      const file: Record<string, Tensor> = loadSafetensors(readFileSync(`${DIR}layers/${info.name}.safetensors`));
      const pick = (prefix: string) => Object.fromEntries(Object.entries(file).filter(([k]) => k.startsWith(prefix)).map(([k, v]) => [k.slice(prefix.length), v]));
      const m = c.make();
      // Same keys in the same order as PyTorch's state_dict, and a strict load.
      expect(Object.keys(m.stateDict())).toEqual(info.stateKeys);
      m.loadStateDict(pick('state.'));
      const inputs: Record<string, Tensor> = {};
      for (const [k, v] of Object.entries(pick('in.'))) inputs[k] = v.dtype === 'float32' && !info.evalNoGrad ? v.detach().requiresGrad_(true) : v;
      if (info.evalNoGrad) m.eval();
      const outs = info.evalNoGrad ? noGrad(() => c.run(m, inputs)) : c.run(m, inputs);
      expect(outs.length).toBe(info.outputs);
      const tol = c.tol ?? 2e-5;
      const cot = pick('cot.'), want = pick('out.');
      outs.forEach((o, j) => expectClose(`${info.name} output ${j}`, o, want[String(j)], tol));
      if (info.evalNoGrad) return;
      const loss = outs.map((o, j) => o.mul(cot[String(j)]).sum()).reduce((a, b) => a.add(b));
      loss.backward();
      for (const [k, g] of Object.entries(pick('gin.'))) {
        const got = inputs[k].grad;
        expect(got, `${info.name}: gradient of input ${k}`).toBeTruthy();
        expectClose(`${info.name} grad of input ${k}`, got as Tensor, g, 5e-5);
      }
      const params = new Map(m.namedParameters());
      const gparams = pick('gparam.');
      expect(Object.keys(gparams).sort(), `${info.name}: parameters with gradients`).toEqual([...params.entries()].filter(([, p]) => p.grad).map(([k]) => k).sort());
      for (const [k, g] of Object.entries(gparams)) expectClose(`${info.name} grad of ${k}`, params.get(k)?.grad as Tensor, g, 5e-5);
      // Buffers the forward updates (running statistics, num_batches_tracked) match PyTorch's after it.
      const after = pick('after.'), sd = m.stateDict();
      for (const [k, v] of Object.entries(after)) if (!params.has(k)) expectClose(`${info.name} buffer ${k} after forward`, sd[k].float(), v.float(), 2e-5);
    });
  }

  it('ParameterList and ParameterDict give PyTorch state dict keys', () => {
    class Holder extends nn.Module {
      plist = new nn.ParameterList([ones([2]), zeros([3])]);
      pdict = new nn.ParameterDict({ alpha: ones([1]), beta: ones([2]) });
      forward(): null { return null; }
    }
    expect(Object.keys(new Holder().stateDict())).toEqual(INDEX.parameterContainers);
  });
});
