// Test models for hybrid mode: scripted blocks (with data-dependent control flow) inside traced
// models, and traced models inside scripted ones.
import { nn, type Tensor } from 'kiln';

/** A block with a data-dependent branch: tracing it alone would bake one path in. */
export class Gate extends nn.Module {
  fc = new nn.Linear(4, 4);
  forward(x: Tensor): Tensor {
    if (x.sum().item() > 0) return this.fc.forward(x).relu();
    return x.neg().mul(2);
  }
}

/** A plain model around a block it calls like any submodule. */
export class Around extends nn.Module {
  stem = new nn.Linear(4, 4);
  head = new nn.Linear(4, 2);
  block: { forward(x: Tensor): Tensor };
  constructor(block: { forward(x: Tensor): Tensor }) {
    super();
    this.block = block;
  }
  forward(x: Tensor): Tensor {
    return this.head.forward(this.block.forward(this.stem.forward(x).tanh()));
  }
}

/** A scripted model calling a traced one (which itself holds a scripted block) inside a loop. */
export class CallsTraced extends nn.Module {
  inner: { forward(x: Tensor): Tensor };
  constructor(inner: { forward(x: Tensor): Tensor }) {
    super();
    this.inner = inner;
  }
  forward(x: Tensor, n: number): Tensor {
    let y = x.sum(1, { keepdim: true }).expand(x.shape[0], 4);
    for (let i = 0; i < n; i++) y = this.inner.forward(y).sum(1, { keepdim: true }).expand(y.shape[0], 4).mul(0.5);
    return y;
  }
}
