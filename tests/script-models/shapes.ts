// Test models for jit.script: shapes (`x.shape[i]` → `dim`), tuples and arrays of tensors.
import { nn, type Tensor } from 'kiln';

/** Reshapes with a size read from the input and branches on the batch size. */
export class ShapeUser extends nn.Module {
  fc = new nn.Linear(12, 2);
  forward(x: Tensor): Tensor {
    const n = x.shape[0];
    const flat = x.reshape(n, -1);
    const y = this.fc.forward(flat);
    return n > 2 ? y.mul(2) : y;
  }
}

/** Returns a tuple; destructures a chunk; collects results in an array. */
export class Splitter extends nn.Module {
  forward(x: Tensor): [Tensor, Tensor[]] {
    const [a, b] = x.chunk(2, 1);
    const parts: Tensor[] = [];
    for (let k = 0; k < 3; k++) {
      if (k === 1) continue;
      parts.push(a.mul(k + 1));
    }
    return [a.add(b), parts];
  }
}

/** Hybrid mode: a traced submodule (jit.trace result) called from scripted code. */
export class HybridModel extends nn.Module {
  encoder: { forward(x: Tensor): Tensor };
  head = new nn.Linear(6, 2);
  constructor(encoder: { forward(x: Tensor): Tensor }) {
    super();
    this.encoder = encoder;
  }
  forward(x: Tensor): Tensor {
    const h = this.encoder.forward(x);
    return h.mean().item() > 0 ? this.head.forward(h) : this.head.forward(h.neg());
  }
}
