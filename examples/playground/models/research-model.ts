// The seed documents' ResearchModel as a model file: API.md's CIFAR-sized
// CNN (conv-BN-ReLU-pool ×2, dropout, a two-layer MLP). The compiler turns it into the
// ProductionModel on its own: dropout is removed, each BatchNorm is folded into its conv, and
// conv + ReLU + pool run as one fused kernel.
import { nn, type Tensor } from 'kiln';

export class ResearchModel extends nn.Module {
  features = new nn.Sequential(
    new nn.Conv2d(3, 64, 3, { padding: 1 }), new nn.BatchNorm2d(64), new nn.ReLU(), new nn.MaxPool2d(2),
    new nn.Conv2d(64, 128, 3, { padding: 1 }), new nn.BatchNorm2d(128), new nn.ReLU(), new nn.MaxPool2d(2));
  classifier = new nn.Sequential(new nn.Dropout(0.5), new nn.Linear(128 * 8 * 8, 512), new nn.ReLU(), new nn.Linear(512, 10));

  forward(x: Tensor): Tensor {
    return this.classifier.forward(this.features.forward(x).flatten(1));
  }
}

/** The input types `kiln compile` uses when no --input is given; N is the dynamic batch size. */
export const inputs = ['x:f32[N,3,32,32]'];

export default new ResearchModel();
