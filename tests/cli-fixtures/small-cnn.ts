// CLI fixture: a small CNN (conv-BN-ReLU-pool, then a linear head) exported as the default
// instance, with its input types exported as `inputs` so `kiln compile` needs no --input.
import { nn, type Tensor } from 'kiln';

export class SmallCnn extends nn.Module {
  features = new nn.Sequential(
    new nn.Conv2d(3, 8, 3, { padding: 1 }), new nn.BatchNorm2d(8), new nn.ReLU(), new nn.MaxPool2d(2));
  head = new nn.Linear(8 * 4 * 4, 5);
  forward(x: Tensor): Tensor {
    return this.head.forward(this.features.forward(x).flatten(1)).relu();
  }
}

export const inputs = ['x:f32[N,3,8,8]'];

export default new SmallCnn();
