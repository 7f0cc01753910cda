// Test models for BatchNorm in training mode under jit.script (issue 12): running statistics
// updated by the compiled forward as eager updates them.
import { nn, F, ones, zeros, type Tensor } from 'kiln';

/** Linear → BatchNorm1d (momentum 0.1) → ReLU → Linear → BatchNorm1d (cumulative, momentum null). */
export class BnMlp extends nn.Module {
  fc1 = new nn.Linear(4, 6);
  bn1 = new nn.BatchNorm1d(6);
  fc2 = new nn.Linear(6, 3);
  bn2 = new nn.BatchNorm1d(3, { momentum: null });
  forward(x: Tensor): Tensor {
    return this.bn2.forward(this.fc2.forward(this.bn1.forward(this.fc1.forward(x)).relu()));
  }
}

/** Conv2d → BatchNorm2d called twice (the second call reads the first call's new statistics). */
export class BnTwice extends nn.Module {
  conv = new nn.Conv2d(2, 3, 3, { padding: 1 });
  bn = new nn.BatchNorm2d(3, { momentum: 0.3 });
  forward(x: Tensor): Tensor {
    const h = this.bn.forward(this.conv.forward(x));
    return this.bn.forward(h.mul(2));
  }
}

/** BatchNorm inside a data-dependent branch: training mode is refused there. */
export class BnInBranch extends nn.Module {
  bn = new nn.BatchNorm1d(4);
  forward(x: Tensor): Tensor {
    if (x.sum().item() > 0) {
      return this.bn.forward(x);
    }
    return x;
  }
}

/** Unbiased variance and std over the dynamic batch dim. */
export class VarNet extends nn.Module {
  forward(x: Tensor): Tensor {
    return x.var(0).add(x.std()).add(x.var(1, { unbiased: false }).sum());
  }
}

/** F.batchNorm in training mode on the module's own buffers: the update cannot be carried back. */
export class FunctionalBn extends nn.Module {
  rm = zeros([3]);
  rv = ones([3]);
  constructor() {
    super();
    this.registerBuffer('rm', this.rm);
    this.registerBuffer('rv', this.rv);
  }
  forward(x: Tensor): Tensor {
    return F.batchNorm(x, this.rm, this.rv, { training: true });
  }
}
