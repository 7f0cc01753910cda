// The CPU peer benchmark's models as the peers run them, built from the weights Kiln's modules
// give (./cpu-models.mjs): ONNX for onnxruntime-web, tfjs-core ops (./tfjs-models.mjs) for
// tfjs-backend-wasm. Invariant: nothing here imports Kiln, so a peer's process — whose peak RSS
// ./cpu.mjs reports — holds only that peer.

import { onnxModel, seedModelOnnx } from './onnx.mjs';
import { mlpTfjs, resnetTfjs, seedModelTfjs } from './tfjs-models.mjs';

export const RESNET_BLOCKS = 3;
export const RESNET_CHANNELS = 16;
export const SEED = 'seed CNN';
export const MLP = 'MLP 784-512-512-10';
export const RESNET = `ResNet ${RESNET_BLOCKS} blocks ${RESNET_CHANNELS}ch`;

/** The MLP 784-512-512-10 as ONNX (Gemm with transB, Relu). */
function mlpOnnx(sd) {
  return onnxModel('mlp', ['N', 784], ['N', 10], (op, param) => {
    let h = 'x';
    ['0', '2', '4'].forEach((k, i) => {
      h = op('Gemm', [h, param(`${k}.weight`, sd[`${k}.weight`]), param(`${k}.bias`, sd[`${k}.bias`])], i === 2 ? 'logits' : `fc${k}`, { transB: 1 });
      if (i < 2) h = op('Relu', [h], `relu${k}`);
    });
  });
}

/** The small ResNet as ONNX (Conv, BatchNormalization, Relu, Add, GlobalAveragePool, Flatten, Gemm). */
function resnetOnnx(sd) {
  return onnxModel('small_resnet', ['N', 3, 32, 32], ['N', 10], (op, param) => {
    const convBn = (x, c, b, out) => {
      const y = op('Conv', [x, param(`${c}.weight`, sd[`${c}.weight`])], `${c}.out`, { kernel_shape: [3, 3], pads: [1, 1, 1, 1], strides: [1, 1] });
      const ps = ['weight', 'bias', 'running_mean', 'running_var'].map((k) => param(`${b}.${k}`, sd[`${b}.${k}`]));
      return op('BatchNormalization', [y, ...ps], out, { epsilon: 1e-5 });
    };
    let h = op('Relu', [convBn('x', 'stem.0', 'stem.1', 'stem.bn')], 'stem.relu');
    for (let i = 0; i < RESNET_BLOCKS; i++) {
      const p = `blocks.${i}`;
      const a = op('Relu', [convBn(h, `${p}.conv1`, `${p}.bn1`, `${p}.bn1.out`)], `${p}.relu1`);
      const s = op('Add', [convBn(a, `${p}.conv2`, `${p}.bn2`, `${p}.bn2.out`), h], `${p}.sum`);
      h = op('Relu', [s], `${p}.relu2`);
    }
    const f = op('Flatten', [op('GlobalAveragePool', [h], 'pool')], 'flat', { axis: 1 });
    op('Gemm', [f, param('fc.weight', sd['fc.weight']), param('fc.bias', sd['fc.bias'])], 'logits', { transB: 1 });
  });
}

/** Per model: its ONNX bytes and tfjs forward from the weights, and whether tfjs takes the image as NHWC. */
export const PEER_MODELS = {
  [SEED]: { onnx: seedModelOnnx, tfjs: seedModelTfjs, nhwc: true },
  [MLP]: { onnx: mlpOnnx, tfjs: mlpTfjs, nhwc: false },
  [RESNET]: { onnx: resnetOnnx, tfjs: (tf, w) => resnetTfjs(tf, w, RESNET_BLOCKS), nhwc: true },
};
