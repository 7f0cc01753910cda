// Test models for random ops in compiled code (issue 12): a branch on rand([]).item(), rand and
// randn in arithmetic, dropout as a layer and as F.dropout in training mode, randLike.
import { nn, F, rand, randint, randn, randLike, type Tensor } from 'kiln';

/** `if (rand([]).item() < 0.3)`: the branch must be drawn on every run, not at compile time. */
export class CoinFlip extends nn.Module {
  forward(x: Tensor): Tensor {
    if (rand([]).item() < 0.3) {
      return x.add(1);
    }
    return x.sub(1);
  }
}

/** rand/randn/randLike/randint as values: noise added to the input. */
export class Noisy extends nn.Module {
  forward(x: Tensor): Tensor {
    return x.add(randn([1, 4])).mul(rand([4])).add(randLike(x)).add(randint(-2, 5, [4]));
  }
}

/** nn.Dropout and F.dropout in training mode around a linear layer. */
export class DropNet extends nn.Module {
  fc = new nn.Linear(6, 6);
  drop = new nn.Dropout(0.4);
  forward(x: Tensor): Tensor {
    const h = this.drop.forward(this.fc.forward(x));
    return F.dropout(h.relu(), { p: 0.25, training: this.training });
  }
}
