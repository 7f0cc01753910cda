// Test models for jit.script coverage (issue 12, part A): ModuleDict access with static keys,
// traversal of a module's children (addModule included), super calls, helpers and base classes
// imported from another file, and forwards that return objects.
import { nn, type Tensor } from 'kiln';
import { Backbone, block, gate } from './coverage-a-helpers.js';
import { residual } from './coverage-a-reexport.js';

/** ModuleDict: get, [key] (literal, string attribute, loop variable), has, keys/values/items/entries, for...of. */
export class Heads extends nn.Module {
  trunk = new nn.Linear(4, 6);
  heads = new nn.ModuleDict({ cls: new nn.Linear(6, 3), box: new nn.Linear(6, 3), aux: new nn.Linear(6, 3) });
  primary: 'cls' | 'box' = 'cls';
  forward(x: Tensor): Tensor {
    const h = this.trunk.forward(x).relu();
    let y = this.heads.get(this.primary).forward(h);
    y = y.add(this.heads['box'].forward(h)).add(this.heads.aux.forward(h).mul(0.1));
    for (const k of this.heads.keys()) y = y.add(this.heads[k].forward(h).mul(0.5));
    for (const m of this.heads.values()) y = y.sub(m.forward(h).mul(0.25));
    for (const [k, m] of this.heads.items()) {
      if (k === 'aux') continue;
      y = y.add(m.forward(h));
    }
    for (const [, m] of this.heads.entries()) y = y.mul(0.9).add(m.forward(h));
    for (const k of this.heads) y = y.add(this.heads.get(k).forward(h).mul(0.01));
    if (this.heads.has('aux')) y = y.add(1);
    if (this.heads.has('missing')) y = y.add(100);
    return y.mul(this.heads.length);
  }
}

/** Children traversal: children(), namedChildren(), modules(), getSubmodule(), modules added with addModule. */
export class Walker extends nn.Module {
  a = new nn.Linear(5, 5);
  b = new nn.Sequential(new nn.Linear(5, 5), new nn.Tanh());
  constructor() {
    super();
    this.addModule('extra', new nn.Linear(5, 5));
    for (let i = 0; i < 2; i++) this.addModule(`gen${i}`, new nn.Linear(5, 5));
  }
  forward(x: Tensor): Tensor {
    let y = x;
    for (const m of this.children()) y = m.forward(y);
    for (const [name, m] of this.namedChildren()) {
      if (name === 'b') continue;
      y = y.add(m.forward(x).mul(0.1));
    }
    for (const [name, m] of this.b.namedModules()) {
      if (name === '') continue;
      y = y.add(m.forward(y).mul(0.01));
    }
    for (const m of this.children()) if (m !== this.b) y = y.add(m.forward(x).mul(0.05));
    let count = 0;
    for (const _ of this.modules()) count++;
    y = y.add(count);
    y = y.add(this.getSubmodule('extra').forward(x)).add(this.getSubmodule('b.0').forward(x));
    for (const [name, m] of this.namedModules()) if (name === 'gen1') y = y.sub(m.forward(x));
    return y;
  }
}

/** super.forward and super.helper: the base class is imported from another file. */
export class Tuned extends Backbone {
  head = new nn.Linear(6, 2);
  override forward(x: Tensor): Tensor {
    return this.head.forward(super.forward(x).add(this.features(x)));
  }
  override features(x: Tensor): Tensor {
    return super.features(x).mul(2);
  }
}

/** A base class in this file, two levels of super. */
export class Base extends nn.Module {
  lin = new nn.Linear(3, 3);
  forward(x: Tensor): Tensor { return this.lin.forward(x).relu(); }
}
export class Middle extends Base {
  override forward(x: Tensor): Tensor { return super.forward(x).add(1); }
}
export class Top extends Middle {
  override forward(x: Tensor): Tensor { return super.forward(x).mul(3).add(super.forward(x.neg())); }
}

/** Helpers imported from another file (one renamed, one re-exported), inlined. */
export class Imported extends nn.Module {
  lin = new nn.Linear(4, 4);
  forward(x: Tensor): Tensor {
    return gate(block(this.lin.forward(x), 2)).add(residual(x, 0.5));
  }
}

/** Returns an object literal, nested objects and arrays of tensors too. */
export class Outputs extends nn.Module {
  enc = new nn.Linear(4, 3);
  forward(x: Tensor): { logits: Tensor; probs: Tensor; extra: { pair: Tensor[]; scale: Tensor } } {
    const logits = this.enc.forward(x);
    const probs = logits.softmax(-1);
    return { logits, probs, extra: { pair: [logits.relu(), probs.log()], scale: x.sum(1) } };
  }
}

/** Objects returned from, and assigned in, data-dependent branches. */
export class BranchObjects extends nn.Module {
  lin = new nn.Linear(4, 4);
  forward(x: Tensor): { y: Tensor; aux: Tensor[] } {
    const h = this.lin.forward(x);
    if (h.sum().item() > 2) return { y: h.relu(), aux: [h, h.sum(1)] };
    let out = { y: h.neg(), aux: [h, h.mean(1)] };
    if (h.mean().item() < -0.2) out = { y: h.abs(), aux: [h.mul(2), h.amax(1)] };
    return out;
  }
}

/** A subclass of a built-in layer: super.forward() is the layer's own forward, recorded. */
export class ReluLinear extends nn.Linear {
  constructor() { super(4, 3); }
  override forward(x: Tensor): Tensor {
    return super.forward(x).relu().add(super.forward(x.neg()));
  }
}

/** The subclassed layer used as a submodule (its weights under the submodule's name). */
export class UsesReluLinear extends nn.Module {
  inner = new ReluLinear();
  forward(x: Tensor): Tensor { return this.inner.forward(x).sum(1); }
}
