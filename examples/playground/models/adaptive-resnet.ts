// An AdaptiveResNet-style model: how deep it runs depends on the data — a
// residual block applies only when the features are strong enough, and a refinement loop
// repeats while the output is large. The playground scripts the source (the default), so the
// graph keeps both decisions as `if`/`loop` regions; tracing would bake in one path and warn.
import { nn, type Tensor } from 'kiln';

export class AdaptiveResNet extends nn.Module {
  stem = new nn.Sequential(new nn.Conv2d(3, 16, 3, { padding: 1 }), new nn.BatchNorm2d(16), new nn.ReLU());
  block = new nn.Sequential(
    new nn.Conv2d(16, 16, 3, { padding: 1 }), new nn.BatchNorm2d(16), new nn.ReLU(),
    new nn.Conv2d(16, 16, 3, { padding: 1 }), new nn.BatchNorm2d(16));
  pool = new nn.AdaptiveAvgPool2d(1);
  head = new nn.Linear(16, 10);
  threshold = 0.1;

  forward(x: Tensor): Tensor {
    let h = this.stem.forward(x);
    if (h.mean().item() > this.threshold) {
      h = h.add(this.block.forward(h)).relu();
    }
    let logits = this.head.forward(this.pool.forward(h).flatten(1));
    let steps = 0;
    while (logits.abs().max().item() > 4 && steps < 3) {
      logits = logits.mul(0.5);
      steps = steps + 1;
    }
    return logits;
  }
}

export const inputs = { x: 'f32[N,3,16,16]' };

export default new AdaptiveResNet();
