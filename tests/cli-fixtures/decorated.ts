// A model file using the jit decorators by their documented names (@jit.export is the one
// esbuild's standard-decorator parser rejects: a reserved word after '@jit.').
import { jit, nn, type Tensor } from 'kiln';

@jit.script
export class Decorated extends nn.Module {
  fc = new nn.Linear(4, 3);

  forward(x: Tensor): Tensor {
    return this.head(this.fc.forward(x));
  }

  @jit.export
  head(y: Tensor): Tensor {
    return y.relu();
  }

  @jit.ignore
  report(y: Tensor): Tensor {
    return y;
  }

  @jit.unused
  debugOnly(y: Tensor): Tensor {
    return y.neg();
  }
}

export default new Decorated();
export const inputs = ['x:f32[N,4]'];
