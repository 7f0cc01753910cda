// Models whose compiled graph depends on module attributes (strings, numbers, booleans, nested
// submodule attributes, a swapped submodule, a library layer's training flag) and a forward with
// a number argument: the jit guard tests (tests/jit-guards.test.ts) change them after compiling.
import { nn, type Tensor } from 'kiln';

/** Picks its head by a string attribute; the heads have different output widths. */
export class ModeHead extends nn.Module {
  mode = 'cls';
  scale = 2;
  useBias = true;
  shifts: number[] = [];
  body = new nn.Linear(4, 6);
  cls = new nn.Linear(6, 3);
  seg = new nn.Linear(6, 5);
  forward(x: Tensor): Tensor {
    let h = this.body.forward(x).relu().mul(this.scale);
    if (this.useBias) h = h.add(1);
    for (const s of this.shifts) h = h.sub(s);
    return this.mode === 'cls' ? this.cls.forward(h) : this.seg.forward(h);
  }
}

/** A user submodule whose own attribute selects the path. */
export class Inner extends nn.Module {
  negate = false;
  forward(x: Tensor): Tensor { return this.negate ? x.neg() : x; }
}

export class Outer extends nn.Module {
  inner = new Inner();
  fc = new nn.Linear(4, 4);
  forward(x: Tensor): Tensor { return this.inner.forward(this.fc.forward(x)); }
}

/** Library layers whose own state (training flag, slope) the recorded call bakes in; forward never reads it. */
export class WithNorm extends nn.Module {
  fc = new nn.Linear(4, 4);
  bn = new nn.BatchNorm1d(4);
  act = new nn.LeakyReLU(0.1);
  forward(x: Tensor): Tensor { return this.act.forward(this.bn.forward(this.fc.forward(x))); }
}

/** A number argument with a default. */
export class Tempered extends nn.Module {
  fc = new nn.Linear(4, 3);
  forward(x: Tensor, temperature = 2): Tensor { return this.fc.forward(x).div(temperature); }
}

/** Two user submodules to swap one for the other. */
export class Doubler extends nn.Module {
  forward(x: Tensor): Tensor { return x.mul(2); }
}

/** Calls back into a JavaScript method (marked @jit.ignore by the test) that counts its calls. */
export class CountsCalls extends nn.Module {
  calls = 0;
  fc = new nn.Linear(4, 3);
  forward(x: Tensor): Tensor[] {
    const h = this.fc.forward(x);
    return [this.hook(h), h.relu()];
  }
  hook(h: Tensor): Tensor {
    this.calls++;
    return h.mul(2);
  }
}

/** An eager model whose `head` is made to run compiled (the test applies @jit.script to ModeHeadScripted). */
export class ModeHeadScripted extends nn.Module {
  mode = 'cls';
  body = new nn.Linear(4, 6);
  cls = new nn.Linear(6, 3);
  seg = new nn.Linear(6, 5);
  forward(x: Tensor): Tensor {
    const h = this.body.forward(x).relu();
    return this.mode === 'cls' ? this.cls.forward(h) : this.seg.forward(h);
  }
}

export class HoldsScripted extends nn.Module {
  head = new ModeHeadScripted();
  forward(x: Tensor): Tensor { return this.head.forward(x).tanh(); }
}

/** Calls a compiled (traced) module held in a field. */
export class UsesTraced extends nn.Module {
  inner: { forward(x: Tensor): unknown };
  constructor(inner: { forward(x: Tensor): unknown }) {
    super();
    this.inner = inner;
  }
  forward(x: Tensor): Tensor { return (this.inner.forward(x) as Tensor).relu(); }
}
