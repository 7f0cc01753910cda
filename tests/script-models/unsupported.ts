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
    if (x.sum().item() > 0) bump();
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

export class TensorCompound extends nn.Module {
  forward(x: Tensor): Tensor {
    let y = x.relu();
    // @ts-expect-error: JavaScript has no tensor operators (eager would concatenate strings)
    y += x;
    return y;
  }
}

export class SwitchFallsThrough extends nn.Module {
  forward(x: Tensor): Tensor {
    let y = x;
    switch (x.shape[1]) {
      case 3:
        y = y.relu();
      case 4:
        y = y.neg();
        break;
    }
    return y;
  }
}

export class SwitchInnerBreak extends nn.Module {
  forward(x: Tensor): Tensor {
    let y = x;
    switch (x.shape[1]) {
      case 3:
        if (x.sum().item() > 0) break;
        y = y.neg();
        break;
    }
    return y;
  }
}

export class SwitchDefaultFirst extends nn.Module {
  forward(x: Tensor): Tensor {
    switch (x.shape[1]) {
      default: return x;
      case 3: return x.neg();
    }
  }
}

export class ReturnInRunTimeLoop extends nn.Module {
  forward(x: Tensor): Tensor {
    while (x.sum().item() < 10) {
      x = x.add(1);
      if (x.mean().item() > 5) return x;
    }
    return x;
  }
}

export class LabelledLoop extends nn.Module {
  forward(x: Tensor): Tensor {
    outer: for (let i = 0; i < 2; i++) {
      for (let j = 0; j < 2; j++) {
        if (j === 1) continue outer;
        x = x.add(1);
      }
    }
    return x;
  }
}
