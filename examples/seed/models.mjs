// The seed models: the CIFAR-sized CNN of API.md that benchmarks and later issues (tracing,
// scripting, conv-BN folding, dropout removal, .tsgraph export) measure and compile.
// ResearchModel is API.md's model verbatim; ProductionModel is the same network without dropout.
// Both keep the same stateDict keys, so weights trained in one load into the other.

import { nn } from 'kiln';

/** API.md's model: conv-BN-ReLU-pool ×2, then dropout and a two-layer MLP; input [N, 3, 32, 32]. */
export class ResearchModel extends nn.Module {
  features = new nn.Sequential(
    new nn.Conv2d(3, 64, 3, { padding: 1 }), new nn.BatchNorm2d(64), new nn.ReLU(), new nn.MaxPool2d(2),
    new nn.Conv2d(64, 128, 3, { padding: 1 }), new nn.BatchNorm2d(128), new nn.ReLU(), new nn.MaxPool2d(2));
  classifier = new nn.Sequential(new nn.Dropout(0.5), new nn.Linear(128 * 8 * 8, 512), new nn.ReLU(), new nn.Linear(512, 10));

  /** @param {import('kiln').Tensor} x [N, 3, 32, 32] @returns {import('kiln').Tensor} logits [N, 10] */
  forward(x) {
    return this.classifier.forward(this.features.forward(x).flatten(1));
  }
}

/**
 * ResearchModel as it would be deployed: identical features, a classifier without dropout.
 * `nn.Identity` holds the dropout's place so the layer indices — and thus the stateDict keys
 * (`classifier.1.weight`, …) — match ResearchModel's: `prod.loadStateDict(research.stateDict())`.
 */
export class ProductionModel extends nn.Module {
  features = new nn.Sequential(
    new nn.Conv2d(3, 64, 3, { padding: 1 }), new nn.BatchNorm2d(64), new nn.ReLU(), new nn.MaxPool2d(2),
    new nn.Conv2d(64, 128, 3, { padding: 1 }), new nn.BatchNorm2d(128), new nn.ReLU(), new nn.MaxPool2d(2));
  classifier = new nn.Sequential(new nn.Identity(), new nn.Linear(128 * 8 * 8, 512), new nn.ReLU(), new nn.Linear(512, 10));

  /** @param {import('kiln').Tensor} x [N, 3, 32, 32] @returns {import('kiln').Tensor} logits [N, 10] */
  forward(x) {
    return this.classifier.forward(this.features.forward(x).flatten(1));
  }
}

/** Input shape of the seed models for a batch size. */
export const seedInputShape = (batch) => [batch, 3, 32, 32];
