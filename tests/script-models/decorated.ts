// A class compiled with the standard decorators (@jit.script, @jit.export, @jit.ignore).
// Node 20 and the test transform do not lower decorators, so tests/script-decorators.test.ts
// compiles this file with esbuild first.
import { nn, jit, type Tensor } from 'kiln';

/** The decorators: a compiled class, an exported method. */
@jit.script
class Decorated extends nn.Module {
  fc = new nn.Linear(4, 2);
  forward(x: Tensor): Tensor {
    return x.sum().item() > 0 ? this.fc.forward(x) : this.fc.forward(x.neg());
  }
  // `@jit.export` is the same decorator; esbuild 0.28 cannot parse a reserved word after '@x.'.
  @jit.exportMethod
  embed(x: Tensor): Tensor {
    return x.mul(3).relu();
  }
}

/** Calls a method that stays eager JavaScript. */
export class CallsIgnored extends nn.Module {
  forward(x: Tensor): Tensor {
    return this.debug(x).relu();
  }
  @jit.ignore
  debug(x: Tensor): Tensor {
    return x;
  }
}

/** An unused method on a path that is dead when compiling (eval mode). */
export class GuardedUnused extends nn.Module {
  forward(x: Tensor): Tensor {
    if (this.training) return this.legacy(x);
    return x.tanh();
  }
  @jit.unused
  legacy(x: Tensor): Tensor {
    return x;
  }
}

export { Decorated };

/** The trip-count model, compiled through the decorator. */
@jit.script
class DecoratedRepeat extends nn.Module {
  fc = new nn.Linear(3, 3);
  forward(x: Tensor, n: number): Tensor {
    let h = x;
    for (let i = 0; i < n; i++) {
      h = this.fc.forward(h).tanh();
    }
    return h;
  }
}

export { DecoratedRepeat };
