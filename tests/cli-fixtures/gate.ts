// CLI fixture: data-dependent control flow (an `if` on a tensor value) that jit.script keeps
// as an if region; exported as a class for `--export Gate`.
import { nn, type Tensor } from 'kiln';

export class Gate extends nn.Module {
  fc = new nn.Linear(4, 3);
  forward(x: Tensor): Tensor {
    const y = this.fc.forward(x);
    if (y.sum().item() > 0) return y.relu();
    return y.neg().add(1);
  }
}

/** A factory, for `--export makeGate`. */
export function makeGate(): Gate {
  return new Gate();
}
