// Models whose compiled code calls Kiln library methods (nn.Module's own methods) that jit.script
// cannot lower; the error must point at the call in this file. Submodules that are not the
// scripted root are read from their runtime text (their class is not decorated).
import { nn, type Tensor } from 'kiln';

export class MLP extends nn.Module {
  fc = new nn.Linear(3, 3);
  forward(x: Tensor): Tensor { return this.fc.forward(x); }
}

export class CallsParameters extends nn.Module {
  net = new MLP();
  forward(x: Tensor): Tensor {
    const ps = this.net.parameters();
    return x.mul(ps.length);
  }
}

export class Untyped extends nn.Module {
  fc = new nn.Linear(3, 3);
  forward(x: Tensor): Tensor {
    const ps = this.parameters();
    return x.mul(ps.length);
  }
}

export class CallsUntyped extends nn.Module {
  sub = new Untyped();
  forward(x: Tensor): Tensor {
    return this.sub.forward(x);
  }
}
