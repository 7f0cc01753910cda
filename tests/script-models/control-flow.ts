// Test models for jit.script: data-dependent branches, loops over layers, while loops,
// training/inference paths, early returns, a boolean argument and a trip-count argument.
import { nn, F, cat, type Tensor } from 'kiln';

/** Branches on a value read from the data (`x.sum().item() > 0`). */
export class SignGate extends nn.Module {
  fc = new nn.Linear(4, 3);
  forward(x: Tensor): Tensor {
    let y = this.fc.forward(x);
    if (x.sum().item() > 0) {
      y = y.relu();
    } else {
      y = y.neg().mul(2);
    }
    return y.add(1);
  }
}

/** AdaptiveResNet: a residual block only when the mean exceeds a threshold. */
export class AdaptiveResNet extends nn.Module {
  stem = new nn.Linear(6, 8);
  block = new nn.Sequential(new nn.Linear(8, 8), new nn.ReLU(), new nn.Linear(8, 8));
  head = new nn.Linear(8, 2);
  threshold = 1;
  forward(x: Tensor): Tensor {
    const h = this.stem.forward(x).relu();
    const deep = h.mean().item() > this.threshold ? h.add(this.block.forward(h)) : h;
    return this.head.forward(deep);
  }
}

/** A loop over a ModuleList, plus `addLayer` after construction. */
export class Stack extends nn.Module {
  layers = new nn.ModuleList([new nn.Linear(5, 5), new nn.Linear(5, 5)]);
  addLayer(): void { this.layers.append(new nn.Linear(5, 5)); }
  forward(x: Tensor): Tensor {
    for (const layer of this.layers) {
      x = F.gelu(layer.forward(x));
    }
    return x;
  }
}

/** A `while` loop whose condition depends on the data. */
export class Halver extends nn.Module {
  forward(x: Tensor): Tensor {
    let steps = 0;
    while (x.abs().sum().item() > 1 && steps < 20) {
      x = x.mul(0.5);
      steps = steps + 1;
    }
    return x;
  }
}

/** A loop whose trip count is an argument. */
export class Repeat extends nn.Module {
  fc = new nn.Linear(3, 3);
  forward(x: Tensor, n: number): Tensor {
    let h = x;
    for (let i = 0; i < n; i++) {
      h = this.fc.forward(h).tanh().add(0.5);
    }
    return h;
  }
}

/** Training vs inference path on `this.training`, and a boolean argument. */
export class Paths extends nn.Module {
  a = new nn.Linear(4, 4);
  b = new nn.Linear(4, 4);
  forward(x: Tensor, useFeatureB: boolean): Tensor {
    const base = this.training ? x.mul(0.9) : x;
    if (useFeatureB) return this.b.forward(base);
    return this.a.forward(base).sigmoid();
  }
}

/** Early return, a helper function of this file and a helper method. */
export class EarlyExit extends nn.Module {
  fc = new nn.Linear(4, 4);
  forward(x: Tensor): Tensor {
    const s = x.max().item();
    if (s > 1.5) {
      return cat([clipTo(x, 1), x], 1);
    }
    const h = this.project(x);
    return cat([h, x], 1);
  }
  project(x: Tensor): Tensor {
    return this.fc.forward(x).softmax(1);
  }
}

function clipTo(x: Tensor, m: number): Tensor {
  return x.clamp(-m, m);
}

/** Loops left by a final `if (...) break;` (folded into the loop's continue condition). */
export class Breaks extends nn.Module {
  fc = new nn.Linear(3, 3);
  forward(x: Tensor, n: number): Tensor {
    let h = x;
    for (let i = 0; i < n; i++) {
      h = this.fc.forward(h).add(1);
      if (h.sum().item() > 5.8) break;
    }
    let y = h;
    while (true) {
      y = y.mul(0.5);
      const m = y.abs().max().item();
      if (m < 0.5) break;
    }
    return y.add(h);
  }
}

/** Nested control flow: an if inside a loop, Math on run-time numbers. */
export class Nested extends nn.Module {
  forward(x: Tensor, n: number): Tensor {
    let acc = x;
    let budget = Math.max(n, 2);
    for (let i = 0; i < budget; i++) {
      if (acc.mean().item() > Math.min(i, 3) / 2) {
        acc = acc.sub(0.25);
      } else {
        acc = acc.mul(1.5).add(0.1);
      }
    }
    budget = Math.floor(budget / 2);
    return acc;
  }
}

/** A user submodule with its own control flow, scripted recursively and inlined. */
export class Outer extends nn.Module {
  gate = new SignGate();
  blocks = new nn.ModuleList([new SignGate(), new SignGate()]);
  proj = new nn.Linear(3, 4);
  forward(x: Tensor): Tensor {
    let h = this.gate.forward(x);
    for (const g of this.blocks) h = g.forward(this.proj.forward(h));
    return h;
  }
}
