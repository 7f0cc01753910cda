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

/** Calls methods that stay eager JavaScript: the graph calls back into them at run time. */
export class CallsIgnored extends nn.Module {
  seen: number[] = [];
  forward(x: Tensor): Tensor {
    const h = x.mul(2);
    this.log(h.sum(), x.shape[0]);
    return this.debug(h, 3).relu();
  }
  @jit.ignore
  debug(x: Tensor, k: number): Tensor {
    return x.sub(k);
  }
  @jit.ignore
  log(total: Tensor, n: number): void {
    this.seen.push(n);
  }
}

/** Passes a string to a method that stays JavaScript: a graph input cannot carry it. */
export class IgnoredGetsString extends nn.Module {
  forward(x: Tensor): Tensor {
    return this.tag(x, 'label');
  }
  @jit.ignore
  tag(x: Tensor, label: string): Tensor {
    return label ? x : x.neg();
  }
}

/** An ignored method that fails on the example inputs compiling runs it on. */
export class IgnoredThrows extends nn.Module {
  forward(x: Tensor): Tensor {
    return this.check(x).relu();
  }
  @jit.ignore
  check(x: Tensor): Tensor {
    if (x.shape[0] > 1) throw new Error('one row at a time');
    return x;
  }
}

/** An unused method: dead when compiling in eval mode on one path, reachable at run time on another. */
export class GuardedUnused extends nn.Module {
  forward(x: Tensor): Tensor {
    if (this.training) return this.legacy(x);
    if (x.sum().item() > 100) return this.legacy(x).neg();
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

/** A block with a data-dependent branch, compiled through the decorator (hybrid mode uses it inside a trace). */
@jit.script
class DecoratedGate extends nn.Module {
  fc = new nn.Linear(4, 4);
  forward(x: Tensor): Tensor {
    if (x.sum().item() > 0) return this.fc.forward(x).relu();
    return x.neg().mul(2);
  }
}

export { DecoratedGate };
