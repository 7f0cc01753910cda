// Helpers and a base class that tests/script-models/coverage-a.ts imports: jit.script follows
// relative imports when it reads the model's .ts file (sourceFile), and inlines what they name.
import { nn, type Tensor } from 'kiln';

/** A residual step: x + relu(x) * scale. */
export function block(x: Tensor, scale: number): Tensor {
  return x.add(squash(x).mul(scale));
}

/** Called by `block`: the helper's own file is where jit.script finds it. */
function squash(x: Tensor): Tensor {
  return x.relu();
}

/** A helper exported as an arrow function under another name. */
const gateImpl = (x: Tensor): Tensor => x.sigmoid().mul(x);
export { gateImpl as gate };

/** A base class with a forward and a helper that subclasses in another file call through super. */
export class Backbone extends nn.Module {
  stem = new nn.Linear(4, 6);
  forward(x: Tensor): Tensor {
    return this.features(x).tanh();
  }
  features(x: Tensor): Tensor {
    return block(this.stem.forward(x), 0.5);
  }
}
