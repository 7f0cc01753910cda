// Test models for jit.script's control flow beyond if/for/while: break and continue under
// data-dependent conditions (run-time and unrolled loops), do...while, switch, and compound
// assignments on run-time numbers.
import { nn, type Tensor } from 'kiln';

/** A data-dependent break and continue in the middle of a loop whose trip count is an argument. */
export class EarlyStop extends nn.Module {
  forward(x: Tensor, n: number): Tensor {
    let acc = x;
    let count = 0;
    for (let i = 0; i < n; i++) {
      if (acc.abs().sum().item() > 50) break;
      acc = acc.mul(1.5);
      if (acc.mean().item() < 0) continue;
      acc = acc.add(1);
      count += 1;
    }
    return acc.add(count);
  }
}

/** `while (true)` left by either of two breaks (the first is not the body's last statement). */
export class WhileTrue extends nn.Module {
  forward(x: Tensor): Tensor {
    let k = 0;
    while (true) {
      x = x.mul(2);
      k++;
      if (x.sum().item() > 10) break;
      if (k >= 8) break;
    }
    return x.add(k);
  }
}

/** `do ... while`: the body runs once before the condition is tested. */
export class DoubleUntil extends nn.Module {
  forward(x: Tensor): Tensor {
    let steps = 0;
    do {
      x = x.mul(2);
      steps += 1;
    } while (x.abs().max().item() < 4 && steps < 10);
    return x.div(steps);
  }
}

/** continue and break under data-dependent conditions in a loop over a ModuleList (unrolled). */
export class LayerSkip extends nn.Module {
  layers = new nn.ModuleList([new nn.Linear(3, 3), new nn.Linear(3, 3), new nn.Linear(3, 3)]);
  forward(x: Tensor): Tensor {
    for (const layer of this.layers) {
      const h = layer.forward(x);
      if (h.sum().item() < -1) continue;
      x = h.tanh();
      if (x.mean().item() > 0.2) break;
    }
    return x;
  }
}

/** switch over a number argument (grouped labels, default) and over a string field (returns). */
export class Switcher extends nn.Module {
  mode = 'double';
  forward(x: Tensor, k: number): Tensor {
    let y = x;
    switch (k) {
      case 0:
        y = x.neg();
        break;
      case 1:
      case 2:
        y = x.mul(k);
        break;
      default:
        y = x.add(100);
    }
    switch (this.mode) {
      case 'double': return y.mul(2);
      case 'half': return y.mul(0.5);
      default: return y;
    }
  }
}

/** A switch on a run-time number whose cases return. */
export class SwitchReturn extends nn.Module {
  forward(x: Tensor, k: number): Tensor {
    const h = x.relu();
    switch (k) {
      case 0: return h;
      case 1: return h.mul(3);
      default: break;
    }
    return h.neg();
  }
}

/** Compound assignments and ++/-- on run-time numbers. */
export class Compound extends nn.Module {
  forward(x: Tensor, n: number): Tensor {
    let a = n;
    a += 2;
    a *= 3;
    a -= 1;
    a /= 2;
    let b = 0;
    b++;
    b--;
    ++b;
    return x.mul(a).add(b);
  }
}
