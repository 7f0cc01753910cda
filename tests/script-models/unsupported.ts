// Models that use constructs jit.script refuses; each error must point at the construct.
import { nn, type Tensor } from 'kiln';

export class UsesTry extends nn.Module {
  forward(x: Tensor): Tensor {
    try {
      return x.relu();
    } catch {
      return x;
    }
  }
}

export class UsesClassExpression extends nn.Module {
  forward(x: Tensor): Tensor {
    const K = class { scale = 2; };
    return x.mul(new K().scale);
  }
}

let counter = 0;
export class CapturesMutable extends nn.Module {
  forward(x: Tensor): Tensor {
    return x.mul(counter);
  }
}

export class UsesClosure extends nn.Module {
  forward(x: Tensor): Tensor {
    let s = 1;
    const bump = () => { s += 1; };
    bump();
    return x.mul(s);
  }
}

export class UsesAsync extends nn.Module {
  async forward(x: Tensor): Promise<Tensor> {
    return x.relu();
  }
}

export class BranchTypesDiffer extends nn.Module {
  forward(x: Tensor): Tensor {
    let y = x;
    if (x.sum().item() > 0) {
      y = x.sum(1);
    }
    return y;
  }
}

export class TensorCondition extends nn.Module {
  forward(x: Tensor): Tensor {
    if (x.gt(0)) return x;
    return x.neg();
  }
}

export function bumpCounter(): void { counter++; }
