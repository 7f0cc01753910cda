// CLI fixture: valid TypeScript that jit.script refuses (try/catch on line 9), so `kiln
// compile` must print the scripter's located error and exit 1.
import { nn, type Tensor } from 'kiln';

export class Unscriptable extends nn.Module {
  fc = new nn.Linear(4, 2);
  forward(x: Tensor): Tensor {
    let y = this.fc.forward(x);
    try {
      y = y.relu();
    } catch {
      y = y.neg();
    }
    return y;
  }
}

export default new Unscriptable();
