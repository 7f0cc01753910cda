// A model whose forward ends the process (reached when the CLI traces it): `kiln compile --trace`
// must fail (exit 1) and say so, not exit 0 with no output.
import { nn, type Tensor } from 'kiln';

class Quits extends nn.Module {
  fc = new nn.Linear(4, 2);
  forward(x: Tensor): Tensor {
    process.exit(0);
    return this.fc.forward(x);
  }
}

export default new Quits();
export const inputs = ['x:f32[N,4]'];
