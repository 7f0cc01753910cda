// CLI fixture: a model file with a syntax error on line 7 (a missing closing parenthesis).
import { nn, type Tensor } from 'kiln';

export default new (class Broken extends nn.Module {
  fc = new nn.Linear(4, 2);
  forward(x: Tensor): Tensor {
    return this.fc.forward(x.relu();
  }
})();
