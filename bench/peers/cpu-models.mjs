// The models of the CPU peer benchmark (./cpu.mjs) as Kiln modules (eager, and traced for the
// runtime rows); ./cpu-peers.mjs builds the same models for onnxruntime-web (ONNX) and
// tfjs-backend-wasm (tfjs-core ops) from the weights these give. Models: the seed
// CNN (./model.mjs), an MLP 784-512-512-10, and a small ResNet (stem conv + 3 basic blocks of 16
// channels on 32×32, global average pool, linear). Invariant: weights come from manualSeed'ed
// Kiln modules whose BatchNorm statistics and affine parameters are seeded non-trivial values, so
// every process that builds a model gets the same numbers, and a peer's output is compared with
// Kiln eager's before any timing (./cpu.mjs).

import { jit, manualSeed, nn, noGrad, tensor } from 'kiln';
import { seededValues } from '../stats.mjs';
import { seedInput, seedModel } from './model.mjs';
import { MLP, RESNET, RESNET_BLOCKS, RESNET_CHANNELS, SEED } from './cpu-peers.mjs';

class BasicBlock extends nn.Module {
  constructor(c) {
    super();
    this.conv1 = new nn.Conv2d(c, c, 3, { padding: 1, bias: false });
    this.bn1 = new nn.BatchNorm2d(c);
    this.conv2 = new nn.Conv2d(c, c, 3, { padding: 1, bias: false });
    this.bn2 = new nn.BatchNorm2d(c);
  }

  forward(x) {
    const h = this.bn1.forward(this.conv1.forward(x)).relu();
    return this.bn2.forward(this.conv2.forward(h)).add(x).relu();
  }
}

class SmallResNet extends nn.Module {
  constructor() {
    super();
    const c = RESNET_CHANNELS;
    this.stem = new nn.Sequential(new nn.Conv2d(3, c, 3, { padding: 1, bias: false }), new nn.BatchNorm2d(c), new nn.ReLU());
    this.blocks = new nn.Sequential(...Array.from({ length: RESNET_BLOCKS }, () => new BasicBlock(c)));
    this.pool = new nn.AdaptiveAvgPool2d(1);
    this.fc = new nn.Linear(c, 10);
  }

  forward(x) {
    return this.fc.forward(this.pool.forward(this.blocks.forward(this.stem.forward(x))).flatten(1));
  }
}

/** Seeds every BatchNorm2d's statistics and affine parameters (uniform ranges as ./model.mjs). */
function seedBatchNorms(model) {
  const sd = model.stateDict();
  const loaded = { ...sd };
  let k = 0;
  const uniform = (n, lo, hi) => seededValues(n, 101 + k++).map((v) => lo + (v + 0.5) * (hi - lo));
  for (const [name, m] of model.namedModules()) {
    if (!(m instanceof nn.BatchNorm2d)) continue;
    const c = sd[`${name}.running_mean`].shape[0];
    const set = (key, lo, hi) => { loaded[`${name}.${key}`] = tensor(uniform(c, lo, hi), { shape: [c] }); };
    set('weight', 0.5, 1.5); set('bias', -0.2, 0.2); set('running_mean', -0.1, 0.1); set('running_var', 0.5, 2);
  }
  model.loadStateDict(loaded);
}

/** A module's stateDict as plain { data, shape } arrays (what peer processes receive). */
function arrays(model) {
  return Object.fromEntries(Object.entries(model.stateDict()).map(([k, t]) => [k, { data: Float32Array.from(t.toArray()), shape: [...t.shape] }]));
}

const image = (n) => seedInput(n);
const vector = (n) => ({ data: seededValues(n * 784, 9 + n), shape: [n, 784], dtype: 'float32' });

/**
 * The benchmark's models by name (./cpu-peers.mjs builds the peers' forms): `batches`,
 * `input(n)` (NCHW or [n, 784]) and `kiln()` building the module in the calling process with the
 * `weights` the peers get.
 */
export const MODELS = {
  [SEED]: {
    batches: [1, 32], input: image,
    kiln() { const { model, weights } = seedModel(); return { model, weights }; },
  },
  [MLP]: {
    batches: [1, 64], input: vector,
    kiln() {
      manualSeed(3);
      const model = new nn.Sequential(new nn.Linear(784, 512), new nn.ReLU(), new nn.Linear(512, 512), new nn.ReLU(), new nn.Linear(512, 10));
      model.eval();
      return { model, weights: arrays(model) };
    },
  },
  [RESNET]: {
    batches: [1, 16], input: image,
    kiln() {
      manualSeed(4);
      const model = new SmallResNet();
      seedBatchNorms(model);
      model.eval();
      return { model, weights: arrays(model) };
    },
  },
};

/** A Kiln module's forward traced with a dynamic batch dim N (the graph the runtime rows compile). */
export function traceBatchDynamic(model, input) {
  const x = input(1);
  return jit.trace(model, [tensor(x.data, { shape: x.shape })], { dynamicAxes: { 0: { 0: 'N' } }, warn: false, checkTrace: false }).graph;
}

/** Kiln eager's output for `x`, flat. */
export function eager(model, x) {
  return noGrad(() => model.forward(tensor(x.data, { shape: x.shape })).toArray());
}
